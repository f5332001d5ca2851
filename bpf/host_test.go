package bpf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/stream"

	"github.com/sqlhist/sqlhist/tracefs"
)

const tracefsRoot = "/sys/kernel/tracing"

// inTracefs runs the calling test in a child process, where tracefs is
// mounted (when the host has none mounted, in a private mount namespace
// that mounts it: unshare -m, so that the host's mounts are left alone)
// and the Go runtime sends no preemption signals (a signal wakes the
// thread it interrupts, and restarts its system call: the workload's
// counts would not be exact). It returns false when the caller is the
// parent, whose child ran the test.
func inTracefs(t *testing.T) bool {
	t.Helper()
	if why := canLoad(); why != "" {
		t.Skip("cannot load BPF programs here: " + why)
	}
	_, err := os.Stat(tracefsRoot + "/events/sched/sched_switch/format")
	if os.Getenv("SQLHIST_BPF_CHILD") != "" {
		if err != nil {
			t.Fatalf("tracefs was to be mounted at %s in this namespace, and is not", tracefsRoot)
		}
		return true
	}
	args := []string{"-test.run", "^" + t.Name() + "$", "-test.v", "-test.count=1"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if err == nil {
		cmd = exec.CommandContext(ctx, os.Args[0], args...)
	} else {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("tracefs is not mounted and unshare(1) is missing to mount it privately")
		}
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"-m", "--propagation", "private", "sh", "-c",
			`mount -t tracefs nodev ` + tracefsRoot + ` && exec "$0" "$@"`, os.Args[0]}, args...)...)
	}
	cmd.Env = append(os.Environ(), "SQLHIST_BPF_CHILD=1", "GODEBUG=asyncpreemptoff=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a child process with tracefs mounted:\n%s", out)
	if err != nil {
		t.Fatalf("the test in the child failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()+" (") {
		t.Skip("skipped in the child (its output above says why)")
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatal("the test did not pass in the child")
	}
	return false
}

// switches reads a thread's voluntary context switches.
func switches(t *testing.T, tid int) uint64 {
	t.Helper()
	v, _ := switchCounts(t, tid)
	return v
}

// switchCounts reads a thread's voluntary and involuntary context
// switches.
func switchCounts(t *testing.T, tid int) (vol, invol uint64) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, l := range strings.Split(string(data), "\n") {
		for _, c := range []struct {
			name string
			n    *uint64
		}{{"voluntary_ctxt_switches:", &vol}, {"nonvoluntary_ctxt_switches:", &invol}} {
			if v, ok := strings.CutPrefix(l, c.name); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				*c.n = n
				found++
			}
		}
	}
	if found != 2 {
		t.Fatal("no context switch counts in the thread's status")
	}
	return vol, invol
}

// hostFormat reads an event's format from the host's tracefs.
func hostFormat(system, event string) (*tracefs.Event, error) {
	data, err := os.ReadFile(tracefsRoot + "/events/" + system + "/" + event + "/format")
	if err != nil {
		return nil, err
	}
	return tracefs.ParseFormat(system, string(data))
}

// pingPong makes n+1 wakeups of one thread and n of its reads and
// writes, with no other system call between them: raw system calls,
// which the Go scheduler does not see (the garbage collector is off: a
// stop of the world would wait for the thread blocked in one), but the
// last read, which blocks in the scheduler's sight. The thread, locked, first blocks
// reading pipe c; go (after the engine attached) writes c: a wakeup
// whose read began before. Then n rounds: the thread blocks reading pipe
// a, the test writes a byte there (a wakeup), and the thread answers on
// pipe b. Then the thread blocks on c again until release, so that
// nothing wakes it before the engine is read.
func pingPong(t *testing.T, n int) (tid int, goRun func(), release func()) {
	t.Helper()
	var a, b, c [2]int
	for _, p := range []*[2]int{&a, &b, &c} {
		if err := syscall.Pipe(p[:]); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(nr, fd uintptr, buf []byte) error {
		_, _, errno := syscall.RawSyscall(nr, fd, uintptr(unsafe.Pointer(&buf[0])), 1)
		if errno != 0 {
			return errno
		}
		return nil
	}
	tids := make(chan int)
	go func() {
		runtime.LockOSThread()
		buf := make([]byte, 1)
		tids <- syscall.Gettid()
		raw(syscall.SYS_READ, uintptr(c[0]), buf)
		for i := 0; i < n; i++ {
			raw(syscall.SYS_READ, uintptr(a[0]), buf)
			raw(syscall.SYS_WRITE, uintptr(b[1]), buf)
		}
		syscall.Read(c[0], buf)
		runtime.UnlockOSThread()
	}()
	tid = <-tids
	// Let the thread block in its first read.
	time.Sleep(50 * time.Millisecond)
	buf := []byte{'x'}
	goRun = func() {
		if err := raw(syscall.SYS_WRITE, uintptr(c[1]), buf); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			// Let the thread go to sleep in read first.
			time.Sleep(100 * time.Microsecond)
			if err := raw(syscall.SYS_WRITE, uintptr(a[1]), buf); err != nil {
				t.Fatal(err)
			}
			if err := raw(syscall.SYS_READ, uintptr(b[0]), buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			raw(syscall.SYS_WRITE, uintptr(c[1]), buf)
			for _, fd := range [][2]int{a, b, c} {
				syscall.Close(fd[0])
				syscall.Close(fd[1])
			}
		})
	}
	return tid, goRun, release
}

// TestHostJoin runs the wakeup JOIN of -r and a syscall count on this
// host's kernel, attached to its sched_waking, sched_switch and
// raw_syscalls:sys_enter, over a workload of known wakeups and calls.
func TestHostJoin(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	if stats, err := ebpf.EnableStats(0); err == nil { // BPF_STATS_RUN_TIME
		defer stats.Close()
	} else {
		t.Logf("no run-time statistics: %v", err)
	}
	const n = 2000
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	tid, run, release := pingPong(t, n)
	defer release()
	pidIs := pred("pid", "==", uint64(tid))
	ts, synths := wakeupJoin("sched_waking", pidIs)
	sc := syscount()[0]
	sc.Filter = pred("common_pid", "==", uint64(tid))
	ts = append(ts, sc)
	// Switches to the reader counted three ways: all, those whose
	// next_comm starts with the reader's first 4 letters (a glob), and
	// those whose next_comm starts with something else.
	comm, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/comm")
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSpace(string(comm))
	nextIs := pred("next_pid", "==", uint64(tid))
	for _, glob := range []string{"", name[:4] + "*", name[:3] + "\x01*"} {
		ft := nextIs
		if glob != "" {
			ft = &planner.Filter{Op: planner.FilterAnd, L: nextIs, R: strPred("next_comm", "~", glob)}
		}
		ts = append(ts, &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")}, Filter: ft})
	}
	// The same JOIN carrying the task names: the start's in a string
	// variable.
	cj, cs := commJoin(pidIs)
	ts, synths = append(ts, cj...), append(synths, cs...)
	e, err := New(ts, synths, hostFormat, Options{Syscall: func(nr uint64) string {
		return map[uint64]string{0: "read", 1: "write", 202: "futex", 24: "sched_yield", 15: "rt_sigreturn", 14: "rt_sigprocmask", 186: "gettid", 234: "tgkill", 35: "nanosleep", 230: "clock_nanosleep", 281: "epoll_pwait", 13: "rt_sigaction"}[nr]
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	vol0, invol0 := switchCounts(t, tid)
	start := time.Now()
	run()
	elapsed := time.Since(start)
	// The thread blocks in its last read: its switches out are all
	// counted, and each but that last one was followed by a wakeup and
	// a switch in, as was the one it was blocked in at the start.
	time.Sleep(50 * time.Millisecond)
	vol1, invol1 := switchCounts(t, tid)
	made, preempted := vol1-vol0, invol1-invol0
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Stats()
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		per := uint64(0)
		if s.Runs > 0 {
			per = s.RunTimeNs / s.Runs
		}
		t.Logf("%s: %d runs, %d ns, %d ns a run, %d skipped", s.Event, s.Runs, s.RunTimeNs, per, s.RecursionMisses)
	}
	t.Logf("lost %d", lost)
	// Where the kernel has BTF, the scheduler's programs here read only
	// what their raw tracepoints' arguments give: they run raw
	// (rawtp.go); the system calls' stay classic.
	if _, err := taskFields(); err == nil {
		for ev, how := range e.Attachments() {
			if want := map[bool]string{true: "raw tracepoint", false: "tracepoint"}[strings.HasPrefix(ev, "sched/")]; how != want {
				t.Errorf("%s attached as a %s, want a %s", ev, how, want)
			}
		}
	}
	res, neg := hs[2], hs[3]
	var count, sum, maxLat uint64
	for _, ent := range res.Entries {
		if ent.Keys[0].Num != uint64(tid) {
			t.Errorf("an entry of pid %d, filtered to %d", ent.Keys[0].Num, tid)
		}
		c, s := ent.Values[0].Num, ent.Values[1].Num
		count += c
		sum += s
		if len(ent.Tracked) != 1 || len(ent.Tracked[0].Saved) != 1 {
			t.Fatalf("entry without its max: %+v", ent)
		}
		m := ent.Tracked[0].Value
		maxLat = max(maxLat, m)
		if m != ent.Tracked[0].Saved[0].Num {
			t.Errorf("max %d, saved lat %d", m, ent.Tracked[0].Saved[0].Num)
		}
		// The bucket holds the entry's latencies: its max is at most
		// 2^exp, its average above 2^(exp-1).
		exp := ent.Keys[1].Num
		if exp > 40 || m > 1<<exp || exp > 0 && s/c <= 1<<(exp-1) {
			t.Errorf("bucket 2^%d with max %d, average %d", exp, m, s/c)
		}
		t.Logf("pid %d lat ~2^%d: count %d, sum %d us, max %d us", ent.Keys[0].Num, exp, c, s, m)
	}
	var negs uint64
	for _, ent := range neg.Entries {
		negs += ent.Values[0].Num
	}
	t.Logf("%d wakeups in %v; results hits %d, entries %d, dropped %d; negatives %d", n, elapsed, res.Totals.Hits, res.Totals.Entries, res.Totals.Dropped, negs)
	// Each wakeup joined, but those whose sched_waking program the
	// kernel skipped (another BPF program ran on the CPU: counted as
	// the programs' recursion misses, lost). The thread's wakeups are its
	// voluntary switches, as the kernel counts them: up to the n+1 the
	// workload made (fewer when a byte came before the thread slept: a
	// slow guest), and those the Go scheduler adds when it preempts the
	// goroutine at a call (it parks the locked thread until it may run
	// on).
	//
	// A wakeup that comes as the thread is about to sleep (its state
	// set, not switched out yet) makes it run on: no voluntary switch,
	// and a JOIN with its next switch in, after a preemption. So the
	// JOIN counts between the voluntary switches (less the runs
	// skipped) and those plus the preemptions: on this host, exactly the
	// voluntary ones in practice.
	t.Logf("the thread's voluntary switches: %d, preemptions %d; the workload's wakeups at most %d", made, preempted, n+1)
	// Whether the thread sleeps in a round depends on timing (on a
	// busy machine it may find its byte already there; CI's TestRawArgs
	// saw it), so this asks only that the workload slept in a tenth of
	// its rounds; what follows bounds the JOIN by the kernel's counts.
	if made < n/10 {
		t.Errorf("%d voluntary switches: the workload (%d rounds) hardly slept", made, n)
	}
	//
	// The kernel can also run the thread without a sched_switch into it
	// (see TestHostStacks): the JOIN cannot see that wakeup's end, and
	// the next wakeup replaces its start. Each switch out but the last
	// is followed by a switch in, and the first switch in (out of the
	// read the thread was blocked in before Start) follows none: the
	// switches in the events lack are those unseen.
	unseen := uint64(0)
	if ins := hs[5].Totals.Hits; made+preempted > ins {
		unseen = made + preempted - ins
	}
	if unseen > (made+preempted)/100 {
		t.Errorf("%d switches into the thread had no event, of %d", unseen, made+preempted)
	}
	if count+negs > made+preempted || count+negs+lost+unseen < made {
		t.Errorf("%d wakeups joined (%d negative), %d program runs skipped, %d switches in without an event; the thread switched out %d times voluntarily, %d preempted", count+negs, negs, lost, unseen, made, preempted)
	}
	if count != res.Totals.Hits {
		t.Errorf("entries count %d, totals %d", count, res.Totals.Hits)
	}
	if count > 0 && (sum/count > 100_000 || maxLat > uint64(elapsed.Microseconds())) {
		t.Errorf("average latency %d us, max %d us over a run of %v", sum/count, maxLat, elapsed)
	}
	// The reader's system calls: n reads and n writes, by name.
	calls := map[string]uint64{}
	for _, ent := range hs[4].Entries {
		k := ent.Keys[0]
		if k.Kind != tracefs.HistSyscall {
			t.Errorf("key kind %v", k.Kind)
		}
		calls[k.Text] += ent.Values[0].Num
	}
	t.Logf("the reader's system calls: %v", calls)
	// The task names: the reader's (the wakee's comm at sched_waking and
	// next_comm at sched_switch), each wakeup as the first JOIN counted.
	all, glob, other := hs[5].Totals.Hits, hs[6].Totals.Hits, hs[7].Totals.Hits
	t.Logf("switches to the reader: %d, %d by the glob %q, %d by %q", all, glob, name[:4]+"*", other, name[:3]+"\x01*")
	if all == 0 || glob != all || other != 0 {
		t.Errorf("switches to the reader: %d, %d with next_comm ~ %q, %d with next_comm ~ %q", all, glob, name[:4]+"*", other, name[:3]+"\x01*")
	}
	var named uint64
	for _, ent := range hs[10].Entries {
		t.Logf("comm %q, next_comm %q, pid %d: %d", ent.Keys[0].Text, ent.Keys[1].Text, ent.Keys[2].Num, ent.Values[0].Num)
		if ent.Keys[0].Text != strings.TrimSpace(string(comm)) || ent.Keys[1].Text != ent.Keys[0].Text || ent.Keys[2].Num != uint64(tid) {
			t.Errorf("an entry of %q, %q, pid %d; the reader is %q, pid %d", ent.Keys[0].Text, ent.Keys[1].Text, ent.Keys[2].Num, comm, tid)
		}
		named += ent.Values[0].Num
	}
	if named+lost < count+negs || named > count+negs+lost {
		t.Errorf("%d wakeups with names, %d without (%d program runs skipped)", named, count+negs, lost)
	}
	// n reads and a last one that blocks until the engine is read; n
	// writes (the Go scheduler's own calls, futex, besides).
	if runtime.GOARCH == "amd64" && (calls["read"] != n+1 || calls["write"] != n) {
		t.Errorf("reads %d, writes %d; the workload made %d and %d", calls["read"], calls["write"], n+1, n)
	}
}

// TestCostPerCPU counts every system call of the host by number, with
// atomic adds to one hash and with plain adds to a per-CPU hash, while
// two threads make getppid calls: both count every call the threads
// made, and the log gives each program's ns a run (kernel.bpf_stats):
// which costs less.
func TestCostPerCPU(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the workload's getppid number is x86-64's")
	}
	if !inTracefs(t) {
		return
	}
	stats, err := ebpf.EnableStats(0) // BPF_STATS_RUN_TIME
	if err != nil {
		t.Skipf("no run-time statistics: %v", err)
	}
	defer stats.Close()
	const calls, threads = 200000, 2
	for _, perCPU := range []bool{false, true} {
		sc := syscount()
		sc[0].Keys[0].Mod = ""
		e, err := New(sc, nil, hostFormat, Options{PerCPU: perCPU})
		if err != nil {
			t.Fatal(err)
		}
		if e.maps[0].perCPU != perCPU {
			t.Fatalf("per-CPU %v, asked %v", e.maps[0].perCPU, perCPU)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for range calls {
					syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
				}
			}()
		}
		wg.Wait()
		hs, err := e.Read()
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		var got uint64
		for _, ent := range hs[0].Entries {
			if ent.Keys[0].Num == syscall.SYS_GETPPID {
				got = ent.Values[0].Num
			}
		}
		t.Logf("per-CPU %v: %d runs, %d ns a run; getppid counted %d", perCPU, st[0].Runs, st[0].RunTimeNs/max(1, st[0].Runs), got)
		if got < calls*threads {
			t.Errorf("per-CPU %v: %d getppid counted; the threads made %d", perCPU, got, calls*threads)
		}
	}
}

// kallsyms names kernel addresses as the kernel's stack traces print
// them ("func+0x1f/0x80"), from /proc/kallsyms.
func kallsyms(t *testing.T) func(addr uint64, offset bool) string {
	t.Helper()
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || (f[1] != "t" && f[1] != "T") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		syms = append(syms, sym{a, f[2]})
	}
	if len(syms) == 0 {
		t.Skip("/proc/kallsyms gives no addresses")
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	return func(addr uint64, offset bool) string {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
		if i < 0 {
			return ""
		}
		size := uint64(0)
		if i+1 < len(syms) {
			size = syms[i+1].addr - syms[i].addr
		}
		if !offset {
			return syms[i].name
		}
		return fmt.Sprintf("%s+0x%x/0x%x", syms[i].name, addr-syms[i].addr, size)
	}
}

// TestHostStacks keys by the kernel stack: the stacks the reader of the
// ping-pong blocked in (sched_switch with prev_pid the reader), and the
// off-CPU JOIN that carries the switch-out's stack in a variable and a
// synthetic event's stack field to the switch-in: both show the reader
// blocked in pipe_read, as often as it blocked.
func TestHostStacks(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 500
	tid, run, release := pingPong(t, n)
	defer release()
	stackKey := &planner.Expr{Kind: planner.ExprStack, Name: "common_stacktrace"}
	synth := &planner.Synth{Name: "offcpu", Fields: []*planner.SynthField{
		{Name: "stack", Type: "unsigned long", Array: "[]"}, {Name: "lat", Type: "u64", Unit: "us"}}}
	// A block: a switch out in S or D state.
	blocked := &planner.Filter{Op: planner.FilterOr, L: pred("prev_state", "==", 1), R: pred("prev_state", "==", 2), Paren: true}
	ts := []*Trigger{
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{stackKey},
			Filter: &planner.Filter{Op: planner.FilterAnd, L: pred("prev_pid", "==", uint64(tid)), R: blocked}},
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("prev_pid")},
			Vars: []Var{{Name: "o_ts", Expr: tsUsecs()}, {Name: "o_stack", Expr: stackKey}},
			// The reader's blocks only: every task's would fill the
			// start map on a busy machine (the end consumes the
			// reader's alone), and its inserts would be dropped.
			Filter: &planner.Filter{Op: planner.FilterAnd, L: pred("prev_pid", "==", uint64(tid)), R: blocked}},
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vars: []Var{{Name: "o_lat", Expr: bin(tsUsecs(), '-', ref("o_ts"))}},
			Actions: []*planner.Action{{Handler: planner.OnMatch, Match: "sched.sched_switch", Kind: planner.ActTrace,
				Synth: "offcpu", Params: []*planner.Expr{ref("o_stack"), ref("o_lat")}}},
			Filter: pred("next_pid", "==", uint64(tid))},
		{System: "synthetic", Event: "offcpu", Keys: []*planner.Expr{fieldMod("stack", "stacktrace")}, Vals: []*planner.Expr{field("lat")}},
		// The reader's switches out and in, whatever the state: the
		// kernel can run a task without a sched_switch into it (seen on
		// this host's 6.18, in its own trace buffer as in the engine's
		// programs: two switches out of the reader, the second on
		// another CPU, and none in between, once in ~500 blocks); a
		// block whose switch in has no event is not joined.
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("prev_pid")}, Filter: pred("prev_pid", "==", uint64(tid))},
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")}, Filter: pred("next_pid", "==", uint64(tid))},
	}
	e, err := New(ts, []*planner.Synth{synth}, hostFormat, Options{Sym: kallsyms(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	vol0, invol0 := switchCounts(t, tid)
	run()
	time.Sleep(50 * time.Millisecond)
	vol1, invol1 := switchCounts(t, tid)
	made, preempted := vol1-vol0, invol1-invol0
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	// A start the full map dropped is a block not joined, as a skipped run.
	lost += hs[1].Totals.Dropped + hs[3].Totals.Dropped
	// A start the full map dropped is a block not joined, as a skipped run.
	lost += hs[1].Totals.Dropped + hs[3].Totals.Dropped
	// Each switch out of the reader has a switch in but its last, and its
	// first switch in (out of the block before Start) has no switch out:
	// as many of each, but for switches in without an event.
	outs, ins := hs[4].Totals.Hits, hs[5].Totals.Hits
	unseen := uint64(0)
	if outs > ins {
		unseen = outs - ins
	}
	t.Logf("the reader switched out %d times and in %d times in the run's events", outs, ins)
	if unseen > outs/100 {
		t.Errorf("%d switches of the reader into a CPU had no event, of %d switches out", unseen, outs)
	}
	var outAll, outPipe uint64
	for i, h := range []int{0, 3} {
		var inPipe, all uint64
		for _, ent := range hs[h].Entries {
			k := ent.Keys[0]
			if k.Kind != tracefs.HistStacktrace || len(k.Frames) == 0 {
				t.Fatalf("a key without frames: %+v", k)
			}
			all += ent.Values[0].Num
			if strings.Contains(k.Raw, "pipe_read+") {
				inPipe += ent.Values[0].Num
			}
			t.Logf("%s: %d\n\t%s", k.Name, ent.Values[0].Num, strings.Join(k.Frames, "\n\t"))
		}
		t.Logf("histogram %d: %d stacks, %d in pipe_read; the reader blocked %d times, was preempted %d times; %d runs skipped", i, all, inPipe, made, preempted, lost)
		if i == 0 {
			// The reader's blocks: each a voluntary switch; most in a
			// read of a pipe (the Go scheduler's in futex besides).
			outAll, outPipe = all, inPipe
			if all > made || all+lost < made/2 || inPipe == 0 {
				t.Errorf("%d blocks, %d in pipe_read; the reader switched out voluntarily %d times", all, inPipe, made)
			}
			continue
		}
		// The JOIN: each block but the last (not woken in the run), its
		// stack carried to the switch in: the same stacks.
		if all+1 > outAll || all+1+lost+unseen < outAll || inPipe+1 > outPipe || inPipe+1+lost+unseen < outPipe {
			t.Errorf("%d blocks joined, %d of them in pipe_read; the reader blocked %d times, %d in pipe_read", all, inPipe, outAll, outPipe)
		}
	}
}

// TestStacksAgainstHist compares the engine's stack keys with the
// kernel's own hist trigger keyed by stacktrace on the same switches
// (the reader's blocks), where the kernel has hist triggers (the 6.1
// guest of e2e's TestBPFEngineGuest; this host has none): the same
// frames, from the traced function on.
func TestStacksAgainstHist(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	trigger := tracefsRoot + "/events/sched/sched_switch/trigger"
	readme, _ := os.ReadFile(tracefsRoot + "/README")
	if _, err := os.Stat(trigger); err != nil || !strings.Contains(string(readme), "hist:keys=") {
		t.Skip("the kernel has no hist triggers to compare stacks with")
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 200
	tid, run, release := pingPong(t, n)
	defer release()
	name := "common_stacktrace"
	if !strings.Contains(string(readme), "common_stacktrace") {
		name = "stacktrace" // 6.1
	}
	filter := fmt.Sprintf("prev_pid == %d && (prev_state == 1 || prev_state == 2)", tid)
	spec := "hist:keys=" + name + " if " + filter
	if err := os.WriteFile(trigger, []byte(spec), 0); err != nil {
		t.Fatalf("writing %q: %v", spec, err)
	}
	defer os.WriteFile(trigger, []byte("!"+spec), 0)
	f, err := planner.ParseFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	ts := []*Trigger{{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{{Kind: planner.ExprStack, Name: name}}, Filter: f}}
	e, err := New(ts, nil, hostFormat, Options{Sym: kallsyms(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	run()
	time.Sleep(50 * time.Millisecond)
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's, before the reader is released (its thread blocks
	// again as it ends).
	text, err := os.ReadFile(tracefsRoot + "/events/sched/sched_switch/hist")
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	kh, err := tracefs.ParseHist(string(text))
	if err != nil || len(kh) != 1 {
		t.Fatalf("the kernel's hist: %v (%d histograms)\n%s", err, len(kh), text)
	}
	top := func(h *tracefs.Histogram) *tracefs.HistEntry {
		var best *tracefs.HistEntry
		for _, ent := range h.Entries {
			if best == nil || ent.Values[0].Num > best.Values[0].Num {
				best = ent
			}
		}
		return best
	}
	b, k := top(hs[0]), top(kh[0])
	if b == nil || k == nil {
		t.Fatalf("no entries: BPF %d, kernel %d", len(hs[0].Entries), len(kh[0].Entries))
	}
	t.Logf("BPF: %d hits, most %d:\n\t%s", hs[0].Totals.Hits, b.Values[0].Num, strings.Join(b.Keys[0].Frames, "\n\t"))
	t.Logf("kernel: %d hits, most %d:\n\t%s", kh[0].Totals.Hits, k.Values[0].Num, strings.Join(k.Keys[0].Frames, "\n\t"))
	if hs[0].Totals.Hits+lost < kh[0].Totals.Hits || hs[0].Totals.Hits > kh[0].Totals.Hits {
		t.Errorf("BPF counted %d blocks, the kernel %d (%d runs skipped)", hs[0].Totals.Hits, kh[0].Totals.Hits, lost)
	}
	// The same frames; where the engine dropped the tracepoint's own,
	// it has as many fewer at the bottom of a deep stack.
	bf, kf := b.Keys[0].Frames, k.Keys[0].Frames
	if len(bf) > len(kf) || strings.Join(bf, "\n") != strings.Join(kf[:len(bf)], "\n") || len(kf) < 16 && len(bf) != len(kf) {
		t.Errorf("the frames differ")
	}
}

// TestJoinAgainstHist runs the wakeup JOIN of -r twice over the same
// wakeups, where the kernel has hist triggers (the 6.1 guest; this host
// has none): in the engine, and as the kernel's own synthetic event and
// hist triggers written from the same typed triggers. Both join as many
// wakeups of the reader (less the runs the kernel skipped), and the
// latencies fall in the same log2 buckets but where the two clocks put
// one on the other side of an edge.
func TestJoinAgainstHist(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	readme, _ := os.ReadFile(tracefsRoot + "/README")
	if !strings.Contains(string(readme), "hist:keys=") || !strings.Contains(string(readme), "synthetic_events") {
		t.Skip("the kernel has no hist triggers and synthetic events to compare with")
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 500
	tid, run, release := pingPong(t, n)
	defer release()
	ts, synths := wakeupJoin("sched_waking", pred("pid", "==", uint64(tid)))
	write := func(file, text string) error {
		f, err := os.OpenFile(tracefsRoot+"/"+file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(text)
		return err
	}
	e, err := New(ts, synths, hostFormat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// The kernel's triggers after the engine's programs: on each event
	// the engine reads its clock first, at the start and at the end.
	if err := write("synthetic_events", "wl "+synths[0].Definition()); err != nil {
		t.Fatal(err)
	}
	defer write("synthetic_events", "!wl")
	for _, i := range []int{2, 3, 0, 1} {
		file := "events/" + ts[i].System + "/" + ts[i].Event + "/trigger"
		if err := write(file, ts[i].Spec()); err != nil {
			t.Fatalf("writing %q to %s: %v", ts[i].Spec(), file, err)
		}
		defer write(file, "!"+ts[i].Spec())
	}
	run()
	time.Sleep(50 * time.Millisecond)
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(tracefsRoot + "/events/synthetic/wl/hist")
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	kh, err := tracefs.ParseHist(string(text))
	if err != nil || len(kh) != 2 {
		t.Fatalf("the kernel's hist: %v (%d histograms)\n%s", err, len(kh), text)
	}
	buckets := func(h *tracefs.Histogram) map[uint64]uint64 {
		out := map[uint64]uint64{}
		for _, ent := range h.Entries {
			out[ent.Keys[1].Num] += ent.Values[0].Num
		}
		return out
	}
	b, k := buckets(hs[2]), buckets(kh[0])
	var diff uint64
	for exp := uint64(0); exp < 64; exp++ {
		if b[exp] == 0 && k[exp] == 0 {
			continue
		}
		t.Logf("lat ~2^%d: BPF %d, kernel %d", exp, b[exp], k[exp])
		if b[exp] > k[exp] {
			diff += b[exp] - k[exp]
		} else {
			diff += k[exp] - b[exp]
		}
	}
	bh, khits := hs[2].Totals.Hits+hs[3].Totals.Hits, kh[0].Totals.Hits+kh[1].Totals.Hits
	t.Logf("joined: BPF %d (%d negative), kernel %d (%d negative); %d runs skipped; %d latencies in another bucket", bh, hs[3].Totals.Hits, khits, kh[1].Totals.Hits, lost, diff/2)
	if bh > khits || bh+lost < khits {
		t.Errorf("BPF joined %d wakeups, the kernel %d (%d runs skipped)", bh, khits, lost)
	}
	// The clocks differ (bpf_ktime_get_ns, the ring buffer's), and each
	// is read at another time of the event (the engine's program before
	// the kernel's trigger): a latency may cross a bucket's edge, the
	// median no further than the next bucket.
	median := func(m map[uint64]uint64) uint64 {
		var total, seen uint64
		for _, c := range m {
			total += c
		}
		for exp := uint64(0); exp < 64; exp++ {
			if seen += m[exp]; seen*2 >= total {
				return exp
			}
		}
		return 64
	}
	mb, mk := median(b), median(k)
	t.Logf("median bucket: BPF 2^%d, kernel 2^%d", mb, mk)
	if bh == 0 || mb > mk+1 || mk > mb+1 {
		t.Errorf("median latency bucket: BPF 2^%d, kernel 2^%d", mb, mk)
	}
}

// TestHostScratch runs the JOIN that carries task names twice at once
// over the same wakeups: with its frame on the BPF stack, and in the
// per-CPU scratch map (where a program whose keys and records exceed the
// stack keeps them): the same entries.
func TestHostScratch(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 500
	tid, run, release := pingPong(t, n)
	defer release()
	var engines []*Engine
	for _, scratch := range []bool{false, true} {
		ts, synths := commJoin(pred("pid", "==", uint64(tid)))
		forceScratch = scratch
		e, err := New(ts, synths, hostFormat, Options{})
		forceScratch = false
		if err != nil {
			t.Fatal(err)
		}
		if e.scratch != scratch {
			t.Fatalf("scratch %v, asked %v", e.scratch, scratch)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		engines = append(engines, e)
	}
	run()
	time.Sleep(50 * time.Millisecond)
	var got [2]map[string]uint64
	var lost uint64
	for i, e := range engines {
		hs, err := e.Read()
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.Stop()
		if err != nil {
			t.Fatal(err)
		}
		lost += l
		got[i] = map[string]uint64{}
		for _, ent := range hs[2].Entries {
			got[i][ent.Keys[0].Text+"/"+ent.Keys[1].Text+"/"+ent.Keys[2].Raw] += ent.Values[0].Num
		}
	}
	release()
	t.Logf("on the stack: %v; in the scratch map: %v; %d runs skipped", got[0], got[1], lost)
	if len(got[0]) == 0 {
		t.Fatal("nothing joined")
	}
	for k, a := range got[0] {
		b := got[1][k]
		if a > b+lost || b > a+lost {
			t.Errorf("%s: %d on the stack, %d in the scratch map", k, a, b)
		}
	}
	if len(got[0]) != len(got[1]) {
		t.Errorf("%d entries on the stack, %d in the scratch map", len(got[0]), len(got[1]))
	}
}

// TestCostWakeupJoin runs the unfiltered wakeup JOIN of -r alone (its
// start and end programs, the synthetic event's results and negatives
// inline) over the ping-pong and whatever else runs, and logs what each
// program costs a run (kernel.bpf_stats: the kernel's own clock reads
// around each run included): the figures to set beside the other
// engines'. It checks only that the JOIN joined.
func TestCostWakeupJoin(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	stats, err := ebpf.EnableStats(0) // BPF_STATS_RUN_TIME
	if err != nil {
		t.Skipf("no run-time statistics: %v", err)
	}
	defer stats.Close()
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	tid, run, release := pingPong(t, 5000)
	defer release()
	ts, synths := wakeupJoin("sched_waking", nil)
	e, err := New(ts, synths, hostFormat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	run()
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Stats()
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, s := range st {
		t.Logf("%s: %d runs, %d ns a run, %d skipped", s.Event, s.Runs, s.RunTimeNs/max(1, s.Runs), s.RecursionMisses)
		total += s.RunTimeNs
	}
	joined := hs[2].Totals.Hits + hs[3].Totals.Hits
	t.Logf("%d wakeups joined (the ping-pong reader is pid %d), %d ns of programs a joined wakeup; %d runs skipped", joined, tid, total/max(1, joined), lost)
	if joined == 0 {
		t.Error("nothing joined")
	}
}

// TestHostEvents gives the wakeup JOIN's synthetic events to OnSynth (as
// --events shows them): the reader's are as many as the JOIN's results
// count for it, with the same latencies in total, less those told lost.
func TestHostEvents(t *testing.T) {
	hostEvents(t, 0, false)
}

// TestHostEventsLost fills the synthetic events' rings (one page a CPU,
// a consumer that waits until the programs are detached): the records
// the rings had no room for are told lost, exactly. The kernel tells the
// reader of such losses only with a later record, and there is none
// after the detach (CI once saw 433 of 502 events, 0 lost).
func TestHostEventsLost(t *testing.T) {
	hostEvents(t, 1, true)
}

func hostEvents(t *testing.T, pages int, stall bool) {
	if !inTracefs(t) {
		return
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 500
	tid, run, release := pingPong(t, n)
	defer release()
	pidIs := pred("pid", "==", uint64(tid))
	ts, synths := wakeupJoin("sched_waking", pidIs)
	// Only the reader's wakeups start the JOIN: every synthetic event
	// is the reader's, and those lost are its own.
	ts[0].Filter = pidIs
	detached := make(chan struct{})
	var mu sync.Mutex
	var events, all, latSum uint64
	var bad []string
	onSynth := func(ev *stream.Event) {
		// A slow consumer (a terminal, a loaded machine): the reader
		// lags the programs, and records are left in the rings when
		// the run stops. Stalled, it reads nothing until then.
		if stall {
			<-detached
		}
		time.Sleep(20 * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		all++
		if ev.Def.Name != "wl" || len(ev.Fields) != len(ev.Def.Fields) {
			bad = append(bad, fmt.Sprintf("%+v", ev))
			return
		}
		var pid, lat uint64
		for i, f := range ev.Def.Fields {
			switch f.Name {
			case "pid":
				pid = ev.Fields[i].N
			case "lat":
				lat = ev.Fields[i].N
			}
		}
		if pid == uint64(tid) {
			events++
			latSum += lat
		}
	}
	e, err := New(ts, synths, hostFormat, Options{OnSynth: onSynth, EventPages: pages})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	run()
	// Detached at once, the maps read, then stopped: the events the
	// programs wrote in the last moments are still in the perf rings,
	// and Stop must read them all (it lost them once).
	closeLinks(e.links)
	e.links = nil
	// What the programs could not write is known before the reader
	// catches up (a run's -i and live view say it as it happens).
	unwritten, skipped := e.Unwritten(), e.Skipped()
	close(detached)
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	release()
	if err != nil {
		t.Fatal(err)
	}
	var count, sum uint64
	for _, ent := range hs[2].Entries {
		count += ent.Values[0].Num
		sum += ent.Values[1].Num
	}
	t.Logf("%d synthetic events, %d of the reader (lat %d us in all); the JOIN's results: %d (%d us); %d lost", all, events, latSum, count, sum, lost)
	if len(bad) > 0 {
		t.Fatalf("bad events: %v", bad[:min(3, len(bad))])
	}
	if count == 0 || all != events || events+lost != count || events == count && latSum != sum {
		t.Errorf("%d events of the reader (of %d), lat %d; the results count %d (lat %d); %d lost", events, all, latSum, count, sum, lost)
	}
	if stall && lost == 0 {
		t.Errorf("a ring of %d page a CPU lost none of %d events while nothing read it", pages, count)
	}
	if unwritten+skipped != lost {
		t.Errorf("%d records unwritten and %d program runs skipped before the stop, %d lost after it", unwritten, skipped, lost)
	}
}
