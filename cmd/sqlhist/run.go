package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
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
	// --formats). Tests serve directories from a txtar archive.
	dir func(path string) (fs.FS, error)
	// readFile reads -f FILE.
	readFile func(path string) ([]byte, error)
	// writer applies commands under the tracefs root (for --execute).
	writer func(root string) tracefs.Writer
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
	}
}

// options holds the parsed command line.
type options struct {
	name, tracefsDir, formats, file, kernel string
	execute, teardown, help                 bool
	onmax, onchange                         string
	snapshot, trace                         bool
	save                                    string
	instance                                string
}

const usageHead = `usage: sqlhist [flags] [SQL ...]

sqlhist compiles SQL over trace events into the tracefs commands that
create synthetic events and hist triggers, and prints them as a shell
script (or applies them with -e).

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
	fl.StringVarP(&o.onmax, "onmax", "m", "", "fire on a new maximum of the synthetic field `VAR` (onmax)")
	fl.StringVarP(&o.onchange, "onchange", "c", "", "fire when the synthetic field `VAR` changes (onchange)")
	fl.BoolVarP(&o.snapshot, "snapshot", "s", false, "with -m/-c: take a snapshot of the trace buffer")
	fl.StringVarP(&o.save, "save", "S", "", "with -m/-c: save the end event's `FIELDS` (comma-separated)")
	fl.BoolVarP(&o.trace, "trace", "T", false, "with -m/-c: fire the synthetic event only then")
	fl.StringVarP(&o.instance, "instance", "B", "", "put the triggers in the tracefs instance `NAME`")
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
	popt, code := o.plannerOptions(e)
	if code != exitOK {
		return code
	}
	src, code := o.source(fl.Args(), e)
	if code != exitOK {
		return code
	}
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	script, err := compiler.Parse(src)
	if err != nil {
		return report(e, src, err)
	}
	plan, diags := planner.Build(script, cat, popt)
	if len(diags) > 0 {
		io.WriteString(e.stderr, diags.Render(src))
	}
	if plan == nil {
		return exitQuery
	}
	feat := cat.Features()
	cmds := emit.Commands(plan, emit.Options{SyntheticEventsFile: !feat.DynamicEvents})
	if o.teardown {
		cmds = emit.Teardown(cmds)
	}
	if o.execute {
		return apply(e, o.tracefsDir, cmds)
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

func report(e env, src *compiler.Source, err error) int {
	var d compiler.Diags
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
		Snapshot: o.snapshot, Trace: o.trace, Instance: o.instance}
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
	return p, exitOK
}

// source reads the SQL: the arguments joined by spaces, or -f FILE.
func (o *options) source(args []string, e env) (*compiler.Source, int) {
	switch {
	case o.file != "" && len(args) > 0:
		return nil, usageError(e, "give the SQL either as arguments or with -f, not both")
	case o.file == "-":
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, usageError(e, "reading stdin: %v", err)
		}
		return compiler.NewSource("<stdin>", string(b)), exitOK
	case o.file != "":
		b, err := e.readFile(o.file)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
			return nil, exitQuery
		}
		return compiler.NewSource(o.file, string(b)), exitOK
	case len(args) == 0:
		return nil, usageError(e, "no SQL given")
	}
	return compiler.NewSource("<args>", strings.Join(args, " ")), exitOK
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
	if fsys, err := e.dir(o.tracefsDir); err == nil {
		if _, err := fs.Stat(fsys, "events"); err == nil {
			return tracefs.Open(fsys), exitOK
		}
	}
	fsys, err := tracefs.Embedded("")
	if err != nil {
		return nil, usageError(e, "no event catalog: %v", err)
	}
	return tracefs.Open(fsys), exitOK
}

// apply writes the commands in order; on the first failure it undoes the
// writes already made, in reverse, so tracefs is left as it was.
func apply(e env, root string, cmds []Command) int {
	w := e.writer(root)
	for i, c := range cmds {
		if err := w.Append(c.File, c.Line); err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %s: writing %s: %v\n", c.What, filepath.Join(root, c.File), err)
			for j := i - 1; j >= 0; j-- {
				if uerr := w.Append(cmds[j].File, cmds[j].Undo); uerr != nil {
					fmt.Fprintf(e.stderr, "sqlhist: undoing %s: %v\n", cmds[j].What, uerr)
				}
			}
			return exitQuery
		}
	}
	return exitOK
}

// Command is emit's command type, named here for apply's signature.
type Command = emit.Command
