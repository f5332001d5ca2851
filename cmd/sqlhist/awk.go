package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// printsAwk reports whether printing (no -r, -e or --teardown) gives the
// awk engine's script (live.WriteAwkScript): with --engine stream (or
// awk), or with no --engine for a catalog without hist triggers the user
// chose (--kernel, --formats, --via: hint is "" then; the machine's own
// tracefs read by default is refused with a hint, as before).
func (o *options) printsAwk(fl changed, cat *tracefs.Catalog, hint string) bool {
	if o.run || o.execute || o.teardown || o.planFile != "" || o.live.output != "script" {
		return false
	}
	switch o.live.engine {
	case live.EngineStream, live.EngineAwk:
		return true
	}
	f := cat.Features()
	return !fl("engine") && hint == "" && !(f.HistTriggers && f.SyntheticEvents)
}

// checkAwk refuses -d and --engine when printing gives no awk script.
func (o *options) checkAwk(e env, fl changed, awk bool) int {
	if o.run || awk {
		return exitOK
	}
	if fl("duration") {
		return usageError(e, "--duration goes with --run (-r), or with --engine stream when printing the awk engine's script")
	}
	if !fl("engine") {
		return exitOK
	}
	switch o.live.engine {
	case live.EngineStream, live.EngineAwk:
		return usageError(e, "--engine %s without --run prints the awk engine's script: drop -e, --teardown, --plan and -o", o.live.engine)
	case live.EngineKernel, live.EngineAuto:
		return usageError(e, "--engine goes with --run (-r), or (stream) when printing the awk engine's script")
	}
	return usageError(e, "--engine %q: give kernel, stream, awk or auto", o.live.engine)
}

// printAwk prints the awk engine's script of the plan.
func (o *options) printAwk(e env, src *source.Source, cat *tracefs.Catalog, plan *planner.Plan, d time.Duration) int {
	arch, _ := cat.Arch()
	ap, err := live.NewAwkPlan(plan, cat, arch)
	if err != nil {
		return report(e, src, err)
	}
	return report(e, src, live.WriteAwkScript(e.stdout, ap, live.AwkScriptOptions{Root: o.tracefsDir, Duration: d}))
}

// runAwkVia runs a stream-engine run through --via on the target's awk
// (only the results cross the line) when it can (--engine auto or awk;
// --engine stream streams the events): -d of at most
// live.AwkViaMax, no -i, --events or --metrics, awk on the target and a
// query the awk engine computes. A nil report and error mean: stream
// the events instead (said on stderr when the target was asked).
func (o *options) runAwkVia(ctx context.Context, e env, plan *planner.Plan, opt live.Options) (*live.Report, error) {
	if e.shell == nil || opt.Engine != live.EngineStream || o.live.engine == live.EngineStream || opt.Interval > 0 || opt.Events != nil || o.live.metrics != "" || opt.Duration <= 0 {
		return nil, nil
	}
	rep, err := live.RunAwkVia(ctx, e.shell, plan, o.live.catalog, o.tracefsDir, opt.Duration, e.stderr)
	var fb *live.AwkFallback
	if errors.As(err, &fb) {
		fmt.Fprintf(e.stderr, "sqlhist: streaming the events: %s\n", fb.Why)
		return nil, nil
	}
	return rep, err
}
