package live

import (
	"encoding/binary"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// BenchmarkStreamPerf: a stream run of the wakeup JOIN on perf events
// that reads, at its end, b.N wakeups (a sched_waking, then a
// sched_switch to the task woken, 50 µs later, 64 tasks) from one CPU's
// perf ring: reading the ring, keeping the records in order, decoding
// them and feeding the machine. Per op: one wakeup (the run's setup and
// end are a fixed part: compare two b.N).
func BenchmarkStreamPerf(b *testing.B) {
	benchPerfWakeups(b, `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		[]string{"load", "load", "kworker/0:1", "sh"}, 64, func(int) uint64 { return 50_000 })
}

// BenchmarkStreamKeepup is BenchmarkStreamPerf with issue 41's question
// (e2e's keepupSQL: the wakeups of one task name, which the kernel
// filters) and latencies of 20 to 2,066 µs: the records a run of
// TestKeepUpCost reads.
func BenchmarkStreamKeepup(b *testing.B) {
	benchPerfWakeups(b, keepupQuery, []string{"pace"}, 64, keepupLat)
}

// BenchmarkStreamKeepupOneTask is BenchmarkStreamKeepup's wakeups all of
// one task, as in e2e's TestKeepUpCost, where pace alone is woken.
func BenchmarkStreamKeepupOneTask(b *testing.B) {
	benchPerfWakeups(b, keepupQuery, []string{"pace"}, 1, keepupLat)
}

// keepupQuery is issue 41's filtered wakeup JOIN (e2e's keepupSQL).
const keepupQuery = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_comm == "pace"`

// keepupLat spreads the wakeups' latencies over seven log2 buckets.
func keepupLat(i int) uint64 { return 20_000 + uint64(i*7919%2047)*1000 }

// benchPerfWakeups runs q on b.N wakeups of tasks named comms in turn,
// of pids in turn (tasks of them), each switched to lat(i) ns after its
// waking.
func benchPerfWakeups(b *testing.B, q string, comms []string, tasks int, lat func(i int) uint64) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		b.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	src := source.NewSource("q.sql", q)
	plan, diags := Compile(src, cat, Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		b.Fatal(diags.Render(src))
	}
	waking, _ := cat.Event("sched", "sched_waking")
	sw, _ := cat.Event("sched", "sched_switch")
	// A record of ev with its fields set: vals by field name.
	raw := func(ev *tracefs.Event, vals map[string]any) []byte {
		n := 0
		for _, f := range ev.Fields {
			n = max(n, f.Offset+f.Size)
		}
		r := make([]byte, n)
		binary.NativeEndian.PutUint16(r, uint16(ev.ID))
		for _, f := range ev.Fields {
			switch v := vals[f.Name].(type) {
			case int:
				switch f.Size {
				case 4:
					binary.NativeEndian.PutUint32(r[f.Offset:], uint32(v))
				case 8:
					binary.NativeEndian.PutUint64(r[f.Offset:], uint64(v))
				}
			case string:
				copy(r[f.Offset:f.Offset+f.Size], v)
			}
		}
		return r
	}
	// One record of each kind a task name, its pid and time set for
	// each wakeup in place.
	type tmpl struct{ w, s []byte }
	var tmpls []tmpl
	for _, c := range comms {
		tmpls = append(tmpls, tmpl{
			sample(0, raw(waking, map[string]any{"common_pid": 1, "comm": c, "prio": 120, "target_cpu": 0})),
			sample(0, raw(sw, map[string]any{"common_pid": 1, "prev_comm": "load", "prev_pid": 1, "next_comm": c}))})
	}
	wpid, spid := waking.Field("pid"), sw.Field("next_pid")
	size := b.N * (len(tmpls[0].w) + len(tmpls[0].s))
	ring := newPerfTestRing(size+4096, 0)
	ts := uint64(1e12)
	for i := range b.N {
		t := tmpls[i%len(tmpls)]
		pid := uint32(100 + i%tasks)
		ts += 1000
		binary.NativeEndian.PutUint64(t.w[perfTimeOff:], ts)
		binary.NativeEndian.PutUint32(t.w[perfRawOff+wpid.Offset:], pid)
		ring.putFast(t.w)
		ts += lat(i)
		binary.NativeEndian.PutUint64(t.s[perfTimeOff:], ts)
		binary.NativeEndian.PutUint32(t.s[perfRawOff+spid.Offset:], pid)
		ring.putFast(t.s)
	}
	s, _, err := newStreamRun(&Target{Root: "/t", FS: fsys}, plan, cat, instanceOf(plan), true, false, 0)
	if err != nil {
		b.Fatal(err)
	}
	s.perf = &perfRings{rings: []*perfRing{ring.r}}
	arch, _ := cat.Arch()
	b.ReportAllocs()
	b.ResetTimer()
	if err := s.start(arch, false); err != nil {
		b.Fatal(err)
	}
	if _, err := s.finish(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	hs, err := s.histograms(plan.Units[0].Results.HistFile())
	if err != nil || len(hs) == 0 {
		b.Fatalf("no results: %v", err)
	}
	if hits := hs[0].Totals.Hits; hits != uint64(b.N) {
		b.Fatalf("%d hits, want %d", hits, b.N)
	}
}
