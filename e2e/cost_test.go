package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// The kernel cost benchmark (make bench-kernel): in one boot, a fixed
// workload (e2e/testdata/load: system calls, then wakeups through a pipe
// ping-pong) runs bare and under each shape of triggers, in interleaved
// rounds, and the report gives each shape's time as a ratio to bare, with
// its spread over the rounds, and the cost per traced event.

// costQueries are the queries of the benchmark.
const (
	costWakeup  = `SELECT start.pid, end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	costSyscall = `SELECT start.id, TIMESTAMP_DELTA_USECS AS lat FROM sys_enter AS start JOIN sys_exit AS end ON start.common_pid = end.common_pid`
	costHist    = `SELECT CAST(id AS SYSCALL) FROM sys_enter`
)

// costShape is one set of triggers: the lines of a shell script that
// writes them (echo 'text' >> file, relative to $T), and the events
// whose count its cost is divided by.
type costShape struct {
	name, about string
	lines       []string // "file\ttext"
	part        string   // "syscalls" or "wakeups": the part of the workload it traces
	events      []string // system/event whose hits it pays for
}

// libtracefs's lowering of the two JOINs, written out from
// ../shared/docs/anchor-sqlhist.md (2.3, 2.5, 2.6 and the E1 example):
// every selected start field is saved in a variable, and every selected
// value copied again into a variable of the end trigger.
var libtracefsShapes = []costShape{
	{name: "wakeup JOIN, libtracefs", part: "wakeups", events: []string{"sched/sched_waking", "sched/sched_switch"}, lines: []string{
		"dynamic_events\ts:wl pid_t pid; char comm[16]; u64 lat",
		"events/sched/sched_waking/trigger\thist:keys=pid:__arg_1=pid,__arg_2=common_timestamp.usecs",
		"events/sched/sched_switch/trigger\thist:keys=next_pid:__pid_3=$__arg_1,__comm_4=next_comm,__lat_5=common_timestamp.usecs-$__arg_2:onmatch(sched.sched_waking).trace(wl,$__pid_3,$__comm_4,$__lat_5)",
	}},
	{name: "syscall JOIN, libtracefs", part: "syscalls", events: []string{"raw_syscalls/sys_enter", "raw_syscalls/sys_exit"}, lines: []string{
		"dynamic_events\ts:sl long id; u64 lat",
		"events/raw_syscalls/sys_enter/trigger\thist:keys=common_pid:__arg_1=id,__arg_2=common_timestamp.usecs",
		"events/raw_syscalls/sys_exit/trigger\thist:keys=common_pid:__id_3=$__arg_1,__lat_4=common_timestamp.usecs-$__arg_2:onmatch(raw_syscalls.sys_enter).trace(sl,$__id_3,$__lat_4)",
	}},
}

// Before the join key's twin was used, sqlhist saved start.pid as well.
var beforeShapes = []costShape{
	{name: "wakeup JOIN, sqlhist before", part: "wakeups", events: []string{"sched/sched_waking", "sched/sched_switch"}, lines: []string{
		"dynamic_events\ts:wl pid_t pid; char comm[16]; u64 lat",
		"events/sched/sched_waking/trigger\thist:keys=pid:wl_pid=pid,wl_ts_us=common_timestamp.usecs",
		"events/sched/sched_switch/trigger\thist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,$wl_pid,next_comm,$wl_lat)",
	}},
}

// The results histogram --run adds on the wakeup JOIN's synthetic
// event: before (keyed by the exact latency) and now (by its log2 bucket,
// with its sum and maximum, and the counter of negative latencies).
var (
	resultsExact = []string{"events/synthetic/wl/trigger\thist:keys=pid,comm,lat:size=8192"}
	resultsNow   = []string{
		"events/synthetic/wl/trigger\thist:keys=pid,comm,lat.log2:vals=lat:wl_max=lat:size=8192:onmax($wl_max).save(lat) if lat < 9223372036854775808",
		"events/synthetic/wl/trigger\thist:keys=common_cpu if lat >= 9223372036854775808",
	}
)

var echoRE = regexp.MustCompile(`^echo '([^']*)' >> /sys/kernel/tracing/(\S+)$`)

// sqlhistLines compiles a query with the static sqlhist for the
// kernel's embedded catalog and returns its writes.
func sqlhistLines(t *testing.T, bin, kernel, name, sql string) []string {
	t.Helper()
	out, err := exec.Command(bin, "--kernel", kernel, "-n", name, sql).Output()
	if err != nil {
		t.Fatalf("sqlhist %s: %v", sql, err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if m := echoRE.FindStringSubmatch(l); m != nil {
			lines = append(lines, m[2]+"\t"+m[1])
		}
	}
	return lines
}

// script writes the shell lines that apply (or, reversed, remove) a shape.
func (s costShape) script(remove bool) string {
	var b strings.Builder
	lines := slices.Clone(s.lines)
	if remove {
		slices.Reverse(lines)
	}
	for _, l := range lines {
		file, text, _ := strings.Cut(l, "\t")
		if remove {
			if name, ok := strings.CutPrefix(text, "s:"); ok {
				name, _, _ = strings.Cut(name, " ")
				text = "-:" + name
			} else {
				text = "!" + text
			}
		}
		fmt.Fprintf(&b, "echo '%s' >> $T/%s\n", text, file)
	}
	return b.String()
}

const costRounds = 7

// The workload of one run: system calls, then wakeups. Under qemu's TCG a
// system call takes about 20 µs and a wakeup round trip several hundred.
const (
	costCalls   = "50000"
	costWakeups = "2000"
)

// TestKernelCost runs the benchmark when SQLHIST_BENCH_KERNEL=1 (make
// bench-kernel), on $SQLHIST_KERNELS (default 6.1).
func TestKernelCost(t *testing.T) {
	if os.Getenv("SQLHIST_BENCH_KERNEL") != "1" {
		t.Skip("set SQLHIST_BENCH_KERNEL=1 (make bench-kernel) to measure what the triggers cost the kernel")
	}
	needKernels(t)
	// The host runs this binary too (libtracefs-style lowering): x86-64.
	bin := buildStatic(t, "amd64")
	binPath := filepath.Join(t.TempDir(), "sqlhist")
	if err := os.WriteFile(binPath, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	load := goBuildStatic(t, "./testdata/load", "amd64")
	kernels := []string{"6.1"}
	if k := os.Getenv("SQLHIST_KERNELS"); k != "" {
		kernels = strings.Split(k, ",")
	}
	for _, kname := range kernels {
		t.Run(kname, func(t *testing.T) {
			wakeup := sqlhistLines(t, binPath, kname, "wl", costWakeup)
			shapes := []costShape{
				{name: "bare"},
				{name: "wakeup JOIN, sqlhist", part: "wakeups", events: []string{"sched/sched_waking", "sched/sched_switch"}, lines: wakeup},
				beforeShapes[0],
				libtracefsShapes[0],
				{name: "wakeup JOIN + --run results (exact latency key, before)", part: "wakeups", events: []string{"sched/sched_waking", "sched/sched_switch"},
					lines: append(slices.Clone(wakeup), resultsExact...)},
				{name: "wakeup JOIN + --run results (log2, sum, onmax; now)", part: "wakeups", events: []string{"sched/sched_waking", "sched/sched_switch"},
					lines: append(slices.Clone(wakeup), resultsNow...)},
				{name: "syscall JOIN, sqlhist", part: "syscalls", events: []string{"raw_syscalls/sys_enter", "raw_syscalls/sys_exit"},
					lines: sqlhistLines(t, binPath, kname, "sl", costSyscall)},
				libtracefsShapes[1],
				{name: "syscall histogram, sqlhist", part: "syscalls", events: []string{"raw_syscalls/sys_enter"},
					lines: sqlhistLines(t, binPath, kname, "hs", costHist)},
			}
			// One CPU: the ping-pong's wakeups then do not depend on how
			// qemu schedules two emulated CPUs on one host thread, which
			// made the spread of the wakeup part several times wider.
			res := boot(t, kname, vm.Guest{Script: costScript(shapes), CombinedOutput: true, Timeout: 20 * time.Minute, CPUs: 1,
				Files: []vm.File{{Path: "/work/bin/load", Mode: 0o755, Data: load}}})
			report, err := costReport(shapes, res.Stdout)
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Stdout)
			}
			t.Logf("%s (%s): %d rounds, each shape between bare runs\n%s", kname, res.Kernel.Release, costRounds, report)
		})
	}
}

// costScript is the guest script: a counting run (how many events each
// part of the workload makes), then the rounds.
func costScript(shapes []costShape) string {
	var b strings.Builder
	b.WriteString("T=/sys/kernel/tracing\nset -e\n")
	counted := []string{"sched/sched_waking", "sched/sched_switch", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit"}
	for _, part := range []struct{ name, args string }{{"syscalls", costCalls + " 0"}, {"wakeups", "0 " + costWakeups}} {
		for _, ev := range counted {
			fmt.Fprintf(&b, "echo 'hist:keys=common_cpu' >> $T/events/%s/trigger\n", ev)
		}
		fmt.Fprintf(&b, "/work/bin/load %s > /dev/null\n", part.args)
		for _, ev := range counted {
			fmt.Fprintf(&b, "echo \"@@count %s %s $(sed -n 's/^ *Hits: //p' $T/events/%s/hist)\"\n", part.name, ev, ev)
			fmt.Fprintf(&b, "echo '!hist:keys=common_cpu' >> $T/events/%s/trigger\n", ev)
		}
	}
	for r := 1; r <= costRounds; r++ {
		for i, s := range shapes {
			b.WriteString(s.script(false))
			fmt.Fprintf(&b, "echo \"@@run %d %d $(/work/bin/load %s %s)\"\n", r, i, costCalls, costWakeups)
			b.WriteString(s.script(true))
		}
	}
	b.WriteString("echo \"@@errorlog $(cat $T/error_log | wc -l)\"\n")
	return b.String()
}

var (
	costCountRE = regexp.MustCompile(`(?m)^@@count (\S+) (\S+) (\d+)$`)
	costRunRE   = regexp.MustCompile(`(?m)^@@run (\d+) (\d+) syscalls \d+ (\d+) wakeups \d+ (\d+)$`)
)

// costReport reads the guest's output into the report's table.
func costReport(shapes []costShape, out string) (string, error) {
	counts := map[string]map[string]float64{}
	for _, m := range costCountRE.FindAllStringSubmatch(out, -1) {
		if counts[m[1]] == nil {
			counts[m[1]] = map[string]float64{}
		}
		counts[m[1]][m[2]], _ = strconv.ParseFloat(m[3], 64)
	}
	// times[shape][part] over the rounds, in ns.
	times := make([]map[string][]float64, len(shapes))
	for i := range times {
		times[i] = map[string][]float64{}
	}
	for _, m := range costRunRE.FindAllStringSubmatch(out, -1) {
		i, _ := strconv.Atoi(m[2])
		sys, _ := strconv.ParseFloat(m[3], 64)
		wake, _ := strconv.ParseFloat(m[4], 64)
		times[i]["syscalls"] = append(times[i]["syscalls"], sys)
		times[i]["wakeups"] = append(times[i]["wakeups"], wake)
	}
	if len(times[0]["syscalls"]) != costRounds || strings.Contains(out, "@@errorlog 0") == false {
		return "", fmt.Errorf("incomplete run or entries in error_log")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "events per run: syscalls part %.0f sys_enter, %.0f sys_exit; wakeups part %.0f sched_waking, %.0f sched_switch\n",
		counts["syscalls"]["raw_syscalls/sys_enter"], counts["syscalls"]["raw_syscalls/sys_exit"],
		counts["wakeups"]["sched/sched_waking"], counts["wakeups"]["sched/sched_switch"])
	rows := [][]string{}
	for i, s := range shapes {
		for _, part := range []string{"syscalls", "wakeups"} {
			if s.part != part && i != 0 {
				continue
			}
			ratios := make([]float64, costRounds)
			for r := range ratios {
				ratios[r] = times[i][part][r] / times[0][part][r]
			}
			med := median(times[i][part])
			row := []string{s.name, part, fmt.Sprintf("%.0f", med/1e6), fmt.Sprintf("%.2f", median(ratios)),
				fmt.Sprintf("%.2f-%.2f", slices.Min(ratios), slices.Max(ratios))}
			if i == 0 {
				row = append(row, "")
			} else {
				var n float64
				for _, ev := range s.events {
					n += counts[part][ev]
				}
				row = append(row, fmt.Sprintf("%.0f", (med-median(times[0][part]))/n))
			}
			rows = append(rows, row)
		}
	}
	w := []int{0, 0, 0, 0, 0, 0}
	head := []string{"shape", "part", "ms (median)", "x bare", "x bare (range)", "ns/event"}
	for _, r := range append([][]string{head}, rows...) {
		for j, c := range r {
			w[j] = max(w[j], len(c))
		}
	}
	for _, r := range append([][]string{head}, rows...) {
		for j, c := range r {
			fmt.Fprintf(&b, "%-*s  ", w[j], c)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
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
