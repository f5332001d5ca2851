package live

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestPerfOneRing: a run whose one CPU's ring holds the records
// (readPerfDirect: decoded in the ring, fed at once) answers as the same
// records read from two CPUs' rings (kept, ordered, fed): 3,000 wakeups
// of the wakeup JOIN (more than a feed batch), the first ring's records
// split by its end, with a record of an event the run did not open
// among them (lost), and task names that change from wakeup to wakeup.
func TestPerfOneRing(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	q := `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	src := source.NewSource("q.sql", q)
	plan, diags := Compile(src, cat, Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	waking, _ := cat.Event("sched", "sched_waking")
	sw, _ := cat.Event("sched", "sched_switch")
	exec, _ := cat.Event("sched", "sched_process_exec")
	record := func(ev *tracefs.Event, set func(r []byte)) []byte {
		n := 0
		for _, f := range ev.Fields {
			n = max(n, f.Offset+f.Size)
		}
		r := make([]byte, n)
		binary.NativeEndian.PutUint16(r, uint16(ev.ID))
		set(r)
		return r
	}
	put32 := func(r []byte, f *tracefs.Field, v int) { binary.NativeEndian.PutUint32(r[f.Offset:], uint32(v)) }
	putText := func(r []byte, f *tracefs.Field, s string) { copy(r[f.Offset:f.Offset+f.Size], s) }
	comms := []string{"load", "kworker/0:1", "load", "sh", "a-longer-name"}
	var recs [][]byte
	ts := uint64(5e11)
	for i := range 3000 {
		pid, comm := 100+i%7, comms[i%len(comms)]
		ts += 1000
		recs = append(recs, sample(ts, record(waking, func(r []byte) {
			put32(r, waking.Field("pid"), pid)
			putText(r, waking.Field("comm"), comm)
		})))
		if i%500 == 7 {
			ts += 10
			recs = append(recs, sample(ts, record(exec, func(r []byte) {})))
		}
		ts += uint64(3000 + i*37%90000)
		recs = append(recs, sample(ts, record(sw, func(r []byte) {
			put32(r, sw.Field("next_pid"), pid)
			putText(r, sw.Field("next_comm"), comm)
		})))
	}
	run := func(rings []*perfTestRing) (string, uint64) {
		t.Helper()
		s, _, err := newStreamRun(&Target{Root: "/t", FS: fsys}, plan, cat, instanceOf(plan), true, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.perf = &perfRings{}
		for _, r := range rings {
			s.perf.rings = append(s.perf.rings, r.r)
		}
		arch, _ := cat.Arch()
		if err := s.start(arch, false); err != nil {
			t.Fatal(err)
		}
		// The exec record's kind is not one the run reads.
		s.kinds[exec.ID] = nil
		if _, err := s.finish(); err != nil {
			t.Fatal(err)
		}
		return s.histFile(plan.Units[0].Results.HistFile()), s.perf.lost.Load()
	}
	size := 0
	for _, r := range recs {
		size += len(r)
	}
	one := newPerfTestRing(size+64, 1<<30-100)
	for _, r := range recs {
		one.put(r)
	}
	two := []*perfTestRing{newPerfTestRing(size, 0), newPerfTestRing(size, 0)}
	two[1].r.cpu = 1
	for i, r := range recs {
		two[i%2].put(r)
	}
	got, gotLost := run([]*perfTestRing{one})
	want, wantLost := run(two)
	if got != want {
		t.Errorf("one ring:\n%s\ntwo rings:\n%s", got, want)
	}
	if gotLost != 6 || wantLost != 6 {
		t.Errorf("records of no event of the run: %d lost reading one ring, %d two; want 6", gotLost, wantLost)
	}
	if !containsAll(got, "Hits: 3000", "comm: load", "comm: a-longer-name") {
		t.Errorf("the answer lacks the wakeups:\n%s", got)
	}
}

// containsAll says whether s contains each of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
