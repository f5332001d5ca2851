package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sqlhist/sqlhist/live"
)

// checkOut validates --out and the stack formats against the other -r
// flags, before anything is compiled or written. A pprof profile is
// binary: it goes to --out FILE, or to a stdout that is not a terminal;
// with -i, where each interval is a profile of its own, to --out FILE.
func (o *options) checkOut(e env) int {
	f := o.live.output
	switch {
	case live.IsStackFormat(f) && o.live.events:
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

// resultsOptions are how -r's results are written: -o's format, the
// target's label (its --via command, for sqlhist merge), and --out.
func (o *options) resultsOptions(e env, total bool) live.ResultsOptions {
	return live.ResultsOptions{Format: o.live.output, Label: e.via, Total: total, ToFile: o.live.out != ""}
}

// writeResults writes what -r read in -o's format: to stdout, or with
// --out to that file (written whole, replacing it).
func (o *options) writeResults(e env, rep *live.Report, total bool) error {
	return o.toOut(e, o.live.out, func(w io.Writer) error {
		return live.WriteResults(w, e.stderr, rep, o.resultsOptions(e, total))
	})
}

// writeInterval writes one interval: to stdout, or with --out to a file
// of its own, FILE with .N before its extension.
func (o *options) writeInterval(e env, iv *live.Interval) error {
	if o.live.out == "" {
		return live.WriteIntervalAs(e.stdout, iv, o.resultsOptions(e, false))
	}
	return o.toOut(e, live.IntervalPath(o.live.out, iv.N), func(w io.Writer) error {
		return live.WriteIntervalAs(w, iv, o.resultsOptions(e, false))
	})
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
