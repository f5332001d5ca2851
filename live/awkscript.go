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

// awkBufferKB is the per-CPU buffer of the script's instance, the
// stream engine's (streamBufferKB): awk falls behind a burst of events
// (a board's busybox awk reads a wakeup in about 0.4 ms of a 1 GHz CPU:
// docs/kernels.md), which the buffer holds until it catches up; 1024
// lost a quarter of 20,000 system calls made while awk could not run.
// A board without the memory fails the script's write, which removes
// what it made.
const awkBufferKB = 4096

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
	// Source is the query, and Target what it was compiled for
	// ("compiled for Linux 6.1.0-57-cloud-amd64 x86_64 (event formats:
	// …)"): both named in the script's header, when given.
	Source *source.Source
	Target string
	// BufferKB is the instance's ring buffer per CPU (--buffer-kb; 0:
	// awkBufferKB).
	BufferKB int
	// Args, when not nil, are the command line arguments that plan the
	// query again (the query's text last; see AwkQueryLine): the
	// script prints them first on its output, so that sqlhist read
	// turns a saved output into the results alone.
	Args []string
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
	ap.Setup = emit.StreamCommands(plan, evs, emit.StreamOptions{Instance: ap.Instance, CreateInstance: true, Clock: "global", BufferKB: awkBufferKB, Text: true})
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
			return awkInstancePrefix + "_" + u.Synth.Name
		}
	}
	for _, u := range plan.Units {
		for _, h := range []*planner.Hist{u.Start, u.End, u.Results} {
			if h != nil {
				return awkInstancePrefix + "_" + h.Event
			}
		}
	}
	return awkInstancePrefix
}

// awkInstancePrefix starts the name of an awk script's instance, and
// AwkProbeGroup is its probes' group.
const (
	awkInstancePrefix = "sqlawk"
	AwkProbeGroup     = "sqlawk"
)

// awkOwnSuffix joins an awk script's instance name and the process id of
// the script that owns it in the name of its lease: sqlawk_<name>_own_<pid>,
// an empty instance made before the script's and removed after it, so that
// --cleanup (and the script pasted again) can tell a killed script's
// instance from a running one's.
const awkOwnSuffix = "_own_"

// awkEndWait bounds, in seconds, the wait for the awk program to end
// after the end marker while it reads no event: one that reads nothing
// for so long (a program that cannot see the marker) is stopped, so that
// the instance is removed; one still reading the events before the
// marker is waited for.
const awkEndWait = 10

// WriteAwkScript prints the awk engine's script: a POSIX sh script, run
// in a subshell (an error leaves the shell it is pasted into), that
// takes its lease (an instance named after its process), makes its
// instance and sets it up (removing first what a killed script of the
// same query left, or saying which script still runs it), reads
// trace_pipe into the awk program until the duration passes or a signal
// comes, ends the program with a line to trace_marker (it prints the hist
// files then), and removes the instance and the lease. Every string is
// quoted by emit.Quote; the query and the target, in its header, are
// comments.
func WriteAwkScript(w io.Writer, ap *AwkPlan, opt AwkScriptOptions) error {
	root := opt.Root
	if root == "" {
		root = "/sys/kernel/tracing"
	}
	instPath := path.Join(root, "instances", ap.Instance)
	inst := emit.Quote(instPath)
	var b strings.Builder
	if opt.Target != "" {
		b.WriteString("# sqlhist: " + commentText(opt.Target) + "\n")
	}
	what := "The query"
	if src := opt.Source; src != nil {
		what += " (" + commentText(src.Name) + ")"
	}
	b.WriteString("# " + what + ", computed by awk from trace_pipe (for kernels without hist triggers)")
	if src := opt.Source; src != nil {
		b.WriteString(":\n")
		for _, l := range strings.Split(strings.TrimRight(src.Text, "\n"), "\n") {
			b.WriteString("#   " + commentText(l) + "\n")
		}
	} else {
		b.WriteString(".\n")
	}
	b.WriteString("# Run it with sh (busybox ash, dash, mksh, bash) as root; it needs awk (busybox's,\n")
	b.WriteString("# mawk, gawk or original-awk). It prints the hist files of the results when it stops:\n# ")
	if opt.Duration > 0 {
		fmt.Fprintf(&b, "after %s s, or ", seconds(opt.Duration))
	}
	b.WriteString("at Ctrl-C (or kill -INT of its shell). It then removes its instance\n")
	b.WriteString("# (" + ap.Instance + ") and its lease (" + ap.Instance + awkOwnSuffix + "PID); sqlhist --cleanup\n")
	b.WriteString("# removes what a killed one left.\n")
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
	// The subshell's own process id ($$ is the outer shell's): the lease
	// names the process that removes the instance.
	b.WriteString("sqlhist_pid=$(exec sh -c 'echo $PPID')\n")
	b.WriteString("sqlhist_own=" + emit.Quote(instPath+awkOwnSuffix) + "$sqlhist_pid\n")
	probeUndo := func(indent string) {
		for i := len(probes) - 1; i >= 0; i-- {
			u := probes[i]
			u.Line = u.Undo
			b.WriteString(indent + emit.Line(u, root) + " 2>/dev/null\n")
		}
	}
	b.WriteString("sqlhist_undo() {\n")
	probeUndo("\t")
	b.WriteString("\trmdir " + inst + "\n\trmdir \"$sqlhist_own\"\n}\n")
	marker := emit.Quote(path.Join(instPath, "trace_marker"))
	// The end: the instance's events off, then the marker. With the
	// events still on, an awk slower than them (a busy event, a small
	// buffer) never saw the marker: the kernel wrote over it before awk
	// came to it, and the script ran as long as the events came (a
	// guest's syscall counts under load, -d 2: still running at 60 s).
	// Nothing is written after the marker now; awk reads what the buffer
	// still holds, then the marker.
	end := awkStopEvents(instPath) + "; echo " + emit.Quote(AwkMarker) + " >> " + marker
	// An instance of the same query: a running script's (its lease's
	// process exists) is left alone; a killed one's is removed, its awk
	// (if it outlived the script) ended by the marker.
	b.WriteString("if [ -d " + inst + " ]; then\n")
	b.WriteString("\tsqlhist_old=\n")
	b.WriteString("\tfor sqlhist_o in " + emit.Quote(instPath+awkOwnSuffix) + "*; do\n")
	b.WriteString("\t\t[ -d \"$sqlhist_o\" ] || continue\n")
	b.WriteString("\t\tsqlhist_p=${sqlhist_o##*" + awkOwnSuffix + "}\n")
	b.WriteString("\t\tif [ -d \"/proc/$sqlhist_p\" ]; then\n")
	b.WriteString("\t\t\techo \"sqlhist: " + ap.Instance + " is in use by the script of process $sqlhist_p, still running: wait for it, or stop it (kill -INT $sqlhist_p); two scripts of one query do not run at once\" >&2\n")
	b.WriteString("\t\t\texit 1\n\t\tfi\n")
	b.WriteString("\t\tsqlhist_old=\"$sqlhist_old $sqlhist_p\"\n")
	b.WriteString("\tdone\n")
	b.WriteString("\tif [ -z \"$sqlhist_old\" ]; then\n")
	b.WriteString("\t\tprintf 'sqlhist: %s exists and no script owns it (one printed by an older sqlhist, or one starting now); if none runs, remove it: echo 0 >> %s; echo %s >> %s; rmdir %s\\n' " +
		inst + " " + emit.Quote(path.Join(instPath, "events", "enable")) + " " + emit.Quote(AwkMarker) + " " + marker + " " + inst + " >&2\n")
	b.WriteString("\t\texit 1\n\tfi\n")
	b.WriteString("\techo \"sqlhist: removing what a killed script of this query left (" + ap.Instance + ", of process$sqlhist_old, which is gone)\" >&2\n")
	b.WriteString("\t" + end + " 2>/dev/null\n")
	probeUndo("\t")
	b.WriteString("\tsqlhist_n=0\n")
	b.WriteString("\tuntil rmdir " + inst + " 2>/dev/null; do\n")
	fmt.Fprintf(&b, "\t\tsqlhist_n=$((sqlhist_n + 1)); [ $sqlhist_n -lt %d ] || { echo \"sqlhist: cannot remove %s: a process still reads its trace_pipe\" >&2; exit 1; }\n", awkEndWait, ap.Instance)
	b.WriteString("\t\tsleep 1\n\tdone\n")
	b.WriteString("\tfor sqlhist_p in $sqlhist_old; do rmdir " + emit.Quote(instPath+awkOwnSuffix) + "$sqlhist_p; done\n")
	b.WriteString("fi\n")
	b.WriteString("mkdir \"$sqlhist_own\" || exit 1\n")
	b.WriteString("echo 4 >> \"$sqlhist_own/buffer_size_kb\"\n")
	for _, c := range ap.Setup {
		if c.Kind == emit.KindDir {
			b.WriteString("mkdir " + inst + " || { rmdir \"$sqlhist_own\"; exit 1; }\n")
			// The awk ends at a line written to trace_marker, which an
			// instance made while the top level's markers option is off
			// refuses (the option is the top level's alone, copied when
			// the instance is made): under load the script would run
			// until killed. Refused before any event is enabled.
			b.WriteString("if grep -qx nomarkers " + emit.Quote(path.Join(instPath, "trace_options")) + " 2>/dev/null; then\n")
			b.WriteString("\tprintf 'sqlhist: the markers option of the top level is off, and %s took it: the kernel refuses the line to trace_marker that ends the awk; turn it on (echo markers >> %s) and paste the script again\\n' " +
				emit.Quote(ap.Instance) + " " + emit.Quote(path.Join(root, "trace_options")) + " >&2\n")
			b.WriteString("\tsqlhist_undo; exit 1\nfi\n")
			continue
		}
		if c.Kind == emit.KindSetting && path.Base(c.File) == "buffer_size_kb" && opt.BufferKB > 0 {
			c.Line = strconv.Itoa(opt.BufferKB)
		}
		b.WriteString(emit.Line(c, root) + " || { sqlhist_undo; exit 1; }\n")
	}
	// mawk reads its input in blocks and waits for a block to fill: the
	// last events and the end marker would wait for more events (forever
	// on a quiet event). -W interactive makes it read lines as they come
	// (mawk's alone: the other awks refuse or ignore -W).
	if opt.Args != nil {
		b.WriteString("printf '%s\\n' " + emit.Quote(AwkQueryLine(opt.Args)) + "\n")
	}
	b.WriteString("case $(awk -W version 2>&1 < /dev/null) in *mawk*) sqlhist_w='-W interactive' ;; *) sqlhist_w= ;; esac\n")
	b.WriteString("LC_ALL=C awk $sqlhist_w " + emit.Quote(ap.Program) + " < " + emit.Quote(path.Join(instPath, "trace_pipe")) + " &\n")
	b.WriteString("sqlhist_awk=$!\n")
	// Each sleep is waited for with a trap, so that kill ends a loop at
	// once in every shell (mksh's subshell outlives a TERM while its
	// foreground sleep runs).
	sleep := func(d time.Duration) string {
		return "sleep " + seconds(d) + " & sqlhist_s=$!; wait $sqlhist_s; "
	}
	// The background loops act only while the script's lease is there:
	// once a killed script's leftovers are removed (by --cleanup, or by
	// the same query pasted again), its orphaned timer must not end a new
	// script's awk with its marker, nor kill a process that took its
	// awk's pid.
	owned := "[ -d \"$sqlhist_own\" ] || exit; "
	tickLine := "echo " + emit.Quote(AwkTick) + " >> " + marker
	tick := owned + tickLine + " || exit; "
	// The end marker, then the watchdog: an awk that has not ended
	// within awkEndWait seconds of it (one that cannot see it) is
	// stopped, and the script goes on to remove its instance.
	// An awk still reading the events before the marker (behind a burst
	// its buffer held) is waited for: the watchdog counts the seconds
	// in which the instance's read events did not change.
	stats := emit.Quote(path.Join(instPath, "per_cpu")) + "/cpu*/stats"
	dog := fmt.Sprintf("sqlhist_rd=; sqlhist_i=0; while [ $sqlhist_i -lt %d ]; do %s%ssqlhist_n=$(cat %s 2>/dev/null | grep '^read events'); if [ \"$sqlhist_n\" = \"$sqlhist_rd\" ]; then sqlhist_i=$((sqlhist_i + 1)); else sqlhist_rd=$sqlhist_n; sqlhist_i=0; fi; done; %skill $sqlhist_awk 2>/dev/null && echo \"sqlhist: awk read no event for %d s after the end marker: stopped, its results are lost\" >&2",
		awkEndWait, sleep(time.Second), owned, stats, owned, awkEndWait)
	timed := owned + end + "; " + dog
	switch {
	case opt.Interval > 0 && opt.Duration > 0:
		// The ticks, as many as whole intervals end before the duration
		// does (the last interval is the end's), then the rest of the
		// duration and the end marker, in one process: no tick can
		// follow the end (a tick that cannot be written ends the ticks,
		// not the end marker).
		n := int((opt.Duration - 1) / opt.Interval)
		b.WriteString("sqlhist_n=0\n")
		b.WriteString("( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; " + fmt.Sprintf("while [ $sqlhist_n -lt %d ]", n) + "; do " + sleep(opt.Interval) + owned + tickLine + " || break; " + "sqlhist_n=$((sqlhist_n + 1)); done; " + sleep(opt.Duration-time.Duration(n)*opt.Interval) + timed + " ) < /dev/null > /dev/null &\n")
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
		b.WriteString("( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; " + sleep(opt.Duration) + timed + " ) < /dev/null > /dev/null &\n")
		b.WriteString("sqlhist_timer=$!\n")
	}
	// A signal ends the waits, never the script: it goes on to end the
	// awk and remove what it made, however many signals come.
	b.WriteString("trap : INT TERM HUP\n")
	b.WriteString("wait $sqlhist_awk\n")
	// From here on Ctrl-C is ignored, by the shell and by the commands it
	// starts (an ignored signal is inherited, a trap is not): a second
	// one killed an rmdir of the removals, or the shell itself once its
	// trap was reset, and left the instance (and an awk reading it).
	b.WriteString("trap '' INT HUP\n")
	if opt.Duration > 0 {
		b.WriteString("kill $sqlhist_timer 2>/dev/null\nwait $sqlhist_timer 2>/dev/null\n")
	}
	if opt.Interval > 0 && opt.Duration <= 0 {
		b.WriteString("kill $sqlhist_tick 2>/dev/null\nwait $sqlhist_tick 2>/dev/null\n")
	}
	// After a signal the awk still runs: the marker ends it, and the
	// watchdog stops it if it has not ended within awkEndWait seconds.
	b.WriteString("if kill -0 $sqlhist_awk 2>/dev/null; then\n")
	b.WriteString("\t" + end + "\n")
	b.WriteString("\t( trap 'kill $sqlhist_s 2>/dev/null; exit' TERM; " + dog + " ) < /dev/null > /dev/null &\n")
	b.WriteString("\tsqlhist_dog=$!\n")
	b.WriteString("\twhile kill -0 $sqlhist_awk 2>/dev/null; do wait $sqlhist_awk; done\n")
	b.WriteString("\tkill $sqlhist_dog 2>/dev/null\n\twait $sqlhist_dog 2>/dev/null\n")
	b.WriteString("fi\n")
	b.WriteString("sqlhist_undo\n)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// awkStopEvents is the shell command that turns off every event of the
// awk script's instance at instPath (its errors are of no use: an
// instance already gone, the script ends anyway).
func awkStopEvents(instPath string) string {
	return "echo 0 >> " + emit.Quote(path.Join(instPath, "events", "enable")) + " 2>/dev/null"
}

// commentText makes text safe on a comment line of a script: control
// characters (a newline would end the comment) become '?'.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
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
	opt.ProbeGroup = AwkProbeGroup
	if opt.Instance == "" {
		opt.Instance = awkInstancePrefix
	}
	opt.ResultsInstance = awkInstancePrefix
	return opt
}
