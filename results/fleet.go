package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Labelled is one target's answer in a fleet: its report, or the error
// that ended it, under the label that names the target (its --via
// command, a host name, a file name).
type Labelled struct {
	Label  string
	Report *Report
	Err    error
}

// WriteLabelled prints a report as [Report.Write] does, with the
// target's label when it is not "": JSON has it as "label" before
// "results" ([ReadJSONReport] reads it back), CSV as a first column
// "target", a table under a title line "=== LABEL"; the messages on errw
// name it after "sqlhist: ". With label "", it is [Report.Write].
func (rep *Report) WriteLabelled(w, errw io.Writer, format, label string) error {
	if label == "" {
		return rep.Write(w, errw, format)
	}
	pw := &prefixWriter{w: errw, prefix: "sqlhist: " + label + ": "}
	defer pw.Flush()
	for _, res := range rep.Results {
		res.WriteWarnings(pw)
	}
	if rep.Streamed != nil {
		rep.WriteStreamSummary(pw)
		return nil
	}
	switch format {
	case "json":
		return renderJSONLabelled(w, rep.Results, label)
	case "csv":
		renderCSVColumns(w, rep.Results, []string{"target"}, []string{label})
		writeCSVTotals(pw, rep.Results)
		return nil
	}
	fmt.Fprintf(w, "=== %s\n", label)
	return renderTables(w, rep.Results)
}

// writeCSVTotals prints the Totals, which CSV has no place for.
func writeCSVTotals(w io.Writer, results []*Result) {
	for _, res := range results {
		t := res.Totals()
		fmt.Fprintf(w, "sqlhist: %s: %s\n", res.Title, totalsText(t))
	}
}

// MergedLabel labels the merged rows in CSV.
const MergedLabel = "merged"

// WriteFleet prints the answers of a fleet's targets and their merge (nil
// when nothing merged) in format:
//
//   - table: each target's tables under a title line "=== LABEL", then
//     the merged ones under "=== merged (N of M targets)";
//   - json: one document {"targets": [{"label": …, "results": […]} or
//     {"label": …, "error": "…"}, …], "merged": {"results": […]}}, each
//     result the object -o json prints for one target;
//   - csv: per statement, one header with a first column "target", then
//     every target's rows with its label, then the merged rows with
//     "merged" (when the targets' statements differ, each target's CSV
//     apart).
//
// A failed target's error, the warnings and notes, and the Totals of CSV
// go to errw, each line naming its target after "sqlhist: ". Reports that
// streamed events (--events) print their stream summaries on errw
// instead of results.
func WriteFleet(w, errw io.Writer, format string, targets []Labelled, merged *Report) error {
	ok := 0
	for _, t := range targets {
		if t.Err != nil {
			fmt.Fprintf(errw, "sqlhist: %s: %v\n", t.Label, t.Err)
			continue
		}
		if t.Report != nil {
			ok++
		}
	}
	mergedHead := fmt.Sprintf("merged (%d of %d targets)", ok, len(targets))
	warn := func(label string, rep *Report) bool {
		pw := &prefixWriter{w: errw, prefix: "sqlhist: " + label + ": "}
		defer pw.Flush()
		for _, res := range rep.Results {
			res.WriteWarnings(pw)
		}
		if rep.Streamed != nil {
			rep.WriteStreamSummary(pw)
			return true
		}
		if format == "csv" {
			writeCSVTotals(pw, rep.Results)
		}
		return false
	}
	streamed := false
	for _, t := range answered(targets) {
		streamed = warn(t.Label, t.Report) || streamed
	}
	if merged != nil {
		streamed = warn(MergedLabel, merged) || streamed
	}
	if streamed {
		return nil
	}
	switch format {
	case "json":
		return writeFleetJSON(w, targets, merged)
	case "csv":
		return writeFleetCSV(w, targets, merged)
	}
	first := true
	section := func(head string, rep *Report) error {
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		fmt.Fprintf(w, "=== %s\n", head)
		return renderTables(w, rep.Results)
	}
	for _, t := range answered(targets) {
		if err := section(t.Label, t.Report); err != nil {
			return err
		}
	}
	if merged != nil {
		return section(mergedHead, merged)
	}
	return nil
}

// answered are the targets with a report.
func answered(targets []Labelled) []Labelled {
	var out []Labelled
	for _, t := range targets {
		if t.Err == nil && t.Report != nil {
			out = append(out, t)
		}
	}
	return out
}

func writeFleetJSON(w io.Writer, targets []Labelled, merged *Report) error {
	type target struct {
		Label   string       `json:"label"`
		Engine  string       `json:"engine,omitempty"`
		Reason  string       `json:"engine_reason,omitempty"`
		Lost    *int         `json:"lost,omitempty"`
		Results []jsonResult `json:"results"`
	}
	type failed struct {
		Label string `json:"label"`
		Error string `json:"error"`
	}
	type results struct {
		Results []jsonResult `json:"results"`
	}
	doc := struct {
		Targets []any    `json:"targets"`
		Merged  *results `json:"merged"`
	}{Targets: []any{}}
	for _, t := range targets {
		switch {
		case t.Err != nil:
			doc.Targets = append(doc.Targets, failed{t.Label, t.Err.Error()})
		case t.Report != nil:
			engine, lost := engineOf(t.Report.Results)
			reason := ""
			if engine != "" {
				reason = t.Report.Results[0].EngineReason
			}
			doc.Targets = append(doc.Targets, target{t.Label, engine, reason, lost, jsonResults(t.Report.Results)})
		}
	}
	if merged != nil {
		doc.Merged = &results{jsonResults(merged.Results)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func writeFleetCSV(w io.Writer, targets []Labelled, merged *Report) error {
	ok := answered(targets)
	if merged == nil {
		for i, t := range ok {
			if i > 0 {
				fmt.Fprintln(w)
			}
			renderCSVColumns(w, t.Report.Results, []string{"target"}, []string{t.Label})
		}
		return nil
	}
	for i, res := range merged.Results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		WriteCSV(w, res.csvHeader([]string{"target"}))
		for _, t := range ok {
			if i < len(t.Report.Results) {
				t.Report.Results[i].writeCSVRows(w, []string{t.Label})
			}
		}
		res.writeCSVRows(w, []string{MergedLabel})
	}
	return nil
}

// prefixWriter puts a prefix in place of "sqlhist: " at the start of each
// line written through it (a target's label into its messages); Flush
// writes a last line without a newline.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadString('\n')
		if err != nil {
			p.buf.WriteString(line) // incomplete: keep it
			return len(b), nil
		}
		p.line(line)
	}
}

func (p *prefixWriter) line(l string) {
	if rest, ok := strings.CutPrefix(l, "sqlhist: "); ok {
		l = p.prefix + rest
	}
	io.WriteString(p.w, l)
}

// Flush writes what is left.
func (p *prefixWriter) Flush() {
	if p.buf.Len() > 0 {
		p.line(p.buf.String())
		p.buf.Reset()
	}
}
