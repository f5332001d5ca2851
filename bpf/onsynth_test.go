package bpf

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestSynthOutputOnlyWhenAsked: the programs write a synthetic event
// into the perf buffer only when Options.OnSynth asks for them (-r
// --events); a plain run's programs do not, nor have the buffer. The
// write costs the wakeup JOIN about 4.4 µs a wakeup of guest time on 6.1
// (make bench-kernel: 7,110 guest ns a wakeup with it, 366 events a round
// dropped by the buffer and told as lost).
func TestSynthOutputOnlyWhenAsked(t *testing.T) {
	cat := catalog(t, "6.1")
	format := func(system, event string) (*tracefs.Event, error) { return cat.Event(system, event) }
	for _, want := range []bool{false, true} {
		ts, synths := wakeupJoin("sched_waking", nil)
		opt := Options{}
		if want {
			opt.OnSynth = func(*stream.Event) {}
		}
		e, err := New(ts, synths, format, opt)
		if err != nil {
			t.Fatal(err)
		}
		insns := e.Instructions("sched", "sched_switch")
		has := strings.Contains(insns, "PerfEventOutput")
		if has != want {
			t.Errorf("OnSynth set %v: the sched_switch program calls perf_event_output: %v\n%s", want, has, insns)
		}
		if _, ok := e.spec().Maps[eventsMap]; ok != want {
			t.Errorf("OnSynth set %v: the perf buffer's map made: %v", want, ok)
		}
	}
}
