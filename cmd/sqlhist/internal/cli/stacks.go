package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sqlhist/sqlhist/results"
)

// resultsOptions are how -r's results are written: -o's format, the
// target's label (its --via command, for sqlhist merge), and --out.
func (o *options) resultsOptions(e env, total bool) results.ResultsOptions {
	return results.ResultsOptions{Format: o.live.Output, Label: e.Via, Total: total, ToFile: o.live.Out != ""}
}

// writeResults writes what -r read in -o's format: to stdout, or with
// --out to that file (written whole, replacing it).
func (o *options) writeResults(e env, rep *results.Report, total bool) error {
	return o.toOut(e, o.live.Out, func(w io.Writer) error {
		return results.WriteResults(w, e.Stderr, rep, o.resultsOptions(e, total))
	})
}

// writeInterval writes one interval: to stdout, or with --out to a file
// of its own, FILE with .N before its extension.
func (o *options) writeInterval(e env, iv *results.Interval) error {
	if o.live.Out == "" {
		return results.WriteIntervalAs(e.Stdout, iv, o.resultsOptions(e, false))
	}
	return o.toOut(e, results.IntervalPath(o.live.Out, iv.N), func(w io.Writer) error {
		return results.WriteIntervalAs(w, iv, o.resultsOptions(e, false))
	})
}

// toOut runs write on stdout, or on a buffer that then replaces the file
// path.
func (o *options) toOut(e env, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(e.Stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	if err := e.ReplaceFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	return nil
}
