package bpf

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// rawSamples are triggers reading each field rawFields lists, filtered
// to one thread: the switches into and out of it by pid and by name,
// its wakeups by pid and name (sched_waking and sched_wakeup).
func rawSamples(tid int) []*Trigger {
	id := uint64(tid)
	k := func(names ...string) []*planner.Expr {
		var out []*planner.Expr
		for _, n := range names {
			out = append(out, field(n))
		}
		return out
	}
	return []*Trigger{
		{System: "sched", Event: "sched_switch", Keys: k("next_pid", "next_comm"), Filter: pred("next_pid", "==", id)},
		{System: "sched", Event: "sched_switch", Keys: k("prev_pid", "prev_comm"), Filter: pred("prev_pid", "==", id)},
		{System: "sched", Event: "sched_waking", Keys: k("pid", "comm"), Filter: pred("pid", "==", id)},
		{System: "sched", Event: "sched_wakeup", Keys: k("pid", "comm"), Filter: pred("pid", "==", id)},
	}
}

// TestRawMatchesClassic runs the same triggers twice at once over one
// workload, on raw tracepoints and on classic ones (NoRaw): where the
// kernel has BTF, every program of the first is raw, and the two give
// the same entries, keys and counts, each of them. This is the check
// that the raw arguments (rawFields) are the record's fields; the
// differential phase then holds the BPF engine to the kernel's hist
// triggers in the suite's guests.
func TestRawMatchesClassic(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	if _, err := taskFields(); err != nil {
		t.Skipf("no kernel BTF: the BPF engine has no raw variants here (%v)", err)
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if stats, err := ebpf.EnableStats(0); err == nil {
		defer stats.Close()
	}
	tid, run, release := pingPong(t, 1000)
	defer release()
	var engines [2]*Engine
	for i, noRaw := range []bool{false, true} {
		e, err := New(rawSamples(tid), nil, hostFormat, Options{NoRaw: noRaw})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		engines[i] = e
	}
	for ev, how := range engines[0].Attachments() {
		if how != "raw tracepoint" {
			t.Errorf("%s attached as a %s, want a raw tracepoint", ev, how)
		}
	}
	for ev, how := range engines[1].Attachments() {
		if how != "tracepoint" {
			t.Errorf("NoRaw: %s attached as a %s", ev, how)
		}
	}
	run()
	// The thread blocks in its last read: after a moment nothing of it
	// moves, and the two are detached at a quiet point.
	time.Sleep(100 * time.Millisecond)
	var got [2][]*tracefs.Histogram
	for _, e := range engines {
		// Detached first, both, so that neither counts an event the
		// other does not.
		for _, l := range e.links {
			l.Close()
		}
		e.links = nil
	}
	for i, e := range engines {
		hs, err := e.Read()
		if err != nil {
			t.Fatal(err)
		}
		got[i] = hs
		if st, err := e.Stats(); err == nil {
			for _, s := range st {
				if s.Runs > 0 {
					t.Logf("%s %s: %d runs, %d ns a run", map[int]string{0: "raw", 1: "classic"}[i], s.Event, s.Runs, s.RunTimeNs/s.Runs)
				}
			}
		}
	}
	comm, _ := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/comm")
	name := strings.TrimSpace(string(comm))
	for j, tr := range rawSamples(tid) {
		raw, classic := entries(got[0][j]), entries(got[1][j])
		what := tr.System + "/" + tr.Event + " by " + tr.Keys[0].Name
		if raw != classic {
			t.Errorf("%s: raw tracepoint\n%s\nclassic tracepoint\n%s", what, raw, classic)
		}
		if len(got[0][j].Entries) == 0 {
			t.Errorf("%s: no entries", what)
		}
		if len(tr.Keys) > 1 && !strings.Contains(raw, " "+name+" ") {
			t.Errorf("%s: the thread's name %q is not in\n%s", what, name, raw)
		}
		t.Logf("%s: %d entries, the same", what, len(got[0][j].Entries))
	}
}

// entries prints a histogram's entries, one a line, sorted.
func entries(h *tracefs.Histogram) string {
	var lines []string
	for _, e := range h.Entries {
		var b strings.Builder
		for _, k := range e.Keys {
			fmt.Fprintf(&b, "%s %s ", k.Name, k.Raw)
		}
		for _, v := range e.Values {
			fmt.Fprintf(&b, "| %s %d", v.Name, v.Num)
		}
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// The system call tracepoints stay classic (see rawFields): a program
// on them is never raw, one on the scheduler's events beside it is.
func TestRawNotForSyscalls(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	if _, err := taskFields(); err != nil {
		t.Skipf("no kernel BTF: the BPF engine has no raw variants here (%v)", err)
	}
	ts := append(syscount(), &Trigger{System: "raw_syscalls", Event: "sys_exit", Keys: []*planner.Expr{field("ret")}},
		&Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")}})
	e, err := New(ts, nil, hostFormat, Options{Syscall: func(nr uint64) string { return "sys_" + strconv.FormatUint(nr, 10) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	want := map[string]string{"raw_syscalls/sys_enter": "tracepoint", "raw_syscalls/sys_exit": "tracepoint", "sched/sched_switch": "raw tracepoint"}
	if got := e.Attachments(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attachments %v, want %v", got, want)
	}
}
