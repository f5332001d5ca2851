package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// result is what --run read for one statement.
type result struct {
	unit  *planner.Unit
	plan  *planner.Hist // the histogram read
	hist  *tracefs.Histogram
	title string // "synthetic/wakeup_lat" or "sched/sched_switch"
	rows  []row
	lat   *planner.Column // the latency column of a JOIN, if any
	dist  []bucket        // the latency distribution over all rows
	// negative counts the events whose latency was negative: the end
	// event stamped before the start event (clock skew between CPUs). The
	// u64 latency then wraps around; they are left out of the rows.
	negative uint64
}

// row is one row of results: a cell per key and value column (the count
// and latency columns are computed from count and stats).
type row struct {
	cells []cell
	count uint64    // events: hitcount, summed over the folded entries
	stats *latStats // the latency's, for a JOIN
}

// at is the row's cell for column j.
func (r *row) at(c planner.Column, j int) cell {
	if c.Kind == planner.ColCount {
		return cell{text: strconv.FormatUint(r.count, 10), num: r.count, isNum: true}
	}
	return r.cells[j]
}

// avg is the latency's average over the row's events.
func (r *row) avg() float64 { return r.stats.sum / float64(r.count) }

// cell is one shown value: its text, and its number when it is one (for
// sorting and JSON).
type cell struct {
	text  string
	num   uint64
	isNum bool
}

// latStats are the statistics of a latency over the entries of one row.
type latStats struct {
	sum      float64
	min, max uint64
}

// bucket is one power-of-two range of the latency distribution:
// [low, high), or [0, 1) for zero.
type bucket struct {
	low, high uint64
	count     uint64
}

// newResult turns a parsed histogram into rows. For a JOIN, the results
// histogram is keyed by the exact latency: entries that differ only in the
// latency are folded into one row with the latency's statistics.
func newResult(u *planner.Unit, h *planner.Hist, got *tracefs.Histogram) *result {
	res := &result{unit: u, plan: h, hist: got, title: h.System + "/" + h.Event}
	for i := range h.Columns {
		if h.Columns[i].Kind == planner.ColLatency {
			res.lat = &h.Columns[i]
		}
	}
	byKey := map[string]int{}
	var dist map[int]uint64
	if res.lat != nil {
		dist = map[int]uint64{}
	}
	for _, ent := range got.Entries {
		hits := uint64(0)
		if len(ent.Values) > 0 && ent.Values[0].Name == "hitcount" {
			hits = ent.Values[0].Num
		}
		var r row
		var key []string
		for _, c := range h.Columns {
			switch c.Kind {
			case planner.ColKey:
				cl := keyCell(ent, c.Index)
				r.cells = append(r.cells, cl)
				key = append(key, cl.text)
			case planner.ColValue:
				r.cells = append(r.cells, valueCell(ent, c.Index+1))
			default: // computed from count and stats
				r.cells = append(r.cells, cell{})
			}
		}
		r.count = hits
		if res.lat == nil {
			res.rows = append(res.rows, r)
			continue
		}
		v := keyCell(ent, res.lat.Index).num
		if v >= 1<<63 {
			res.negative += hits
			continue
		}
		dist[bits.Len64(v)] += hits // 0 for 0, else 1 + floor(log2 v)
		k := strings.Join(key, "\x00")
		i, seen := byKey[k]
		if !seen {
			i = len(res.rows)
			byKey[k] = i
			r.stats = &latStats{min: v, max: v}
			r.count = 0
			res.rows = append(res.rows, r)
		}
		agg := &res.rows[i]
		agg.count += hits
		agg.stats.sum += float64(v) * float64(hits)
		agg.stats.min = min(agg.stats.min, v)
		agg.stats.max = max(agg.stats.max, v)
	}
	if res.lat != nil {
		res.dist = buckets(dist)
		res.sortRows(u.Order)
	}
	if h.Limit > 0 && len(res.rows) > h.Limit {
		res.rows = res.rows[:h.Limit]
	}
	return res
}

// sortRows orders a JOIN's rows: by the ORDER BY columns, else by count,
// most first; ties by the keys' text, so the output is deterministic.
func (res *result) sortRows(order []planner.ResultOrder) {
	if len(order) == 0 {
		order = []planner.ResultOrder{{Label: "count", Desc: true}}
	}
	cmpCol := func(a, b *row, label string) int {
		for j, c := range res.plan.Columns {
			if c.Label != label && !(label == "count" && c.Kind == planner.ColCount) {
				continue
			}
			if c.Kind == planner.ColLatency {
				return cmp.Compare(a.avg(), b.avg())
			}
			x, y := a.at(c, j), b.at(c, j)
			if x.isNum && y.isNum {
				return cmp.Compare(x.num, y.num)
			}
			return strings.Compare(x.text, y.text)
		}
		return 0
	}
	sort.SliceStable(res.rows, func(i, j int) bool {
		a, b := &res.rows[i], &res.rows[j]
		for _, o := range order {
			c := cmpCol(a, b, o.Label)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		for k := range a.cells {
			if c := strings.Compare(a.cells[k].text, b.cells[k].text); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// keyCell shows a key as the kernel resolved it: the syscall's name, the
// task's name and pid, the symbol.
func keyCell(ent *tracefs.HistEntry, i int) cell {
	if i >= len(ent.Keys) {
		return cell{text: "?"}
	}
	v := ent.Keys[i]
	switch v.Kind {
	case tracefs.HistNumber, tracefs.HistHex:
		return cell{text: v.Raw, num: v.Num, isNum: true}
	case tracefs.HistSyscall, tracefs.HistSym:
		return cell{text: v.Text, num: v.Num}
	case tracefs.HistExecname:
		return cell{text: fmt.Sprintf("%s [%d]", v.Text, v.Num), num: v.Num}
	case tracefs.HistLog2:
		return cell{text: bucketText(pow2(v.Num), pow2(v.Num+1)), num: v.Num, isNum: true}
	case tracefs.HistBuckets:
		return cell{text: fmt.Sprintf("%d-%d", v.Num, v.High), num: v.Num, isNum: true}
	case tracefs.HistStacktrace:
		return cell{text: strings.Join(v.Frames, "\n")}
	}
	return cell{text: v.Raw}
}

func valueCell(ent *tracefs.HistEntry, i int) cell {
	if i >= len(ent.Values) {
		return cell{text: "?"}
	}
	v := ent.Values[i]
	return cell{text: strconv.FormatUint(v.Num, 10), num: v.Num, isNum: true}
}

func pow2(e uint64) uint64 {
	if e >= 64 {
		return math.MaxUint64
	}
	return 1 << e
}

// buckets lists the distribution from the lowest to the highest bucket
// that has counts, with the empty ones between.
func buckets(dist map[int]uint64) []bucket {
	if len(dist) == 0 {
		return nil
	}
	lo, hi := 64, 0
	for b := range dist {
		lo, hi = min(lo, b), max(hi, b)
	}
	var out []bucket
	for b := lo; b <= hi; b++ {
		bk := bucket{count: dist[b]}
		if b > 0 {
			bk.low, bk.high = pow2(uint64(b-1)), pow2(uint64(b))
		} else {
			bk.high = 1
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

// warn reports entries the kernel could not store, with the size that
// would have held them.
func (res *result) warn(w io.Writer) {
	if res.negative > 0 {
		fmt.Fprintf(w, "sqlhist: warning: %s: %d events had a negative %s (the end stamped before the start: clock skew between CPUs); they are not in the results\n",
			res.title, res.negative, res.lat.Label)
	}
	t := res.hist.Totals
	if t.Dropped == 0 {
		return
	}
	size := res.plan.Size
	if size == 0 {
		size = 2048
	}
	need := uint64(size) * 2
	for need < t.Entries+t.Dropped && need < 131072 {
		need *= 2
	}
	fmt.Fprintf(w, "sqlhist: warning: %s: the kernel dropped %d events: its map of %d entries was full; run again with --size %d\n",
		res.title, t.Dropped, size, min(need, 131072))
}

// render prints the results in the chosen format.
func render(w io.Writer, results []*result, format string) error {
	switch format {
	case "json":
		return renderJSON(w, results)
	case "csv":
		return renderCSV(w, results)
	}
	return renderTables(w, results)
}

// header returns the column titles: a latency is three columns.
func (res *result) header() []string {
	var h []string
	for _, c := range res.plan.Columns {
		if c.Kind == planner.ColLatency {
			h = append(h, "min "+c.Label+" ("+c.Unit+")", "avg "+c.Label, "max "+c.Label)
			continue
		}
		h = append(h, c.Label)
	}
	return h
}

// texts returns a row's texts in header order.
func (res *result) texts(r row) []string {
	var out []string
	for j, c := range res.plan.Columns {
		if c.Kind == planner.ColLatency {
			s := r.stats
			out = append(out, strconv.FormatUint(s.min, 10), strconv.FormatFloat(r.avg(), 'f', 1, 64), strconv.FormatUint(s.max, 10))
			continue
		}
		out = append(out, r.at(c, j).text)
	}
	return out
}

func renderTables(w io.Writer, results []*result) error {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", res.title)
		rows := make([][]string, len(res.rows))
		for j, r := range res.rows {
			rows[j] = res.texts(r)
		}
		if err := writeTable(w, res.header(), rows); err != nil {
			return err
		}
		t := res.hist.Totals
		fmt.Fprintf(w, "Totals: hits %d, entries %d, dropped %d", t.Hits, t.Entries, t.Dropped)
		if res.negative > 0 {
			fmt.Fprintf(w, ", negative %d", res.negative)
		}
		fmt.Fprintln(w)
		if res.lat != nil && len(res.dist) > 0 {
			fmt.Fprintf(w, "\n%s (%s):\n", res.lat.Label, res.lat.Unit)
			writeDistribution(w, res.dist)
		}
	}
	return nil
}

// writeDistribution draws the latency distribution as bpftrace's hist():
//
//	[4, 8)       12 |@@@@@@@@@@                                          |
func writeDistribution(w io.Writer, dist []bucket) {
	const width = 52
	var most uint64
	labels := make([]string, len(dist))
	lw := 0
	for i, b := range dist {
		most = max(most, b.count)
		labels[i] = bucketText(b.low, b.high)
		lw = max(lw, len(labels[i]))
	}
	for i, b := range dist {
		n := 0
		if most > 0 {
			n = int(b.count * width / most)
		}
		fmt.Fprintf(w, "%-*s %8d |%s%s|\n", lw, labels[i], b.count, strings.Repeat("@", n), strings.Repeat(" ", width-n))
	}
}

// jsonResult is the JSON form of one statement's results.
type jsonResult struct {
	Event        string           `json:"event"`
	Columns      []string         `json:"columns"`
	Rows         []map[string]any `json:"rows"`
	Totals       jsonTotals       `json:"totals"`
	Unit         string           `json:"unit,omitempty"`
	Distribution []jsonBucket     `json:"distribution,omitempty"`
}

type jsonTotals struct {
	Hits    uint64 `json:"hits"`
	Entries uint64 `json:"entries"`
	Dropped uint64 `json:"dropped"`
	// Negative counts the events left out for a negative latency.
	Negative uint64 `json:"negative,omitempty"`
}

type jsonBucket struct {
	Low   uint64 `json:"low"`
	High  uint64 `json:"high"`
	Count uint64 `json:"count"`
}

type jsonLatency struct {
	Min uint64  `json:"min"`
	Avg float64 `json:"avg"`
	Max uint64  `json:"max"`
}

func renderJSON(w io.Writer, results []*result) error {
	out := struct {
		Results []jsonResult `json:"results"`
	}{Results: []jsonResult{}}
	for _, res := range results {
		t := res.hist.Totals
		jr := jsonResult{Event: res.title, Rows: []map[string]any{}, Totals: jsonTotals{t.Hits, t.Entries, t.Dropped, res.negative}}
		for _, c := range res.plan.Columns {
			jr.Columns = append(jr.Columns, c.Label)
		}
		if res.lat != nil {
			jr.Unit = res.lat.Unit
			for _, b := range res.dist {
				jr.Distribution = append(jr.Distribution, jsonBucket{b.low, b.high, b.count})
			}
		}
		for _, r := range res.rows {
			m := map[string]any{}
			for j, c := range res.plan.Columns {
				switch {
				case c.Kind == planner.ColLatency:
					m[c.Label] = jsonLatency{r.stats.min, math.Round(r.avg()*10) / 10, r.stats.max}
				case r.at(c, j).isNum:
					m[c.Label] = r.at(c, j).num
				default:
					m[c.Label] = r.at(c, j).text
				}
			}
			jr.Rows = append(jr.Rows, m)
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// renderCSV writes one header and the rows per statement, with a blank
// line between statements.
func renderCSV(w io.Writer, results []*result) error {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var h []string
		for _, c := range res.plan.Columns {
			if c.Kind == planner.ColLatency {
				h = append(h, c.Label+"_min", c.Label+"_avg", c.Label+"_max")
				continue
			}
			h = append(h, c.Label)
		}
		writeCSV(w, h)
		for _, r := range res.rows {
			writeCSV(w, res.texts(r))
		}
	}
	return nil
}

func writeCSV(w io.Writer, rec []string) {
	cw := csv.NewWriter(w)
	cw.Write(rec)
	cw.Flush()
}

// writeEventJSON writes one streamed event as a line of JSON.
func writeEventJSON(w io.Writer, rec *tracefs.TraceRecord, fields []tracefs.TraceField) {
	fm := map[string]any{}
	for _, f := range fields {
		if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil {
			fm[f.Name] = n
		} else {
			fm[f.Name] = f.Value
		}
	}
	b, _ := json.Marshal(struct {
		Event     string         `json:"event"`
		Timestamp string         `json:"timestamp"`
		CPU       int            `json:"cpu"`
		Task      string         `json:"task"`
		PID       int            `json:"pid"`
		Fields    map[string]any `json:"fields"`
	}{rec.Event, rec.Timestamp, rec.CPU, rec.Comm, rec.PID, fm})
	w.Write(append(b, '\n'))
}
