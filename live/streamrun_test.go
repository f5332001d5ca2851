package live_test

import (
	"context"
	"encoding/binary"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

const headerPage = `	field: u64 timestamp;	offset:0;	size:8;	signed:0;
	field: local_t commit;	offset:8;	size:8;	signed:1;
	field: int overwrite;	offset:8;	size:1;	signed:1;
	field: char data;	offset:16;	size:4080;	signed:1;
`

const headerEvent = `# compressed entry header
	type_len    :    5 bits
	time_delta  :   27 bits
	array       :   32 bits

	padding     : type == 29
	time_extend : type == 30
	time_stamp : type == 31
	data max type_len  == 28
`

// page builds a ring-buffer page: its time, then each record with its
// delta from the one before (small records: type_len is the length in
// words).
type page struct {
	buf  []byte
	used int
	last uint64
}

func newPage(ts uint64) *page {
	p := &page{buf: make([]byte, 4096), used: 16, last: ts}
	binary.NativeEndian.PutUint64(p.buf, ts)
	return p
}

func (p *page) add(ts uint64, data []byte) {
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	hdr := uint32(len(data)/4) | uint32(ts-p.last)<<5
	binary.NativeEndian.PutUint32(p.buf[p.used:], hdr)
	copy(p.buf[p.used+4:], data)
	p.used += 4 + len(data)
	p.last = ts
	binary.NativeEndian.PutUint64(p.buf[8:], uint64(p.used-16))
}

// record lays out an event of the catalog with its fields.
func record(t *testing.T, cat *tracefs.Catalog, system, name string, pid int, vals map[string]any) []byte {
	t.Helper()
	ev, err := cat.Event(system, name)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, f := range ev.Fields {
		size = max(size, f.Offset+f.Size)
	}
	b := make([]byte, size)
	binary.NativeEndian.PutUint16(b, uint16(ev.ID))
	binary.NativeEndian.PutUint32(b[4:], uint32(pid))
	for _, f := range ev.Fields {
		switch v := vals[f.Name].(type) {
		case int:
			switch f.Size {
			case 4:
				binary.NativeEndian.PutUint32(b[f.Offset:], uint32(v))
			case 8:
				binary.NativeEndian.PutUint64(b[f.Offset:], uint64(v))
			}
		case string:
			copy(b[f.Offset:f.Offset+f.Size], v)
		}
	}
	return b
}

// TestStreamRun: -r with the stream engine on a tracefs whose ring
// buffers hold a switch on CPU 0 and its wakeup, earlier, on CPU 1 (and a
// switch with no wakeup): the run enables only the two events in its instance
// (no trigger, no synthetic event), merges the CPUs by time, answers the
// JOIN (one wakeup of 150 µs), reports the events the buffers lost, and
// removes what it made. Its instance is its lease, whose records go to
// its snapshot buffer; on a kernel without snapshots, an instance of
// its own beside its lease.
func TestStreamRun(t *testing.T) {
	t.Run("lease", func(t *testing.T) { testStreamRun(t, true) })
	t.Run("no snapshot", func(t *testing.T) { testStreamRun(t, false) })
}

func testStreamRun(t *testing.T, snapshot bool) {
	f := newFake()
	inst := "sqlhist_7_own"
	if !snapshot {
		files, err := fs.ReadFile(f, "FILES")
		if err != nil {
			t.Fatal(err)
		}
		f.Files["FILES"] = strings.Replace(string(files), "\nsnapshot\n", "\n", 1)
		inst = "sqlhist_7"
	}
	cat := tracefs.Open(f)
	src := source.NewSource("q.sql", wakeup)
	plan, diags := live.Compile(src, cat, live.Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	f.Files["events/header_page"] = headerPage
	f.Files["events/header_event"] = headerEvent
	f.Files["saved_cmdlines"] = "10 sh\n"
	for _, c := range []string{"cpu0", "cpu1"} {
		f.Files["instances/"+inst+"/per_cpu/"+c+"/stats"] = "entries: 0\noverrun: 5\ndropped events: 0\n"
	}
	const us = 1000
	// CPU 0's buffer is read first and holds the switch: only the merge
	// by time puts the wakeup on CPU 1 before it.
	p0 := newPage(1_000_150 * us)
	p0.add(1_000_150*us, record(t, cat, "sched", "sched_switch", 0, map[string]any{"next_comm": "sh", "next_pid": 10}))
	p0.add(1_000_300*us, record(t, cat, "sched", "sched_switch", 0, map[string]any{"next_comm": "x", "next_pid": 99}))
	p1 := newPage(1_000_000 * us)
	p1.add(1_000_000*us, record(t, cat, "sched", "sched_waking", 2, map[string]any{"comm": "sh", "pid": 10}))
	calls := 0
	tgt := &live.Target{Root: "/t", FS: f, W: f, ReadRaw: func(dirs []string, size int) ([][]byte, error) {
		calls++
		if len(dirs) != 2 || size != 4096 {
			t.Errorf("ReadRaw(%v, %d), want two CPUs' directories and 4096-byte pages", dirs, size)
		}
		out := make([][]byte, len(dirs))
		if calls == 1 {
			out[0], out[1] = p0.buf, p1.buf
			// Each CPU's buffer overwrites one event during the run
			// (the 5 before it are not the run's).
			for _, c := range []string{"cpu0", "cpu1"} {
				f.Files["instances/"+inst+"/per_cpu/"+c+"/stats"] = "entries: 0\noverrun: 6\ndropped events: 0\n"
			}
		}
		return out, nil
	}}
	rep, err := live.Run(context.Background(), tgt, plan, live.Options{Duration: time.Millisecond, Engine: live.EngineStream, Catalog: cat, Alive: func(int) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	writes := f.String()
	for _, w := range []string{"instances/" + inst + "/events/sched/sched_waking/enable: 1", "instances/" + inst + "/events/sched/sched_switch/enable: 1",
		"instances/" + inst + "/trace_clock: global", "instances/" + inst + "/buffer_percent: 0", "instances/" + inst + "/buffer_size_kb: 4096",
		"rmdir: instances/" + inst + "\n", "rmdir: instances/sqlhist_7_own\n"} {
		if !strings.Contains(writes+"\n", w) {
			t.Errorf("no write %q in:\n%s", w, writes)
		}
	}
	if n := strings.Count(writes, "mkdir: "); snapshot && n != 1 || !snapshot && n != 2 {
		t.Errorf("%d instances made, want 1 with a snapshot buffer, else 2:\n%s", n, writes)
	}
	if snapshot && !strings.Contains(writes, "instances/sqlhist_7_own/snapshot: 1") {
		t.Errorf("the lease's records were not moved to its snapshot buffer:\n%s", writes)
	}
	if strings.Contains(writes, "hist:") || strings.Contains(writes, "s:") {
		t.Errorf("the stream engine wrote a trigger or a synthetic event:\n%s", writes)
	}
	res := rep.Results[0]
	if rep.Engine != live.EngineStream || res.Engine != live.EngineStream || res.Lost != 2 {
		t.Errorf("engine %q/%q lost %d, want stream and 2 (one overrun a CPU)", rep.Engine, res.Engine, res.Lost)
	}
	if h := res.Read.Totals.Hits; h != 1 || len(res.Rows) != 1 {
		t.Fatalf("%d hits in %d rows, want the one wakeup", h, len(res.Rows))
	}
	if r := res.Rows[0]; r.Stats == nil || r.Stats.Sum != 150 || r.Stats.Max != 150 || r.Count != 1 {
		t.Errorf("row %+v, want one latency of 150 µs", r)
	}
}
