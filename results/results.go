package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Result is what a run read for one statement: the rows of its
// histogram (a JOIN's results histogram, or a histogram query's own), the
// kernel's totals, and for a JOIN the latency's distribution.
type Result struct {
	Unit  *planner.Unit      // the statement
	Hist  *planner.Hist      // the histogram read
	Read  *tracefs.Histogram // what the kernel printed, parsed
	Title string             // "synthetic/wakeup_lat" or "sched/sched_switch"
	Rows  []Row
	// Latency is the latency column of a JOIN (nil for a histogram query);
	// Distribution is its power-of-two distribution over all rows.
	Latency      *planner.Column
	Distribution []Bucket
	// Negative counts the events whose latency was negative: the end
	// event stamped before the start event (clock skew between CPUs). The
	// u64 latency then wraps around; they are left out of the rows.
	Negative uint64
	// Notes say what a merged result (see [Merge]) cannot show exactly;
	// nil for a target's own.
	Notes []string
	// Engine is the engine that computed it (EngineStream, or "" for the
	// kernel's hist triggers), and Lost the events the stream engine's
	// ring buffers lost before they were read: an answer that lost
	// events is not whole.
	Engine string
	Lost   int
	// EngineReason says why the engine answered ("auto: this kernel has
	// no hist triggers"); "" when not known (a saved document's).
	EngineReason string
}

// Totals are the kernel's counts for the histogram read.
func (r *Result) Totals() tracefs.HistTotals { return r.Read.Totals }

// Row is one row of results: a cell per column of Hist.Columns (the count
// and latency columns are computed from Count and Stats: use At).
type Row struct {
	Cells []Cell
	Count uint64        // events: hitcount, summed over the folded entries
	Stats *LatencyStats // the latency's, for a JOIN
}

// At is the row's cell for column j of Hist.Columns.
func (r *Row) At(c planner.Column, j int) Cell {
	if c.Kind == planner.ColCount {
		return Cell{Text: strconv.FormatUint(r.Count, 10), Num: r.Count, IsNum: true}
	}
	return r.Cells[j]
}

// Avg is the latency's average over the row's events.
func (r *Row) Avg() float64 { return r.Stats.Sum / float64(r.Count) }

// Cell is one shown value: its text as the kernel resolved it (a syscall's
// name, "comm [pid]", a symbol), and its number when it is one.
type Cell struct {
	Text  string
	Num   uint64
	IsNum bool
	// Neg is set on a number of a signed key that is below zero: Num
	// holds it in two's complement (int64(Num) is its value).
	Neg bool
	// Frames are a stack trace key's frames as the kernel prints them,
	// the innermost first ("__schedule+0x8fc/0x1070"); nil for other
	// keys. Text holds them one a line.
	Frames []string
}

// LatencyStats are the statistics of a latency over one row's events:
// the sum (so the average) and the maximum are exact, the distribution is
// by the kernel's log2 buckets.
type LatencyStats struct {
	Sum float64
	Max uint64
	// MaxBound is set, in an interval, when no new maximum arrived: Max is
	// then a bound (the maximum so far, or the top of the bucket).
	MaxBound bool
	// Dist counts the row's events per log2 bucket: exponent e holds the
	// values in (2^(e-1), 2^e], e = 0 the values 0 and 1.
	Dist map[int]uint64
}

// Percentile is a percentile of a row's latency, read from its log2
// distribution: the true value lies in (Low, High] (the bucket that holds
// it, clipped to the row's maximum), and Value is interpolated in it.
type Percentile struct {
	Value     float64
	Low, High uint64
}

// Percentiles are the percentiles shown: p50, p90, p99.
var Percentiles = []float64{50, 90, 99}

// Percentile computes the p-th percentile (0 < p <= 100) of the row's
// latency from its distribution: the bucket holding the rank, and a
// linear interpolation inside it.
func (r *Row) Percentile(p float64) Percentile {
	s := r.Stats
	if s == nil || r.Count == 0 {
		return Percentile{}
	}
	rank := uint64(math.Ceil(p / 100 * float64(r.Count)))
	rank = max(rank, 1)
	if rank >= r.Count {
		// The last event is the maximum, which is exact.
		return Percentile{Value: float64(s.Max), Low: s.Max, High: s.Max}
	}
	exps := make([]int, 0, len(s.Dist))
	for e := range s.Dist {
		exps = append(exps, e)
	}
	sort.Ints(exps)
	var seen uint64
	for _, e := range exps {
		n := s.Dist[e]
		if seen+n < rank {
			seen += n
			continue
		}
		lo, hi := bucketRange(e)
		hi = min(hi, s.Max)
		lo = min(lo, hi)
		// The bucket's integers are lo+1 … hi (0 … 1 for the first):
		// spread its events evenly over them.
		first := float64(lo + 1)
		if e <= 0 || lo == hi {
			first = float64(lo)
		}
		frac := (float64(rank-seen) - 0.5) / float64(n)
		return Percentile{Value: first + frac*(float64(hi)-first), Low: lo, High: hi}
	}
	return Percentile{Value: float64(s.Max), Low: s.Max, High: s.Max}
}

// bucketRange is the range (lo, hi] of the kernel's log2 bucket e; for
// e = 0, [0, 1].
func bucketRange(e int) (lo, hi uint64) {
	if e <= 0 {
		return 0, 1
	}
	return pow2(uint64(e - 1)), pow2(uint64(e))
}

// Bucket is one power-of-two range of the latency distribution: the
// values in (Low, High], or [0, 1] for the first.
type Bucket struct {
	Low, High uint64
	Count     uint64
}

// NewResult turns a parsed histogram into rows. For a JOIN, the results
// histogram is keyed by the latency's log2 bucket, sums the latency and
// tracks its maximum: entries that differ only in the bucket are folded
// into one Row with the latency's statistics.
func NewResult(u *planner.Unit, h *planner.Hist, got *tracefs.Histogram) *Result {
	res := &Result{Unit: u, Hist: h, Read: got, Title: titleOf(u, h)}
	for i := range h.Columns {
		if h.Columns[i].Kind == planner.ColLatency {
			res.Latency = &h.Columns[i]
		}
	}
	byKey := map[string]int{}
	var dist map[int]uint64
	if res.Latency != nil {
		dist = map[int]uint64{}
	}
	entries, folded := foldTwins(got.Entries)
	if folded && res.Latency == nil {
		// Folding changed counts: the kernel's order no longer holds.
		SortEntries(entries, h.Sort)
	}
	counted := true // every entry shows its hitcount
	for _, ent := range entries {
		hits := uint64(0)
		if n, ok := hitcountOf(ent); ok {
			hits = n
		} else {
			counted = false
		}
		var r Row
		var key []string
		for _, c := range h.Columns {
			switch c.Kind {
			case planner.ColKey:
				cl := keyCell(ent, c.Index)
				if c.Signed && cl.IsNum && int64(cl.Num) < 0 && ent.Keys[c.Index].Kind == tracefs.HistNumber {
					cl.Neg, cl.Text = true, strconv.FormatInt(int64(cl.Num), 10)
				}
				r.Cells = append(r.Cells, cl)
				key = append(key, cl.Text)
			case planner.ColValue, planner.ColPercent, planner.ColGraph, planner.ColSumPercent, planner.ColSumGraph:
				r.Cells = append(r.Cells, valueAt(ent, c.Index))
			case planner.ColMax:
				r.Cells = append(r.Cells, maxCell(ent))
			case planner.ColChanged:
				r.Cells = append(r.Cells, trackedCell(ent, "changed"))
			case planner.ColSaved:
				r.Cells = append(r.Cells, savedCell(ent, c.Index))
			default: // computed from count and stats
				r.Cells = append(r.Cells, Cell{})
			}
		}
		r.Count = hits
		if res.Latency == nil {
			res.Rows = append(res.Rows, r)
			continue
		}
		e, sum, mx, bound := latencyOf(ent, res.Latency)
		if e >= 63 {
			// A u64 latency at or above 2^62 is a negative one wrapped
			// around (the end stamped before the start).
			res.Negative += hits
			continue
		}
		dist[e] += hits
		k := strings.Join(key, "\x00")
		i, seen := byKey[k]
		if !seen {
			i = len(res.Rows)
			byKey[k] = i
			r.Stats = &LatencyStats{Dist: map[int]uint64{}}
			r.Count = 0
			res.Rows = append(res.Rows, r)
		}
		agg := &res.Rows[i]
		agg.Count += hits
		agg.Stats.Sum += float64(sum)
		switch {
		case mx > agg.Stats.Max:
			agg.Stats.Max, agg.Stats.MaxBound = mx, bound
		case mx == agg.Stats.Max && !bound:
			agg.Stats.MaxBound = false
		}
		agg.Stats.Dist[e] += hits
	}
	if res.Latency != nil {
		res.Distribution = buckets(dist)
		res.sortRows(u.Order)
	}
	if h.Limit > 0 && len(res.Rows) > h.Limit {
		// A histogram's LIMIT keeps the first entries of its hist file,
		// as a printed script's closing line does (emit.LimitHist).
		res.Rows = res.Rows[:h.Limit]
	}
	if res.Latency == nil && len(h.Sort) == 0 {
		res.mostFirst(counted)
	}
	return res
}

// latencyOf reads an entry of a results histogram: the latency's log2
// exponent (its key), its sum over the entry's events (the value of the
// same name) and their maximum (the onmax line under the entry), which is
// only a bound in an interval that saw no new maximum.
func latencyOf(ent *tracefs.HistEntry, c *planner.Column) (exp int, sum, mx uint64, bound bool) {
	if c.Index < len(ent.Keys) {
		exp = int(min(ent.Keys[c.Index].Num, 64))
	}
	for _, v := range ent.Values[min(1, len(ent.Values)):] {
		if v.Name == c.Label {
			sum = v.Num
		}
	}
	for _, t := range ent.Tracked {
		switch t.Handler {
		case "max":
			mx = t.Value
		case "max<=":
			_, hi := bucketRange(exp)
			mx, bound = min(t.Value, hi), true
		}
	}
	return exp, sum, mx, bound
}

// sortRows orders a JOIN's rows: by the ORDER BY columns, else by count,
// most first; ties by the keys' text, so the output is deterministic.
func (res *Result) sortRows(order []planner.ResultOrder) {
	if len(order) == 0 {
		order = []planner.ResultOrder{{Label: "count", Desc: true}}
	}
	cmpCol := func(a, b *Row, label string) int {
		for j, c := range res.Hist.Columns {
			if c.Label != label && !(label == "count" && c.Kind == planner.ColCount) {
				continue
			}
			if c.Kind == planner.ColLatency {
				return cmp.Compare(a.Avg(), b.Avg())
			}
			return compareCells(a.At(c, j), b.At(c, j))
		}
		return 0
	}
	sort.SliceStable(res.Rows, func(i, j int) bool {
		a, b := &res.Rows[i], &res.Rows[j]
		for _, o := range order {
			c := cmpCol(a, b, o.Label)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		for k := range a.Cells {
			if c := compareCells(a.Cells[k], b.Cells[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// mostFirst orders the rows of a histogram without sort= (no ORDER BY),
// which the kernel lists fewest first, as every other result of -r
// without ORDER BY is: most events first, ties by their keys (so the
// output is deterministic). Without the counts (nohitcount) it reverses
// the kernel's order, which is by count.
func (res *Result) mostFirst(counted bool) {
	if !counted {
		slices.Reverse(res.Rows)
		return
	}
	sort.SliceStable(res.Rows, func(i, j int) bool {
		a, b := &res.Rows[i], &res.Rows[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		for k := range a.Cells {
			if c := compareCells(a.Cells[k], b.Cells[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// compareCells orders two cells of a column: numbers as numbers (pid 33
// before pid 300; a signed key's negatives first), else as text.
func compareCells(x, y Cell) int {
	if !x.IsNum || !y.IsNum {
		return strings.Compare(x.Text, y.Text)
	}
	if x.Neg || y.Neg {
		return cmp.Compare(int64(x.Num), int64(y.Num))
	}
	return cmp.Compare(x.Num, y.Num)
}

// keyCell shows a key as the kernel resolved it: the syscall's name, the
// task's name and pid, the symbol.
func keyCell(ent *tracefs.HistEntry, i int) Cell {
	if i >= len(ent.Keys) {
		return Cell{Text: "?"}
	}
	v := ent.Keys[i]
	switch v.Kind {
	case tracefs.HistNumber, tracefs.HistHex:
		return Cell{Text: v.Raw, Num: v.Num, IsNum: true}
	case tracefs.HistSyscall:
		// A number the kernel has no name for (32-bit arm's private
		// calls, wrappers without metadata) keeps it, so that the rows
		// stay apart and can be looked up.
		if v.Text == "unknown_syscall" {
			return Cell{Text: fmt.Sprintf("%s [%d]", v.Text, v.Num), Num: v.Num}
		}
		return Cell{Text: v.Text, Num: v.Num}
	case tracefs.HistSym:
		return Cell{Text: v.Text, Num: v.Num}
	case tracefs.HistExecname:
		return Cell{Text: fmt.Sprintf("%s [%d]", v.Text, v.Num), Num: v.Num}
	case tracefs.HistLog2:
		// The kernel's "~ 2^e" holds the values in (2^(e-1), 2^e]. The
		// number (JSON's value) is 2^e, in the field's unit, not the
		// exponent.
		lo, hi := bucketRange(int(v.Num))
		return Cell{Text: bucketText(lo, hi), Num: hi, IsNum: true}
	case tracefs.HistBuckets:
		return Cell{Text: fmt.Sprintf("%d-%d", v.Num, v.High), Num: v.Num, IsNum: true}
	case tracefs.HistStacktrace:
		return stackCell(v)
	}
	return Cell{Text: v.Raw}
}

func pow2(e uint64) uint64 {
	if e >= 64 {
		return math.MaxUint64
	}
	return 1 << e
}

// buckets lists the distribution from the lowest to the highest bucket
// that has counts, with the empty ones between.
func buckets(dist map[int]uint64) []Bucket {
	if len(dist) == 0 {
		return nil
	}
	lo, hi := 64, 0
	for b := range dist {
		lo, hi = min(lo, b), max(hi, b)
	}
	var out []Bucket
	for b := lo; b <= hi; b++ {
		l, h := bucketRange(b)
		out = append(out, Bucket{Low: l, High: h, Count: dist[b]})
	}
	return out
}

// bucketText writes a log2 bucket: "[0, 1]", "(1, 2]", "(512, 1K]".
func bucketText(low, high uint64) string {
	if low == 0 {
		return "[0, " + short(high) + "]"
	}
	return "(" + short(low) + ", " + short(high) + "]"
}

// short writes a power of two with K, M, G suffixes when it divides.
func short(v uint64) string {
	for _, s := range []struct {
		unit uint64
		name string
	}{{1 << 60, "E"}, {1 << 50, "P"}, {1 << 40, "T"}, {1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if v >= s.unit && v%s.unit == 0 {
			return strconv.FormatUint(v/s.unit, 10) + s.name
		}
	}
	return strconv.FormatUint(v, 10)
}
