package live_test

import (
	"context"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// BenchmarkStreamWakeups: a stream run of the wakeup JOIN that reads, at
// its end, 4,000 wakeups (a sched_waking, then a sched_switch to the task
// woken, 50 µs later) from one CPU's ring buffer: reading the pages,
// decoding the records, ordering and feeding them, and the run's own
// setup and teardown on a fake tracefs. Per op: one run.
func BenchmarkStreamWakeups(b *testing.B) {
	const wakeups = 4000
	f := newFake()
	cat := tracefs.Open(f)
	src := source.NewSource("q.sql", wakeup)
	plan, diags := live.Compile(src, cat, live.Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		b.Fatal(diags.Render(src))
	}
	f.Files["events/header_page"] = headerPage
	f.Files["events/header_event"] = headerEvent
	f.Files["saved_cmdlines"] = "1 load\n2 load\n"
	f.cpus = 1
	t := &testing.T{}
	comms := []string{"load", "load", "kworker/0:1", "sh"}
	var pages [][]byte
	ts := uint64(1e12)
	p := newPage(ts)
	add := func(data []byte) {
		if p.used+4+len(data)+8 > len(p.buf) {
			pages = append(pages, p.buf)
			p = newPage(ts)
		}
		p.add(ts, data)
	}
	for i := range wakeups {
		pid := 100 + i%64
		ts += 1000
		add(record(t, cat, "sched", "sched_waking", 1, map[string]any{"comm": comms[i%4], "pid": pid}))
		ts += 50_000
		add(record(t, cat, "sched", "sched_switch", 1, map[string]any{"prev_comm": "load", "prev_pid": 1, "next_comm": comms[i%4], "next_pid": pid}))
	}
	pages = append(pages, p.buf)
	var data []byte
	for _, pg := range pages {
		data = append(data, pg...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		calls := 0
		tgt := &live.Target{Root: "/t", FS: f, W: f, ReadRaw: func(dirs []string, size int) ([][]byte, error) {
			calls++
			out := make([][]byte, len(dirs))
			if calls == 1 {
				out[0] = data
			}
			return out, nil
		}}
		rep, err := live.Run(context.Background(), tgt, plan, live.Options{Duration: time.Nanosecond, Engine: live.EngineStream, Catalog: cat, Alive: func(int) bool { return false }})
		if err != nil {
			b.Fatal(err)
		}
		if h := rep.Results[0].Read.Totals.Hits; h != wakeups {
			b.Fatalf("%d hits, want %d", h, wakeups)
		}
		f.Recorder = tracefs.Recorder{}
	}
}
