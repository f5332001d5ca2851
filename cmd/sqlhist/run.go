package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Exit codes.
const (
	exitOK    = 0
	exitQuery = 1 // bad query or failed apply
	exitUsage = 2
)

// env is everything run touches outside itself; tests replace each part.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dir            func(path string) (fs.FS, error)  // a directory: tracefs, --formats, /proc/PID
	readFile       func(path string) ([]byte, error) // -f FILE
	writer         func(root string) tracefs.Writer  // writes under a tracefs (-e, -r, --cleanup)
	mounts         func() ([]byte, error)            // /proc/mounts, to find tracefs
	// signals delivers SIGINT, SIGTERM and SIGHUP while -r collects; the
	// function it returns stops the delivery.
	signals  func() (<-chan os.Signal, func())
	after    func(time.Duration) <-chan time.Time           // time.After, for -d
	tick     func(time.Duration) (<-chan time.Time, func()) // a ticker for -i; nil: time.NewTicker
	pipe     func(path string) (io.ReadCloser, error)       // trace_pipe for --events; nil: the machine's
	pid      int                                            // makes -r's names and instance unique
	writable func(path string) error                        // live.Writable's access check; nil skips it
	// replaceFile replaces a file's contents all at once (--initrd, --out).
	replaceFile func(path string, data []byte) error
	// isTerminal reports whether a writer is a terminal (-o pprof
	// refuses one); nil: never.
	isTerminal func(w io.Writer) bool
	// With --via: hostDir opens this machine's directories (--formats),
	// while dir, writer, mounts, pipe and writable reach the target;
	// uname is the target's release and machine; beat and uptime make
	// -r keep a heartbeat on the target (live.Target.Beat); collect, for
	// a fleet, takes -r's report instead of printing it.
	hostDir func(path string) (fs.FS, error)
	uname   func() (release, machine string)
	beat    bool
	uptime  func() (float64, error)
	collect func(*live.Report)
	// exporter, for a fleet with --metrics, serves every target's
	// results, this one's labelled target (nil: a lone run serves its
	// own).
	exporter *live.Exporter
	label    string
	// via describes the target for messages ("" on this machine).
	via string
	// getenv reads the environment (the kill hook of the kernel suite);
	// nil reads nothing.
	getenv func(string) string
	// catalogDir, when set, opens the tracefs the event catalog is read
	// from (with --via: a target's, kept in cacheDir across runs).
	catalogDir func(path string) (fs.FS, error)
	cacheDir   string // the user's cache directory for sqlhist; "" keeps nothing
	// readRaw reads the ring buffer's pages of per-CPU directories under
	// a tracefs root through a transport (the stream engine with --via);
	// nil: the run opens trace_pipe_raw on this machine.
	readRaw func(root string, dirs []string, pageSize int) ([][]byte, error)
	// shell runs a command on the target (--via; nil here): the awk
	// engine aggregates there (live.RunAwkVia).
	shell live.ShellRunner
}

func osEnv() env {
	return env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		dir: func(p string) (fs.FS, error) {
			st, err := os.Stat(p)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				return nil, fmt.Errorf("%s: not a directory", p)
			}
			return os.DirFS(p), nil
		},
		readFile: os.ReadFile,
		writer:   killHook(func(root string) tracefs.Writer { return tracefs.DirWriter{Root: root} }, os.Getenv, os.Stderr, selfKill),
		mounts:   func() ([]byte, error) { return os.ReadFile("/proc/mounts") },
		signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
		after: time.After,
		pid:   os.Getpid(),
		// nil pipe: the Target's own.
		writable:    live.Access,
		replaceFile: replaceFile,
		isTerminal:  stdoutTerminal,
		getenv:      os.Getenv,
		cacheDir:    userCacheDir(),
	}
}

// options holds the parsed command line.
type options struct {
	name, tracefsDir, formats, file, kernel string
	arch                                    string // --arch
	machine                                 bool   // formats is this machine's tracefs (-e, -r)
	execute, teardown, help, run, deref     bool
	onmax, onchange                         string
	snapshot, trace                         bool
	save                                    string
	instance                                string
	live                                    liveOptions
	describe                                string   // --describe EVENT
	listEvents                              bool     // --list-events [GLOB …]
	pids, tids                              []string // -p, -L as given
	cleanup, dryRun                         bool     // --cleanup [--dry-run]
	version                                 bool     // --version
	initrd                                  string   // --initrd FILE
	planFile                                string   // --plan FILE
	tracefsExplicit                         bool     // -t was given
	via                                     []string // --via COMMAND
	viaFile                                 string   // --via-file FILE
	viaJobs                                 int      // --via-jobs N
	viaTrace                                string   // --via-trace FILE
	viaTarget                               string   // the --via command of this target, once reached
}

const usageHead = `usage: sqlhist [flags] [SQL ...]

sqlhist compiles SQL over trace events into the tracefs commands that
create synthetic events and hist triggers, and prints them as a shell
script, applies them with -e, or runs them with -r: apply, collect for
-d, show the results, remove everything.

  sqlhist -n wakeup_lat 'SELECT end.next_comm AS comm, start.pid,
      (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
    FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'

flags:
`

func run(args []string, e env) int {
	if len(args) > 0 && args[0] == "merge" {
		return runMerge(args[1:], e)
	}
	var o options
	fl := pflag.NewFlagSet("sqlhist", pflag.ContinueOnError)
	fl.SetOutput(e.stderr)
	fl.SortFlags = false
	fl.StringVarP(&o.name, "name", "n", "", "synthetic event name of the JOIN (default: <first>_to_<last> event; no effect, with a warning, without a JOIN)")
	fl.StringVarP(&o.file, "file", "f", "", "read SQL from `FILE` ('-' for stdin)")
	fl.StringVarP(&o.tracefsDir, "tracefs", "t", "/sys/kernel/tracing", "tracefs on the target: used in printed paths and by --execute")
	fl.StringVar(&o.formats, "formats", "", "read event formats from `DIR` (a tracefs or a copy); default: the -t dir when it holds events/, else the embedded catalog")
	fl.StringVar(&o.kernel, "kernel", "", "use the embedded catalog of this kernel `VERSION` ("+tracefs.EmbeddedSummary()+")")
	fl.StringVar(&o.arch, "arch", "", "the target's architecture `ARCH` (x86_64, arm64, arm, riscv64): picks --kernel's catalog and the registers and binaries probes may use; default: what the catalog or the machine tells, else x86_64")
	fl.BoolVarP(&o.execute, "execute", "e", false, "apply the commands to tracefs (all or nothing)")
	fl.BoolVar(&o.teardown, "teardown", false, "print (or with -e apply) the commands that remove what the query creates")
	fl.BoolVarP(&o.run, "run", "r", false, "apply, collect, print the results, then remove everything (in a private instance unless -B)")
	fl.StringVarP(&o.live.duration, "duration", "d", "", "with -r: collect for `D` seconds (10, 0.5) or a duration (1m30s); default until Ctrl-C")
	fl.StringVarP(&o.live.interval, "interval", "i", "", "with -r: print the results of each `I` seconds (or a duration) alone, then the total")
	fl.BoolVar(&o.live.events, "events", false, "with -r: stream the synthetic events' trace lines instead of a table")
	fl.StringVarP(&o.live.output, "output", "o", "", "print `FORMAT`: script (default), json (the plan of every write, for review) or bootconfig (boot-time tracing); with -r the results as table (default), json, csv, folded (stacks for flame graphs) or pprof (a gzipped profile)")
	fl.StringVar(&o.live.metrics, "metrics", "", "with -r: serve the results as Prometheus metrics on `ADDR` (127.0.0.1:9101, :9101) at /metrics, read every -i or 5s, until Ctrl-C or -d")
	fl.IntVar(&o.live.series, "metrics-series", live.DefaultMetricSeries, "with --metrics: label sets a query keeps; the rest are counted as "+live.OtherLabel)
	fl.StringVar(&o.live.engine, "engine", "auto", "with -r: `ENGINE` that answers: kernel (hist triggers and synthetic events), stream (sqlhist reads the events and computes the query: kernels without hist triggers) or auto (kernel where it can); when printing, stream (or awk) prints a shell script whose awk computes the query on the target from trace_pipe (the default for a --kernel or --formats catalog without hist triggers), with -d D its run time")
	fl.StringVar(&o.live.out, "out", "", "with -r: write the results to `FILE` instead of stdout (with -i, interval N to FILE with .N before its extension, the total to FILE); -o pprof needs it when stdout is a terminal")
	fl.StringVar(&o.initrd, "initrd", "", "with -o bootconfig: add the bootconfig to the initrd `FILE` (after the sqlhist bootconfigs it has), instead of printing it")
	fl.StringVar(&o.planFile, "plan", "", "take the writes from the JSON plan `FILE` (-o json) instead of SQL: print them as a script, apply them with -e, remove them with --teardown -e")
	fl.IntVar(&o.live.size, "size", 0, "entries of each histogram's map (size=`N`, 128 to 131072; default 2048, and 8192 for the results of -r's JOINs), in scripts, plans, bootconfigs and -r")
	fl.StringVarP(&o.onmax, "onmax", "m", "", "with -s, -S or -T: act on a new maximum of the synthetic field `VAR` (onmax); without JOIN, of the event's field VAR")
	fl.StringVarP(&o.onchange, "onchange", "c", "", "with -s, -S or -T: act when the synthetic field `VAR` changes (onchange); without JOIN, the event's field VAR")
	fl.BoolVarP(&o.snapshot, "snapshot", "s", false, "with -m/-c: snapshot the trace buffer then (instead of firing the synthetic event)")
	fl.StringVarP(&o.save, "save", "S", "", "with -m/-c: save the end event's `FIELDS` (comma-separated) then (instead of firing the synthetic event)")
	fl.BoolVarP(&o.trace, "trace", "T", false, "with -m/-c: fire the synthetic event only then, and snapshot the trace buffer after it")
	fl.StringVarP(&o.instance, "instance", "B", "", "put the triggers in the tracefs instance `NAME`")
	fl.StringArrayVarP(&o.pids, "pid", "p", nil, "trace only the threads process `PID` has when sqlhist runs (from this machine's /proc; repeat or comma-separate)")
	fl.StringArrayVarP(&o.tids, "tid", "L", nil, "trace only thread `TID` (repeat or comma-separate)")
	fl.StringVar(&o.describe, "describe", "", "print the fields of `EVENT` (event, system.event or system/event) as a table; with SQL, after the query defines its events")
	fl.BoolVar(&o.listEvents, "list-events", false, "list the events (system/event) matching the GLOB arguments, or all")
	fl.BoolVar(&o.deref, "deref", false, "read char * fields a query selects through an eprobe that dereferences them to strings")
	fl.BoolVar(&o.cleanup, "cleanup", false, "remove what killed --run processes left in the tracefs (their instances, triggers, synthetic events, probes)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "with --cleanup: print what it would remove, remove nothing")
	fl.StringArrayVar(&o.via, "via", nil, "reach the target through `COMMAND`, run with sh -c here, whose input and output are a shell on the target (ssh root@board, adb shell, kubectl exec -i POD -- sh, socat - /dev/ttyUSB0,raw,echo=0); nothing is installed there; repeat for a fleet")
	fl.StringVar(&o.viaFile, "via-file", "", "read --via commands from `FILE`, one a line (# comments)")
	fl.IntVar(&o.viaJobs, "via-jobs", 8, "with a fleet: how many targets are worked on at once")
	fl.StringVar(&o.viaTrace, "via-trace", "", "with --via: write each command sent to the target, and when its answer came, to `FILE` (with several targets, FILE.1, FILE.2, …)")
	fl.BoolVarP(&o.help, "help", "h", false, "show this help")
	fl.BoolVar(&o.version, "version", false, "print the build's commit, Go version and architecture, and the embedded catalogs")
	fl.Usage = func() {
		fmt.Fprint(e.stderr, usageHead)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return usageError(e, "%v", err)
	}
	if o.help {
		fmt.Fprint(e.stdout, usageHead)
		fl.SetOutput(e.stdout)
		fl.PrintDefaults()
		return exitOK
	}
	if o.version {
		fmt.Fprint(e.stdout, versionText())
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
	duration, code := o.checkLive(e, fl.Changed)
	if code != exitOK {
		return code
	}
	if o.planFile != "" {
		o.tracefsExplicit = fl.Changed("tracefs")
		return o.runPlan(e, fl)
	}
	if o.live.output == "bootconfig" {
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
		popt = live.Prepare(popt, e.pid)
		o.noteDeadRuns(e)
	}
	popt.Size = o.live.size
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	popt.CatalogHint = o.otherTargetHint(e)
	awk := o.printsAwk(fl.Changed, cat, popt.CatalogHint)
	if code := o.checkAwk(e, fl.Changed, awk); code != exitOK {
		return code
	}
	if awk {
		popt = live.AwkPrepare(popt)
	}
	if o.run {
		eng, err := live.PickEngine(o.live.engine, cat.Features())
		if err != nil {
			return usageError(e, "%v", err)
		}
		o.live.used, o.live.catalog = eng, cat
		popt.Stream = eng == live.EngineStream
	}
	plan, code := compile(e, src, cat, popt)
	if code != exitOK {
		return code
	}
	if awk {
		return o.printAwk(e, src, cat, plan, duration)
	}
	if o.run {
		if isStackFormat(o.live.output) {
			if code := checkStacks(e, plan, o.live.output); code != exitOK {
				return code
			}
		}
		return o.runLive(e, src, plan, duration)
	}
	return o.output(e, src, cat, plan)
}

// compile parses and plans the SQL against the catalog, printing the
// diagnostics (warnings too).
func compile(e env, src *source.Source, cat *tracefs.Catalog, popt planner.Options) (*planner.Plan, int) {
	plan, diags := live.Compile(src, cat, popt)
	if len(diags) > 0 {
		io.WriteString(e.stderr, diags.Render(src))
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
	live.WriteError(e.stderr, src, err)
	return exitQuery
}

// target is the tracefs at root as this environment reaches it.
func (e env) target(root string) *live.Target {
	fsys, _ := e.dir(root)
	t := &live.Target{Root: root, FS: fsys, W: e.writer(root), OpenPipe: e.pipe, Beat: e.beat, Uptime: e.uptime}
	if read := e.readRaw; read != nil {
		t.ReadRaw = func(dirs []string, pageSize int) ([][]byte, error) { return read(root, dirs, pageSize) }
	}
	return t
}

// runLive runs the plan with -r: collect until -d or a signal, then print
// the results (or, with --events, what was streamed).
func (o *options) runLive(e env, src *source.Source, plan *planner.Plan, d time.Duration) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs, stop := e.signals()
	defer stop()
	go func() {
		select {
		case s := <-sigs:
			cancel(errors.New(s.String()))
		case <-ctx.Done():
		}
	}()
	opt := live.Options{Duration: d, Log: e.stderr, After: e.after, Marker: "sqlhist-end-" + strconv.Itoa(e.pid), Alive: e.alive, ID: e.pid,
		Engine: o.live.used, Catalog: o.live.catalog}
	if e.via != "" {
		// Each check of the run's objects is requests to the target.
		opt.Watch = 5 * time.Second
	}
	if o.live.events {
		opt.Events, opt.Format = e.stdout, o.live.output
	}
	var ivErr error
	if o.live.every > 0 {
		opt.Interval, opt.Tick = o.live.every, e.tick
		opt.OnInterval = func(iv *live.Interval) {
			if err := o.writeInterval(e, iv); err != nil && ivErr == nil {
				ivErr = err
			}
		}
	}
	_, done, code := o.serveMetrics(ctx, e, &opt)
	if code != exitOK {
		return code
	}
	t := e.target(o.tracefsDir)
	rep, err := o.runAwkVia(ctx, e, plan, opt)
	if rep == nil && err == nil {
		rep, err = live.Run(ctx, t, plan, opt)
	}
	done(err)
	code = report(e, src, err)
	if rep == nil || rep.Results == nil && err != nil {
		return code // nothing was read
	}
	if e.collect != nil {
		e.collect(rep)
		return code
	}
	if ivErr != nil {
		return report(e, src, ivErr)
	}
	if err = o.writeResults(e, rep, o.live.every > 0); err != nil {
		return report(e, src, err)
	}
	return code
}

func usageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sqlhist: "+format+"\n", args...)
	fmt.Fprintln(e.stderr, "run 'sqlhist --help' for usage")
	return exitUsage
}

func (o *options) plannerOptions(e env) (planner.Options, int) {
	p := planner.Options{Name: o.name, OnMax: o.onmax, OnChange: o.onchange,
		Snapshot: o.snapshot, Trace: o.trace, Instance: o.instance, Teardown: o.teardown,
		ReadFile: e.readFile, Deref: o.deref}
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
	switch {
	case o.file != "" && len(args) > 0:
		return nil, usageError(e, "give the SQL either as arguments or with -f, not both")
	case o.file == "-":
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, usageError(e, "reading stdin: %v", err)
		}
		return source.NewSource("<stdin>", string(b)), exitOK
	case o.file != "":
		b, err := e.readFile(o.file)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
			return nil, exitQuery
		}
		return source.NewSource(o.file, string(b)), exitOK
	case len(args) == 0:
		return nil, usageError(e, "no SQL given")
	}
	return source.NewSource("<args>", strings.Join(args, " ")), exitOK
}

// catalog picks where event formats come from: --formats, --kernel, the -t
// directory when it holds events/, else the newest embedded catalog.
func (o *options) catalog(e env) (*tracefs.Catalog, int) {
	if o.formats != "" && o.kernel != "" {
		return nil, usageError(e, "--formats and --kernel both choose the event catalog: give one")
	}
	cat, err := live.OpenCatalog(live.CatalogSource{Formats: o.formats, Machine: o.machine, Kernel: o.kernel,
		Arch: o.arch, Root: o.tracefsDir, Dir: e.dir, FormatsDir: e.hostDir, Uname: e.uname})
	if e.catalogDir != nil && (o.machine || o.formats == "" && o.kernel == "") {
		cat, err = live.OpenCatalog(live.CatalogSource{Formats: o.formats, Machine: o.machine, Kernel: o.kernel,
			Arch: o.arch, Root: o.tracefsDir, Dir: e.catalogDir, FormatsDir: e.hostDir, Uname: e.uname})
	}
	if err != nil {
		return nil, usageError(e, "%v", err)
	}
	return cat, exitOK
}

// otherTargetHint says how to print for another kernel when the catalog
// is this machine's tracefs, read only because no flag chose one: the
// machine may not be the target (a build host whose kernel has no hist
// triggers). Empty for -e and -r, which need this machine's kernel.
func (o *options) otherTargetHint(e env) string {
	if o.execute || o.run || o.machine || o.formats != "" || o.kernel != "" || !live.HasEvents(e.dir, o.tracefsDir) {
		return ""
	}
	return fmt.Sprintf("the event formats came from this machine's tracefs (%s), read because neither --kernel nor --formats was given; "+
		"to print for another machine, name its kernel with --kernel VERSION (embedded: %s) or read a copy of its tracefs with --formats DIR",
		o.tracefsDir, tracefs.EmbeddedSummary())
}

// executeTarget checks, before anything is written, that the tracefs to
// write to is there: the -t directory, or (when -t was not given) where
// /proc/mounts says tracefs is mounted. sqlhist never mounts it. The event
// catalog is then that tracefs, the kernel that will run the commands.
func (o *options) executeTarget(e env, explicit, readOnly bool) int {
	if o.formats != "" || o.kernel != "" || o.arch != "" {
		return usageError(e, "-e compiles against the tracefs it writes to: drop --formats, --kernel and --arch")
	}
	var mounts []byte
	if e.mounts != nil {
		mounts, _ = e.mounts()
	}
	root, err := live.Find(o.tracefsDir, !explicit, string(mounts), e.dir)
	if err == nil && e.writable != nil && !readOnly {
		err = live.Writable(root, e.writable)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	o.tracefsDir, o.formats, o.machine = root, root, true
	return exitOK
}

// userCacheDir is sqlhist's directory in the user's cache directory
// ($SQLHIST_CACHE_DIR when set), or "" when there is none.
func userCacheDir() string {
	if d := os.Getenv("SQLHIST_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sqlhist")
}

// versionText says which build this is: the commit it was built from (with
// "+changes" when the tree had uncommitted changes), the Go toolchain, the
// machine it was built for, and the embedded catalogs.
func versionText() string {
	commit := "unknown commit"
	goVersion := runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = "commit " + rev
			if modified == "true" {
				commit += "+changes"
			}
		}
	}
	return fmt.Sprintf("sqlhist %s, %s, %s/%s\nembedded catalogs: %s\n", commit, goVersion, runtime.GOOS, runtime.GOARCH, tracefs.EmbeddedSummary())
}
