package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Exit codes.
const (
	exitOK    = 0
	exitQuery = 1 // bad query or failed apply
	exitUsage = 2
)

// env is everything run touches outside itself (live.Host); tests
// replace each part.
type env = live.Host

func osEnv() env { return live.ThisMachine() }

// options holds the parsed command line.
type options struct {
	live.Place                                           // -t, --formats, --kernel, --arch
	bpf                                 *live.BPFProgram // -r on the BPF engine: its programs, loaded
	name, file                          string
	execute, teardown, help, run, deref bool
	onmax, onchange                     string
	snapshot, trace                     bool
	save                                string
	instance                            string
	live                                Choices
	describe                            string        // --describe EVENT
	listEvents                          bool          // --list-events [GLOB …]
	pids, tids                          []string      // -p, -L as given
	cleanup, dryRun                     bool          // --cleanup [--dry-run]
	version                             bool          // --version
	initrd                              string        // --initrd FILE
	planFiles                           []string      // --plan FILE …
	tracefsExplicit                     bool          // -t was given
	via                                 []string      // --via COMMAND
	viaFile                             string        // --via-file FILE
	viaJobs                             int           // --via-jobs N
	viaTrace                            string        // --via-trace FILE
	viaTimeout                          time.Duration // --via-timeout DURATION
	heatmap                             string        // --heatmap FILE
	dashboard                           string        // --metrics-dashboard FILE
}

func run(args []string, e env) int {
	if len(args) > 0 {
		switch args[0] {
		case "merge":
			return runMerge(args[1:], e)
		case "heatmap":
			return runHeatmap(args[1:], e)
		case "read":
			return runRead(args[1:], e)
		case "man", "completion":
			return runDocs(args, e)
		}
	}
	var o options
	fl := newFlags(&o, e.Stderr)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return usageError(e, "%v", err)
	}
	if o.help {
		writeHelp(e.Stdout, fl)
		return exitOK
	}
	if o.version {
		fmt.Fprint(e.Stdout, Version())
		return exitOK
	}
	if len(o.via) > 0 || o.viaFile != "" {
		return o.runVia(e, fl)
	}
	return o.main(e, fl)
}

// main does what the flags ask, on the target e reaches.
func (o *options) main(e env, fl *pflag.FlagSet) int {
	if o.describe != "" || o.listEvents {
		return o.inspect(fl.Args(), e)
	}
	if o.cleanup || o.dryRun {
		return o.cleanupRuns(e, fl)
	}
	popt, code := o.plannerOptions(e)
	if code != exitOK {
		return code
	}
	code = o.checkLive(e, fl.Changed)
	if code == exitOK {
		code = o.checkHeatmap(e)
	}
	if code == exitOK {
		code = o.checkDashboard(e)
	}
	if code != exitOK {
		return code
	}
	if len(o.planFiles) > 0 {
		o.tracefsExplicit = fl.Changed("tracefs")
		return o.runPlan(e, fl)
	}
	if o.live.Output == "bootconfig" {
		popt.ProbeGroup = emit.BootProbeGroup
	}
	src, code := o.source(fl.Args(), e)
	if code != exitOK {
		return code
	}
	if o.execute || o.run {
		if code := o.executeTarget(e, fl.Changed("tracefs"), false); code != exitOK {
			return code
		}
	}
	if o.run {
		popt = live.Prepare(popt, e.PID)
		live.NoteDeadRuns(e.Stderr, e.Target(o.Root), e.Alive)
	}
	popt.Size = o.live.Size
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	popt.CatalogHint = o.OtherTargetHint(e, o.execute || o.run)
	awk := o.live.PrintsAwk(fl.Changed, cat, popt.CatalogHint)
	if err := o.live.CheckAwk(fl.Changed, awk); err != nil {
		return usageError(e, "%v", err)
	}
	if awk {
		popt = live.AwkPrepare(popt)
	}
	if o.run {
		noBPF := live.BPFTarget(e.Target(o.Root))
		eng, err := live.ChooseEngine(o.live.Engine, cat.Features(), noBPF)
		if err != nil {
			return usageError(e, "%v", err)
		}
		if eng.Engine == live.EngineBPF && o.live.Engine == live.EngineBPF && noBPF != nil {
			return refuse(e, fmt.Errorf("--engine bpf: %v", noBPF))
		}
		o.live.Used, o.live.UsedReason, o.live.Catalog = eng.Engine, eng.Reason, cat
		popt.Stream = eng.Engine == live.EngineStream || eng.Engine == live.EngineBPF
	}
	plan, code := o.compile(e, src, cat, popt, e.Stderr)
	if code != exitOK {
		return code
	}
	if o.run && o.live.Used == live.EngineBPF {
		// The BPF engine compiles the plan and its programs go through
		// the verifier before anything runs; where it cannot, auto
		// takes the next engine (the query planned again for it), and a
		// forced --engine bpf says why at the SQL.
		arch, _ := cat.Arch()
		prog, err := live.LoadBPF(e.Target(o.Root), plan, arch, live.BPFLoad{Events: o.live.Events, Fentry: o.live.Metrics != ""})
		if err != nil && o.live.Engine == live.EngineBPF {
			return report(e, src, err)
		}
		o.bpf = prog
		if err != nil {
			eng, _ := live.ChooseEngine(o.live.Engine, cat.Features(), err)
			o.live.Used, o.live.UsedReason = eng.Engine, eng.Reason
			popt.Stream = eng.Engine == live.EngineStream
			// Planned again for the engine that answers: its warnings
			// were said by the first planning.
			var diags bytes.Buffer
			quiet := e
			quiet.Stderr = &diags
			if plan, code = o.compile(quiet, src, cat, popt, &diags); code != exitOK {
				e.Stderr.Write(diags.Bytes())
				return code
			}
		}
	}
	if awk {
		return report(e, src, o.live.PrintAwk(e.Stdout, src, plan, cat, o.CatalogName(), o.Root, awkArgs(fl, src)))
	}
	if o.run {
		if results.IsStackFormat(o.live.Output) {
			if err := results.CheckStacks(plan, o.live.Output, e.Stderr); err != nil {
				return refuse(e, err)
			}
		}
		if o.heatmap != "" {
			if err := results.CheckHeatmap(plan); err != nil {
				return refuse(e, err)
			}
		}
		if err := o.writeDashboard(e, src, plan); err != nil {
			return refuse(e, fmt.Errorf("--metrics-dashboard: %v", err))
		}
		return o.runLive(e, src, plan)
	}
	return o.output(e, src, cat, plan)
}

// compile parses and plans the SQL against the catalog, checks its
// probes on the target (live.Place.Compile: what cannot be checked is
// said on log), printing the diagnostics (warnings too).
func (o *options) compile(e env, src *source.Source, cat *tracefs.Catalog, popt planner.Options, log io.Writer) (*planner.Plan, int) {
	plan, diags := o.Place.Compile(e, src, cat, popt, log)
	if len(diags) > 0 {
		io.WriteString(e.Stderr, diags.Render(src))
	}
	if plan == nil {
		return nil, exitQuery
	}
	return plan, exitOK
}

// report prints an error as live.WriteError does and returns the exit
// code (0 for no error).
func report(e env, src *source.Source, err error) int {
	if err == nil {
		return exitOK
	}
	live.WriteError(e.Stderr, src, err)
	return exitQuery
}

// runLive runs the plan with -r: collect until -d or a signal, then print
// the results (or, with --events, what was streamed).
func (o *options) runLive(e env, src *source.Source, plan *planner.Plan) int {
	ctx, stop := e.SignalContext()
	defer stop()
	opt := runOptions(e, &o.live)
	var ivErr error
	view := o.liveView(e)
	if o.live.Every > 0 && view == nil {
		opt.OnInterval = func(iv *results.Interval) {
			if err := o.writeInterval(e, iv); err != nil && ivErr == nil {
				ivErr = err
			}
		}
	}
	opt.OnInterval = o.heatmapHook(e, src, opt.OnInterval)
	done, err := serveMetrics(ctx, e, &o.live, &opt)
	if err != nil {
		return refuse(e, err)
	}
	if view != nil {
		serve := opt.OnTotal
		opt.Interval, opt.Tick = o.live.Every, e.Tick
		opt.OnTotal = func(rs []*results.Result) {
			if serve != nil {
				serve(rs)
			}
			view.Update(rs)
		}
		view.Start()
		defer view.Close() // the cursor comes back on every way out
	}
	t := e.Target(o.Root)
	opt.BPF = o.bpf
	defer o.bpf.Close() // unloaded when the run did not take it
	rep, err := runAwkViaTarget(ctx, e, &o.live, plan, opt, o.Root)
	if rep == nil && err == nil {
		rep, err = live.Run(ctx, t, plan, opt)
	}
	done(err)
	code := report(e, src, err)
	if rep == nil || rep.Results == nil && err != nil {
		return code // nothing was read
	}
	if e.Collect != nil {
		e.Collect(rep)
		return code
	}
	if ivErr != nil {
		return report(e, src, ivErr)
	}
	if view != nil {
		// The last screen stays: it is the run's results.
		view.End(rep.Results)
		for _, res := range rep.Results {
			res.WriteWarnings(e.Stderr)
		}
		return code
	}
	if err = o.writeResults(e, rep, o.live.Every > 0); err != nil {
		return report(e, src, err)
	}
	return code
}

// liveView is the view of --live on a terminal, or nil: without
// --live, or when stdout is not a terminal (then each interval is
// printed as -i prints it, which a note says).
func (o *options) liveView(e env) *results.LiveView {
	if !o.live.Live {
		return nil
	}
	if !o.live.LiveView() {
		fmt.Fprintf(e.Stderr, "sqlhist: note: --live: stdout is not a terminal: each interval is printed as -i %s prints it\n", o.live.Every)
		return nil
	}
	v := &results.LiveView{W: e.Stdout, Every: o.live.Every, Engine: o.live.Used}
	if e.TermSize != nil {
		v.Size = func() (int, int, bool) { return e.TermSize(e.Stdout) }
	}
	return v
}

func usageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.Stderr, "sqlhist: "+format+"\n", args...)
	fmt.Fprintln(e.Stderr, "run 'sqlhist --help' for usage")
	return exitUsage
}

func (o *options) plannerOptions(e env) (planner.Options, int) {
	p := planner.Options{Name: o.name, OnMax: o.onmax, OnChange: o.onchange,
		Snapshot: o.snapshot, Trace: o.trace, Instance: o.instance, Teardown: o.teardown,
		ReadFile: e.ReadFile, Deref: o.deref}
	var err error
	if p.Save, err = planner.ParseSave(o.save); err == nil {
		err = p.Check()
	}
	if err != nil {
		return p, usageError(e, "%v", err)
	}
	var code int
	p.Tasks, p.TaskFlag, p.TaskNote, code = o.tasks(e)
	return p, code
}

// source reads the SQL: the arguments joined by spaces, or -f FILE.
func (o *options) source(args []string, e env) (*source.Source, int) {
	src, err := live.ReadSQL(args, o.file, e.Stdin, e.ReadFile)
	return src, refuse(e, err)
}

// refuse prints err, a usage error (exit 2) or another (exit 1), with
// its hint.
func refuse(e env, err error) int {
	var ue *source.UsageError
	var ce *live.CatalogError
	var te *live.TaskError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue) || errors.As(err, &ce) && ce.Usage || errors.As(err, &te) && te.Usage:
		return usageError(e, "%v", err)
	}
	fmt.Fprintf(e.Stderr, "sqlhist: %v\n", err)
	if errors.As(err, &ce) && ce.Hint != "" {
		fmt.Fprintf(e.Stderr, "hint: %s\n", ce.Hint)
	}
	return exitQuery
}

// catalog opens the event catalog the flags choose (live.Place.Catalog).
func (o *options) catalog(e env) (*tracefs.Catalog, int) {
	cat, err := o.Place.Catalog(e, e.Stderr)
	return cat, refuse(e, err)
}

// executeTarget checks, before anything is written, that the tracefs to
// write to is there and writable (live.Place.ForWrite).
func (o *options) executeTarget(e env, explicit, readOnly bool) int {
	what := "-e"
	switch {
	case o.run:
		what = "-r"
	case o.cleanup:
		what = "--cleanup"
	}
	return refuse(e, o.Place.ForWrite(e, what, explicit, readOnly))
}
