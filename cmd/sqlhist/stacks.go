package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
)

// isStackFormat reports whether -o draws stacks: folded or pprof.
func isStackFormat(format string) bool {
	return format == "folded" || format == "pprof"
}

// stdoutTerminal reports whether w is a terminal (osEnv's isTerminal).
func stdoutTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// checkOut validates --out and the stack formats against the other -r
// flags, before anything is compiled or written. A pprof profile is
// binary: it goes to --out FILE, or to a stdout that is not a terminal;
// with -i, where each interval is a profile of its own, to --out FILE.
func (o *options) checkOut(e env) int {
	f := o.live.output
	switch {
	case isStackFormat(f) && o.live.events:
		return usageError(e, "-o %s draws the results' stacks; --events streams every event: use one of them", f)
	case f == "pprof" && o.live.every > 0 && o.live.out == "":
		return usageError(e, "-i with -o pprof writes a profile per interval: give --out FILE (interval N goes to FILE with .N before its extension, the total to FILE)")
	case f == "pprof" && o.live.out == "" && e.isTerminal != nil && e.isTerminal(e.stdout):
		return usageError(e, "-o pprof writes a gzipped profile, not for a terminal: redirect stdout (> offcpu.pb.gz) or give --out FILE")
	case o.live.out != "" && o.live.events:
		return usageError(e, "--out takes the results; --events streams to stdout: drop one of them")
	}
	return exitOK
}

// checkStacks refuses -o folded and -o pprof for a plan without a
// histogram keyed by a stack trace, before anything is written, and notes
// the statements whose results have none (they are left out).
func checkStacks(e env, plan *planner.Plan, format string) int {
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
		if live.HasStack(h) {
			with = append(with, h.System+"/"+h.Event)
		} else {
			without = append(without, h.System+"/"+h.Event)
		}
	}
	if len(with) == 0 {
		return usageError(e, "-o %s draws stacks: key the results by one, SELECT STACKTRACE, COUNT(*) FROM event (or a JOIN's start.STACKTRACE AS stack, Linux 6.3 and later)", format)
	}
	for _, w := range without {
		fmt.Fprintf(e.stderr, "sqlhist: note: %s has no stack trace key: it is not in the -o %s output\n", w, format)
	}
	return exitOK
}

// writeResults writes what -r read in -o's format: to stdout, or with
// --out to that file (written whole, replacing it). Stack formats have
// the kernel's totals on stderr, as CSV has.
func (o *options) writeResults(e env, rep *live.Report, total bool) error {
	format := o.live.output
	if !isStackFormat(format) {
		return o.toOut(e, o.live.out, func(w io.Writer) error {
			// Results from a target carry its label in JSON and CSV, for
			// sqlhist merge.
			label := viaLabel(e, format)
			if total {
				return rep.WriteTotalLabelled(w, e.stderr, format, label)
			}
			return rep.WriteLabelled(w, e.stderr, format, label)
		})
	}
	for _, res := range live.Stacked(rep.Results) {
		res.WriteWarnings(e.stderr)
		t := res.Totals()
		fmt.Fprintf(e.stderr, "sqlhist: %s: hits %d, entries %d, dropped %d\n", res.Title, t.Hits, t.Entries, t.Dropped)
	}
	return o.toOut(e, o.live.out, func(w io.Writer) error {
		if total && o.live.out == "" && format == "folded" {
			fmt.Fprintln(w, "# total")
		}
		return writeStacks(w, rep.Results, format)
	})
}

// writeInterval writes one interval: to stdout as -o's format does (a
// folded block after a "# interval N: …" line), or with --out to a file
// of its own, FILE with .N before its extension.
func (o *options) writeInterval(e env, iv *live.Interval) error {
	if o.live.out != "" {
		return o.toOut(e, intervalPath(o.live.out, iv.N), func(w io.Writer) error {
			if isStackFormat(o.live.output) {
				return writeStacks(w, iv.Results, o.live.output)
			}
			return iv.WriteLabelled(w, o.live.output, viaLabel(e, o.live.output))
		})
	}
	if o.live.output == "folded" {
		partial := ""
		if iv.Partial {
			partial = ", partial"
		}
		fmt.Fprintf(e.stdout, "# interval %d: %.1f s to %.1f s%s\n", iv.N, iv.Start.Seconds(), iv.End.Seconds(), partial)
		return live.WriteFolded(e.stdout, iv.Results)
	}
	return iv.WriteLabelled(e.stdout, o.live.output, viaLabel(e, o.live.output))
}

// viaLabel is the label JSON and CSV results carry: the --via command of
// the target they come from, or "" for this machine's.
func viaLabel(e env, format string) string {
	if e.via != "" && (format == "json" || format == "csv") {
		return e.via
	}
	return ""
}

func writeStacks(w io.Writer, results []*live.Result, format string) error {
	if format == "pprof" {
		return live.WriteProfile(w, results)
	}
	return live.WriteFolded(w, results)
}

// toOut runs write on stdout, or on a buffer that then replaces the file
// path.
func (o *options) toOut(e env, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(e.stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	if err := e.replaceFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	return nil
}

// intervalPath is the file of interval n for --out path: n before the
// name's extensions, "offcpu.pb.gz" → "offcpu.3.pb.gz", "out" → "out.3".
func intervalPath(path string, n int) string {
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
