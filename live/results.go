package live

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
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
}

// LatencyStats are the exact statistics of a latency over one row's
// events.
type LatencyStats struct {
	Sum      float64
	Min, Max uint64
}

// Bucket is one power-of-two range of the latency distribution:
// [Low, High), or [0, 1) for zero.
type Bucket struct {
	Low, High uint64
	Count     uint64
}

// newResult turns a parsed histogram into rows. For a JOIN, the results
// histogram is keyed by the exact latency: entries that differ only in the
// latency are folded into one Row with the latency's statistics.
func newResult(u *planner.Unit, h *planner.Hist, got *tracefs.Histogram) *Result {
	res := &Result{Unit: u, Hist: h, Read: got, Title: h.System + "/" + h.Event}
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
	for _, ent := range got.Entries {
		hits := uint64(0)
		if len(ent.Values) > 0 && ent.Values[0].Name == "hitcount" {
			hits = ent.Values[0].Num
		}
		var r Row
		var key []string
		for _, c := range h.Columns {
			switch c.Kind {
			case planner.ColKey:
				cl := keyCell(ent, c.Index)
				r.Cells = append(r.Cells, cl)
				key = append(key, cl.Text)
			case planner.ColValue:
				r.Cells = append(r.Cells, valueCell(ent, c.Index+1))
			default: // computed from count and stats
				r.Cells = append(r.Cells, Cell{})
			}
		}
		r.Count = hits
		if res.Latency == nil {
			res.Rows = append(res.Rows, r)
			continue
		}
		v := keyCell(ent, res.Latency.Index).Num
		if v >= 1<<63 {
			res.Negative += hits
			continue
		}
		dist[bits.Len64(v)] += hits // 0 for 0, else 1 + floor(log2 v)
		k := strings.Join(key, "\x00")
		i, seen := byKey[k]
		if !seen {
			i = len(res.Rows)
			byKey[k] = i
			r.Stats = &LatencyStats{Min: v, Max: v}
			r.Count = 0
			res.Rows = append(res.Rows, r)
		}
		agg := &res.Rows[i]
		agg.Count += hits
		agg.Stats.Sum += float64(v) * float64(hits)
		agg.Stats.Min = min(agg.Stats.Min, v)
		agg.Stats.Max = max(agg.Stats.Max, v)
	}
	if res.Latency != nil {
		res.Distribution = buckets(dist)
		res.sortRows(u.Order)
	}
	if h.Limit > 0 && len(res.Rows) > h.Limit {
		res.Rows = res.Rows[:h.Limit]
	}
	return res
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
			x, y := a.At(c, j), b.At(c, j)
			if x.IsNum && y.IsNum {
				return cmp.Compare(x.Num, y.Num)
			}
			return strings.Compare(x.Text, y.Text)
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
			if c := strings.Compare(a.Cells[k].Text, b.Cells[k].Text); c != 0 {
				return c < 0
			}
		}
		return false
	})
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
	case tracefs.HistSyscall, tracefs.HistSym:
		return Cell{Text: v.Text, Num: v.Num}
	case tracefs.HistExecname:
		return Cell{Text: fmt.Sprintf("%s [%d]", v.Text, v.Num), Num: v.Num}
	case tracefs.HistLog2:
		// The number (JSON's value) is the bucket's lower bound, in the
		// field's unit, not the kernel's exponent.
		return Cell{Text: bucketText(pow2(v.Num), pow2(v.Num+1)), Num: pow2(v.Num), IsNum: true}
	case tracefs.HistBuckets:
		return Cell{Text: fmt.Sprintf("%d-%d", v.Num, v.High), Num: v.Num, IsNum: true}
	case tracefs.HistStacktrace:
		return Cell{Text: strings.Join(v.Frames, "\n")}
	}
	return Cell{Text: v.Raw}
}

func valueCell(ent *tracefs.HistEntry, i int) Cell {
	if i >= len(ent.Values) {
		return Cell{Text: "?"}
	}
	v := ent.Values[i]
	return Cell{Text: strconv.FormatUint(v.Num, 10), Num: v.Num, IsNum: true}
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
		bk := Bucket{Count: dist[b]}
		if b > 0 {
			bk.Low, bk.High = pow2(uint64(b-1)), pow2(uint64(b))
		} else {
			bk.High = 1
		}
		out = append(out, bk)
	}
	return out
}

// bucketText writes a range as bpftrace does: "[0]", "[1]", "[2, 4)",
// "[1K, 2K)".
func bucketText(low, high uint64) string {
	if high-low == 1 {
		return "[" + short(low) + "]"
	}
	return "[" + short(low) + ", " + short(high) + ")"
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
