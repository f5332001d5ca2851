package results

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
)

// IsStackFormat reports whether -o draws stacks: folded or pprof.
func IsStackFormat(format string) bool {
	return format == "folded" || format == "pprof"
}

// CheckStacks refuses -o folded and -o pprof (format) for a plan without
// a histogram keyed by a stack trace, before anything is written (a
// usage error), and notes on log the statements whose results have none
// (they are left out).
func CheckStacks(plan *planner.Plan, format string, log io.Writer) error {
	var with, without []string
	for _, u := range plan.Units {
		if u.Feeds {
			continue
		}
		h := u.Results
		if h == nil {
			h = u.Start
		}
		if h == nil {
			continue
		}
		if HasStack(h) {
			with = append(with, h.System+"/"+h.Event)
		} else {
			without = append(without, h.System+"/"+h.Event)
		}
	}
	if len(with) == 0 {
		return source.Usagef("-o %s draws stacks: key the results by one, SELECT STACKTRACE, COUNT(*) FROM event (or a JOIN's start.STACKTRACE AS stack, Linux 6.3 and later)", format)
	}
	for _, w := range without {
		fmt.Fprintf(log, "sqlhist: note: %s has no stack trace key: it is not in the -o %s output\n", w, format)
	}
	return nil
}

// ResultsOptions say how WriteResults writes a report.
type ResultsOptions struct {
	Format string // table, json, csv, folded or pprof
	// Label names the target in JSON and CSV ("" for this machine).
	Label string
	// Total marks the total after -i's intervals.
	Total bool
	// ToFile is set when w is a file (--out): a folded total then has no
	// "# total" line.
	ToFile bool
}

// WriteResults writes what -r read in opt.Format to w, messages and the
// kernel's totals of stack formats to errw.
func WriteResults(w, errw io.Writer, rep *Report, opt ResultsOptions) error {
	label := opt.Label
	if opt.Format != "json" && opt.Format != "csv" {
		label = ""
	}
	if !IsStackFormat(opt.Format) {
		if opt.Total {
			return rep.WriteTotalLabelled(w, errw, opt.Format, label)
		}
		return rep.WriteLabelled(w, errw, opt.Format, label)
	}
	for _, res := range Stacked(rep.Results) {
		res.WriteWarnings(errw)
		t := res.Totals()
		fmt.Fprintf(errw, "sqlhist: %s: %s\n", res.Title, totalsText(t))
	}
	if opt.Total && !opt.ToFile && opt.Format == "folded" {
		fmt.Fprintln(w, "# total")
	}
	return WriteStacks(w, rep.Results, opt.Format)
}

// WriteIntervalAs writes one interval of -i in opt.Format: to a file of
// its own (opt.ToFile) as -o's format does, or to a stream, where a
// folded block follows a "# interval N: …" line.
func WriteIntervalAs(w io.Writer, iv *Interval, opt ResultsOptions) error {
	label := opt.Label
	if opt.Format != "json" && opt.Format != "csv" {
		label = ""
	}
	switch {
	case opt.ToFile && IsStackFormat(opt.Format):
		return WriteStacks(w, iv.Results, opt.Format)
	case !opt.ToFile && opt.Format == "folded":
		partial := ""
		if iv.Partial {
			partial = ", partial"
		}
		fmt.Fprintf(w, "# interval %d: %.1f s to %.1f s%s\n", iv.N, iv.Start.Seconds(), iv.End.Seconds(), partial)
		return WriteFolded(w, iv.Results)
	}
	return iv.WriteLabelled(w, opt.Format, label)
}

// WriteStacks writes results keyed by stacks as folded stacks or a
// gzipped pprof profile (format).
func WriteStacks(w io.Writer, results []*Result, format string) error {
	if format == "pprof" {
		return WriteProfile(w, results)
	}
	return WriteFolded(w, results)
}

// IntervalPath is the file of interval n for --out path: n before the
// name's extensions, "offcpu.pb.gz" → "offcpu.3.pb.gz", "out" → "out.3".
func IntervalPath(path string, n int) string {
	dir, base := filepath.Split(path)
	name, ext, _ := strings.Cut(base, ".")
	if name == "" { // ".hidden"
		name, ext = base, ""
	}
	if ext != "" {
		ext = "." + ext
	}
	return dir + name + "." + strconv.Itoa(n) + ext
}
