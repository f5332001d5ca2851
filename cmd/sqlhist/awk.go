package main

import (
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
