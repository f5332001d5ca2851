package stream_test

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// rig is a machine built from a query as --run plans it on the embedded
// 6.1 catalog, with helpers to make events.
type rig struct {
	t    *testing.T
	cat  *tracefs.Catalog
	plan *planner.Plan
	m    *stream.Machine
	ts   uint64
}

func newRig(t *testing.T, sql string, opt stream.Options) *rig {
	t.Helper()
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	plan, diags := live.Compile(source.NewSource("q.sql", sql), cat, live.Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		t.Fatalf("compile: %v", diags)
	}
	var hists []*planner.Hist
	var synths []*planner.Synth
	for _, c := range emit.RunCommands(plan, emit.Options{}, emit.RunOptions{Instance: "sqlhist_7"}) {
		if c.Hist != nil {
			hists = append(hists, c.Hist)
		}
		if c.Synth != nil {
			synths = append(synths, c.Synth)
		}
	}
	m, err := stream.New(hists, synths, cat.Event, opt)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, cat: cat, plan: plan, m: m, ts: 1_000_000_000}
}

// feed makes an event of system/name at the rig's clock plus dt ns,
// with the fields given (the rest zero), and feeds it.
func (r *rig) feed(system, name string, dt uint64, cpu, pid int, fields map[string]any) {
	r.t.Helper()
	ev, err := r.cat.Event(system, name)
	if err != nil {
		r.t.Fatal(err)
	}
	r.ts += dt
	e := &stream.Event{Def: ev, TS: r.ts, CPU: cpu, PID: pid, Fields: make([]stream.Value, len(ev.Fields))}
	for i, f := range ev.Fields {
		switch v := fields[f.Name].(type) {
		case int:
			e.Fields[i] = stream.Num(uint64(int64(v)))
		case string:
			e.Fields[i] = stream.Text(v)
		case nil:
			if f.Name == "common_pid" {
				e.Fields[i] = stream.Num(uint64(pid))
			}
		}
	}
	r.m.Feed(e)
}

// hist parses the hist file of an event and returns the histogram keyed
// by keys.
func (r *rig) hist(system, name, keys string) *tracefs.Histogram {
	r.t.Helper()
	text := r.m.HistFile(system, name)
	hs, err := tracefs.ParseHist(text)
	if err != nil {
		r.t.Fatalf("the machine's hist file does not parse: %v\n%s", err, text)
	}
	for _, h := range hs {
		var names []string
		for _, k := range h.KeyFields() {
			n, _, _ := strings.Cut(k, ".")
			names = append(names, n)
		}
		if strings.Join(names, ",") == keys {
			return h
		}
	}
	r.t.Fatalf("no histogram keyed by %s in\n%s", keys, text)
	return nil
}

const wakeup = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`

// TestJoinOneEndPerStart: the wakeup JOIN pairs a start with the next end
// of its key; an end without a start (or a second end after one start)
// fires nothing; a later start replaces an earlier one; latencies are the
// difference of the timestamps in µs, each rounded to the nearest µs as
// the kernel's .usecs does (ns2usecs).
func TestJoinOneEndPerStart(t *testing.T) {
	r := newRig(t, wakeup, stream.Options{})
	synth := r.plan.Units[0].Synth.Name
	r.feed("sched", "sched_switch", 0, 0, 1, map[string]any{"next_pid": 10, "next_comm": "early"}) // no start yet
	r.feed("sched", "sched_waking", 1000, 1, 2, map[string]any{"pid": 10, "comm": "a"})
	r.feed("sched", "sched_switch", 150_500, 0, 0, map[string]any{"next_pid": 10, "next_comm": "a"}) // 1000001 to 1000152 us
	r.feed("sched", "sched_switch", 10_000, 0, 10, map[string]any{"next_pid": 10, "next_comm": "a"}) // consumed: nothing
	r.feed("sched", "sched_waking", 1000, 1, 2, map[string]any{"pid": 11, "comm": "b"})
	r.feed("sched", "sched_waking", 5_000, 1, 2, map[string]any{"pid": 11, "comm": "b"})           // replaces
	r.feed("sched", "sched_switch", 3_000, 1, 0, map[string]any{"next_pid": 11, "next_comm": "b"}) // 3 us
	r.feed("sched", "sched_switch", 1_000, 1, 0, map[string]any{"next_pid": 12, "next_comm": "c"}) // no start

	res := r.hist("synthetic", synth, "comm,lat")
	if res.Totals.Hits != 2 || len(res.Entries) != 2 {
		t.Fatalf("results: %d hits, %d entries; want 2 and 2", res.Totals.Hits, len(res.Entries))
	}
	got := map[string][2]uint64{}
	for _, e := range res.Entries {
		got[e.Keys[0].Text] = [2]uint64{e.Keys[1].Num, e.Values[1].Num}
	}
	// 151 us is in log2 bucket 8 (128, 256]; 3 us in bucket 2 (2, 4].
	if got["a"] != [2]uint64{8, 151} || got["b"] != [2]uint64{2, 3} {
		t.Errorf("results = %v, want a: bucket 8 sum 151, b: bucket 2 sum 3", got)
	}
	for _, e := range res.Entries {
		if len(e.Tracked) != 1 || e.Tracked[0].Handler != "max" {
			t.Fatalf("entry %v: tracked %v, want a max line", e.Keys, e.Tracked)
		}
	}
	// The end trigger counts only the ends that found their start.
	end := r.hist("sched", "sched_switch", "next_pid")
	if end.Totals.Hits != 2 {
		t.Errorf("end trigger: %d hits, want 2 (ends without a start do nothing)", end.Totals.Hits)
	}
	neg := r.hist("synthetic", synth, "common_cpu")
	if neg.Totals.Hits != 0 {
		t.Errorf("negatives: %d hits, want 0", neg.Totals.Hits)
	}
}

// TestJoinKeys: a JOIN's start and end find each other by a number key
// compared at its field's size (a 32-bit pid of -1, sign-extended, is the
// end's 0xffffffff: a map of numbers), and by a string key (a map of key
// bytes); a number that differs above the field's size is the same key.
func TestJoinKeys(t *testing.T) {
	r := newRig(t, wakeup, stream.Options{})
	synth := r.plan.Units[0].Synth.Name
	r.feed("sched", "sched_waking", 1000, 0, 2, map[string]any{"pid": -1, "comm": "a"})
	r.feed("sched", "sched_switch", 2000, 0, 0, map[string]any{"next_pid": 0xffffffff, "next_comm": "a"}) // 2 us
	r.feed("sched", "sched_waking", 1000, 0, 2, map[string]any{"pid": 7, "comm": "b"})
	r.feed("sched", "sched_switch", 5000, 0, 0, map[string]any{"next_pid": 1<<32 | 7, "next_comm": "b"}) // 5 us
	if res := r.hist("synthetic", synth, "comm,lat"); res.Totals.Hits != 2 {
		t.Errorf("number keys: %d hits, want 2", res.Totals.Hits)
	}
	byComm := `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.comm = end.next_comm`
	r = newRig(t, byComm, stream.Options{})
	synth = r.plan.Units[0].Synth.Name
	r.feed("sched", "sched_waking", 1000, 0, 2, map[string]any{"pid": 5, "comm": "a"})
	r.feed("sched", "sched_switch", 2000, 0, 0, map[string]any{"next_pid": 6, "next_comm": "b"}) // no start
	r.feed("sched", "sched_switch", 2000, 0, 0, map[string]any{"next_pid": 5, "next_comm": "a"}) // 4 us
	res := r.hist("synthetic", synth, "comm,lat")
	if res.Totals.Hits != 1 || len(res.Entries) != 1 || res.Entries[0].Keys[0].Text != "a" {
		t.Errorf("string keys: %d hits in %v, want one of a", res.Totals.Hits, res.Entries)
	}
}

// TestHistogramFilterAndDrops: a histogram counts the events that pass
// its filter, keys by log2 buckets, sums values, and drops inserts past
// its size, counting them.
func TestHistogramFilterAndDrops(t *testing.T) {
	r := newRig(t, `SELECT common_pid, CAST(bytes_req AS LOG2) AS b, SUM(bytes_alloc) FROM kmalloc WHERE bytes_req > 16 GROUP BY common_pid, b`, stream.Options{})
	for _, x := range []struct{ pid, req, alloc int }{{1, 8, 8}, {1, 100, 128}, {1, 120, 128}, {1, 200, 256}, {2, 17, 32}} {
		r.feed("kmem", "kmalloc", 10, 0, x.pid, map[string]any{"bytes_req": x.req, "bytes_alloc": x.alloc})
	}
	h := r.hist("kmem", "kmalloc", "common_pid,bytes_req")
	if h.Totals.Hits != 4 {
		t.Errorf("hits %d, want 4 (bytes_req 8 is filtered out)", h.Totals.Hits)
	}
	want := map[[2]uint64][2]uint64{{1, 7}: {2, 256}, {1, 8}: {1, 256}, {2, 5}: {1, 32}}
	if len(h.Entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(h.Entries), len(want))
	}
	for _, e := range h.Entries {
		k := [2]uint64{e.Keys[0].Num, e.Keys[1].Num}
		if got := [2]uint64{e.Values[0].Num, e.Values[1].Num}; got != want[k] {
			t.Errorf("entry %v: count, sum = %v, want %v", k, got, want[k])
		}
	}
}

// TestSyscallAndExecnameNames: .syscall and .execname keys print the
// names the options give, and the task's name is the one it had when the
// entry was made.
func TestSyscallAndExecnameNames(t *testing.T) {
	names := map[int]string{5: "sh"}
	opt := stream.Options{
		Syscall: func(nr uint64) string {
			if nr == 0 {
				return "sys_read"
			}
			return ""
		},
		Comm: func(pid int) string { return names[pid] },
	}
	r := newRig(t, `SELECT CAST(common_pid AS EXECNAME) AS task, CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter GROUP BY task, call`, opt)
	r.feed("raw_syscalls", "sys_enter", 10, 0, 5, map[string]any{"id": 0})
	names[5] = "renamed"
	r.feed("raw_syscalls", "sys_enter", 10, 0, 5, map[string]any{"id": 0})
	r.feed("raw_syscalls", "sys_enter", 10, 0, 5, map[string]any{"id": 999})
	h := r.hist("raw_syscalls", "sys_enter", "common_pid,id")
	if len(h.Entries) != 2 {
		t.Fatalf("%d entries, want 2", len(h.Entries))
	}
	for _, e := range h.Entries {
		want := map[uint64]string{0: "sh", 999: "renamed"}[e.Keys[1].Num]
		if e.Keys[0].Text != want {
			t.Errorf("task of syscall %d: %q, want %q (the name when its entry was made)", e.Keys[1].Num, e.Keys[0].Text, want)
		}
		switch e.Keys[1].Num {
		case 0:
			if e.Keys[1].Text != "sys_read" || e.Values[0].Num != 2 {
				t.Errorf("read: %q count %d", e.Keys[1].Text, e.Values[0].Num)
			}
		case 999:
			if e.Keys[1].Text != "unknown_syscall" {
				t.Errorf("999: %q", e.Keys[1].Text)
			}
		}
	}
}

// TestStackKeys: a stacktrace key groups the events by the stack recorded
// after them, and prints its frames as the kernel does (the hist file
// parses back into the frames).
func TestStackKeys(t *testing.T) {
	syms := map[uint64]string{0x1000: "schedule+0x10/0x80", 0x2000: "do_nanosleep+0x20/0x100"}
	r := newRig(t, `SELECT STACKTRACE, COUNT(*) FROM sched_switch WHERE prev_state == 1`,
		stream.Options{Sym: func(a uint64, offset bool) string { return syms[a] }})
	ev, _ := r.cat.Event("sched", "sched_switch")
	for i, st := range [][]uint64{{0x1000, 0x2000}, {0x1000, 0x2000}, {0x1000}} {
		e := &stream.Event{Def: ev, TS: uint64(i + 1), Fields: make([]stream.Value, len(ev.Fields)), Stack: st}
		e.Fields[fieldIndex(ev, "prev_state")] = stream.Num(1)
		r.m.Feed(e)
	}
	h := r.hist("sched", "sched_switch", "common_stacktrace")
	if len(h.Entries) != 2 || h.Totals.Hits != 3 {
		t.Fatalf("%d entries, %d hits; want 2 and 3", len(h.Entries), h.Totals.Hits)
	}
	got := map[string]uint64{}
	for _, e := range h.Entries {
		got[strings.Join(e.Keys[0].Frames, ";")] = e.Values[0].Num
	}
	want := map[string]uint64{"schedule+0x10/0x80;do_nanosleep+0x20/0x100": 2, "schedule+0x10/0x80": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("stack %s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

func fieldIndex(ev *tracefs.Event, name string) int {
	for i, f := range ev.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// TestPercentAndGraph: .percent shows each entry's share of the count (in
// hundredths, as the kernel rounds), .graph a bar against the largest.
func TestPercentAndGraph(t *testing.T) {
	r := newRig(t, `SELECT common_pid, CAST(COUNT(*) AS PERCENT) AS share FROM kmalloc GROUP BY common_pid`, stream.Options{})
	for _, pid := range []int{1, 1, 2} {
		r.feed("kmem", "kmalloc", 10, 0, pid, nil)
	}
	h := r.hist("kmem", "kmalloc", "common_pid")
	got := map[uint64]float64{}
	for _, e := range h.Entries {
		for _, v := range e.Values {
			if v.Kind == tracefs.HistPercent {
				got[e.Keys[0].Num] = v.Percent
			}
		}
	}
	if got[1] != 66.66 || got[2] != 33.33 {
		t.Errorf("percent %v, want 66.66 and 33.33 (truncated hundredths)", got)
	}
}

// TestStackJoin: a stack carried through a JOIN (the off-CPU query of
// docs/run.md) keys the results by a stacktrace field, which the kernel
// prints as "stack.stacktrace" with the first frame on the same line (not
// "stack:" and a newline, which the hist reader refused: "unterminated
// key"); the hist file parses back into the frames, with the off-CPU time
// summed per stack.
func TestStackJoin(t *testing.T) {
	syms := map[uint64]string{0x1000: "schedule+0x10/0x80", 0x2000: "do_nanosleep+0x20/0x100", 0x3000: "pipe_read+0x30/0x90"}
	r := newRig(t, `SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS offcpu FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid WHERE start.prev_state == 1 OR start.prev_state == 2`,
		stream.Options{Sym: func(a uint64, offset bool) string { return syms[a] }})
	ev, _ := r.cat.Event("sched", "sched_switch")
	ts := uint64(1_000_000_000)
	sw := func(prev, next int, state uint64, stack []uint64) {
		ts += 1_000_000 // 1 ms
		e := &stream.Event{Def: ev, TS: ts, PID: prev, Fields: make([]stream.Value, len(ev.Fields)), Stack: stack}
		e.Fields[fieldIndex(ev, "prev_pid")] = stream.Num(uint64(prev))
		e.Fields[fieldIndex(ev, "next_pid")] = stream.Num(uint64(next))
		e.Fields[fieldIndex(ev, "prev_state")] = stream.Num(state)
		e.Fields[fieldIndex(ev, "common_pid")] = stream.Num(uint64(prev))
		r.m.Feed(e)
	}
	// Task 10 sleeps twice in nanosleep, task 11 once in a pipe read;
	// each is switched back in 1 ms later.
	sw(10, 0, 1, []uint64{0x1000, 0x2000})
	sw(0, 10, 0, nil)
	sw(11, 0, 1, []uint64{0x1000, 0x3000})
	sw(0, 11, 0, nil)
	sw(10, 0, 1, []uint64{0x1000, 0x2000})
	sw(0, 10, 0, nil)
	var h *tracefs.Histogram
	for _, u := range r.plan.Units {
		if u.Results != nil {
			var names []string
			for _, k := range u.Results.Keys {
				names = append(names, k.Name)
			}
			h = r.hist(u.Results.System, u.Results.Event, strings.Join(names, ","))
		}
	}
	if h == nil {
		t.Fatal("no results histogram")
	}
	got := map[string]uint64{}
	for _, e := range h.Entries {
		got[strings.Join(e.Keys[0].Frames, ";")] = e.Values[0].Num
	}
	want := map[string]uint64{"schedule+0x10/0x80;do_nanosleep+0x20/0x100": 2, "schedule+0x10/0x80;pipe_read+0x30/0x90": 1}
	if len(got) != len(want) || got["schedule+0x10/0x80;do_nanosleep+0x20/0x100"] != 2 || got["schedule+0x10/0x80;pipe_read+0x30/0x90"] != 1 {
		t.Errorf("stacks %v, want %v", got, want)
	}
}

// A stack saved in a variable (a JOIN's start.STACKTRACE) needs the
// start event's stack recorded, as a stacktrace key does: the run asks
// NeedsStack which events' stacktrace triggers to make (the suite's
// differential phase read empty stacks before).
func TestStackVariableNeedsStack(t *testing.T) {
	r := newRig(t, `SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS offcpu FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid WHERE start.prev_state == 1`, stream.Options{})
	if !r.m.NeedsStack("sched", "sched_switch") {
		t.Error("sched_switch: the start's stack is not asked for")
	}
	r = newRig(t, `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`, stream.Options{})
	if r.m.NeedsStack("sched", "sched_waking") || r.m.NeedsStack("sched", "sched_switch") {
		t.Error("a JOIN without stacks asks for stacks")
	}
}
