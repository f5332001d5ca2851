package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// totalsText is a histogram's totals as the results print them.
func totalsText(t tracefs.HistTotals) string {
	s := fmt.Sprintf("hits %d, entries %d, dropped %d", t.Hits, t.Entries, t.Dropped)
	if t.Failed > 0 {
		s += fmt.Sprintf(", failed %d", t.Failed)
	}
	return s
}

// WriteWarnings reports what the results leave out: events with a negative
// latency, and entries the kernel could not store, with the --size that
// would have held them.
func (res *Result) WriteWarnings(w io.Writer) {
	if res.Negative > 0 {
		fmt.Fprintf(w, "sqlhist: warning: %s: %d events had a negative %s (the end stamped before the start: clock skew between CPUs); they are not in the results\n",
			res.Title, res.Negative, res.Latency.Label)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "sqlhist: note: %s: %s\n", res.Title, n)
	}
	t := res.Read.Totals
	if t.Failed > 0 {
		fmt.Fprintf(w, "sqlhist: warning: %s: the rows are incomplete: %d of the %d events could not be stored with the map not full: %s; the totals count every event\n",
			res.Title, t.Failed, t.Hits+t.Dropped+t.Failed+res.Negative, t.FailedWhy)
	}
	if t.Dropped == 0 {
		return
	}
	size := res.Hist.Size
	if size == 0 {
		size = 2048
	}
	need := uint64(size) * 2
	for need < t.Entries+t.Dropped && need < 131072 {
		need *= 2
	}
	var keys []string
	for _, c := range res.Hist.Columns {
		if c.Kind == planner.ColKey {
			keys = append(keys, c.Label)
		}
	}
	what := "its keys"
	if len(keys) > 0 {
		what = strings.Join(keys, ", ")
	}
	if res.Latency != nil {
		what += " and the log2 bucket of " + res.Latency.Label
	}
	fmt.Fprintf(w, "sqlhist: warning: %s: the rows are incomplete: %d of the %d events found the map of %d entries full (%s take more); the totals count every event\n",
		res.Title, t.Dropped, t.Hits+t.Dropped+t.Failed+res.Negative, size, what)
	switch {
	case need <= 131072 && size < 131072:
		fmt.Fprintf(w, "sqlhist: key by fewer or coarser fields (a name rather than a pid), or run again with --size %d\n", need)
	default:
		fmt.Fprintf(w, "sqlhist: no --size holds them (131072 at most): key by fewer or coarser fields (a name rather than a pid), or filter with WHERE\n")
	}
}

// Formats are the formats Write takes.
var Formats = []string{"table", "json", "csv"}

// Write prints the results as tables (one per statement, with its Totals
// and the latency's distribution), as one JSON document, or as CSV (a
// header and rows per statement; the Totals are not in it).
func Write(w io.Writer, results []*Result, format string) error {
	switch format {
	case "json":
		return renderJSON(w, results)
	case "csv":
		return renderCSV(w, results)
	}
	return renderTables(w, results)
}

// header returns the column titles: a latency is five columns, its
// average, percentiles and maximum.
func (res *Result) header() []string {
	var h []string
	for _, c := range res.Hist.Columns {
		if c.Kind == planner.ColLatency {
			h = append(h, "avg "+c.Label+" ("+c.Unit+")")
			for _, p := range Percentiles {
				h = append(h, fmt.Sprintf("p%g", p))
			}
			h = append(h, "max "+c.Label)
			continue
		}
		h = append(h, c.Label)
	}
	return h
}

// texts returns a row's texts in header order. In a table a percentile
// is written with "~": it is read from a log2 bucket.
func (res *Result) texts(r Row) []string { return res.cells(r, "~") }

// cells returns a row's texts in header order, percentiles prefixed by
// approx.
func (res *Result) cells(r Row, approx string) []string {
	var out []string
	for j, c := range res.Hist.Columns {
		if c.Kind == planner.ColLatency {
			out = append(out, strconv.FormatFloat(r.Avg(), 'f', 1, 64))
			for _, p := range Percentiles {
				out = append(out, approx+strconv.FormatFloat(r.Percentile(p).Value, 'f', 0, 64))
			}
			mx := strconv.FormatUint(r.Stats.Max, 10)
			if r.Stats.MaxBound {
				mx = "<=" + mx
			}
			out = append(out, mx)
			continue
		}
		out = append(out, r.At(c, j).Text)
	}
	return out
}

func renderTables(w io.Writer, results []*Result) error {
	return renderTablesNoted(w, results, true)
}

// renderTablesNoted is renderTables, with the note on what is exact
// under a latency's table or (note false: --live, where a line counts)
// without it.
func renderTablesNoted(w io.Writer, results []*Result, note bool) error {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", res.Title)
		switch res.Engine {
		case "", EngineKernel:
		case EngineStream:
			fmt.Fprintf(w, "engine: stream (sqlhist computed the triggers from the events%s), %d events lost\n", reasonSuffix(res), res.Lost)
		case EngineBPF:
			fmt.Fprintf(w, "engine: bpf (BPF programs computed the triggers in the kernel%s), %d events lost\n", reasonSuffix(res), res.Lost)
		case EngineAwk:
			fmt.Fprintf(w, "engine: awk (the target's awk computed the triggers from trace_pipe), %d events lost\n", res.Lost)
		default:
			fmt.Fprintf(w, "engine: %s, %d events lost by the stream's targets\n", res.Engine, res.Lost)
		}
		rows := make([][]string, len(res.Rows))
		for j, r := range res.Rows {
			rows[j] = res.texts(r)
		}
		if err := WriteTable(w, res.header(), rows); err != nil {
			return err
		}
		t := res.Read.Totals
		fmt.Fprintf(w, "Totals: %s", totalsText(t))
		if res.Negative > 0 {
			fmt.Fprintf(w, ", negative %d", res.Negative)
		}
		fmt.Fprintln(w)
		if res.Latency != nil && len(res.Distribution) > 0 {
			if note {
				fmt.Fprintf(w, "count, avg and max are exact; p50, p90 and p99 are interpolated in their log2 bucket (the true value is within it: up to a factor of 2)\n")
			}
			fmt.Fprintf(w, "\n%s (%s):\n", res.Latency.Label, res.Latency.Unit)
			writeDistribution(w, res.Distribution)
		}
	}
	return nil
}

// writeDistribution draws the latency distribution as bpftrace's hist():
//
//	[4, 8)       12 |@@@@@@@@@@                                          |
func writeDistribution(w io.Writer, dist []Bucket) {
	const width = 52
	var most uint64
	labels := make([]string, len(dist))
	lw := 0
	for i, b := range dist {
		most = max(most, b.Count)
		labels[i] = bucketText(b.Low, b.High)
		lw = max(lw, len(labels[i]))
	}
	for i, b := range dist {
		n := 0
		if most > 0 {
			n = int(b.Count * width / most)
		}
		fmt.Fprintf(w, "%-*s %8d |%s%s|\n", lw, labels[i], b.Count, strings.Repeat("@", n), strings.Repeat(" ", width-n))
	}
}

// jsonResult is the JSON form of one statement's results.
type jsonResult struct {
	Event   string   `json:"event"`
	Columns []string `json:"columns"`
	// Kinds say what each column is (key, count, sum, max, last, saved,
	// percent, graph, latency), Keys the histogram's key fields as the
	// trigger names them ("lat.log2"), Order how the rows are sorted,
	// Limit and Size the query's LIMIT and --size: what reading the
	// results back for a merge needs (see [ReadJSONReport]).
	Kinds        []string         `json:"kinds"`
	Keys         []string         `json:"keys,omitempty"`
	Order        []jsonOrder      `json:"order,omitempty"`
	Limit        int              `json:"limit,omitempty"`
	Size         int              `json:"size,omitempty"`
	Rows         []map[string]any `json:"rows"`
	Totals       jsonTotals       `json:"totals"`
	Unit         string           `json:"unit,omitempty"`
	Distribution []jsonBucket     `json:"distribution,omitempty"`
}

type jsonTotals struct {
	// Events is every event the histogram saw: Hits (in the rows),
	// Dropped (the map was full), Failed and Negative.
	Events  uint64 `json:"events"`
	Hits    uint64 `json:"hits"`
	Entries uint64 `json:"entries"`
	Dropped uint64 `json:"dropped"`
	// Failed counts the inserts lost with the map not full, FailedWhy
	// names the kernel's reason (the BPF engine's map updates).
	Failed    uint64 `json:"failed,omitempty"`
	FailedWhy string `json:"failed_why,omitempty"`
	// Negative counts the events left out for a negative latency.
	Negative uint64 `json:"negative,omitempty"`
}

// jsonOrder is one sort column of the rows: a column's label, or
// "count".
type jsonOrder struct {
	Column string `json:"column"`
	Desc   bool   `json:"desc,omitempty"`
}

type jsonBucket struct {
	Low   uint64 `json:"low"`
	High  uint64 `json:"high"`
	Count uint64 `json:"count"`
}

// jsonLatency is a row's latency: average and maximum (exact) and the
// percentiles, each with the bucket that holds it.
type jsonLatency struct {
	Avg float64 `json:"avg"`
	Max uint64  `json:"max"`
	// MaxBound: in an interval without a new maximum, max is a bound.
	MaxBound bool           `json:"max_is_bound,omitempty"`
	P50      jsonPercentile `json:"p50"`
	P90      jsonPercentile `json:"p90"`
	P99      jsonPercentile `json:"p99"`
	// Sum and Distribution (the row's counts per log2 bucket with any)
	// make the row mergeable exactly with another target's.
	Sum          float64      `json:"sum"`
	Distribution []jsonBucket `json:"distribution"`
}

// jsonPercentile is a percentile interpolated in the log2 bucket (low,
// high] that holds it.
type jsonPercentile struct {
	Value float64 `json:"value"`
	Low   uint64  `json:"low"`
	High  uint64  `json:"high"`
}

func newJSONPercentile(p Percentile) jsonPercentile {
	return jsonPercentile{math.Round(p.Value*10) / 10, p.Low, p.High}
}

// reasonSuffix is "; " and why the engine answered, or "".
func reasonSuffix(res *Result) string {
	if res.EngineReason == "" {
		return ""
	}
	return "; " + res.EngineReason
}

func renderJSON(w io.Writer, results []*Result) error {
	return renderJSONLabelled(w, results, "")
}

// engineOf is the engine that computed results, for JSON ("" for the
// kernel's hist triggers), and the events its ring buffers lost.
func engineOf(results []*Result) (string, *int) {
	if len(results) == 0 || results[0].Engine == "" || results[0].Engine == EngineKernel {
		return "", nil
	}
	lost := results[0].Lost
	return results[0].Engine, &lost
}

// renderJSONLabelled writes the JSON document of results, with the
// target's label first when it is not "".
func renderJSONLabelled(w io.Writer, results []*Result, label string) error {
	out := struct {
		Label   string       `json:"label,omitempty"`
		Engine  string       `json:"engine,omitempty"`
		Reason  string       `json:"engine_reason,omitempty"`
		Lost    *int         `json:"lost,omitempty"`
		Results []jsonResult `json:"results"`
	}{Label: label, Results: jsonResults(results)}
	out.Engine, out.Lost = engineOf(results)
	if out.Engine != "" {
		out.Reason = results[0].EngineReason
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// jsonResults is the JSON form of results.
func jsonResults(results []*Result) []jsonResult {
	out := []jsonResult{}
	for _, res := range results {
		t := res.Read.Totals
		jr := jsonResult{Event: res.Title, Rows: []map[string]any{}, Totals: jsonTotals{t.Hits + t.Dropped + t.Failed + res.Negative, t.Hits, t.Entries, t.Dropped, t.Failed, t.FailedWhy, res.Negative}}
		for _, c := range res.Hist.Columns {
			jr.Columns = append(jr.Columns, c.Label)
			jr.Kinds = append(jr.Kinds, kindNames[c.Kind])
		}
		jr.Keys, jr.Limit, jr.Size = planner.ExprStrings(res.Hist.Keys), res.Hist.Limit, res.Hist.Size
		for _, o := range resultOrder(res) {
			jr.Order = append(jr.Order, jsonOrder{o.Label, o.Desc})
		}
		if res.Latency != nil {
			jr.Unit = res.Latency.Unit
			for _, b := range res.Distribution {
				jr.Distribution = append(jr.Distribution, jsonBucket{b.Low, b.High, b.Count})
			}
		}
		for _, r := range res.Rows {
			m := map[string]any{}
			for j, c := range res.Hist.Columns {
				switch {
				case c.Kind == planner.ColPercent || c.Kind == planner.ColSumPercent:
					m[c.Label], _ = jsonCell(c, r.At(c, j))
				case c.Kind == planner.ColLatency:
					m[c.Label] = jsonLatency{Avg: math.Round(r.Avg()*10) / 10, Max: r.Stats.Max, MaxBound: r.Stats.MaxBound,
						P50: newJSONPercentile(r.Percentile(50)), P90: newJSONPercentile(r.Percentile(90)), P99: newJSONPercentile(r.Percentile(99)),
						Sum: r.Stats.Sum, Distribution: rowBuckets(r.Stats.Dist)}
				case r.At(c, j).Frames != nil:
					// A stack: its frames, the innermost first.
					m[c.Label] = r.At(c, j).Frames
				case r.At(c, j).IsNum && r.At(c, j).Neg:
					m[c.Label] = int64(r.At(c, j).Num)
				case r.At(c, j).IsNum:
					m[c.Label] = r.At(c, j).Num
				default:
					m[c.Label] = r.At(c, j).Text
				}
			}
			jr.Rows = append(jr.Rows, m)
		}
		out = append(out, jr)
	}
	return out
}

// rowBuckets lists a row's log2 buckets that counted events, the lowest
// first.
func rowBuckets(dist map[int]uint64) []jsonBucket {
	out := []jsonBucket{}
	for _, b := range buckets(dist) {
		if b.Count > 0 {
			out = append(out, jsonBucket{b.Low, b.High, b.Count})
		}
	}
	return out
}

// renderCSV writes one header and the rows per statement, with a blank
// line between statements.
func renderCSV(w io.Writer, results []*Result) error {
	return renderCSVPrefixed(w, results, "", "")
}

// renderCSVPrefixed writes CSV as renderCSV does, with a first column
// (title, its value on every row) when title is not "".
func renderCSVPrefixed(w io.Writer, results []*Result, title, value string) error {
	if title == "" {
		return renderCSVColumns(w, results, nil, nil)
	}
	return renderCSVColumns(w, results, []string{title}, []string{value})
}

// renderCSVColumns writes CSV as renderCSV does, with first columns
// titled titles holding values on every row.
func renderCSVColumns(w io.Writer, results []*Result, titles, values []string) error {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		WriteCSV(w, res.csvHeader(titles))
		res.writeCSVRows(w, values)
	}
	return nil
}

// csvHeader is the CSV header of a result, after the titles of the
// columns put first.
func (res *Result) csvHeader(titles []string) []string {
	h := append([]string(nil), titles...)
	for _, c := range res.Hist.Columns {
		if c.Kind == planner.ColLatency {
			h = append(h, c.Label+"_avg", c.Label+"_p50", c.Label+"_p90", c.Label+"_p99", c.Label+"_max")
			continue
		}
		h = append(h, c.Label)
	}
	return h
}

// writeCSVRows writes a result's rows as CSV, each after values.
func (res *Result) writeCSVRows(w io.Writer, values []string) {
	for _, r := range res.Rows {
		WriteCSV(w, append(append([]string(nil), values...), res.cells(r, "")...))
	}
}

func WriteCSV(w io.Writer, rec []string) {
	cw := csv.NewWriter(w)
	cw.Write(rec)
	cw.Flush()
}

// writeEventJSON writes one streamed event as a line of JSON.
func WriteEventJSON(w io.Writer, rec *tracefs.TraceRecord, fields []tracefs.TraceField) {
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

// Write prints one interval: in a table, a title line and the tables of
// its results; in JSON, one line {"interval": N, "start": s, "end": s,
// "partial": …, "results": […]}; in CSV, its rows with the interval's
// number as the first column.
func (iv *Interval) Write(w io.Writer, format string) error {
	return iv.WriteLabelled(w, format, "")
}

// WriteLabelled prints one interval as [Interval.Write] does, with the
// target's label when it is not "": in the title line, as the JSON
// line's "label", as a first CSV column "target".
func (iv *Interval) WriteLabelled(w io.Writer, format, label string) error {
	switch format {
	case "json":
		line := map[string]any{"interval": iv.N, "start": iv.Start.Seconds(), "end": iv.End.Seconds(),
			"partial": iv.Partial, "results": jsonResults(iv.Results)}
		if label != "" {
			line["label"] = label
		}
		return writeJSONLine(w, line)
	case "csv":
		titles, values := labelColumns(label)
		return renderCSVColumns(w, iv.Results, append(titles, "interval"), append(values, strconv.Itoa(iv.N)))
	}
	partial := ""
	if iv.Partial {
		partial = ", partial"
	}
	fmt.Fprintf(w, "=== %sinterval %d: %.1f s to %.1f s%s\n", labelHead(label), iv.N, iv.Start.Seconds(), iv.End.Seconds(), partial)
	if err := renderTables(w, iv.Results); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// labelColumns are the first CSV column of a labelled target's rows.
func labelColumns(label string) (titles, values []string) {
	if label == "" {
		return nil, nil
	}
	return []string{"target"}, []string{label}
}

// labelHead starts a title line with a target's label.
func labelHead(label string) string {
	if label == "" {
		return ""
	}
	return label + ": "
}

// WriteTotal prints, after the intervals, the results of the whole run:
// a titled table, a JSON line {"total": true, "results": […]}, or CSV rows
// with "total" as the first column.
func (rep *Report) WriteTotal(w, errw io.Writer, format string) error {
	return rep.WriteTotalLabelled(w, errw, format, "")
}

// WriteTotalLabelled prints the total as [Report.WriteTotal] does, with
// the target's label when it is not "" (see [Interval.WriteLabelled]).
func (rep *Report) WriteTotalLabelled(w, errw io.Writer, format, label string) error {
	for _, res := range rep.Results {
		res.WriteWarnings(errw)
	}
	switch format {
	case "json":
		line := map[string]any{"total": true, "results": jsonResults(rep.Results)}
		if label != "" {
			line["label"] = label
		}
		return writeJSONLine(w, line)
	case "csv":
		titles, values := labelColumns(label)
		return renderCSVColumns(w, rep.Results, append(titles, "interval"), append(values, "total"))
	}
	fmt.Fprintf(w, "=== %stotal\n", labelHead(label))
	return renderTables(w, rep.Results)
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
