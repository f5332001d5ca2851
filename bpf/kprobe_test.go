package bpf

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/tracefs"
)

// onThread runs work on a thread of its own (locked) when run is called;
// tid is the thread's id, what a probe's common_pid is.
func onThread(work func()) (tid int, run func()) {
	tids := make(chan int)
	start, done := make(chan struct{}), make(chan struct{})
	go func() {
		// Never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		tids <- syscall.Gettid()
		<-start
		work()
		close(done)
	}()
	return <-tids, func() { close(start); <-done }
}

// openMissing opens path n times (openat(AT_FDCWD, path, O_RDONLY |
// O_NOFOLLOW)), each failing with ENOENT.
func openMissing(path string, n int) func() {
	return func() {
		for range n {
			if fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW, 0); err == nil {
				syscall.Close(fd)
			}
		}
	}
}

// TestHostKprobes attaches kprobes and a kretprobe to do_sys_openat2
// while a thread opens a missing file a known number of times, through
// the perf kprobe PMU (where the kernel has it: the e2e bpf phase's
// guests; this host's kernel has no kprobes) and as fentry/fexit (where
// its BTF and trampolines allow: this host too): every call counted
// once, with its arguments ($arg1), user memory ($arg2's string) and
// kernel memory (+0($arg3): the open_how's flags), its return value
// (-ENOENT) and task name, and the JOIN of entry and return.
func TestHostKprobes(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	for _, how := range []string{"kprobe PMU", "fentry"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) { hostKprobes(t, how) })
	}
}

// hostKprobes is TestHostKprobes with the probes attached how: through
// the "kprobe PMU" or as "fentry" and fexit programs.
func hostKprobes(t *testing.T, how string) {
	if how == "kprobe PMU" {
		if _, _, err := pmu("kprobe", true); err != nil {
			t.Skip(err)
		}
	}
	const n = 500
	path := fmt.Sprintf("/nonexistent-sqlhist-%d/kprobe-test", os.Getpid())
	tid, run := onThread(openMissing(path, n))
	comm, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", tid))
	if err != nil {
		t.Fatal(err)
	}
	sql := fmt.Sprintf(`SELECT dfd, name, fl, COUNT(*) FROM kprobe(do_sys_openat2, dfd=$arg1:s32, name=+0($arg2):string, fl=+0($arg3):x64) WHERE common_pid = %d GROUP BY dfd, name, fl;
SELECT r, c, COUNT(*) FROM kretprobe(do_sys_openat2, r=$retval:s32, c=$comm) WHERE common_pid = %d GROUP BY r, c;
SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(do_sys_openat2) AS start JOIN kretprobe(do_sys_openat2) AS end ON start.common_pid = end.common_pid WHERE start.common_pid = %d GROUP BY ns`, tid, tid, tid)
	p := planSQL(t, sql)
	e, err := p.engineWith(hostFormat, hostArch().Name, how != "fentry")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		if how == "fentry" && !e.fentry {
			t.Skipf("the kernel took no fentry/fexit programs, and: %v", err)
		}
		t.Fatal(err)
	}
	defer e.Stop()
	for ev, a := range e.Attachments() {
		if want := map[bool]string{true: "kprobe PMU", false: "fentry"}[how != "fentry"]; a != want && !(want == "fentry" && a == "fexit") {
			if how == "fentry" {
				t.Skipf("%s is attached by %s: the kernel took no fentry/fexit programs", ev, a)
			}
			t.Fatalf("%s is attached by %s, want %s", ev, a, how)
		}
	}
	t.Logf("attached: %v", e.Attachments())
	run()
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	lost, err := e.Stop()
	if err != nil {
		t.Fatal(err)
	}
	count := func(got uint64, what string) {
		t.Helper()
		if got > n || got+lost < n {
			t.Errorf("%s: %d calls, want %d (%d runs skipped)", what, got, n, lost)
		}
	}
	entries := hs[p.result(0)].Entries
	if len(entries) != 1 {
		t.Fatalf("kprobe: %d entries, want 1: %+v", len(entries), entries)
	}
	k := entries[0].Keys
	dfd, fl := int32(uint32(k[0].Num)), k[2].Num
	t.Logf("kprobe: dfd %d, name %q, flags 0x%x: %d calls", dfd, k[1].Text, fl, entries[0].Values[0].Num)
	if dfd != -100 || k[1].Text != path || fl&syscall.O_NOFOLLOW == 0 || fl&syscall.O_ACCMODE != syscall.O_RDONLY {
		t.Errorf("kprobe: dfd %d, name %q, flags 0x%x; want -100 (AT_FDCWD), %q, O_RDONLY|O_NOFOLLOW", dfd, k[1].Text, fl, path)
	}
	count(entries[0].Values[0].Num, "kprobe")
	entries = hs[p.result(1)].Entries
	if len(entries) != 1 {
		t.Fatalf("kretprobe: %d entries, want 1: %+v", len(entries), entries)
	}
	k = entries[0].Keys
	// s32: the 7.2 guest's do_sys_openat2 left its register's upper half
	// 0 (read as s64, its -2 was 4294967294 by the PMU and by fexit
	// alike): an int return, where 6.1's is a long.
	ret := int32(uint32(k[0].Num))
	t.Logf("kretprobe: returned %d, comm %q: %d calls", ret, k[1].Text, entries[0].Values[0].Num)
	if ret != -int32(syscall.ENOENT) || k[1].Text != strings.TrimSpace(string(comm)) {
		t.Errorf("kretprobe: returned %d in %q, want %d in %q", ret, k[1].Text, -int32(syscall.ENOENT), strings.TrimSpace(string(comm)))
	}
	count(entries[0].Values[0].Num, "kretprobe")
	var joined uint64
	for _, ent := range hs[p.result(2)].Entries {
		joined += ent.Values[0].Num
		t.Logf("latency ~2^%d ns: %d", ent.Keys[0].Num, ent.Values[0].Num)
	}
	count(joined, "the JOIN")
}

// TestProbesAgainstHist runs a funclatency-shaped query (kprobe JOIN
// kretprobe on vfs_read, log2 of the latency) and a string-keyed kprobe
// histogram (do_sys_openat2's file names) twice over the same calls,
// where the kernel has hist triggers and kprobes (the 6.1 guests; this
// host has neither): in the engine, and as the kernel's own probe
// events, synthetic event and hist triggers written from the same plan.
// The counts are equal (less the runs the kernel skipped), the names
// too, and the latencies fall in the same log2 buckets but where the two
// clocks put one on the other side of an edge.
func TestProbesAgainstHist(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	readme, _ := os.ReadFile(tracefsRoot + "/README")
	if !strings.Contains(string(readme), "hist:keys=") || !strings.Contains(string(readme), "synthetic_events") {
		t.Skip("the kernel has no hist triggers and synthetic events to compare with")
	}
	if _, err := os.Stat(tracefsRoot + "/kprobe_events"); err != nil {
		t.Skip("the kernel has no kprobe events to compare with")
	}
	if _, _, err := pmu("kprobe", true); err != nil {
		t.Skip(err)
	}
	for _, how := range []string{"kprobe PMU", "fentry"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) { probesAgainstHist(t, how) })
	}
}

// probesAgainstHist is one round of TestProbesAgainstHist, the engine's
// probes attached how ("kprobe PMU", or "fentry" and fexit), the
// kernel's triggers beside them.
func probesAgainstHist(t *testing.T, how string) {
	const n = 400
	path := fmt.Sprintf("/nonexistent-sqlhist-%d/hist-test", os.Getpid())
	zero, err := syscall.Open("/dev/zero", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(zero)
	tid, run := onThread(func() {
		// Reads of 256 KiB: the call's own work (copying zeroes) well
		// above what each side's probes add to the other's latency (a
		// 1-byte read took 2^13 ns to the engine's fentry/fexit and
		// 2^15 to the kernel's kprobe events in the 6.1 guest).
		b := make([]byte, 256<<10)
		for range n {
			syscall.Read(zero, b)
		}
		openMissing(path, n/2)()
		openMissing(path+"2", n/4)()
	})
	sql := fmt.Sprintf(`SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(vfs_read) AS start JOIN kretprobe(vfs_read) AS end ON start.common_pid = end.common_pid WHERE start.common_pid = %d GROUP BY ns;
SELECT name, COUNT(*) FROM kprobe(do_sys_openat2, name=+0($arg2):string) WHERE common_pid = %d GROUP BY name`, tid, tid)
	p := planSQL(t, sql)
	e, err := p.engineWith(hostFormat, hostArch().Name, how != "fentry")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if how == "fentry" && !e.fentry {
		t.Skip("the kernel took no fentry/fexit programs")
	}
	write := func(file, text string) error {
		f, err := os.OpenFile(tracefsRoot+"/"+file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(text)
		return err
	}
	// The kernel's, after the engines' programs: its probe events, the
	// synthetic event, the triggers (removed in the reverse order).
	for _, pr := range p.probes {
		if err := write("kprobe_events", pr.Line); err != nil {
			t.Fatalf("writing %q to kprobe_events: %v", pr.Line, err)
		}
		defer write("kprobe_events", "-:"+pr.Group+"/"+pr.Name)
	}
	for _, s := range p.synths {
		if err := write("synthetic_events", s.Name+" "+s.Definition()); err != nil {
			t.Fatal(err)
		}
		defer write("synthetic_events", "!"+s.Name)
	}
	for _, h := range p.hists {
		file := "events/" + h.System + "/" + h.Event + "/trigger"
		if err := write(file, h.Spec()); err != nil {
			t.Fatalf("writing %q to %s: %v", h.Spec(), file, err)
		}
		defer write(file, "!"+h.Spec())
	}
	run()
	time.Sleep(20 * time.Millisecond)
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	kernel := func(i int) *tracefs.Histogram {
		h := p.hists[i]
		text, err := os.ReadFile(tracefsRoot + "/events/" + h.System + "/" + h.Event + "/hist")
		if err != nil {
			t.Fatal(err)
		}
		kh, err := tracefs.ParseHist(string(text))
		if err != nil || len(kh) != 1 {
			t.Fatalf("the kernel's hist: %v (%d histograms)\n%s", err, len(kh), text)
		}
		return kh[0]
	}
	lat, names := kernel(p.result(0)), kernel(p.result(1))
	attached := e.Attachments()
	lost, err := e.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attached: %v", attached)
	compareProbes(t, how, hs, p, lat, names, lost, n, path)
}

// compareProbes compares an engine's answers to TestProbesAgainstHist's
// queries with the kernel's.
func compareProbes(t *testing.T, how string, hs []*tracefs.Histogram, p *probePlan, lat, names *tracefs.Histogram, lost uint64, n int, path string) {
	t.Helper()
	buckets := func(h *tracefs.Histogram) (map[uint64]uint64, uint64) {
		out := map[uint64]uint64{}
		var all uint64
		for _, ent := range h.Entries {
			out[ent.Keys[0].Num] += ent.Values[0].Num
			all += ent.Values[0].Num
		}
		return out, all
	}
	b, ball := buckets(hs[p.result(0)])
	k, kall := buckets(lat)
	var diff uint64
	for exp := uint64(0); exp < 64; exp++ {
		if b[exp] == 0 && k[exp] == 0 {
			continue
		}
		t.Logf("%s: vfs_read ~2^%d ns: BPF %d, kernel %d", how, exp, b[exp], k[exp])
		diff += max(b[exp], k[exp]) - min(b[exp], k[exp])
	}
	t.Logf("%s: vfs_read calls joined: BPF %d, kernel %d, of %d; %d runs skipped; %d latencies in another bucket", how, ball, kall, n, lost, diff/2)
	if ball > kall || ball+lost < kall || kall != uint64(n) {
		t.Errorf("%s: BPF joined %d calls, the kernel %d, of %d (%d runs skipped)", how, ball, kall, n, lost)
	}
	median := func(m map[uint64]uint64, total uint64) uint64 {
		var seen uint64
		for exp := uint64(0); exp < 64; exp++ {
			if seen += m[exp]; seen*2 >= total {
				return exp
			}
		}
		return 64
	}
	byName := func(h *tracefs.Histogram) string {
		var out []string
		for _, ent := range h.Entries {
			out = append(out, ent.Keys[0].Text+"="+strconv.FormatUint(ent.Values[0].Num, 10))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	bn, kn := byName(hs[p.result(1)]), byName(names)
	t.Logf("%s: do_sys_openat2 names: BPF %s; kernel %s", how, bn, kn)
	w := []string{fmt.Sprintf("%s=%d", path, n/2), fmt.Sprintf("%s2=%d", path, n/4)}
	sort.Strings(w)
	if want := strings.Join(w, " "); kn != want || bn != kn && lost == 0 {
		t.Errorf("%s: names: BPF %s, kernel %s, want %s", how, bn, kn, want)
	}
	mb, mk := median(b, ball), median(k, kall)
	t.Logf("%s: median bucket: BPF 2^%d, kernel 2^%d", how, mb, mk)
	// Beside the engine's fexit on vfs_read, the kernel's own kretprobe
	// on it once measured another thing (6.1: the kernel's median 2^15 ns
	// for a 256 KiB read, the engine's 2^19, where that run's PMU round
	// had 2^22 for both; the next run 2^19 for both): the latencies are
	// held to each other in the PMU round only (logged in both), the
	// counts and names in both.
	if how == "fentry" {
		return
	}
	if ball == 0 || mb > mk+1 || mk > mb+1 {
		if tscUnstable() {
			// The ring buffer stamps with sched_clock (the TSC on
			// x86-64), BPF with the clocksource: once the kernel has
			// marked the TSC unstable (a guest on a loaded host) the
			// two run at different rates (e2e/FINDINGS.md, fc29).
			t.Logf("%s: not a failure, the kernel having marked the TSC unstable (dmesg): median latency bucket: BPF 2^%d, kernel 2^%d", how, mb, mk)
			return
		}
		t.Errorf("%s: median latency bucket: BPF 2^%d, kernel 2^%d", how, mb, mk)
	}
}

// tscUnstable reports whether the kernel's log says it marked the TSC
// unstable; false when the log cannot be read.
func tscUnstable() bool {
	out, err := exec.Command("dmesg").Output()
	return err == nil && strings.Contains(string(out), "Marking clocksource 'tsc' as unstable")
}
