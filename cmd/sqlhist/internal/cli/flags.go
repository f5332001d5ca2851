package cli

import (
	_ "embed"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/exporter"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// newFlags defines the flags of sqlhist on o: --help, the man page and
// the completions are all made from these definitions.
func newFlags(o *options, stderr io.Writer) *pflag.FlagSet {
	fl := pflag.NewFlagSet("sqlhist", pflag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.SortFlags = false
	fl.StringVarP(&o.name, "name", "n", "", "the synthetic event `NAME` of the JOIN (default: <first>_to_<last> event; no effect, with a warning, without a JOIN)")
	fl.StringVarP(&o.file, "file", "f", "", "read SQL from `FILE` ('-' for stdin)")
	fl.StringVarP(&o.Root, "tracefs", "t", "/sys/kernel/tracing", "the tracefs `DIR` on the target: the root of printed paths, and where -e, -r and --cleanup write (libtracefs's -t only says where formats are read: here that is --formats)")
	fl.StringVar(&o.Formats, "formats", "", "read event formats from `DIR` (a tracefs or a copy); default: the -t dir when it holds events/, else the embedded catalog")
	fl.StringVar(&o.Kernel, "kernel", "", "use the embedded catalog of this kernel `VERSION` ("+tracefs.EmbeddedSummary()+")")
	fl.StringVar(&o.Arch, "arch", "", "the target's architecture `ARCH` (x86_64, arm64, arm, riscv64): picks --kernel's catalog and the registers and binaries probes may use; default: what the catalog or the machine tells, else x86_64")
	fl.BoolVarP(&o.execute, "execute", "e", false, "apply the commands to tracefs (all or nothing)")
	fl.BoolVar(&o.teardown, "teardown", false, "print (or with -e apply) the commands that remove what the query creates")
	fl.BoolVarP(&o.run, "run", "r", false, "apply, collect, print the results, then remove everything (in a private instance unless -B)")
	fl.StringVarP(&o.live.Duration, "duration", "d", "", "with -r: collect for `D` seconds (10, 0.5) or a duration (1m30s); default until Ctrl-C")
	fl.StringVarP(&o.live.Interval, "interval", "i", "", "with -r: print the results of each `I` seconds (or a duration) alone, then the total")
	fl.BoolVar(&o.live.Live, "live", false, "with -r on a terminal: redraw the results in place every -i (default 1s), most first, under a line with the elapsed time, the engine, the events lost and the totals; Ctrl-C leaves the last screen; to a pipe or a file it prints as -i does")
	fl.BoolVar(&o.live.Events, "events", false, "with -r: stream the synthetic events' trace lines instead of a table")
	fl.StringVarP(&o.live.Output, "output", "o", "", "print `FORMAT`: script (default), json (the plan of every write, for review) or bootconfig (boot-time tracing); with -r the results as table (default), json, csv, folded (stacks for flame graphs) or pprof (a gzipped profile)")
	fl.StringVar(&o.live.Metrics, "metrics", "", "with -r: serve the results as Prometheus metrics on `ADDR` (127.0.0.1:9101, :9101) at /metrics, read every -i or 5s, until Ctrl-C or -d")
	fl.StringVar(&o.dashboard, "metrics-dashboard", "", "with --metrics: write a Grafana dashboard of the run's metrics to `FILE` (JSON, before anything is applied): heatmaps, quantiles and rates, the data source and job as variables")
	fl.IntVar(&o.live.Series, "metrics-series", exporter.DefaultMetricSeries, "with --metrics: the `N` label sets a query keeps; the rest are counted as "+exporter.OtherLabel)
	fl.StringVar(&o.heatmap, "heatmap", "", "with -r and -i: draw the intervals as latency heatmaps (time across, log2 buckets up, events as colour) to `FILE`, rewritten every interval: an SVG picture, or a page of its own for a name ending in .html")
	fl.StringVar(&o.live.Engine, "engine", "auto", "with -r: `ENGINE` that answers: bpf (BPF programs compiled from the query, loaded by sqlhist on this machine: the cheapest), kernel (hist triggers and synthetic events), stream (sqlhist reads the events and computes the query: kernels without hist triggers) or auto (bpf where its programs load, then kernel where it can, then stream; --via targets never bpf); when printing, stream (or awk) prints a script whose awk computes the query on the target (the default for a --kernel or --formats catalog without hist triggers), with -d its run time")
	fl.StringVar(&o.live.Out, "out", "", "with -r: write the results to `FILE` instead of stdout (with -i, interval N to FILE with .N before its extension, the total to FILE); -o pprof needs it when stdout is a terminal")
	fl.StringVar(&o.initrd, "initrd", "", "with -o bootconfig: add the bootconfig to the initrd `FILE` (after the sqlhist bootconfigs it has), instead of printing it")
	fl.StringVar(&o.live.TeardownOut, "teardown-out", "", "when printing or with -e: also write the teardown script of the same compile to `FILE` (before anything is applied)")
	fl.StringVar(&o.live.PlanOut, "plan-out", "", "when printing a script or with -e: also write the JSON plan (-o json) of the same compile to `FILE`")
	fl.StringArrayVar(&o.planFiles, "plan", nil, "take the writes from the JSON plan `FILE` (-o json) instead of SQL: print them as a script, apply them with -e, remove them with --teardown -e; repeat to apply several plans in order, all or nothing (--teardown: the last first)")
	fl.IntVar(&o.live.BufferKB, "buffer-kb", 0, "with -r and the stream engine: the ring buffer of the run's instance or perf events, `N` KiB per CPU (buffer_size_kb; default 4096; perf events' is read each time it is half full too): a bigger one loses fewer events while the reader falls behind")
	fl.IntVar(&o.live.Size, "size", 0, "entries of each histogram's map (size=`N`, 128 to 131072; default 2048, and 8192 for the results of -r's JOINs), in scripts, plans, bootconfigs and -r")
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
	fl.IntVar(&o.viaJobs, "via-jobs", 8, "with a fleet: work on `N` targets at once")
	fl.DurationVar(&o.viaTimeout, "via-timeout", live.DefaultViaTimeout, "with --via: how long to wait for each answer from the target before giving it up (`DURATION`; a slow serial line, a loaded or emulated target need more)")
	fl.StringVar(&o.viaTrace, "via-trace", "", "with --via: write each command sent to the target, and when its answer came, to `FILE` (with several targets, FILE.1, FILE.2, …)")
	fl.BoolVarP(&o.help, "help", "h", false, "show this help")
	fl.BoolVar(&o.version, "version", false, "print the build's commit, Go version and architecture, and the embedded catalogs")
	// The values of the flags with a fixed set, for the completions.
	values := func(name, key string, vs []string) { fl.SetAnnotation(name, key, vs) }
	values("kernel", "values", EmbeddedVersions())
	values("arch", "values", ArchNames())
	values("engine", "values", Engines)
	values("output", "values", PrintFormats)
	values("output", "run-values", RunFormats)
	values("output", "merge-values", results.Formats) // sqlhist merge -o
	fl.Usage = func() { writeHelp(stderr, fl) }
	return fl
}

const usageHead = `usage: sqlhist [flags] [SQL ...]
       sqlhist merge [-o table|json|csv] FILE.json ...
       sqlhist heatmap [-o svg|html] [--keys N] FILE.json
       sqlhist read [-o table|json|csv] [FILE|-]
       sqlhist man | completion bash|zsh|fish

sqlhist compiles SQL over trace events into the tracefs commands that
create synthetic events and hist triggers, and prints them as a shell
script, applies them with -e, or runs them with -r: apply, collect for
-d, show the results, remove everything.

  sqlhist --kernel 6.1 -n wakeup_lat 'SELECT end.next_comm AS comm,
      start.pid, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
    FROM sched_waking AS start
    JOIN sched_switch AS end ON start.pid = end.next_pid'

flags:
`

const usageTail = `
commands:
  merge       merge what sqlhist -r -o json printed on several machines
  heatmap     draw what sqlhist -r -i N -o json printed as latency heatmaps
  read        print the results of a printed awk script's saved output
  man         print the man page sqlhist(1) (roff)
  completion  print the completion script of bash, zsh or fish

exit status: 0 ok, 1 bad query or failed apply, 2 bad usage.
`

// helpColumns is the width --help fits in.
const helpColumns = 80

// writeHelp prints the usage, the flags wrapped to helpColumns, the
// commands and the exit codes.
func writeHelp(w io.Writer, fl *pflag.FlagSet) {
	io.WriteString(w, usageHead+fl.FlagUsagesWrapped(helpColumns)+usageTail)
}

// flagDocs describes the flags for the man page and the completions.
func flagDocs(fl *pflag.FlagSet) []Flag {
	var fs []Flag
	fl.VisitAll(func(f *pflag.Flag) {
		arg, usage := pflag.UnquoteUsage(f)
		if arg == "bool" {
			arg = ""
		}
		if arg == "stringArray" {
			arg = "VALUE"
		}
		fs = append(fs, Flag{Name: f.Name, Short: f.Shorthand, Arg: arg, Usage: usage,
			Values: f.Annotations["values"], RunValues: f.Annotations["run-values"], MergeValues: f.Annotations["merge-values"]})
	})
	return fs
}

// manual is the man page's prose: sections under "== TITLE" lines; the
// OPTIONS section comes from the flags, after the first FLAGS-marked one.
//
//go:embed manual.txt
var manual string

// runDocs is sqlhist man and sqlhist completion SHELL.
func runDocs(args []string, e env) int {
	var o options
	fl := newFlags(&o, e.Stderr)
	if args[0] == "completion" {
		if len(args) != 2 {
			return usageError(e, "completion takes one shell: bash, zsh or fish")
		}
		if err := Completion(e.Stdout, args[1], "sqlhist", flagDocs(fl), []string{"merge", "heatmap", "read", "man", "completion"}); err != nil {
			return usageError(e, "%v", err)
		}
		return exitOK
	}
	if len(args) != 1 {
		return usageError(e, "man takes no arguments")
	}
	if err := Manual(e.Stdout, "sqlhist", "SQL over Linux trace events, as ftrace hist triggers", []string{
		"[flags] [SQL ...]", "merge [-o table|json|csv] FILE.json ...", "heatmap [-o svg|html] [--keys N] FILE.json", "read [-o table|json|csv] [FILE|-]", "man | completion bash|zsh|fish",
	}, manual, flagDocs(fl)); err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	return exitOK
}
