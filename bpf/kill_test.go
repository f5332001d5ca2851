package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// ids lists the kernel ids of the engine's programs ("p") and maps
// ("m").
func (e *Engine) ids() ([]string, error) {
	var out []string
	for _, p := range e.coll.Programs {
		info, err := p.Info()
		if err != nil {
			return nil, err
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("p%d", id))
	}
	for _, m := range e.coll.Maps {
		info, err := m.Info()
		if err != nil {
			return nil, err
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("m%d", id))
	}
	return out, nil
}

// alive says whether the kernel still has the program or map of id.
func alive(id string) (bool, error) {
	n, err := strconv.ParseUint(id[1:], 10, 32)
	if err != nil {
		return false, err
	}
	var c interface{ Close() error }
	if id[0] == 'p' {
		c, err = ebpf.NewProgramFromID(ebpf.ProgramID(n))
	} else {
		c, err = ebpf.NewMapFromID(ebpf.MapID(n))
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.Close()
	return true, nil
}

// TestHoldEngine is TestKillLeavesNothing's victim: run alone (with
// SQLHIST_BPF_HOLD set) it starts the wakeup JOIN, prints its programs'
// and maps' ids and waits to be killed.
func TestHoldEngine(t *testing.T) {
	if os.Getenv("SQLHIST_BPF_HOLD") == "" {
		t.Skip("TestKillLeavesNothing's victim: runs when that test starts it")
	}
	ts, synths := wakeupJoin("sched_waking", nil)
	opt := Options{}
	if sql := holdProbes(); sql != "" {
		// The probes' triggers after the JOIN's.
		p := planSQL(t, sql)
		for _, tr := range FromHists(p.hists) {
			ts = append(ts, tr)
		}
		synths = append(synths, p.synths...)
		// On the PMUs: the probes are perf events of the process
		// (fentry/fexit programs' links are file descriptors as the
		// tracepoints' are).
		opt.Probes, opt.NoFentry = p.probes, true
	}
	e, err := New(ts, synths, hostFormat, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	ids, err := e.ids()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("@@probes %d\n", len(e.probeFDs))
	fmt.Printf("@@started %s\n", strings.Join(ids, " "))
	time.Sleep(time.Hour)
}

// TestKillLeavesNothing starts the wakeup JOIN in a process, kills it
// with SIGKILL once its programs are attached, and checks that the
// kernel has freed every program and map it made: they lived only as
// the process's file descriptors (nothing pinned, nothing written to
// tracefs).
func TestKillLeavesNothing(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHoldEngine$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "SQLHIST_BPF_HOLD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	before := probeEvents(t)
	var ids []string
	probes := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "@@started "); ok {
			ids = strings.Fields(rest)
			break
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "@@probes "); ok {
			probes, _ = strconv.Atoi(rest)
		}
		t.Logf("victim: %s", sc.Text())
	}
	if len(ids) == 0 {
		t.Fatal("the victim did not start its engine")
	}
	// Its probes are perf events of the PMUs, file descriptors of the
	// process: none is in kprobe_events or uprobe_events.
	want := 0
	if holdProbes() != "" {
		want = 2
		if _, _, err := pmu("kprobe", true); err == nil {
			want = 4
		}
	}
	if probes != want {
		t.Fatalf("the victim attached %d probes, want %d", probes, want)
	}
	if n := perfFDs(t, cmd.Process.Pid); n < probes {
		t.Fatalf("the victim holds %d perf events, fewer than its %d probes", n, probes)
	} else {
		t.Logf("the victim holds %d perf events (its %d probes and its tracepoints)", n, probes)
	}
	if during := probeEvents(t); during != before {
		t.Fatalf("the running victim's probes are in tracefs:\nbefore: %q\nduring: %q", before, during)
	}
	for _, id := range ids {
		if ok, err := alive(id); !ok || err != nil {
			t.Fatalf("%s of the running victim: alive %v, %v", id, ok, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kernel frees them once their last descriptor closes (after an
	// RCU grace period): wait for it, a while.
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids {
		for {
			ok, err := alive(id)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s outlived the killed process by 10 s", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A perf event holds its program: the programs gone, so are the
	// perf events (the probes with them); nothing was ever in tracefs.
	if after := probeEvents(t); after != before {
		t.Fatalf("the killed victim left probes in tracefs:\nbefore: %q\nafter: %q", before, after)
	}
	t.Logf("the killed process's %d programs and maps are gone (and with its programs the perf events of its %d probes): %s; kprobe_events and uprobe_events as before: %q", len(ids), probes, strings.Join(ids, " "), before)
}

// holdProbes is the query whose probes the victim attaches beside the
// wakeup JOIN: a uprobe and uretprobe on the test binary's main.main
// (where the kernel has the uprobe PMU), a kprobe and kretprobe on
// vfs_read (where it has the kprobe PMU).
func holdProbes() string {
	var qs []string
	if _, _, err := pmu("uprobe", true); err == nil {
		if exe, off, err := funcOffset(reflect.ValueOf(holdTarget).Pointer()); err == nil {
			at := fmt.Sprintf("'%s', 0x%x", exe, off)
			qs = append(qs, `SELECT start.a, COUNT(*) FROM uprobe(`+at+`, a=%`+argRegs[hostArch().Name][0]+`) AS start JOIN uretprobe(`+at+`) AS end ON start.common_pid = end.common_pid GROUP BY start.a`)
		}
	}
	if _, _, err := pmu("kprobe", true); err == nil {
		qs = append(qs, `SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(vfs_read) AS start JOIN kretprobe(vfs_read) AS end ON start.common_pid = end.common_pid GROUP BY ns`)
	}
	return strings.Join(qs, ";\n")
}

// holdTarget is the function of the test binary the victim's uprobes
// are on (never called: go test strips the binary's symbol table, so it
// is found by its address).
//
//go:noinline
func holdTarget(n int) int { return n + 1 }

// funcOffset finds the file and file offset of the code at pc, from the
// process's mappings.
func funcOffset(pc uintptr) (string, uint64, error) {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "", 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || !strings.Contains(f[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || uint64(pc) < a || uint64(pc) >= b {
			continue
		}
		return f[5], uint64(pc) - a + off, nil
	}
	return "", 0, fmt.Errorf("no executable mapping holds 0x%x", pc)
}

// probeEvents reads kprobe_events and uprobe_events (what tracefs has of
// them).
func probeEvents(t *testing.T) string {
	var b strings.Builder
	for _, f := range []string{"kprobe_events", "uprobe_events", "dynamic_events"} {
		data, err := os.ReadFile(tracefsRoot + "/" + f)
		if err == nil {
			fmt.Fprintf(&b, "%s: %s;", f, data)
		}
	}
	return b.String()
}

// perfFDs counts a process's perf event file descriptors.
func perfFDs(t *testing.T, pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}
