package e2e

// The same answers as BPF (issue 24, item 3): in one boot and one window,
// on a workload with exact counts, sqlhist's syscall counts equal
// libbpf-tools' syscount's, and its wakeup-latency and function-latency
// counts are within 1% of runqlat's and funclatency's, with log2
// distributions at most maxTVD apart in total variation distance (the
// function's), or no more than a bucket apart short of all (the
// wakeups': log2Moves, maxSteps).
//
// The window: a busybox shell (one thread, builtins only, so no child
// process) waits on a FIFO for a go; sqlhist (-r -p PID, one run per
// question) and the three tools (-p PID) attach; the go is written once
// every one is collecting (sqlhist says "collecting", a tool is asleep in
// clock_nanosleep, which it enters only after attaching); the shell does
// N times `: > file` (one openat) and `read -t 0.003` on an idle FIFO (a
// poll that sleeps 3 ms in schedule_hrtimeout_range and is woken by its
// timer: one wakeup) and exits; then all are interrupted and print.
// Everything is filtered on that one process.
//
// The function timed is schedule_hrtimeout_range, not do_sys_openat2: an
// open takes 65-260 us under TCG, and each side's measurement holds the
// other's probes (a kprobe's handlers run in turn), which moved sqlhist's
// do_sys_openat2 mode a bucket up from funclatency's on arm64 (189 of 201
// in (131072, 262144] against 99 in [65536, 131071] and 97 above). A 3 ms
// sleep lands in the middle of [2^21, 2^22) ns whatever the probes cost.
//
// Buckets. The kernel's hist key `.log2` is ilog2(roundup_pow_of_two(v)):
// bucket e holds (2^(e-1), 2^e], and sqlhist's JSON gives the bucket as
// its upper bound 2^e. libbpf-tools' log2 slot k holds [2^k, 2^(k+1)-1]
// (slot 0 holds 0 and 1), printed "2^k -> 2^(k+1)-1". On integers, kernel
// bucket e = [2^(e-1)+1, 2^e] and BPF slot e-1 = [2^(e-1), 2^e-1] share
// every value but their ends (2^(e-1) is in BPF slot e-1 but kernel
// bucket e-1; 2^e in kernel bucket e but BPF slot e), so kernel bucket e
// is compared with BPF slot e-1.
//
// Distributions. The two are compared bucket by bucket, each normalised
// by its own total: their total variation distance (half the sum over
// the buckets of |p_e - q_(e-1)|, the share of events that would have to
// move to turn one into the other) must be at most maxTVD (20%). Not
// the modal bucket: two neighbours near a tie made it flip between two
// equal answers (6.1-arm64, 2026-11-27: sqlhist (64, 128] 82 and
// (128, 256] 89, runqlat [64, 127] 86 and [128, 255] 85, of 211 each,
// the other buckets within 4: a distance of about 2%). Both sides
// measure the same events, so a bucket differs only for a latency that
// lies within the measurements' difference of a bucket's end: an exact
// power of two (the bucket ends above), sqlhist's 1 us truncation of
// each timestamp, the other's probes (Units, below). With latencies of
// 32 us and more under TCG that is up to a tenth of the events (maxTVD
// gives the runs measured). Different answers are far more: that run's
// wakeups moved by a bucket are 40% away, the 3 ms sleeps (all in one
// bucket) 100%, and the do_sys_openat2 timing above, whose probes
// doubled a latency, was 46% away. That held while the wakeups' mode sat
// inside a bucket; once faster system calls put it at 32 us, equal
// answers were 37% apart (2026-12-05), so the wakeups are now held to
// log2Moves' bounds (maxSteps): any share but all a bucket over, at most
// one in 20 further. The function's 3 ms sleeps keep maxTVD.
//
// Clocks. BPF's bpf_ktime_get_ns is ktime_get_mono_fast_ns (the
// clocksource); a hist trigger that reads common_timestamp sets its
// instance's trace_clock to its clock= attribute, "global" by default,
// which is sched_clock: the TSC on x86-64 (an instance set to mono
// before the run reads [global] after it). The two agree while the TSC is
// the clocksource. In a loaded x86-64 TCG guest the TSC drifts from the
// HPET and the kernel marks it unstable and switches clocksource, but
// sched_clock keeps reading it: at the end of the suite's 6.1 boot
// (9 min in), sqlhist's 3 ms sleeps measured 0.26-2 ms while funclatency
// saw 199 of 200 in [2^21, 2^22) ns. So the phase runs first in its boot,
// and when dmesg says the TSC was marked unstable the latency buckets are
// not compared (the phase is a skip, its counts still checked).
//
// Units. runqlat: usecs, delta_ns/1000 truncated; sqlhist's
// TIMESTAMP_DELTA_USECS is the difference of the two timestamps each
// truncated to usecs (at most 1 us apart). funclatency: nsecs by
// default, and sqlhist's TIMESTAMP_DELTA is in ns too. The two measure
// with their own probes on the same function, so each latency differs by
// the other's probe cost, a few hundred ns under TCG.
//
// What runqlat counts: sched_wakeup and sched_wakeup_new (start), and at
// sched_switch a prev task still TASK_RUNNING (preempted, or yielding) is
// enqueued again (start); the end is sched_switch's next. sqlhist asks the
// same with two JOINs: sched_wakeup → sched_switch (next_pid), and
// sched_switch (prev_pid, prev_state 0, or 256 = TASK_REPORT_MAX, the
// tracepoint's value for a preempted task) → sched_switch (next_pid); the
// shell forks nothing, so there is no sched_wakeup_new. Their histograms
// add. The shell runs on CPU 1 and everything else on CPU 0 (taskset) so
// that preemptions are few, but they are counted either way.
//
// Where the two counts may differ: runqlat enqueues a switched-out task
// when its __state is TASK_RUNNING, while the tracepoint says 256 for any
// preemption (__trace_sched_switch_state returns TASK_REPORT_MAX when
// preempt is set, whatever the state). A shell preempted between setting
// TASK_INTERRUPTIBLE and calling schedule() on its way into the poll is
// a preempted start for sqlhist and nothing for runqlat; if its timer
// wakes it before it runs again, the wakeup is a start for both, and the
// one switch back in ends both of sqlhist's JOINs. So runqlat counts at
// least sqlhist's wakeup JOIN and at most its two JOINs: equal while the
// shell is never preempted on its way to sleep, up to the preempted
// JOIN's count over on a loaded host (CI, 6.1-arm64: 192 + 76 = 268
// against runqlat's 261). Each bound keeps the 1%.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// agreeKernels are the kernels whose boot runs the agreement phase.
var agreeKernels = map[string]bool{"6.1": true, "6.1-arm64": true}

// agreeN is the workload's iterations: N openat, N timed-out polls.
const agreeN = 200

// clockNanosleep is the system call number of clock_nanosleep, which the
// tools sleep in once attached (their glibc's sleep()).
var clockNanosleep = map[string]int{"amd64": 230, "arm64": 115}

const agreeScript = `
mkfifo /tmp/agree-go /tmp/agree-idle
cat > /tmp/agree-wl.sh <<'EOF'
read g < /tmp/agree-go
exec 3<>/tmp/agree-idle
i=0
while [ $i -lt $N ]; do
  : > /tmp/agree-file
  read -t 0.003 x <&3
  i=$((i+1))
done
EOF
CPUS=$(nproc)
[ $CPUS -gt 1 ] && taskset -p 1 $$ > /dev/null
if [ $CPUS -gt 1 ]; then N=$N taskset 2 sh /tmp/agree-wl.sh & else N=$N sh /tmp/agree-wl.sh & fi
WL=$!
S='SELECT id, COUNT(*) AS n FROM sys_exit'
W='SELECT CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_wakeup AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY lat'
R='SELECT CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid WHERE start.prev_state == 0 OR start.prev_state == 256 GROUP BY lat'
F='SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS lat, COUNT(*) AS n FROM kprobe(schedule_hrtimeout_range) AS start JOIN kretprobe(schedule_hrtimeout_range) AS end ON start.common_pid = end.common_pid GROUP BY lat'
/work/sqlhist -r --engine kernel -o json -p $WL "$S" > /tmp/agree-s.json 2> /tmp/agree-s.err & P1=$!
/work/sqlhist -r --engine kernel -o json -p $WL "$W" > /tmp/agree-w.json 2> /tmp/agree-w.err & P2=$!
/work/sqlhist -r --engine kernel -o json -p $WL "$R" > /tmp/agree-r.json 2> /tmp/agree-r.err & P3=$!
/work/sqlhist -r --engine kernel -o json -p $WL "$F" > /tmp/agree-f.json 2> /tmp/agree-f.err & P4=$!
/usr/sbin/syscount -p $WL -T 1000 > /tmp/agree-s.bpf 2>&1 & B1=$!
/usr/sbin/runqlat -p $WL > /tmp/agree-w.bpf 2>&1 & B2=$!
/usr/sbin/funclatency -p $WL schedule_hrtimeout_range > /tmp/agree-f.bpf 2>&1 & B3=$!
i=0
while [ $i -lt 300 ]; do
  n=0
  for f in s w r f; do grep -q collecting /tmp/agree-$f.err && n=$((n+1)); done
  for b in $B1 $B2 $B3; do read nr rest < /proc/$b/syscall; [ "$nr" = "$NANOSLEEP" ] && n=$((n+1)); done
  [ $n -eq 7 ] && break
  sleep 0.1; i=$((i+1))
done
echo "@@agree-ready $n"
echo go > /tmp/agree-go
wait $WL; echo "@@agree-workload-exit $?"
kill -INT $P1 $P2 $P3 $P4 $B1 $B2 $B3
for p in $P1 $P2 $P3 $P4 $B1 $B2 $B3; do wait $p; echo "@@agree-exit-$p $?"; done
for f in s w r f; do echo "@@agree-$f-json"; cat /tmp/agree-$f.json; echo "@@agree-$f-err"; cat /tmp/agree-$f.err; done
for f in s w f; do echo "@@agree-$f-bpf"; cat /tmp/agree-$f.bpf; done
echo "@@agree-clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "@@agree-unstable $(dmesg | grep -c "Marking clocksource 'tsc' as unstable")"
echo "@@agree-syscalls"; /usr/sbin/syscount -l 2>&1
echo "@@agree-end"
`

// agreePhase is the agreement phase of kname's boot, nil on the other
// kernels.
func agreePhase(t *testing.T, kname string) *phase {
	if !agreeKernels[kname] {
		return nil
	}
	arch := kernelArch(t, kname)
	files := append(append([]vm.File(nil), bpfToolsFor(t, arch)...), vm.File{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, arch)})
	script := fmt.Sprintf("N=%d\nNANOSLEEP=%d\n", agreeN, clockNanosleep[arch]) + agreeScript
	return &phase{name: "agree", script: script, files: files, timeout: 3 * time.Minute,
		check: func(t *testing.T, out string) string { return checkAgree(t, kname, out) }}
}

// checkAgree compares the answers and logs them side by side.
func checkAgree(t *testing.T, kname, out string) string {
	w := &whyChecker{checker: t}
	detail := checkAgreeWith(w, kname, out)
	if w.why != "" {
		noteWhy(kname, "agree", w.why)
	}
	return detail
}

// whyChecker keeps the first failure it passes on, for the suite's table.
type whyChecker struct {
	checker
	why string
}

func (w *whyChecker) Errorf(format string, args ...any) {
	if w.why == "" {
		w.why = fmt.Sprintf(format, args...)
	}
	w.checker.Errorf(format, args...)
}

// checker is what checkAgreeWith needs of a *testing.T (a test of the
// check gives it a recorder).
type checker interface {
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
}

func checkAgreeWith(t checker, kname, out string) string {
	sec := sections(out)
	if ready := firstLine(out, "@@agree-ready "); ready != "@@agree-ready 7" {
		t.Errorf("not every tool was collecting before the go (want @@agree-ready 7, of 4 sqlhist runs and 3 tools): %q", ready)
	}
	for _, want := range []string{"@@agree-workload-exit 0", "@@agree-end"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in the guest's output:\n%s", want, lastLines(out, 40))
		}
	}
	t.Logf("%s: %s", kname, firstLine(out, "@@agree-clocksource"))
	// Clocks: see the top of this file. Once the TSC is marked unstable
	// (an x86-64 guest on a loaded host), sqlhist's global clock and
	// BPF's mono clock run at different rates, and latencies cannot be
	// compared; the counts still are.
	unstable := firstLine(out, "@@agree-unstable ") != "@@agree-unstable 0"
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "@@agree-exit-") && !strings.HasSuffix(l, " 0") {
			t.Errorf("a tool failed: %s", l)
		}
	}
	defer func() {
		if t.Failed() {
			for _, f := range []string{"s", "w", "r", "f"} {
				t.Logf("sqlhist's stderr (%s):\n%s", f, sec["agree-"+f+"-err"])
			}
		}
	}()
	a, err := parseAgree(sec)
	if err != nil {
		t.Errorf("%v\n%s", err, lastLines(out, 80))
		return ""
	}
	report, errs := a.compare(agreeN)
	t.Logf("%s: sqlhist and libbpf-tools over the same window:\n%s", kname, report)
	var dists []string
	for _, e := range errs {
		if unstable && strings.Contains(e, distsDiffer) {
			dists = append(dists, e)
			continue
		}
		t.Errorf("%s", e)
	}
	if unstable && !t.Failed() {
		t.Skipf("the counts agree, but the guest marked its TSC unstable (dmesg), so sqlhist's trace clock (global: sched_clock, the TSC) and BPF's (mono: the clocksource) ran at different rates and the latency distributions were not compared (%d of 2 differed)", len(dists))
	}
	return a.detail()
}

// bpfToolsFor returns vm.BPFToolFiles(arch) (Debian bookworm's
// libbpf-tools with its libraries and loader), fetched once per test
// process; a failed fetch ends the test as not a verdict.
func bpfToolsFor(t *testing.T, arch string) []vm.File {
	t.Helper()
	bpfToolsMu.Lock()
	defer bpfToolsMu.Unlock()
	if f, ok := bpfToolsOf[arch]; ok {
		return f
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	f, err := vm.BPFToolFiles(ctx, arch)
	if err != nil {
		t.Fatalf("libbpf-tools for %s (not a test verdict): %v", arch, err)
	}
	bpfToolsOf[arch] = f
	return f
}

var (
	bpfToolsMu sync.Mutex
	bpfToolsOf = map[string][]vm.File{}
)

// agreement is both sides' answers.
type agreement struct {
	sqlSys, bpfSys   map[int]uint64 // system call number → count
	sqlWake, sqlPre  map[int]uint64 // kernel log2 bucket e → count
	sqlFunc          map[int]uint64
	bpfWake, bpfFunc bpfHist
}

func parseAgree(sec map[string]string) (*agreement, error) {
	var a agreement
	var err error
	if a.sqlSys, err = sqlhistRows(sec["agree-s-json"], "id"); err != nil {
		return nil, fmt.Errorf("sqlhist's syscall counts: %v", err)
	}
	if a.sqlWake, err = sqlhistLog2(sec["agree-w-json"]); err != nil {
		return nil, fmt.Errorf("sqlhist's wakeup latency: %v", err)
	}
	if a.sqlPre, err = sqlhistLog2(sec["agree-r-json"]); err != nil {
		return nil, fmt.Errorf("sqlhist's preempted latency: %v", err)
	}
	if a.sqlFunc, err = sqlhistLog2(sec["agree-f-json"]); err != nil {
		return nil, fmt.Errorf("sqlhist's function latency: %v", err)
	}
	names := parseSyscountList(sec["agree-syscalls"])
	byName, err := parseSyscount(sec["agree-s-bpf"])
	if err != nil {
		return nil, fmt.Errorf("syscount: %v", err)
	}
	a.bpfSys = map[int]uint64{}
	for name, n := range byName {
		nr, ok := syscallNumber(name, names)
		if !ok {
			return nil, fmt.Errorf("syscount printed %q, which is neither [unknown: N] nor in its -l list", name)
		}
		a.bpfSys[nr] += n
	}
	if a.bpfWake, err = parseBPFHist(sec["agree-w-bpf"]); err != nil {
		return nil, fmt.Errorf("runqlat: %v", err)
	}
	if a.bpfFunc, err = parseBPFHist(sec["agree-f-bpf"]); err != nil {
		return nil, fmt.Errorf("funclatency: %v", err)
	}
	if a.bpfWake.unit != "usecs" || a.bpfFunc.unit != "nsec" {
		return nil, fmt.Errorf("units: runqlat %q (want usecs), funclatency %q (want nsec)", a.bpfWake.unit, a.bpfFunc.unit)
	}
	return &a, nil
}

// compare checks the answers and returns them side by side: system call
// counts equal per number, latency totals within 1%, latency
// distributions (kernel bucket e beside BPF slot e-1) at most maxTVD
// apart in total variation distance. n is the workload's iterations:
// each question must see at least that many events, so that empty
// answers never agree.
func (a *agreement) compare(n int) (string, []string) {
	var b strings.Builder
	var errs []string
	fmt.Fprintf(&b, "%-10s %10s %10s\n", "syscall", "sqlhist", "syscount")
	nrs := map[int]bool{}
	for nr := range a.sqlSys {
		nrs[nr] = true
	}
	for nr := range a.bpfSys {
		nrs[nr] = true
	}
	sorted := make([]int, 0, len(nrs))
	for nr := range nrs {
		sorted = append(sorted, nr)
	}
	sort.Ints(sorted)
	var most uint64
	for _, nr := range sorted {
		s, p := a.sqlSys[nr], a.bpfSys[nr]
		mark := ""
		if s != p {
			mark = "  <- differ"
			errs = append(errs, fmt.Sprintf("system call %d: sqlhist counted %d, syscount %d", nr, s, p))
		}
		most = max(most, s)
		fmt.Fprintf(&b, "%-10d %10d %10d%s\n", nr, s, p, mark)
	}
	if most < uint64(n) {
		errs = append(errs, fmt.Sprintf("no system call counted %d times or more (the workload made %d openat and %d polls): the window missed the workload", n, n, n))
	}
	wake := addHists(a.sqlWake, a.sqlPre)
	fmt.Fprintf(&b, "wakeup latency (us): sqlhist = sched_wakeup JOIN (%d) + preempted JOIN (%d)\n", sum(a.sqlWake), sum(a.sqlPre))
	errs = append(errs, compareLatency(&b, "runqlat", wake, a.bpfWake, n, sum(a.sqlPre), true)...)
	fmt.Fprintf(&b, "schedule_hrtimeout_range latency (ns):\n")
	errs = append(errs, compareLatency(&b, "funclatency", a.sqlFunc, a.bpfFunc, n, 0, false)...)
	return b.String(), errs
}

// compareLatency prints a kernel log2 histogram beside a BPF one, bucket
// e beside slot e-1, and checks the totals (within 1%) and the
// distributions: at most maxTVD apart in total variation distance, or,
// with atEdges (latencies that cluster at a bucket's end, the wakeups),
// log2Moves' bounds. extra of sqlhist's events are ones the tool may not
// count (the preempted JOIN's, for runqlat: the file's comment): the
// tool's total may be that many short of sqlhist's, never over it.
func compareLatency(b *strings.Builder, tool string, kern map[int]uint64, bpf bpfHist, n int, extra uint64, atEdges bool) []string {
	var errs []string
	lo, hi := 64, 0
	for e, c := range kern {
		if c > 0 {
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	for k, c := range bpf.slots {
		if c > 0 {
			lo, hi = min(lo, k+1), max(hi, k+1)
		}
	}
	fmt.Fprintf(b, "  %-22s %8s   %-22s %8s\n", "sqlhist (2^(e-1), 2^e]", "count", tool+" [2^k, 2^(k+1))", "count")
	for e := lo; e <= hi; e++ {
		kr := fmt.Sprintf("(%d, %d]", lowOf(e), uint64(1)<<e)
		br := fmt.Sprintf("[%d, %d]", bpfLow(e-1), uint64(1)<<e-1)
		if e == 0 {
			br = "-"
		}
		fmt.Fprintf(b, "  %-22s %8d   %-22s %8d\n", kr, kern[e], br, bpf.slots[e-1])
	}
	st, bt := sum(kern), sum(bpf.slots)
	fmt.Fprintf(b, "  total %d vs %d", st, bt)
	if floor := latencyFloor(n); bt == 0 || st < floor || bt < floor {
		errs = append(errs, fmt.Sprintf("%s: totals %d (sqlhist) and %d (%s), want at least %d each (the workload's %d events, less 2%%)", tool, st, bt, tool, floor, n))
	} else if d := float64(st) - float64(bt); d > float64(extra)+0.01*float64(bt) || -d > 0.01*float64(bt) {
		if extra == 0 {
			errs = append(errs, fmt.Sprintf("%s: sqlhist's total %d is not within 1%% of %s's %d", tool, st, tool, bt))
		} else {
			errs = append(errs, fmt.Sprintf("%s: %s's total %d is not between sqlhist's %d less its %d preempted starts and its %d, within 1%%", tool, tool, bt, st, extra, st))
		}
	}
	d := tvd(kern, bpf.slots)
	if atEdges {
		steps, far := log2Moves(kern, bpf.slots)
		farMax := max(maxFar, 1/float64(max(min(st, bt), 1))) + 0.01
		fmt.Fprintf(b, "; %s %.1f%%; %.2f bucket steps an event (at most %.2f), %.1f%% two buckets or more apart (at most %.1f%%)\n", tvdName, 100*d, steps, maxSteps, 100*far, 100*farMax)
		if st >= 8 && bt >= 8 && (steps > maxSteps || far > farMax) {
			errs = append(errs, fmt.Sprintf("%s: %s: %.2f bucket steps an event (at most %.2f: not every event a bucket over), %.1f%% of the events two buckets or more from the other side's (at most %.1f%%); kernel bucket e beside BPF slot e-1, each normalised by its total: sqlhist %s; %s %s",
				tool, distsDiffer, steps, maxSteps, 100*far, 100*farMax, kernBuckets(kern), tool, bpfSlots(bpf.slots)))
		}
		return errs
	}
	fmt.Fprintf(b, "; %s %.1f%% (at most %.0f%%)\n", tvdName, 100*d, 100*maxTVD)
	if d > maxTVD {
		errs = append(errs, fmt.Sprintf("%s: %s: %s %.1f%%, want at most %.0f%% (kernel bucket e beside BPF slot e-1, each normalised by its total): sqlhist %s; %s %s",
			tool, distsDiffer, tvdName, 100*d, 100*maxTVD, kernBuckets(kern), tool, bpfSlots(bpf.slots)))
	}
	return errs
}

// distsDiffer begins the failure of either distribution check, which an
// unstable TSC turns into a skip.
const distsDiffer = "the latency distributions differ"

// maxSteps and maxFar bound log2Moves for latencies that cluster at a
// bucket's end (the wakeups). The two tools read one wakeup a few
// microseconds apart, one-sidedly (maxTVD's comment), and under TCG the
// wakeups of a 3 ms poll cluster at 32 us: a fresh clone of 2026-12-05
// put 99 of sqlhist's 201 in (16, 32] and 98 in (32, 64] against
// runqlat's 25 and 172 (37% apart in total variation distance, with
// equal counts). So any share of the events but all may sit one bucket
// over; what different answers do is shift every event (a bucket rule
// off by one: a step an event) or move events further (a clock's drift,
// a unit, a pairing: two buckets and more). The same rule as the same
// window's (samewindow_test.go). The function's 3 ms sleeps sit in the
// middle of their bucket and keep the stricter maxTVD.
const (
	maxSteps = 0.75
	maxFar   = 0.05
)

// log2Moves compares a kernel log2 histogram with a BPF one (bucket e
// beside slot e-1), each normalised by its total: steps is the least
// number of bucket steps an event that turn one into the other (the
// differences of the cumulative shares, added up), far the largest share
// that must move two buckets or more (where one side's share up to bucket
// k-1 exceeds the other's up to k).
func log2Moves(kern, bpf map[int]uint64) (steps, far float64) {
	st, bt := sum(kern), sum(bpf)
	if st == 0 || bt == 0 {
		return 0, 0
	}
	lo, hi := 64, 0
	for e, c := range kern {
		if c > 0 {
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	for k, c := range bpf {
		if c > 0 {
			lo, hi = min(lo, k+1), max(hi, k+1)
		}
	}
	var f, g, pf, pg float64
	for e := lo; e <= hi; e++ {
		f += float64(kern[e]) / float64(st)
		g += float64(bpf[e-1]) / float64(bt)
		steps += math.Abs(f - g)
		if e > lo {
			far = max(far, pf-g, pg-f)
		}
		pf, pg = f, g
	}
	return steps, far
}

// tvdName names the distributions' measure in the report and in the
// failure that an unstable TSC turns into a skip.
const tvdName = "total variation distance"

// maxTVD is the largest total variation distance between the two tools'
// latency distributions that is still the same answer: one event in five
// in a neighbouring bucket. Equal answers differ by events within the
// measurements' difference of a bucket's end (the top of this file), and
// on the wakeups that difference is one-sided: each tool's start and end
// wait for the other's handlers on the same tracepoints, a hist trigger's
// several microseconds under TCG, so runqlat's latencies run a few us
// shorter than sqlhist's, and their mode, 32-64 us, sits near a bucket's
// end. Eight runs of 6.1 on 2026-11-27 (five with two busy loops on the
// host): 3.0-8.4% (runqlat 24 in [16, 31] against sqlhist's 9 in
// (16, 32], the rest within 10 a bucket); the CI run of that day crossed
// 10% on 6.1 with equal counts (201 = 201). Different answers are far
// more: a distribution moved a bucket is 40% away (that run's wakeups),
// the probes' cost doubling a latency 46%, the TSC's drift 100%. 20% is
// twice the farthest equal answer seen and half the nearest different
// one.
const maxTVD = 0.20

// tvd is the total variation distance between a kernel log2 histogram
// (bucket e → count) and a BPF one (slot k → count), bucket e against
// slot e-1, each normalised by its total: half the sum of the absolute
// differences, 0 for the same distribution, 1 for disjoint ones (or when
// only one side has events).
func tvd(kern, bpf map[int]uint64) float64 {
	st, bt := sum(kern), sum(bpf)
	if st == 0 || bt == 0 {
		if st == bt {
			return 0
		}
		return 1
	}
	buckets := map[int]bool{}
	for e := range kern {
		buckets[e] = true
	}
	for k := range bpf {
		buckets[k+1] = true
	}
	var d float64
	for e := range buckets {
		p, q := float64(kern[e])/float64(st), float64(bpf[e-1])/float64(bt)
		d += math.Abs(p - q)
	}
	return d / 2
}

// kernBuckets prints a kernel log2 histogram's non-empty buckets in
// order: "(64, 128] 82, (128, 256] 89".
func kernBuckets(h map[int]uint64) string {
	var parts []string
	for _, e := range sortedKeys(h) {
		if h[e] > 0 {
			parts = append(parts, fmt.Sprintf("(%d, %d] %d", lowOf(e), uint64(1)<<e, h[e]))
		}
	}
	return strings.Join(parts, ", ")
}

// bpfSlots prints a BPF log2 histogram's non-empty slots in order:
// "[64, 127] 86, [128, 255] 85".
func bpfSlots(h map[int]uint64) string {
	var parts []string
	for _, k := range sortedKeys(h) {
		if h[k] > 0 {
			parts = append(parts, fmt.Sprintf("[%d, %d] %d", bpfLow(k), uint64(1)<<(k+1)-1, h[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(h map[int]uint64) []int {
	keys := make([]int, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// latencyFloor is the fewest events each side of a latency question must
// see for n iterations of the workload: n less 2%. The floor is there so
// that two empty answers never agree, and it cannot be n: not every timed
// poll reaches schedule_hrtimeout_range (one whose 3 ms are already spent
// when it reaches the kernel returns at once). On a loaded host the 6.1
// arm64 guest once counted 199 sleeps of 200 on both sides alike, with
// every ppoll made (202 on both).
func latencyFloor(n int) uint64 {
	return uint64(n - n/50)
}

func lowOf(e int) uint64 {
	if e == 0 {
		return 0
	}
	return uint64(1) << (e - 1)
}

func bpfLow(k int) uint64 {
	if k <= 0 {
		return 0
	}
	return uint64(1) << k
}

func sum(h map[int]uint64) uint64 {
	var s uint64
	for _, n := range h {
		s += n
	}
	return s
}

func addHists(hs ...map[int]uint64) map[int]uint64 {
	out := map[int]uint64{}
	for _, h := range hs {
		for e, n := range h {
			out[e] += n
		}
	}
	return out
}

func (a *agreement) detail() string {
	var s, p uint64
	for _, n := range a.sqlSys {
		s += n
	}
	for _, n := range a.bpfSys {
		p += n
	}
	return fmt.Sprintf("syscalls %d/%d, wakeups %d/%d, sleeps %d/%d", s, p,
		sum(a.sqlWake)+sum(a.sqlPre), sum(a.bpfWake.slots), sum(a.sqlFunc), sum(a.bpfFunc.slots))
}

// sqlhistResult is the part of `sqlhist -r -o json` these checks read.
type sqlhistResult struct {
	Results []struct {
		Event string
		Rows  []map[string]any
	}
}

// sqlhistRows reads a one-result JSON answer's rows as key column →
// count (column n).
func sqlhistRows(text, key string) (map[int]uint64, error) {
	var r sqlhistResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return nil, fmt.Errorf("%v in %q", err, text)
	}
	if len(r.Results) != 1 {
		return nil, fmt.Errorf("%d results, want 1", len(r.Results))
	}
	out := map[int]uint64{}
	for _, row := range r.Results[0].Rows {
		k, ok1 := row[key].(float64)
		n, ok2 := row["n"].(float64)
		if !ok1 || !ok2 || k < 0 || n < 0 {
			return nil, fmt.Errorf("row %v: want numbers %s and n", row, key)
		}
		out[int(k)] += uint64(n)
	}
	return out, nil
}

// sqlhistLog2 reads a JSON answer keyed by a .log2 column lat, whose value
// is its bucket's upper bound 2^e, as e → count.
func sqlhistLog2(text string) (map[int]uint64, error) {
	rows, err := sqlhistRows(text, "lat")
	if err != nil {
		return nil, err
	}
	out := map[int]uint64{}
	for ub, n := range rows {
		if ub <= 1 {
			out[0] += n
			continue
		}
		if bits.OnesCount(uint(ub)) != 1 {
			return nil, fmt.Errorf("bucket %d is not a power of two", ub)
		}
		out[bits.Len(uint(ub))-1] += n
	}
	return out, nil
}

// bpfHist is a libbpf-tools log2 histogram (print_log2_hist): the unit in
// its header ("usecs", "nsec", "msecs") and the count of each slot k,
// which holds [2^k, 2^(k+1)-1] (slot 0: 0 and 1).
type bpfHist struct {
	unit  string
	slots map[int]uint64
}

var (
	bpfHistHeadRE = regexp.MustCompile(`^\s*(\S+)\s+: count\s+distribution\s*$`)
	bpfHistRowRE  = regexp.MustCompile(`^\s*(\d+) -> (\d+)\s+: (\d+)\s+\|`)
)

// parseBPFHist reads the one histogram in a tool's output; every row's
// range must be its slot's.
func parseBPFHist(text string) (bpfHist, error) {
	h := bpfHist{slots: map[int]uint64{}}
	rows := 0
	for _, l := range strings.Split(text, "\n") {
		if m := bpfHistHeadRE.FindStringSubmatch(l); m != nil {
			if h.unit != "" {
				return h, fmt.Errorf("two histograms")
			}
			h.unit = m[1]
			continue
		}
		m := bpfHistRowRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if h.unit == "" {
			return h, fmt.Errorf("a row before the header: %q", l)
		}
		lo, _ := strconv.ParseUint(m[1], 10, 64)
		hi, _ := strconv.ParseUint(m[2], 10, 64)
		n, _ := strconv.ParseUint(m[3], 10, 64)
		k := 0
		if lo > 0 {
			k = bits.Len64(lo) - 1
		}
		if bpfLow(k) != lo || uint64(1)<<(k+1)-1 != hi {
			return h, fmt.Errorf("row %q is not a log2 slot", l)
		}
		if _, dup := h.slots[k]; dup {
			return h, fmt.Errorf("slot %d twice", k)
		}
		h.slots[k] = n
		rows++
	}
	if h.unit == "" {
		return h, fmt.Errorf("no histogram in %q", text)
	}
	if rows == 0 {
		// print_log2_hist prints nothing for an empty histogram: no
		// events is an answer, and the checks' minimums catch it.
		return h, nil
	}
	return h, nil
}

var (
	syscountRowRE  = regexp.MustCompile(`^(\[unknown: \d+\]|[a-z_0-9]+)\s+(\d+)$`)
	syscountListRE = regexp.MustCompile(`^\s*(\d+): ([a-z_0-9]+)$`)
)

// parseSyscount reads syscount's table (after its SYSCALL COUNT header):
// name (or "[unknown: N]") → count.
func parseSyscount(text string) (map[string]uint64, error) {
	out := map[string]uint64{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "SYSCALL" && f[1] == "COUNT" {
			if in {
				return nil, fmt.Errorf("two tables")
			}
			in = true
			continue
		}
		if !in || strings.TrimSpace(l) == "" {
			continue
		}
		m := syscountRowRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			return nil, fmt.Errorf("not a syscount row: %q", l)
		}
		n, _ := strconv.ParseUint(m[2], 10, 64)
		out[m[1]] += n
	}
	if !in {
		return nil, fmt.Errorf("no SYSCALL COUNT table in %q", text)
	}
	return out, nil
}

// parseSyscountList reads `syscount -l` ("  N: name" lines) as name → N.
func parseSyscountList(text string) map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		if m := syscountListRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			out[m[2]] = n
		}
	}
	return out
}

// syscallNumber is a syscount name's number: "[unknown: N]" is N, a name
// is looked up in its -l list.
func syscallNumber(name string, list map[string]int) (int, bool) {
	if s, ok := strings.CutPrefix(name, "[unknown: "); ok {
		n, err := strconv.Atoi(strings.TrimSuffix(s, "]"))
		return n, err == nil
	}
	n, ok := list[name]
	return n, ok
}
