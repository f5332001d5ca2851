package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// PrintsAwk reports whether printing (no -r, -e or --teardown) gives the
// awk engine's script (WriteAwkScript): with --engine stream (or awk),
// or with no --engine for a catalog without hist triggers the user chose
// (--kernel, --formats, --via: hint is "" then; the machine's own
// tracefs read by default is refused with a hint, as before).
func (c *Choices) PrintsAwk(given func(string) bool, cat *tracefs.Catalog, hint string) bool {
	if c.Run || c.Execute || c.Teardown || c.PlanFile != "" || c.Output != "script" || c.TeardownOut != "" || c.PlanOut != "" {
		return false
	}
	switch c.Engine {
	case live.EngineStream, live.EngineAwk:
		return true
	}
	f := cat.Features()
	return !given("engine") && hint == "" && !(f.HistTriggers && f.SyntheticEvents)
}

// CheckAwk refuses -d, -i and --engine when printing gives no awk script.
func (c *Choices) CheckAwk(given func(string) bool, awk bool) error {
	if c.Run || awk {
		return nil
	}
	if given("duration") {
		return errors.New("--duration goes with --run (-r), or with --engine stream when printing the awk engine's script")
	}
	if given("interval") {
		return errors.New("--interval goes with --run (-r), or with --engine stream when printing the awk engine's script")
	}
	if !given("engine") {
		return nil
	}
	switch c.Engine {
	case live.EngineStream, live.EngineAwk:
		return fmt.Errorf("--engine %s without --run prints the awk engine's script: drop -e, --teardown, --teardown-out, --plan, --plan-out and -o (its script removes what it creates)", c.Engine)
	case live.EngineKernel, live.EngineAuto:
		return errors.New("--engine goes with --run (-r), or (stream) when printing the awk engine's script")
	case live.EngineBPF:
		return errors.New("--engine bpf goes with --run (-r): the BPF engine loads its programs from this process; printed scripts, -e, --plan and bootconfig write tracefs (hist triggers, or with --engine stream the awk engine's script)")
	}
	return fmt.Errorf("--engine %q: give bpf, kernel, stream, awk or auto", c.Engine)
}

// PrintAwk writes the awk engine's script of the plan of src, for the
// tracefs at root, running for c.Collect (0: until stopped), printing the
// hist files every c.Every too (-i; 0: at the end only); its header names
// the query and the target (cat, named catalog); its output starts with
// args, what plans the query again (AwkScriptOptions.Args).
func (c *Choices) PrintAwk(w io.Writer, src *source.Source, plan *planner.Plan, cat *tracefs.Catalog, catalog, root string, args []string) error {
	arch, _ := cat.Arch()
	ap, err := live.NewAwkPlan(plan, cat, arch)
	if err != nil {
		return err
	}
	return live.WriteAwkScript(w, ap, live.AwkScriptOptions{Root: root, Duration: c.Collect, Interval: c.Every,
		Source: src, Target: live.CatalogTarget(cat, catalog), BufferKB: c.BufferKB, Args: args})
}

// runAwkViaTarget runs a stream-engine run through --via on the target's awk
// (only the results cross the line) when it can (--engine auto or awk;
// --engine stream streams the events): -d (of at most AwkViaMax without
// -i: RunAwkViaIntervals with it), no --events or --metrics, awk on the
// target and a query the awk engine computes. A nil report and error
// mean: stream the events instead (said on stderr when the target was
// asked).
func runAwkViaTarget(ctx context.Context, h live.Host, c *Choices, plan *planner.Plan, opt live.Options, root string) (*results.Report, error) {
	if h.Shell == nil || opt.Engine != live.EngineStream || c.Engine == live.EngineStream || opt.Events != nil || c.Metrics != "" {
		return nil, nil
	}
	var rep *results.Report
	var err error
	if h.AwkRan != nil {
		*h.AwkRan = live.AwkInstance(plan)
	}
	if opt.Interval > 0 || opt.Duration <= 0 || opt.Duration > live.AwkViaMax {
		// In the background on the target, its output polled.
		rep, err = live.RunAwkViaIntervals(ctx, h.Shell, plan, c.Catalog, root, opt, h.Stderr)
	} else {
		rep, err = live.RunAwkViaFor(ctx, h.Shell, plan, c.Catalog, root, opt.Duration, opt.BufferKB, h.Stderr)
	}
	var fb *live.AwkFallback
	if errors.As(err, &fb) {
		if h.AwkRan != nil {
			*h.AwkRan = ""
		}
		fmt.Fprintf(h.Stderr, "sqlhist: streaming the events: %s\n", fb.Why)
		return nil, nil
	}
	return rep, err
}
