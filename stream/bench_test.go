package stream_test

import (
	"testing"

	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// BenchmarkWakeupJoin: the machine's work for one wakeup of the wakeup
// JOIN (a sched_waking, then its sched_switch, which fires the synthetic
// event into the results and negatives histograms), over 64 tasks.
func BenchmarkWakeupJoin(b *testing.B) {
	t := &testing.T{}
	r := newRig(t, wakeup, stream.Options{})
	waking, _ := r.cat.Event("sched", "sched_waking")
	sw, _ := r.cat.Event("sched", "sched_switch")
	comms := []string{"sh", "kworker/0:1", "rcu_sched", "sqlhist"}
	mk := func(def *tracefs.Event, pid int, ts uint64, fields map[string]any) *stream.Event {
		e := &stream.Event{Def: def, TS: ts, PID: pid, Fields: make([]stream.Value, len(def.Fields))}
		for i, f := range def.Fields {
			switch v := fields[f.Name].(type) {
			case int:
				e.Fields[i] = stream.Num(uint64(v))
			case string:
				e.Fields[i] = stream.Text(v)
			}
		}
		return e
	}
	var evs []*stream.Event
	ts := uint64(1e9)
	for i := range 64 {
		ts += 1000
		evs = append(evs, mk(waking, 1, ts, map[string]any{"pid": 100 + i, "comm": comms[i%4]}))
		ts += 50_000
		evs = append(evs, mk(sw, 0, ts, map[string]any{"next_pid": 100 + i, "next_comm": comms[i%4]}))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := evs[2*(i%64)]
		e.TS += 1e6
		r.m.Feed(e)
		s := evs[2*(i%64)+1]
		s.TS += 1e6
		r.m.Feed(s)
	}
}
