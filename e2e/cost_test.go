package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The kernel cost benchmark (make bench-kernel). In one boot with one
// vCPU and instruction-counted time (qemu's -icount shift=0: the guest's
// clock advances one nanosecond per instruction executed, so a guest
// nanosecond is an instruction and the host's load does not reach the
// figures), a fixed workload (e2e/testdata/cload: system calls, pipe
// ping-pong wakeups, opens; C, so that nothing else runs) runs bare and
// under each shape of tracing, in interleaved rounds. Each shape's cost is
// its overhead per event of the question it answers — per system call,
// per wakeup, per call of the function — (traced − bare) / events, with
// the events counted in a run of their own; its spread is the range of the
// per-round figures over their median.
//
// The stream engine's shapes run sqlhist -r --engine stream in the guest,
// started by the workload before its parts (load … TRACER): its reading
// and computing is guest work too. The SCHED_FIFO workload keeps it off
// the one CPU during the parts, so the traced figure is the part's time
// (the kernel writing the events into the ring buffer) plus the CPU time
// sqlhist takes from the workload's SIGINT to its exit (reading the
// buffer, computing the triggers, printing; and removing its instance,
// which costs the same however many events there were: a row of its own,
// run over no workload, gives that part). Its wall time then also holds
// the guest's idle waits for RCU grace periods, which count no work.

// The questions of the benchmark.
const (
	costWakeup     = `SELECT start.pid, end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	costWakeupAgg  = `SELECT CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY lat`
	costSyscount   = `SELECT CAST(id AS SYSCALL) AS sys, COUNT(*) FROM sys_enter GROUP BY sys`
	costFuncLat    = `SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(do_sys_openat2) AS start JOIN kretprobe(do_sys_openat2) AS end ON start.common_pid = end.common_pid GROUP BY ns`
	costFuncLatFn  = "do_sys_openat2"
	costRunID      = 4242
	costTraceRoot  = "$T"
	costCountProbe = "p:costcount/open do_sys_openat2"

	// The wakeup JOIN the stream engine is measured on (the run phase's).
	costWakeupStream = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
)

// costShape is one way of tracing a part of the workload: tracefs writes
// (applied in order, removed as sqlhist removes them), a BPF tool started
// in the background before the workload and stopped after it, or a query
// sqlhist -r --engine stream answers in the guest, started and stopped by
// the workload.
type costShape struct {
	name   string // the name on its "cost" line; "" for the breakdown rows
	about  string
	part   string // "syscalls", "wakeups" or "opens"
	cmds   []emit.Command
	tool   string // a libbpf-tools command line (BPF shapes)
	stream string // the query of a stream shape
	// engine is the engine a stream shape's sqlhist -r runs: "" for
	// stream, "bpf" for the BPF engine (its programs' time is the
	// guest's task time too: a program runs in the traced task).
	engine string
	// awk is the script of an awk shape: the query as sqlhist prints it
	// for the awk engine, run by the guest's sh (busybox: its awk) and
	// started and stopped by the workload as a stream shape's sqlhist
	// is; its shell's and its awk's CPU time after the part counted.
	awk string
	// awkBin is the awk the awk script runs: "" for the guest's busybox
	// awk, "mawk" for the host's mawk (Debian's and Raspberry Pi OS's
	// awk) with its libraries, at /opt/mawk (costMawkFiles).
	awkBin string
	// empty runs the workload with none of its parts (what stopping a
	// stream shape's sqlhist costs however many events it read).
	empty bool
}

// costCmd is a hand-written write: a line appended to file, undone by undo.
func costCmd(kind emit.Kind, file, line, undo string) emit.Command {
	return emit.Command{Kind: kind, File: file, Line: line, Undo: undo}
}

func costTrigger(file, line string) emit.Command {
	return costCmd(emit.KindTrigger, file, line, "!"+line)
}

func costSynth(def string) emit.Command {
	name, _, _ := strings.Cut(strings.TrimPrefix(def, "s:"), " ")
	return costCmd(emit.KindSynth, "dynamic_events", def, "-:"+name)
}

// libtracefs's lowering of the wakeup JOIN, written out from
// ../shared/docs/anchor-sqlhist.md (2.3, 2.5, 2.6 and the E1 example):
// every selected start field is saved in a variable, and every selected
// value copied again into a variable of the end trigger.
func libtracefsWakeup() []emit.Command {
	return []emit.Command{
		costSynth("s:wl pid_t pid; char comm[16]; u64 lat"),
		costTrigger("events/sched/sched_waking/trigger", "hist:keys=pid:__arg_1=pid,__arg_2=common_timestamp.usecs"),
		costTrigger("events/sched/sched_switch/trigger", "hist:keys=next_pid:__pid_3=$__arg_1,__comm_4=next_comm,__lat_5=common_timestamp.usecs-$__arg_2:onmatch(sched.sched_waking).trace(wl,$__pid_3,$__comm_4,$__lat_5)"),
	}
}

// How costCompile lowers a query.
const (
	costPrinted   = iota
	costRun       // as --run applies it
	costRunBefore // as --run applied it before the results histograms went in the lease
)

// costCompile lowers a query with the kernel's embedded catalog: as
// printed, or as --run applies it, in its instance sqlhist_<id> with its
// results histogram in its lease (which the run takes before; made here).
func costCompile(t *testing.T, kernel, name, sql string, how int) []emit.Command {
	t.Helper()
	fsys, err := tracefs.Embedded(strings.TrimSuffix(kernel, "-hist"))
	if err != nil {
		t.Fatal(err)
	}
	opt := planner.Options{Name: name}
	run := how != costPrinted
	if run {
		opt = live.Prepare(opt, costRunID)
	}
	if how == costRunBefore {
		opt.ResultsInstance = ""
	}
	src := source.NewSource(name+".sql", sql)
	cat := tracefs.Open(fsys)
	plan, diags := live.Compile(src, cat, opt)
	if plan == nil {
		t.Fatalf("compiling %s: %s", sql, diags.Render(src))
	}
	eopt := emit.Options{SyntheticEventsFile: !cat.Features().DynamicEvents}
	if run {
		lease := emit.Instance(live.LeaseName(costRunID))
		return append([]emit.Command{lease}, emit.RunCommands(plan, eopt, emit.RunOptions{Instance: live.InstancePrefix + strconv.Itoa(costRunID), CreateInstance: true})...)
	}
	return emit.Commands(plan, eopt)
}

// costWrites is the shell that applies cmds (or, with remove, removes
// them as sqlhist's teardown does: disables first, in reverse).
func costWrites(cmds []emit.Command, remove bool) string {
	if remove {
		cmds = emit.DisableFirst(emit.Teardown(cmds), "")
	}
	var b strings.Builder
	for _, c := range cmds {
		if c.Kind == emit.KindDir {
			fmt.Fprintf(&b, "%s $T/%s\n", c.Line, c.File)
			continue
		}
		fmt.Fprintf(&b, "echo %s >> $T/%s\n", emit.Quote(c.Line), c.File)
	}
	return b.String()
}

// costProfile is a host directory where the stream shapes' CPU profiles
// of the last round go (SQLHIST_COST_PROFILE; shapeN.pprof, N the shape's
// index), written by sqlhist in the guest (SQLHIST_CPUPROFILE).
var costProfile = os.Getenv("SQLHIST_COST_PROFILE")

// costRounds is how many interleaved rounds run (SQLHIST_COST_ROUNDS).
var costRounds = envInt("SQLHIST_COST_ROUNDS", 5)

// The workload of one run, by part. Under -icount shift=0 a system call
// takes a few hundred guest ns and a wakeup round trip a few thousand.
var costWork = map[string]int{"syscalls": 20000, "wakeups": 2000, "opens": 4000}

var costParts = []string{"syscalls", "wakeups", "opens"}

// costArgs is the load's command line for one part (all with "", none
// with "none").
func costArgs(part string) string {
	var a []string
	for _, p := range costParts {
		n := costWork[p]
		if part == "none" || part != "" && p != part {
			n = 0
		}
		a = append(a, strconv.Itoa(n))
	}
	return strings.Join(a, " ")
}

// TestKernelCost runs the benchmark when SQLHIST_BENCH_KERNEL=1 (make
// bench-kernel), on $SQLHIST_KERNELS (default 6.1; x86-64 kernels: the
// workload is built with the host's gcc).
func TestKernelCost(t *testing.T) {
	if os.Getenv("SQLHIST_BENCH_KERNEL") != "1" {
		t.Skip("set SQLHIST_BENCH_KERNEL=1 (make bench-kernel) to measure what the triggers cost the kernel")
	}
	needKernels(t)
	load := cBuildStatic(t, "testdata/cload/load.c")
	kernels := []string{"6.1"}
	if k := os.Getenv("SQLHIST_KERNELS"); k != "" {
		kernels = strings.Split(k, ",")
	}
	var lines []string
	for _, kname := range kernels {
		t.Run(kname, func(t *testing.T) {
			k, err := vm.LookupKernel(kname)
			if err != nil {
				t.Fatal(err)
			}
			if k.DebArch() != "amd64" {
				t.Fatalf("the cost benchmark runs on x86-64 kernels (%s is %s)", kname, k.DebArch())
			}
			shapes := costShapes(t, kname)
			files := []vm.File{{Path: "/work/bin/load", Mode: 0o755, Data: load},
				{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")}}
			if os.Getenv("SQLHIST_COST_NOBPF") != "1" {
				files = append(files, bpfToolsFor(t, "amd64")...)
				files = append(files, vm.File{Path: "/usr/sbin/bpfempty", Mode: 0o755, Data: goBuildStatic(t, "./testdata/bpfempty", "amd64")})
			}
			files = append(files, costAwkFiles(t, shapes)...)
			// One CPU: the ping-pong then runs the same way every time;
			// -icount shift=0,sleep=off: the guest's clock counts its
			// instructions, and idle time jumps to the next timer.
			res := boot(t, kname, vm.Guest{Script: costScript(shapes), CombinedOutput: true, Timeout: time.Duration(envInt("SQLHIST_COST_TIMEOUT_MIN", 30)) * time.Minute, CPUs: 1,
				QemuArgs: []string{"-icount", "shift=0,sleep=off"}, Cmdline: vm.CostCmdline, Files: files, Collect: costCollect()})
			costSaveProfiles(t, res.Files)
			report, costs, err := costReport(shapes, res.Stdout)
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Stdout)
			}
			t.Logf("%s (%s), %s: %d rounds, each shape after a bare run of its part\n%s", kname, res.Kernel.Release,
				time.Now().UTC().Format("2006-01-02"), costRounds, report)
			for _, c := range costs {
				lines = append(lines, c)
			}
		})
	}
	// The summary make bench-kernel ends with, one line per named shape.
	for _, l := range lines {
		fmt.Println(l)
	}
}

// costShapes are the shapes of the benchmark on a kernel: the named ones
// first, then the breakdown of the wakeup JOIN.
func costShapes(t *testing.T, kname string) []costShape {
	wakeup := costCompile(t, kname, "wl", costWakeup, costPrinted)
	shapes := []costShape{
		{name: "sqlhist-wakeup", about: "wakeup JOIN as sqlhist prints it", part: "wakeups", cmds: wakeup},
		{name: "sqlhist-wakeup-run", about: "wakeup JOIN as --run applies it (instance, results histogram)", part: "wakeups",
			cmds: costCompile(t, kname, "wl", costWakeup, costRun)},
		{name: "sqlhist-wakeup-stream", about: "wakeup JOIN (comm, lat) answered by sqlhist -r --engine stream in the guest", part: "wakeups",
			stream: costWakeupStream},
		{name: "sqlhist-wakeup-bpf", about: "wakeup JOIN (comm, lat) answered by sqlhist -r --engine bpf in the guest", part: "wakeups",
			stream: costWakeupStream, engine: "bpf"},
		{name: "sqlhist-wakeup-awk", about: "wakeup JOIN (comm, lat) answered by the printed awk script (busybox sh and awk) in the guest", part: "wakeups",
			stream: costWakeupStream, awk: costAwkScript(t, kname, costWakeupStream)},
		{name: "sqlhist-wakeup-awk-mawk", about: "wakeup JOIN (comm, lat) answered by the printed awk script under busybox sh and mawk (Debian's and Raspberry Pi OS's awk) in the guest", part: "wakeups",
			stream: costWakeupStream, awk: costMawkScript(t, costAwkScript(t, kname, costWakeupStream)), awkBin: "mawk"},
		{name: "sqlhist-aggregate", about: "log2 GROUP BY over the wakeup JOIN", part: "wakeups",
			cmds: costCompile(t, kname, "wa", costWakeupAgg, costPrinted)},
		{name: "libtracefs-wakeup", about: "libtracefs's lowering of the wakeup JOIN", part: "wakeups", cmds: libtracefsWakeup()},
		{name: "bpf-runqlat", about: "libbpf-tools runqlat", part: "wakeups", tool: "runqlat"},
		// What the record costs a BPF program: programs that do nothing
		// on sched_waking and sched_switch, classic (the kernel builds
		// the record, as for the BPF engine's) and raw (the arguments
		// only, as for runqlat's tp_btf).
		{name: "bpf-empty-tp", about: "empty classic tracepoint programs on sched_waking and sched_switch (testdata/bpfempty tp)", part: "wakeups", tool: "bpfempty tp"},
		{name: "bpf-empty-rawtp", about: "empty raw tracepoint programs on sched_waking and sched_switch (testdata/bpfempty rawtp)", part: "wakeups", tool: "bpfempty rawtp"},
		{name: "sqlhist-syscount", about: "syscall counts (hist on sys_enter)", part: "syscalls",
			cmds: costCompile(t, kname, "sc", costSyscount, costPrinted)},
		{name: "sqlhist-syscount-stream", about: "syscall counts answered by sqlhist -r --engine stream in the guest", part: "syscalls",
			stream: costSyscount},
		{name: "sqlhist-syscount-bpf", about: "syscall counts answered by sqlhist -r --engine bpf in the guest", part: "syscalls",
			stream: costSyscount, engine: "bpf"},
		{name: "sqlhist-syscount-awk", about: "syscall counts answered by the printed awk script (busybox sh and awk) in the guest", part: "syscalls",
			stream: costSyscount, awk: costAwkScript(t, kname, costSyscount)},
		{name: "sqlhist-syscount-awk-mawk", about: "syscall counts answered by the printed awk script under busybox sh and mawk in the guest", part: "syscalls",
			stream: costSyscount, awk: costMawkScript(t, costAwkScript(t, kname, costSyscount)), awkBin: "mawk"},
		// The floor of any awk program: what the kernel's text of the
		// events and busybox awk's reading of its lines cost.
		{name: "awk-floor-wakeup", about: "the wakeup JOIN's awk script with a program that only reads its lines (busybox awk): the kernel's text and awk's reading", part: "wakeups",
			stream: costWakeupStream, awk: costAwkFloor(t, costAwkScript(t, kname, costWakeupStream))},
		{name: "awk-floor-syscount", about: "the syscall counts' awk script with a program that only reads its lines (busybox awk): the kernel's text and awk's reading", part: "syscalls",
			stream: costSyscount, awk: costAwkFloor(t, costAwkScript(t, kname, costSyscount))},
		{name: "bpf-syscount", about: "libbpf-tools syscount", part: "syscalls", tool: "syscount"},
		{name: "sqlhist-funclatency", about: "kprobe/kretprobe JOIN, log2 GROUP BY", part: "opens",
			cmds: costCompile(t, kname, "fl", costFuncLat, costPrinted)},
		{name: "sqlhist-funclatency-bpf", about: "kprobe/kretprobe JOIN, log2 GROUP BY, answered by sqlhist -r --engine bpf in the guest (the perf kprobe PMU: fentry/fexit are for --metrics)", part: "opens",
			stream: costFuncLat, engine: "bpf"},
		{name: "bpf-funclatency", about: "libbpf-tools funclatency", part: "opens", tool: "funclatency " + costFuncLatFn},
	}
	shapes = append(shapes,
		costShape{about: "wakeup JOIN as --run applied it before (results beside the triggers)", part: "wakeups",
			cmds: costCompile(t, kname, "wl", costWakeup, costRunBefore)},
		costShape{about: "log2 GROUP BY over the wakeup JOIN as --run applies it (histogram in the lease)", part: "wakeups",
			cmds: costCompile(t, kname, "wa", costWakeupAgg, costRun)},
		costShape{about: "log2 GROUP BY over the wakeup JOIN as --run applied it before", part: "wakeups",
			cmds: costCompile(t, kname, "wa", costWakeupAgg, costRunBefore)},
		costShape{about: "stream wakeup JOIN over no workload: stopping sqlhist, the same for any run", part: "wakeups",
			stream: costWakeupStream, empty: true},
		costShape{about: "stream syscall counts over no workload: stopping sqlhist", part: "syscalls",
			stream: costSyscount, empty: true},
		costShape{about: "bpf wakeup JOIN over no workload: loading, attaching, reading and closing", part: "wakeups",
			stream: costWakeupStream, engine: "bpf", empty: true},
		costShape{about: "bpf syscall counts over no workload: loading, attaching, reading and closing", part: "syscalls",
			stream: costSyscount, engine: "bpf", empty: true},
		costShape{about: "bpf funclatency JOIN over no workload: loading, attaching, reading and closing", part: "opens",
			stream: costFuncLat, engine: "bpf", empty: true},
		costShape{about: "awk wakeup JOIN over no workload: the script's setup and stop", part: "wakeups",
			stream: costWakeupStream, awk: costAwkScript(t, kname, costWakeupStream), empty: true},
		costShape{about: "awk syscall counts over no workload: the script's setup and stop", part: "syscalls",
			stream: costSyscount, awk: costAwkScript(t, kname, costSyscount), empty: true},
		costShape{about: "mawk wakeup JOIN over no workload: the script's setup and stop", part: "wakeups",
			stream: costWakeupStream, awk: costMawkScript(t, costAwkScript(t, kname, costWakeupStream)), awkBin: "mawk", empty: true},
		costShape{about: "mawk syscall counts over no workload: the script's setup and stop", part: "syscalls",
			stream: costSyscount, awk: costMawkScript(t, costAwkScript(t, kname, costSyscount)), awkBin: "mawk", empty: true})
	shapes = append(shapes, costBreakdown()...)
	if os.Getenv("SQLHIST_COST_NOBPF") == "1" {
		shapes = slices.DeleteFunc(shapes, func(s costShape) bool { return s.tool != "" })
	}
	if only := os.Getenv("SQLHIST_COST_ONLY"); only != "" {
		shapes = costOnly(t, shapes, only)
	}
	return shapes
}

// costOnly keeps the named shapes whose name matches the regexp re
// (SQLHIST_COST_ONLY, e.g. "stream"), with the rows over no workload of
// the stream shapes kept.
func costOnly(t *testing.T, shapes []costShape, re string) []costShape {
	rx, err := regexp.Compile(re)
	if err != nil {
		t.Fatalf("SQLHIST_COST_ONLY: %v", err)
	}
	keep := map[string]bool{}
	for _, s := range shapes {
		if s.name != "" && rx.MatchString(s.name) && s.stream != "" {
			keep[s.emptyKey()] = true
		}
	}
	return slices.DeleteFunc(shapes, func(s costShape) bool {
		if s.empty {
			return !keep[s.emptyKey()]
		}
		return s.name == "" || !rx.MatchString(s.name)
	})
}

// emptyKey pairs a stream or awk shape with its row over no workload.
func (s costShape) emptyKey() string {
	return fmt.Sprintf("%s %s %t %s %s", s.stream, s.part, s.awk != "", s.awkBin, s.engine)
}

// costAwkScript is the awk engine's script of a query for the kernel's
// catalog, as sqlhist prints it (until Ctrl-C).
func costAwkScript(t *testing.T, kernel, sql string) string {
	t.Helper()
	fsys, err := tracefs.Embedded(strings.TrimSuffix(kernel, "-hist"))
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	src := source.NewSource("cost.sql", sql)
	plan, diags := live.Compile(src, cat, live.AwkPrepare(planner.Options{}))
	if plan == nil {
		t.Fatalf("compiling %s: %s", sql, diags.Render(src))
	}
	ap, err := live.NewAwkPlan(plan, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := live.WriteAwkScript(&b, ap, live.AwkScriptOptions{Source: src}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// costAwkFloor is an awk script with its program replaced by one that
// reads the lines and does nothing with them but count them (its
// "Hits") and the events the kernel says it lost, and ends at the end
// marker as the script's program does: the least any program costs.
func costAwkFloor(t *testing.T, script string) string {
	t.Helper()
	start := strings.Index(script, "awk $sqlhist_w '")
	if start < 0 {
		t.Fatal("the awk script runs no awk $sqlhist_w '…'")
	}
	start += len("awk $sqlhist_w '")
	end := strings.Index(script[start:], "\n' < ")
	if end < 0 {
		t.Fatal("the awk script's program does not end with a line ' < trace_pipe")
	}
	floor := `/^CPU:/ { sub(/^CPU:[0-9]+ \[LOST /, ""); L += $0; next }
index($0, "tracing_mark_write: sqlhist-awk-end") { exit }
{ N++ }
END { printf "    Hits: %d\n==> end: lost %d, unread 0 <==\n", N, L }`
	return script[:start] + floor + script[start+end:]
}

// costAwkRun starts an awk script for the workload (its tracer): it says
// on stderr that it reads once a process reads an sqlawk instance's
// trace_pipe (the script set its instance up; the workload's SCHED_FIFO
// parts would keep it from doing so after), and runs the script, which
// the workload's SIGINT to its process group stops, as Ctrl-C does.
const costAwkRun = `#!/bin/sh
reads() {
	for f in /proc/[0-9]*/fd/0; do
		case $(readlink $f 2>/dev/null) in */instances/sqlawk_*/trace_pipe) return 0 ;; esac
	done
	return 1
}
(
	n=0
	until reads; do
		n=$((n + 1)); [ $n -lt 600 ] || { echo "awkrun: no awk reads the script's trace_pipe after 30 s" >&2; exit 1; }
		sleep 0.05
	done
	echo "awkrun: the script's awk reads" >&2
) < /dev/null &
# The script's shell ends by the SIGINT once its subshell has removed
# its instance, as at Ctrl-C: its output says whether it ended well.
trap : INT
sh "$1"
exit 0
`

// costAwkFiles are the guest's files of the awk shapes: each one's
// script (/work/awkN.sh, N its index) and costAwkRun.
func costAwkFiles(t *testing.T, shapes []costShape) []vm.File {
	var files []vm.File
	for i, s := range shapes {
		if s.awk != "" {
			files = append(files, vm.File{Path: fmt.Sprintf("/work/awk%d.sh", i), Mode: 0o644, Data: []byte(s.awk)})
		}
	}
	if len(files) > 0 {
		files = append(files, vm.File{Path: "/work/awkrun", Mode: 0o755, Data: []byte(costAwkRun)})
	}
	if slices.ContainsFunc(shapes, func(s costShape) bool { return s.awkBin == "mawk" }) {
		files = append(files, costMawkFiles(t)...)
	}
	return files
}

// costMawkScript is an awk script that runs /opt/mawk/bin/awk where it
// runs awk: the guest's busybox sh runs its own awk applet whatever PATH
// says. Both places must be there (the script's awk found, then run).
func costMawkScript(t *testing.T, script string) string {
	t.Helper()
	for _, cmd := range []string{"$(awk -W version", "LC_ALL=C awk $sqlhist_w"} {
		if strings.Count(script, cmd) != 1 {
			t.Fatalf("the awk script runs awk %d times as %q, not once: the mawk rows cannot put mawk there", strings.Count(script, cmd), cmd)
		}
		script = strings.Replace(script, cmd, strings.Replace(cmd, "awk", "/opt/mawk/bin/awk", 1), 1)
	}
	return script
}

// costMawkFiles are the host's mawk (test-shells installs it), its
// libraries and its loader under /opt/mawk, apart from the libraries
// libbpf-tools bring (another Debian release's), and /opt/mawk/bin/awk,
// which runs it through that loader (costMawkScript).
func costMawkFiles(t *testing.T) []vm.File {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Fatalf("the mawk rows take this host's mawk into an x86-64 guest; this host is %s", runtime.GOARCH)
	}
	closure, err := vm.ELFClosure("/", "x86_64-linux-gnu", []string{"/usr/bin/mawk"})
	if err != nil {
		t.Fatalf("the host's mawk (make test-shells installs it): %v", err)
	}
	var files []vm.File
	loader := ""
	for _, f := range closure {
		base := path.Base(f.Path)
		if strings.HasPrefix(base, "ld-linux") {
			loader = base
		}
		f.Path = "/opt/mawk/" + base
		files = append(files, f)
	}
	if loader == "" {
		t.Fatal("no loader in the host mawk's libraries")
	}
	wrapper := "#!/bin/sh\nexec /opt/mawk/" + loader + " --library-path /opt/mawk /opt/mawk/mawk \"$@\"\n"
	return append(files, vm.File{Path: "/opt/mawk/bin/awk", Mode: 0o755, Data: []byte(wrapper)})
}

// runResults is the wakeup JOIN in the instance inst with results
// triggers on its synthetic event.
func runResults(inst string, results ...string) []emit.Command {
	cmds := []emit.Command{costCmd(emit.KindDir, inst, "mkdir", "rmdir"), costSynth("s:wl pid_t pid; char comm[16]; u64 lat")}
	for _, r := range results {
		cmds = append(cmds, costTrigger(inst+"events/synthetic/wl/trigger", r))
	}
	return append(cmds,
		costTrigger(inst+"events/sched/sched_waking/trigger", "hist:keys=pid:wl_ts_us=common_timestamp.usecs"),
		costTrigger(inst+"events/sched/sched_switch/trigger", "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_pid,next_comm,$wl_lat)"))
}

// costBreakdown are the parts of the wakeup JOIN's cost, alone.
func costBreakdown() []costShape {
	waking, switching := "events/sched/sched_waking/trigger", "events/sched/sched_switch/trigger"
	inst := "instances/sqlhist_4242/"
	res := "instances/sqlhist_4242r/"
	return []costShape{
		{about: "start trigger alone: keys=pid", part: "wakeups", cmds: []emit.Command{costTrigger(waking, "hist:keys=pid")}},
		{about: "start trigger alone: keys=pid, ts var (usecs)", part: "wakeups", cmds: []emit.Command{costTrigger(waking, "hist:keys=pid:ts=common_timestamp.usecs")}},
		{about: "start trigger alone: keys=pid, ts var (ns)", part: "wakeups", cmds: []emit.Command{costTrigger(waking, "hist:keys=pid:ts=common_timestamp")}},
		{about: "end trigger alone: keys=next_pid", part: "wakeups", cmds: []emit.Command{costTrigger(switching, "hist:keys=next_pid")}},
		{about: "JOIN in ns (no .usecs)", part: "wakeups", cmds: []emit.Command{
			costSynth("s:wl pid_t pid; char comm[16]; u64 lat"),
			costTrigger(waking, "hist:keys=pid:wl_ts=common_timestamp"),
			costTrigger(switching, "hist:keys=next_pid:wl_lat=common_timestamp-$wl_ts:onmatch(sched.sched_waking).trace(wl,next_pid,next_comm,$wl_lat)")}},
		{about: "JOIN, latency the only field", part: "wakeups", cmds: []emit.Command{
			costSynth("s:wl u64 lat"),
			costTrigger(waking, "hist:keys=pid:wl_ts_us=common_timestamp.usecs"),
			costTrigger(switching, "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,$wl_lat)")}},
		{about: "run, results in an instance of their own", part: "wakeups", cmds: []emit.Command{
			costCmd(emit.KindDir, inst, "mkdir", "rmdir"), costCmd(emit.KindDir, res, "mkdir", "rmdir"),
			costSynth("s:wl pid_t pid; char comm[16]; u64 lat"),
			costTrigger(res+"events/synthetic/wl/trigger", "hist:keys=pid,comm,lat.log2:vals=lat:wl_max=lat:size=8192:onmax($wl_max).save(lat) if lat < 9223372036854775808"),
			costTrigger(res+"events/synthetic/wl/trigger", "hist:keys=common_cpu if lat >= 9223372036854775808"),
			costTrigger(inst+waking, "hist:keys=pid:wl_ts_us=common_timestamp.usecs"),
			costTrigger(inst+switching, "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_pid,next_comm,$wl_lat)")}},
		{about: "run, results: no negatives counter", part: "wakeups", cmds: runResults(inst,
			"hist:keys=pid,comm,lat.log2:vals=lat:wl_max=lat:size=8192:onmax($wl_max).save(lat) if lat < 9223372036854775808")},
		{about: "run, results: no onmax", part: "wakeups", cmds: runResults(inst,
			"hist:keys=pid,comm,lat.log2:vals=lat:size=8192 if lat < 9223372036854775808",
			"hist:keys=common_cpu if lat >= 9223372036854775808")},
		{about: "run, results: keys=lat.log2 only, vals=lat", part: "wakeups", cmds: runResults(inst,
			"hist:keys=lat.log2:vals=lat:size=8192")},
		{about: "run, results: one trigger, no filter, no onmax", part: "wakeups", cmds: []emit.Command{
			costCmd(emit.KindDir, inst, "mkdir", "rmdir"),
			costSynth("s:wl pid_t pid; char comm[16]; u64 lat"),
			costTrigger(inst+"events/synthetic/wl/trigger", "hist:keys=pid,comm,lat.log2:vals=lat:size=8192"),
			costTrigger(inst+waking, "hist:keys=pid:wl_ts_us=common_timestamp.usecs"),
			costTrigger(inst+switching, "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_pid,next_comm,$wl_lat)")}},
	}
}

// cBuildStatic compiles a C program of e2e's testdata with the host's gcc,
// statically (gcc and libc6-dev are installed with the kernel build tools
// when missing).
func cBuildStatic(t *testing.T, src string, flags ...string) []byte {
	t.Helper()
	if err := vm.EnsureBuildTools(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "prog")
	if b, err := exec.Command("gcc", append(append([]string{"-O2", "-static"}, flags...), "-o", out, src)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s (apt-get install gcc libc6-dev): %v\n%s", src, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// costScript is the guest script: a counting run (how many events each
// part of the workload makes), then the rounds: in each, every shape runs
// its part after a bare run of the same part.
func costScript(shapes []costShape) string {
	var b strings.Builder
	b.WriteString("T=/sys/kernel/tracing\nset -e\nmkdir -p /tmp/prof\n")
	b.WriteString("mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true\nmount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true\n")
	if slices.ContainsFunc(shapes, func(s costShape) bool { return s.awkBin == "mawk" }) {
		// The mawk rows' awk must be mawk, or they measure nothing.
		b.WriteString("echo \"@@mawk $(/opt/mawk/bin/awk -W version 2>&1 < /dev/null | head -n 1)\"\n")
	}
	fmt.Fprintf(&b, "echo %s >> $T/dynamic_events\n", emit.Quote(costCountProbe))
	counted := []string{"sched/sched_waking", "sched/sched_switch", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit", "costcount/open"}
	for _, part := range costParts {
		for _, ev := range counted {
			fmt.Fprintf(&b, "echo 'hist:keys=common_cpu' >> $T/events/%s/trigger\n", ev)
		}
		fmt.Fprintf(&b, "/work/bin/load %s > /dev/null\n", costArgs(part))
		for _, ev := range counted {
			fmt.Fprintf(&b, "echo \"@@count %s %s $(sed -n 's/^ *Hits: //p' $T/events/%s/hist)\"\n", part, ev, ev)
			fmt.Fprintf(&b, "echo '!hist:keys=common_cpu' >> $T/events/%s/trigger\n", ev)
		}
	}
	fmt.Fprintf(&b, "echo '-:costcount/open' >> $T/dynamic_events\n")
	// A warm-up run of everything: first-touch costs stay out of round 1.
	fmt.Fprintf(&b, "/work/bin/load %s > /dev/null\n", costArgs(""))
	for r := 1; r <= costRounds; r++ {
		for i, s := range shapes {
			args := costArgs(s.part)
			if s.empty {
				args = costArgs("none")
			}
			fmt.Fprintf(&b, "echo \"@@bare %d %d $(/work/bin/load %s)\"\n", r, i, args)
			if s.awk != "" {
				// As a stream shape, the tracer the script (its
				// output, the hist files, in /tmp/stream.out).
				fmt.Fprintf(&b, "echo \"@@run %d %d $(/work/bin/load %s /work/awkrun /work/awk%d.sh 2> /tmp/stream.out)\"\n", r, i, args, i)
				b.WriteString(`L=$(sed -n 's/^==> end: lost \([0-9]*\),.*/\1/p' /tmp/stream.out | tail -n 1)` + "\n")
				b.WriteString(`H=$(sed -n 's/^ *Hits: \([0-9]*\).*/\1/p' /tmp/stream.out | head -n 1)` + "\n")
				fmt.Fprintf(&b, "echo \"@@stream %d %d $L $H\"\n", r, i)
				if r == costRounds {
					fmt.Fprintf(&b, "echo '@@tool %d'\n", i)
					b.WriteString(`grep -E '^==> |^awkrun|^sqlhist|^load|^ *(Hits|Entries|Dropped):' /tmp/stream.out || true` + "\n")
				}
				continue
			}
			if s.stream != "" {
				// The workload starts sqlhist, waits for it to say it
				// reads, runs its parts, interrupts it and waits for
				// its exit (its output and stderr in /tmp/stream.out).
				prof := ""
				if costProfile != "" && r == costRounds {
					// SQLHIST_COST_PROFILE: the last round's sqlhist
					// writes a CPU profile, collected after the script.
					prof = fmt.Sprintf("SQLHIST_CPUPROFILE=/tmp/prof/shape%d.pprof ", i)
				}
				engine := s.engine
				if engine == "" {
					engine = "stream"
				}
				fmt.Fprintf(&b, "echo \"@@run %d %d $(%s/work/bin/load %s /work/sqlhist -r --engine %s -o json %s 2> /tmp/stream.out)\"\n",
					r, i, prof, args, engine, emit.Quote(s.stream))
				b.WriteString(`L=$(sed -n 's/^  "lost": \([0-9]*\).*/\1/p' /tmp/stream.out)` + "\n")
				b.WriteString(`H=$(sed -n 's/^ *"hits": \([0-9]*\).*/\1/p' /tmp/stream.out | head -n 1)` + "\n")
				fmt.Fprintf(&b, "echo \"@@stream %d %d $L $H\"\n", r, i)
				if r == costRounds {
					fmt.Fprintf(&b, "echo '@@tool %d'\n", i)
					b.WriteString(`grep -E '"(engine|lost|event|events|hits|entries|dropped)"|^sqlhist|^load' /tmp/stream.out || true` + "\n")
				}
				continue
			}
			if s.tool != "" {
				// The workload starts the tool as it starts sqlhist,
				// takes it as attached once it sleeps in
				// clock_nanosleep (230 on x86-64; its banner is
				// buffered in its stdout), interrupts it after the
				// parts and counts its stop as sqlhist's: from the
				// SIGINT to its exit (printing, detaching, closing).
				fmt.Fprintf(&b, "echo \"@@run %d %d $(LOAD_READY_SYSCALL=230 /work/bin/load %s /usr/sbin/%s 2> /tmp/tool.out)\"\n", r, i, costArgs(s.part), s.tool)
				if r == costRounds {
					fmt.Fprintf(&b, "echo '@@tool %d'; cat /tmp/tool.out\n", i)
				}
				continue
			}
			b.WriteString(costWrites(s.cmds, false))
			fmt.Fprintf(&b, "echo \"@@run %d %d $(/work/bin/load %s)\"\n", r, i, costArgs(s.part))
			b.WriteString(costWrites(s.cmds, true))
		}
	}
	b.WriteString("echo \"@@errorlog $(cat $T/error_log | wc -l)\"\n")
	return b.String()
}

var (
	costCountRE = regexp.MustCompile(`(?m)^@@count (\S+) (\S+) (\d+)$`)
	costRunRE   = regexp.MustCompile(`(?m)^@@(bare|run) (\d+) (\d+) syscalls \d+ (\d+) wakeups \d+ (\d+) opens \d+ (\d+)(?: stop (\d+) (\d+))?$`)
	// A stream shape's round: the events its sqlhist lost and the hits
	// of its result.
	costStreamRE = regexp.MustCompile(`(?m)^@@stream (\d+) (\d+) (\d*) (\d*)$`)
)

// costEvents are the events of each part's question: the system calls,
// the wakeups, the calls of the function.
var costEvents = map[string]string{"syscalls": "raw_syscalls/sys_enter", "wakeups": "sched/sched_waking", "opens": "costcount/open"}

// costReport reads the guest's output into the report's table and the
// cost lines of the named shapes.
func costReport(shapes []costShape, out string) (string, []string, error) {
	counts := map[string]map[string]float64{}
	for _, m := range costCountRE.FindAllStringSubmatch(out, -1) {
		if counts[m[1]] == nil {
			counts[m[1]] = map[string]float64{}
		}
		counts[m[1]][m[2]], _ = strconv.ParseFloat(m[3], 64)
	}
	// bare[i] and run[i]: shape i's part over the rounds, in guest ns;
	// a stream shape's run with its sqlhist's CPU time after the part,
	// which stopCPU[i] and stopWall[i] also keep, with the wall time.
	ns := len(shapes)
	bare, run := make([][]float64, ns), make([][]float64, ns)
	stopCPU, stopWall := make([][]float64, ns), make([][]float64, ns)
	for _, m := range costRunRE.FindAllStringSubmatch(out, -1) {
		i, _ := strconv.Atoi(m[3])
		if i >= ns {
			return "", nil, fmt.Errorf("a run of shape %d of %d", i, ns)
		}
		col := map[string]int{"syscalls": 4, "wakeups": 5, "opens": 6}[shapes[i].part]
		v, _ := strconv.ParseFloat(m[col], 64)
		stream := shapes[i].stream != "" || shapes[i].tool != ""
		switch {
		case m[1] == "bare":
			bare[i] = append(bare[i], v)
		case stream && m[7] == "":
			return "", nil, fmt.Errorf("shape %q: a run without sqlhist's stop", shapes[i].about)
		case stream:
			cpu, _ := strconv.ParseFloat(m[7], 64)
			wall, _ := strconv.ParseFloat(m[8], 64)
			stopCPU[i], stopWall[i] = append(stopCPU[i], cpu), append(stopWall[i], wall)
			run[i] = append(run[i], v+cpu)
		default:
			run[i] = append(run[i], v)
		}
	}
	// hits[i] and lost[i]: a stream or awk shape's result's hits and
	// the events the kernel lost before it read them, round by round
	// (a round that does not say what it lost is an error).
	hits, lost := make([][]float64, ns), make([][]float64, ns)
	for _, m := range costStreamRE.FindAllStringSubmatch(out, -1) {
		i, _ := strconv.Atoi(m[2])
		if i >= ns {
			return "", nil, fmt.Errorf("a stream run of shape %d of %d", i, ns)
		}
		if m[3] == "" {
			return "", nil, fmt.Errorf("shape %q, round %s: no count of the events lost in its output", shapes[i].about, m[1])
		}
		l, _ := strconv.ParseFloat(m[3], 64)
		h, _ := strconv.ParseFloat(m[4], 64)
		hits[i], lost[i] = append(hits[i], h), append(lost[i], l)
	}
	if !strings.Contains(out, "@@errorlog 0") {
		return "", nil, fmt.Errorf("the run did not end, or error_log has entries")
	}
	if slices.ContainsFunc(shapes, func(s costShape) bool { return s.awkBin == "mawk" }) && !regexp.MustCompile(`(?m)^@@mawk mawk `).MatchString(out) {
		return "", nil, fmt.Errorf("the mawk rows' /opt/mawk/bin/awk is not mawk in the guest")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "events per run: %.0f system calls (%.0f sys_exit), %.0f wakeups (%.0f sched_switch), %.0f calls of %s\n",
		counts["syscalls"]["raw_syscalls/sys_enter"], counts["syscalls"]["raw_syscalls/sys_exit"],
		counts["wakeups"]["sched/sched_waking"], counts["wakeups"]["sched/sched_switch"], counts["opens"]["costcount/open"], costFuncLatFn)
	head := []string{"shape", "part", "bare ns/event", "overhead ns/event", "spread", "x bare", "what"}
	rows := [][]string{head}
	var lines []string
	overhead := make([]float64, ns)
	var notes []string
	for i, s := range shapes {
		n := counts[s.part][costEvents[s.part]]
		if len(bare[i]) != costRounds || len(run[i]) != costRounds || n == 0 {
			return "", nil, fmt.Errorf("shape %q: %d bare and %d traced runs of %d, %.0f events", s.about, len(bare[i]), len(run[i]), costRounds, n)
		}
		if s.stream != "" && (len(hits[i]) != costRounds || !s.empty && slices.Min(hits[i]) == 0) {
			return "", nil, fmt.Errorf("shape %q: results of %d stream runs of %d, hits %v", s.about, len(hits[i]), costRounds, hits[i])
		}
		per := make([]float64, costRounds)
		for r := range per {
			per[r] = (run[i][r] - bare[i][r]) / n
		}
		over := median(per)
		overhead[i] = over
		spread := (slices.Max(per) - slices.Min(per)) / over * 100
		ratio := median(run[i]) / median(bare[i])
		name := s.name
		if name == "" {
			name = "-"
		}
		times := fmt.Sprintf("%.3f", ratio)
		if s.empty {
			times = "-" // over a workload of nothing
		}
		rows = append(rows, []string{name, s.part, fmt.Sprintf("%.0f", median(bare[i])/n), fmt.Sprintf("%.0f", over),
			fmt.Sprintf("%.1f%%", spread), times, s.about})
		if s.name != "" {
			l := fmt.Sprintf("cost %s overhead_ns=%.0f spread=%.1f%% vs_bare=%.3f", s.name, over, spread, ratio)
			if s.stream != "" {
				// The most a round lost: a figure of a run that lost
				// events is the cost of a part of them.
				l += fmt.Sprintf(" lost=%.0f", slices.Max(lost[i]))
			}
			lines = append(lines, l)
		}
		if s.stream != "" {
			who := "sqlhist"
			if s.awk != "" {
				who = "the awk script"
			}
			notes = append(notes, fmt.Sprintf("%s: %s after the workload: %.1f ms CPU (%.0f ns/event), %.1f ms wall; %.0f hits, lost %v",
				name+" ("+s.about+")", who, median(stopCPU[i])/1e6, median(stopCPU[i])/n, median(stopWall[i])/1e6, median(hits[i]), lost[i]))
		}
		if s.tool != "" && len(stopCPU[i]) > 0 {
			notes = append(notes, fmt.Sprintf("%s: the tool after the workload: %.1f ms CPU (%.0f ns/event), %.1f ms wall",
				name+" ("+s.about+")", median(stopCPU[i])/1e6, median(stopCPU[i])/n, median(stopWall[i])/1e6))
		}
	}
	// A stream shape's line says which part of its overhead stopping
	// sqlhist costs whatever it read (fixed_ns: the row over no workload,
	// per event of this one's part): the rest grows with the events.
	for i, s := range shapes {
		if s.name == "" || s.stream == "" {
			continue
		}
		j := slices.IndexFunc(shapes, func(e costShape) bool { return e.empty && e.emptyKey() == s.emptyKey() })
		if j < 0 {
			continue
		}
		for k, l := range lines {
			if strings.HasPrefix(l, "cost "+s.name+" ") {
				lines[k] = fmt.Sprintf("%s fixed_ns=%.0f per_event_ns=%.0f", l, overhead[j], overhead[i]-overhead[j])
			}
		}
	}
	w := make([]int, len(head))
	for _, r := range rows {
		for j, c := range r {
			w[j] = max(w[j], len(c))
		}
	}
	for _, r := range rows {
		for j, c := range r {
			fmt.Fprintf(&b, "%-*s  ", w[j], c)
		}
		b.WriteString("\n")
	}
	for _, l := range notes {
		b.WriteString(l + "\n")
	}
	return b.String(), lines, nil
}

// costCollect is what the guest sends back: the profiles of
// SQLHIST_COST_PROFILE.
func costCollect() []string {
	if costProfile == "" {
		return nil
	}
	return []string{"/tmp/prof"}
}

// costSaveProfiles writes the collected profiles to SQLHIST_COST_PROFILE.
func costSaveProfiles(t *testing.T, files map[string][]byte) {
	for p, data := range files {
		if !strings.HasSuffix(p, ".pprof") {
			continue
		}
		out := filepath.Join(costProfile, filepath.Base(p))
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("profile %s", out)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
