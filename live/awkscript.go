package live

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// EngineAwk is the stream engine as a printed shell script: the events
// read from trace_pipe by one awk program on the target, which computes
// the query there (for kernels without hist triggers, and targets where
// sqlhist does not run).
const EngineAwk = "awk"

// AwkMarker is the text the script writes to its instance's
// trace_marker to end its awk program.
const AwkMarker = "sqlhist-awk-end"

// AwkTick is the text the script writes to its instance's trace_marker
// at the end of each interval (AwkScriptOptions.Interval): its awk
// program prints the hist files as they are then, after a line
// "==> interval N <==", and goes on.
const AwkTick = "sqlhist-awk-tick"

// awkBufferKB is the per-CPU buffer of the script's instance: a board
// may have little memory, and awk reads the events as they come.
const awkBufferKB = 1024

// AwkScriptOptions say how the awk engine's script is printed.
type AwkScriptOptions struct {
	// Root is the tracefs root in the script's paths.
	Root string
	// Duration ends the run after it; 0 runs until Ctrl-C (SIGINT, or
	// SIGTERM or SIGHUP).
	Duration time.Duration
	// Interval, when not 0, makes the awk program print the hist files
	// every Interval (counted from the start), as -i does: a loop in the
	// background writes AwkTick to the instance's trace_marker. A run
	// of Duration ticks only within it (the last interval is the end's).
	Interval time.Duration
	// Arch is the target's architecture (nil: x86_64), for .syscall
	// names and the size of a long.
	Arch *tracefs.Arch
}

// AwkPlan is what the awk engine's script is made of: its setup
// commands (the instance, the clock, the buffer, each event's filter and
// enable), the awk program, and the events whose hist files it prints.
type AwkPlan struct {
	Instance string
	Setup    []emit.Command
	Program  string
	Show     []string
}

// NewAwkPlan lowers a plan compiled for the stream engine
// (planner.Options.Stream, with Prepare) for the awk engine, against the
// catalog of the target: a query the text of trace_pipe cannot answer
// exactly, or that the awk engine does not compute, is refused, naming
// why, at the clause that needs it.
func NewAwkPlan(plan *planner.Plan, cat *tracefs.Catalog, arch *tracefs.Arch) (*AwkPlan, error) {
	for _, u := range plan.Units {
		if len(u.Probes) > 0 {
			p := u.Probes[0]
			return nil, awkDiag(p.Pos, p.End, "the awk engine reads events by their print format in the catalog, and a probe's is only made when the probe is created on the target: use -r (the stream engine) or a catalog with hist triggers")
		}
	}
	hists, synths := planHists(plan)
	if len(hists) == 0 {
		return nil, fmt.Errorf("the query has no histogram for the awk engine to compute")
	}
	if arch == nil {
		arch = tracefs.Arches[0]
	}
	long := arch.LongSize()
	m, err := stream.New(hists, synths, cat.Event, stream.Options{KernelFilters: true, LongSize: long})
	if err != nil {
		return nil, fmt.Errorf("the awk engine: %v", err)
	}
	ap := &AwkPlan{Instance: awkInstance(plan)}
	var evs []emit.StreamEvent
	for _, k := range m.Events() {
		sys, ev, _ := strings.Cut(k, "/")
		evs = append(evs, emit.StreamEvent{System: sys, Event: ev, Filter: m.Filter(sys, ev)})
	}
	ap.Setup = emit.StreamCommands(plan, evs, emit.StreamOptions{Instance: ap.Instance, CreateInstance: true, Clock: "global", BufferKB: awkBufferKB})
	for _, h := range hists {
		switch h.Role {
		case "results", "negatives", "histogram":
			k := h.System + "/" + h.Event
			if len(ap.Show) == 0 || ap.Show[len(ap.Show)-1] != k {
				ap.Show = append(ap.Show, k)
			}
		}
	}
	namer := tracefs.SyscallNamer(arch.Name, func(name string) bool {
		_, err := cat.Lookup("syscalls", "sys_enter_"+name)
		return err == nil
	})
	ap.Program, err = m.Awk(stream.AwkOptions{LongSize: long, Syscall: namer, Show: ap.Show, Marker: AwkMarker, Tick: AwkTick})
	if err != nil {
		return nil, awkRefusal(plan, hists, err)
	}
	return ap, nil
}

// awkRefusal positions a refusal of the awk engine at the clause of the
// trigger it names (the first trigger's when none is named).
func awkRefusal(plan *planner.Plan, hists []*planner.Hist, err error) error {
	msg := err.Error()
	for _, h := range hists {
		if strings.HasPrefix(msg, h.System+"/"+h.Event+":") && h.Pos != source.NoPos {
			return awkDiag(h.Pos, h.End, "the awk engine cannot answer this: %s", msg)
		}
	}
	for _, h := range hists {
		if h.Pos != source.NoPos {
			return awkDiag(h.Pos, h.End, "the awk engine cannot answer this: %s", msg)
		}
	}
	return fmt.Errorf("the awk engine cannot answer this: %s", msg)
}

func awkDiag(pos, end source.Pos, format string, args ...any) error {
	var d source.Diags
	d.Add(pos, end, format, args...)
	return d
}

// awkInstance names the script's instance after the query: its
// synthetic event's name, or its first event's.
func awkInstance(plan *planner.Plan) string {
	for _, u := range plan.Units {
		if u.Synth != nil {
			return "sqlawk_" + u.Synth.Name
		}
	}
	for _, u := range plan.Units {
		for _, h := range []*planner.Hist{u.Start, u.End, u.Results} {
			if h != nil {
				return "sqlawk_" + h.Event
			}
		}
	}
	return "sqlawk"
}

// WriteAwkScript prints the awk engine's script: a POSIX sh script, run
// in a subshell (an error leaves the shell it is pasted into), that
// makes its instance and sets it up, reads trace_pipe into the awk
// program until the duration passes or a signal comes, ends the program
// with a line to trace_marker (it prints the hist files then), and
// removes the instance. Every string is quoted by emit.Quote.
func WriteAwkScript(w io.Writer, ap *AwkPlan, opt AwkScriptOptions) error {
	root := opt.Root
	if root == "" {
		root = "/sys/kernel/tracing"
	}
	inst := emit.Quote(path.Join(root, "instances", ap.Instance))
	var b strings.Builder
	b.WriteString("# sqlhist: the query computed by awk from trace_pipe, for kernels without hist triggers.\n")
	b.WriteString("# Run it with sh (busybox ash, dash, mksh, bash) as root; it needs awk. It prints\n")
	b.WriteString("# the hist files of the results when it stops")
	if opt.Duration > 0 {
		fmt.Fprintf(&b, " (after %s s, or at Ctrl-C)", seconds(opt.Duration))
	} else {
		b.WriteString(" (Ctrl-C)")
	}
	b.WriteString(", then removes its instance.\n")
	if opt.Interval > 0 {
		fmt.Fprintf(&b, "# Every %s s it prints them as they are then (counted from the start), after a line\n# \"==> interval N <==\".\n", seconds(opt.Interval))
	}
	b.WriteString("(\n")
	var probes []emit.Command
	for _, c := range ap.Setup {
		if c.Kind == emit.KindProbe {
			probes = append(probes, c)
		}
	}
	b.WriteString("sqlhist_undo() {\n")
	for i := len(probes) - 1; i >= 0; i-- {
		u := probes[i]
		u.Line = u.Undo
		b.WriteString("\t" + emit.Line(u, root) + " 2>/dev/null\n")
	}
	b.WriteString("\trmdir " + inst + "\n}\n")
	for _, c := range ap.Setup {
		if c.Kind == emit.KindDir {
			b.WriteString("mkdir " + inst + " || exit 1\n")
			continue
		}
		b.WriteString(emit.Line(c, root) + " || { sqlhist_undo; exit 1; }\n")
	}
	b.WriteString("LC_ALL=C awk " + emit.Quote(ap.Program) + " < " + emit.Quote(path.Join(root, "instances", ap.Instance, "trace_pipe")) + " &\n")
	b.WriteString("sqlhist_awk=$!\n")
	marker := emit.Quote(path.Join(root, "instances", ap.Instance, "trace_marker"))
	// Each sleep is waited for with a trap, so that kill ends a loop at
	// once in every shell (mksh's subshell outlives a TERM while its
	// foreground sleep runs).
	sleep := func(d time.Duration) string {
		return "sleep " + seconds(d) + " & sqlhist_s=$!; wait $sqlhist_s; "
	}
	tick := "echo " + emit.Quote(AwkTick) + " >> " + marker + " || exit; "
	end := "echo " + emit.Quote(AwkMarker) + " >> " + marker
	switch {
	case opt.Interval > 0 && opt.Duration > 0:
		// The ticks, as many as whole intervals end before the duration
		// does (the last interval is the end's), then the rest of the
		// duration and the end marker, in one process: no tick can
		// follow the end (a tick that cannot be written ends the ticks,
		// not the end marker).
		n := int((opt.Duration - 1) / opt.Interval)
		b.WriteString("sqlhist_n=0\n")
		b.WriteString("( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; " + fmt.Sprintf("while [ $sqlhist_n -lt %d ]", n) + "; do " + sleep(opt.Interval) + strings.Replace(tick, "|| exit", "|| break", 1) + "sqlhist_n=$((sqlhist_n + 1)); done; " + sleep(opt.Duration-time.Duration(n)*opt.Interval) + end + " ) < /dev/null > /dev/null 2>&1 &\n")
		b.WriteString("sqlhist_timer=$!\n")
	case opt.Interval > 0:
		// The ticks until stopped.
		b.WriteString("( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; while :; do " + sleep(opt.Interval) + tick + "done ) < /dev/null > /dev/null 2>&1 &\n")
		b.WriteString("sqlhist_tick=$!\n")
	case opt.Duration > 0:
		// The duration ends the awk with the end marker, and the script
		// waits for the awk: whatever ends it (the duration, a signal
		// here, the marker written from elsewhere, as --via does at
		// Ctrl-C) ends the run at once.
		b.WriteString("( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; " + sleep(opt.Duration) + end + " ) < /dev/null > /dev/null 2>&1 &\n")
		b.WriteString("sqlhist_timer=$!\n")
	}
	b.WriteString("trap : INT TERM HUP\n")
	b.WriteString("wait $sqlhist_awk\n")
	if opt.Duration > 0 {
		b.WriteString("kill $sqlhist_timer 2>/dev/null\nwait $sqlhist_timer 2>/dev/null\n")
	}
	if opt.Interval > 0 && opt.Duration <= 0 {
		b.WriteString("kill $sqlhist_tick 2>/dev/null\nwait $sqlhist_tick 2>/dev/null\n")
	}
	// After a signal the awk still runs: the marker ends it.
	b.WriteString("if kill -0 $sqlhist_awk 2>/dev/null; then\n\techo " + emit.Quote(AwkMarker) + " >> " + marker + "\n\twait $sqlhist_awk\nfi\n")
	b.WriteString("trap - INT TERM HUP\n")
	b.WriteString("sqlhist_undo\n)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// seconds prints a duration as sleep reads it: "10", "0.5".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// AwkPrepare sets the planner's options for the awk engine's script: a
// plan made as --run makes it (results histograms), for the stream
// engine, with names that do not depend on the process (a printed script
// is the same every time).
func AwkPrepare(opt planner.Options) planner.Options {
	opt.Run, opt.Stream = true, true
	if opt.Name == "" {
		opt.Suffix = "awk"
	}
	opt.ProbeGroup = "sqlawk"
	if opt.Instance == "" {
		opt.Instance = "sqlawk"
	}
	opt.ResultsInstance = "sqlawk"
	return opt
}
