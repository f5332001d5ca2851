package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
)

// runVia does what the flags ask on the targets --via and --via-file
// name: one target like this machine, several as a fleet.
func (o *options) runVia(e env, fl *pflag.FlagSet) int {
	file := ""
	if o.viaFile != "" {
		data, err := e.ReadFile(o.viaFile)
		if err != nil {
			fmt.Fprintf(e.Stderr, "sqlhist: --via-file: %v\n", err)
			return exitQuery
		}
		file = string(data)
	}
	cmds, err := live.ViaCommands(o.via, file)
	switch {
	case err != nil:
		return usageError(e, "%v", err)
	case len(cmds) == 0:
		return usageError(e, "--via-file %s: no command in it", o.viaFile)
	case o.viaJobs < 1:
		return usageError(e, "--via-jobs must be at least 1")
	case o.viaTimeout < time.Second:
		return usageError(e, "--via-timeout must be at least 1s (it bounds each answer from the target)")
	case len(cmds) == 1:
		return o.viaOne(e, fl, cmds[0], o.viaTrace)
	}
	return o.viaFleet(e, fl, cmds)
}

// viaOne does what the flags ask on one target, tracing its requests to
// the file trace ("" for none).
func (o *options) viaOne(e env, fl *pflag.FlagSet, cmd, trace string) int {
	v, err := live.DialVia(context.Background(), cmd, live.ViaOptions{Stderr: e.Stderr, TraceFile: trace, Timeout: o.viaTimeout})
	if err != nil {
		return refuse(e, err)
	}
	defer v.Close()
	re := v.Host(e)
	printing := !o.execute && !o.run && !o.cleanup && !o.dryRun && len(o.planFiles) == 0
	if err := o.FindVia(re, fl.Changed("tracefs"), printing); err != nil {
		return refuse(e, err)
	}
	code := o.main(re, fl)
	if serr := v.Err(); serr != nil && (o.run || o.execute || o.cleanup) {
		live.WriteLost(re.Stderr, serr, o.run, o.execute, re.PID, re.Via, *re.AwkRan)
	}
	return code
}

// viaFleet does what the flags ask on every target, --via-jobs at a
// time (live.RunFleet). With -r the targets' results are printed
// labelled, then merged (results.MergeLabelled: exact where the data is);
// otherwise each target's output is printed whole under a "# target:
// LABEL" line. The exit status is that of the first target that failed.
func (o *options) viaFleet(e env, fl *pflag.FlagSet, cmds []string) int {
	if o.run && (fl.Changed("interval") || o.live.Events || o.live.Live) {
		return usageError(e, "with several targets, -r prints each target's results and the merged ones: -i, --live and --events take one --via")
	}
	if o.run && results.IsStackFormat(o.live.Output) {
		return usageError(e, "with several targets, -o takes table, json or csv")
	}
	if o.run {
		// Checked once, before any target is reached.
		if code := o.checkLive(e, fl.Changed); code != exitOK {
			return code
		}
	}
	exp, stopMetrics, err := FleetMetrics(e, &o.live, o.viaJobs, len(cmds))
	if err != nil {
		return refuse(e, err)
	}
	targets := live.RunFleet(cmds, o.viaJobs, e.Stderr, func(t *live.FleetTarget) {
		te, to := e, *o
		te.Stdout, te.Stderr = t.Stdout, t.Stderr
		te.Collect = func(rep *results.Report) { t.Report = rep }
		te.Label = t.Label
		if exp != nil { // not a nil *Exporter in the interface
			te.Exporter = exp
		}
		trace := ""
		if o.viaTrace != "" {
			trace = fmt.Sprintf("%s.%d", o.viaTrace, t.N) // FILE.N, N its place
		}
		t.Code = to.viaOne(te, fl, t.Label, trace)
	})
	stopMetrics()
	code := live.FleetCode(targets)
	if !o.run {
		live.WriteFleetOutput(e.Stdout, targets)
		return code
	}
	werr := o.toOut(e, o.live.Out, func(w io.Writer) error {
		merr, err := live.WriteFleetResults(w, e.Stderr, o.live.Output, targets)
		if merr != nil {
			code = max(code, exitQuery)
		}
		return err
	})
	if werr != nil {
		fmt.Fprintf(e.Stderr, "sqlhist: %v\n", werr)
		return exitQuery
	}
	return code
}
