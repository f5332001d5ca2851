package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/emit"
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

// env is everything run touches outside itself.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// dir opens a directory of the machine as a file system (tracefs,
	// --formats, /proc/PID/task for -p). Tests serve directories from a
	// txtar archive.
	dir func(path string) (fs.FS, error)
	// readFile reads -f FILE.
	readFile func(path string) ([]byte, error)
	// writer applies commands under the tracefs root (for --execute).
	writer func(root string) tracefs.Writer
	// mounts reads /proc/mounts, to find tracefs for --execute.
	mounts func() ([]byte, error)
	// signals delivers SIGINT and SIGTERM while --run collects; the
	// function it returns stops the delivery.
	signals func() (<-chan os.Signal, func())
	// after is time.After: the end of --run's -d.
	after func(time.Duration) <-chan time.Time
	// pipe opens trace_pipe for --events: reads wait for data, Close ends
	// a waiting read.
	pipe func(path string) (io.ReadCloser, error)
	// pid makes --run's names and instance unique to this process.
	pid int
	// writable reports why a file cannot be written (nil when it can), so
	// that -e and -r refuse before the first write; nil skips the check.
	writable func(path string) error
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
		writer:   func(root string) tracefs.Writer { return tracefs.DirWriter{Root: root} },
		mounts:   func() ([]byte, error) { return os.ReadFile("/proc/mounts") },
		signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
		after: time.After,
		pipe:  osPipe,
		pid:   os.Getpid(),
		writable: func(p string) error {
			if err := syscall.Access(p, 2 /* W_OK */); err != nil {
				return &fs.PathError{Op: "access", Path: p, Err: err}
			}
			return nil
		},
	}
}

// options holds the parsed command line.
type options struct {
	name, tracefsDir, formats, file, kernel string
	execute, teardown, help, run, deref     bool
	onmax, onchange                         string
	snapshot, trace                         bool
	save                                    string
	instance                                string
	live                                    liveOptions
	describe                                string   // --describe EVENT
	listEvents                              bool     // --list-events [GLOB …]
	pids, tids                              []string // -p, -L as given
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
	var o options
	fl := pflag.NewFlagSet("sqlhist", pflag.ContinueOnError)
	fl.SetOutput(e.stderr)
	fl.SortFlags = false
	fl.StringVarP(&o.name, "name", "n", "", "synthetic event name (default: derived from the two events)")
	fl.StringVarP(&o.file, "file", "f", "", "read SQL from `FILE` ('-' for stdin)")
	fl.StringVarP(&o.tracefsDir, "tracefs", "t", "/sys/kernel/tracing", "tracefs on the target: used in printed paths and by --execute")
	fl.StringVar(&o.formats, "formats", "", "read event formats from `DIR` (a tracefs or a copy); default: the -t dir when it holds events/, else the embedded catalog")
	fl.StringVar(&o.kernel, "kernel", "", "use the embedded catalog of this kernel `VERSION` ("+strings.Join(tracefs.EmbeddedKernels(), ", ")+")")
	fl.BoolVarP(&o.execute, "execute", "e", false, "apply the commands to tracefs (all or nothing)")
	fl.BoolVar(&o.teardown, "teardown", false, "print (or with -e apply) the commands that remove what the query creates")
	fl.BoolVarP(&o.run, "run", "r", false, "apply, collect, print the results, then remove everything (in a private instance unless -B)")
	fl.StringVarP(&o.live.duration, "duration", "d", "", "with -r: collect for `D` seconds (10, 0.5) or a duration (1m30s); default until Ctrl-C")
	fl.BoolVar(&o.live.events, "events", false, "with -r: stream the synthetic events' trace lines instead of a table")
	fl.StringVarP(&o.live.output, "output", "o", "table", "with -r: results as `FORMAT` table, json or csv")
	fl.IntVar(&o.live.size, "size", 0, "with -r: entries of the histograms read (`N`, 128 to 131072; default 2048, 8192 for a JOIN's results)")
	fl.StringVarP(&o.onmax, "onmax", "m", "", "fire on a new maximum of the synthetic field `VAR` (onmax)")
	fl.StringVarP(&o.onchange, "onchange", "c", "", "fire when the synthetic field `VAR` changes (onchange)")
	fl.BoolVarP(&o.snapshot, "snapshot", "s", false, "with -m/-c: take a snapshot of the trace buffer")
	fl.StringVarP(&o.save, "save", "S", "", "with -m/-c: save the end event's `FIELDS` (comma-separated)")
	fl.BoolVarP(&o.trace, "trace", "T", false, "with -m/-c: fire the synthetic event only then")
	fl.StringVarP(&o.instance, "instance", "B", "", "put the triggers in the tracefs instance `NAME`")
	fl.StringArrayVarP(&o.pids, "pid", "p", nil, "trace only the threads process `PID` has when sqlhist runs (from this machine's /proc; repeat or comma-separate)")
	fl.StringArrayVarP(&o.tids, "tid", "L", nil, "trace only thread `TID` (repeat or comma-separate)")
	fl.StringVar(&o.describe, "describe", "", "print the fields of `EVENT` (event, system.event or system/event) as a table; with SQL, after the query defines its events")
	fl.BoolVar(&o.listEvents, "list-events", false, "list the events (system/event) matching the GLOB arguments, or all")
	fl.BoolVar(&o.deref, "deref", false, "read char * fields a query selects through an eprobe that dereferences them to strings")
	fl.BoolVarP(&o.help, "help", "h", false, "show this help")
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
	if o.describe != "" || o.listEvents {
		return o.inspect(fl.Args(), e)
	}
	popt, code := o.plannerOptions(e)
	if code != exitOK {
		return code
	}
	duration, code := o.checkLive(e, fl.Changed)
	if code != exitOK {
		return code
	}
	src, code := o.source(fl.Args(), e)
	if code != exitOK {
		return code
	}
	if o.execute || o.run {
		if code := o.executeTarget(e, fl.Changed("tracefs")); code != exitOK {
			return code
		}
	}
	if o.run {
		popt.Run, popt.Size = true, o.live.size
		if o.name == "" {
			popt.Suffix = strconv.Itoa(e.pid)
		}
		if popt.Instance == "" {
			popt.Instance = "sqlhist_" + strconv.Itoa(e.pid)
		}
	}
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	plan, code := compile(e, src, cat, popt)
	if code != exitOK {
		return code
	}
	feat := cat.Features()
	eopt := emit.Options{SyntheticEventsFile: !feat.DynamicEvents}
	if o.run {
		inst := popt.Instance
		created := !o.instanceExists(e, inst)
		if created && !cat.HasFile("instances") {
			fmt.Fprintf(e.stderr, "sqlhist: %s has no instances/ directory: this kernel cannot keep a run apart from other tracing\n", o.tracefsDir)
			return exitQuery
		}
		cmds := emit.RunCommands(plan, eopt, emit.RunOptions{Instance: inst, CreateInstance: created, Enable: o.live.events})
		r := &liveRun{e: e, root: o.tracefsDir, instance: inst, src: src, plan: plan, cmds: cmds, opt: &o.live, duration: duration}
		return r.run()
	}
	cmds := emit.Commands(plan, eopt)
	if o.teardown {
		cmds = emit.Teardown(cmds)
	}
	if o.execute {
		if o.instance != "" && !o.teardown && !o.instanceExists(e, o.instance) {
			fmt.Fprintf(e.stderr, "sqlhist: creating instance %s; it stays after --teardown (rmdir %s when done)\n", o.instance, emit.Quote(filepath.Join(o.tracefsDir, "instances", o.instance)))
			cmds = append([]Command{emit.Instance(o.instance)}, cmds...)
		}
		return apply(e, o.tracefsDir, src, cmds, o.teardown)
	}
	notes := plan.Notes
	if o.instance != "" && !o.teardown {
		notes = append(notes, "the instance must exist: mkdir "+emit.Quote(o.tracefsDir+"/instances/"+o.instance))
	}
	var out bytes.Buffer
	emit.Print(&out, cmds, emit.PrintOptions{Root: o.tracefsDir, Notes: notes})
	e.stdout.Write(out.Bytes())
	return exitOK
}

// compile parses and plans the SQL against the catalog, printing the
// diagnostics (warnings too).
func compile(e env, src *source.Source, cat *tracefs.Catalog, popt planner.Options) (*planner.Plan, int) {
	script, err := compiler.Parse(src)
	if err != nil {
		return nil, report(e, src, err)
	}
	plan, diags := planner.Build(script, cat, popt)
	if len(diags) > 0 {
		io.WriteString(e.stderr, diags.Render(src))
	}
	if plan == nil {
		return nil, exitQuery
	}
	return plan, exitOK
}

func report(e env, src *source.Source, err error) int {
	var d source.Diags
	if errors.As(err, &d) {
		io.WriteString(e.stderr, d.Render(src))
	} else {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
	}
	return exitQuery
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
	if o.save != "" {
		for _, f := range strings.Split(o.save, ",") {
			f = strings.TrimSpace(f)
			if !tracefs.IsIdent(f) {
				return p, usageError(e, "-S %q: %q is not a field name", o.save, f)
			}
			p.Save = append(p.Save, f)
		}
	}
	if o.onmax != "" && o.onchange != "" {
		return p, usageError(e, "-m and -c cannot be used together")
	}
	if (o.snapshot || o.trace || o.save != "") && o.onmax == "" && o.onchange == "" {
		return p, usageError(e, "-s, -S and -T act on a handler: add -m VAR or -c VAR")
	}
	if o.name != "" && !tracefs.IsIdent(o.name) {
		return p, usageError(e, "-n %q: a synthetic event name uses letters, digits and _, not starting with a digit", o.name)
	}
	if o.instance != "" && (strings.ContainsAny(o.instance, "/\x00") || o.instance == "." || o.instance == "..") {
		return p, usageError(e, "-B %q is not a valid instance name", o.instance)
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
	switch {
	case o.formats != "" && o.kernel != "":
		return nil, usageError(e, "--formats and --kernel both choose the event catalog: give one")
	case o.formats != "":
		fsys, err := e.dir(o.formats)
		if err != nil {
			return nil, usageError(e, "--formats: %v", err)
		}
		if _, err := fs.Stat(fsys, "events"); err != nil {
			return nil, usageError(e, "--formats %s: no events/ directory there", o.formats)
		}
		return tracefs.Open(fsys), exitOK
	case o.kernel != "":
		fsys, err := tracefs.Embedded(o.kernel)
		if err != nil {
			return nil, usageError(e, "--kernel: %v", err)
		}
		return tracefs.Open(fsys), exitOK
	}
	if fsys := tracefsAt(e, o.tracefsDir); fsys != nil {
		return tracefs.Open(fsys), exitOK
	}
	fsys, err := tracefs.Embedded("")
	if err != nil {
		return nil, usageError(e, "no event catalog: %v", err)
	}
	return tracefs.Open(fsys), exitOK
}

// apply writes the commands in order. On the first failure it undoes the
// writes already made, in reverse, so tracefs is left as it was, and
// reports the kernel's reason: the error_log entries that write added, at
// the SQL that produced the command. A teardown goes on past removals of
// what is not there (so it can be repeated) and reports other failures.
func apply(e env, root string, src *source.Source, cmds []Command, teardown bool) int {
	w := e.writer(root)
	logs, _ := e.dir(root)
	failed := false
	// A write that succeeds adds nothing to error_log: read it once, and
	// again only after a failure, to find that failure's entries.
	before := readErrorLog(logs)
	for i, c := range cmds {
		err := write(w, c.Kind, c.File, c.Line)
		if err == nil {
			continue
		}
		if teardown && (errors.Is(err, fs.ErrNotExist) || gone(logs, c)) {
			continue // already gone
		}
		after := readErrorLog(logs)
		reportWrite(e, src, root, c, err, tracefs.NewEntries(before, after))
		before = after
		if teardown {
			failed = true
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if uerr := write(w, cmds[j].Kind, cmds[j].File, cmds[j].Undo); uerr != nil {
				fmt.Fprintf(e.stderr, "sqlhist: undoing the %s: %v\n", cmds[j].What, uerr)
			}
		}
		return exitQuery
	}
	if failed {
		return exitQuery
	}
	return exitOK
}

// instanceExists reports whether the tracefs has the instance name.
func (o *options) instanceExists(e env, name string) bool {
	fsys, err := e.dir(o.tracefsDir)
	if err != nil {
		return false
	}
	_, err = fs.Stat(fsys, "instances/"+name)
	return err == nil
}

// write makes one command's write: an append, or an instance's mkdir or
// rmdir.
func write(w tracefs.Writer, k emit.Kind, file, line string) error {
	if k == emit.KindDir {
		if line == "mkdir" {
			return w.Mkdir(file)
		}
		return w.Rmdir(file)
	}
	return w.Append(file, line)
}

// gone reports whether what a removal command removes is no longer listed
// in its file. Removing a join trigger whose variables are already gone
// fails while parsing (EINVAL), not with ENOENT, so teardown asks the
// listing instead.
func gone(logs fs.FS, c Command) bool {
	if logs == nil || c.Marker == "" {
		return false
	}
	data, err := fs.ReadFile(logs, c.File)
	if err != nil {
		return false // cannot tell: report the failure
	}
	return !strings.Contains(string(data), c.Marker)
}

// readErrorLog reads the kernel's error_log, if there is one.
func readErrorLog(fsys fs.FS) []tracefs.ErrorLogEntry {
	if fsys == nil {
		return nil
	}
	data, err := fs.ReadFile(fsys, "error_log")
	if err != nil {
		return nil
	}
	return tracefs.ParseErrorLog(string(data))
}

// reportWrite explains a failed write at the SQL position of its command,
// with the kernel's own words when the write left them in error_log.
func reportWrite(e env, src *source.Source, root string, c Command, err error, kernel []tracefs.ErrorLogEntry) {
	var d source.Diags
	x := d.Add(c.Pos, c.End, "the kernel refused the %s: %v", c.What, errnoText(err))
	if len(kernel) > 0 {
		k := kernel[len(kernel)-1]
		x.Msg = fmt.Sprintf("the kernel refused the %s: %s", c.What, k.Error)
		var b strings.Builder
		b.WriteString("the kernel's error_log:")
		for _, k := range kernel {
			fmt.Fprintf(&b, "\n  %s: error: %s\n    Command: %s", k.Location, k.Error, k.Command)
			if k.Offset >= 0 {
				fmt.Fprintf(&b, "\n             %s^", strings.Repeat(" ", k.Offset))
			}
		}
		x.Hint = b.String()
	} else {
		x.Hint = fmt.Sprintf("writing %s to %s", emit.Quote(c.Line), filepath.Join(root, c.File))
	}
	io.WriteString(e.stderr, d.Render(src))
}

// errnoText is the system's message for a failed write, without the path.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// executeTarget checks, before anything is written, that the tracefs to
// write to is there: the -t directory, or (when -t was not given) where
// /proc/mounts says tracefs is mounted. sqlhist never mounts it. The event
// catalog is then that tracefs, the kernel that will run the commands.
func (o *options) executeTarget(e env, explicit bool) int {
	if o.formats != "" || o.kernel != "" {
		return usageError(e, "-e compiles against the tracefs it writes to: drop --formats and --kernel")
	}
	found := tracefsAt(e, o.tracefsDir) != nil
	if !found && !explicit {
		if m := tracefsMount(e); m != "" && tracefsAt(e, m) != nil {
			o.tracefsDir, found = m, true
		}
	}
	if found {
		o.formats = o.tracefsDir
		return o.checkWritable(e)
	}
	fmt.Fprintf(e.stderr, "sqlhist: no tracefs at %s (sqlhist does not mount it); as root: mount -t tracefs nodev %s\n", o.tracefsDir, o.tracefsDir)
	return exitQuery
}

// checkWritable refuses, before anything is written, a tracefs this
// process cannot write to (not root, a read-only mount).
func (o *options) checkWritable(e env) int {
	if e.writable == nil {
		return exitOK
	}
	for _, f := range []string{"dynamic_events", "synthetic_events"} {
		p := filepath.Join(o.tracefsDir, f)
		err := e.writable(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: cannot write to the tracefs at %s: %v (run as root)\n", o.tracefsDir, errnoText(err))
			return exitQuery
		}
		return exitOK
	}
	return exitOK
}

// tracefsAt returns dir as a file system when it holds events/, else nil.
func tracefsAt(e env, dir string) fs.FS {
	fsys, err := e.dir(dir)
	if err != nil {
		return nil
	}
	if _, err := fs.Stat(fsys, "events"); err != nil {
		return nil
	}
	return fsys
}

// tracefsMount returns the first tracefs mount point in /proc/mounts.
func tracefsMount(e env) string {
	if e.mounts == nil {
		return ""
	}
	data, err := e.mounts()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[2] == "tracefs" {
			return f[1]
		}
	}
	return ""
}

// Command is emit's command type, named here for apply's signature.
type Command = emit.Command
