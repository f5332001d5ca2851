package live_test

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// One place chooses the engine, and says why: auto takes the kernel's
// hist triggers where the kernel has them and synthetic events, else the
// stream; a forced engine says it was asked for; awk runs the stream's
// plan; anything else is refused.
func TestChooseEngine(t *testing.T) {
	full := tracefs.Features{HistTriggers: true, SyntheticEvents: true}
	noSynth := tracefs.Features{HistTriggers: true}
	for _, c := range []struct {
		want   string
		feat   tracefs.Features
		engine string
		reason string
	}{
		{"", full, live.EngineKernel, "auto: the kernel has hist triggers and synthetic events"},
		{"auto", full, live.EngineKernel, "auto: the kernel has hist triggers and synthetic events"},
		{"auto", tracefs.Features{}, live.EngineStream, "auto: this kernel has no hist triggers"},
		{"auto", noSynth, live.EngineStream, "auto: this kernel has no synthetic events"},
		{"stream", full, live.EngineStream, "asked for with --engine stream"},
		{"kernel", tracefs.Features{}, live.EngineKernel, "asked for with --engine kernel"},
		{"awk", full, live.EngineStream, "asked for with --engine awk"},
	} {
		got, err := live.ChooseEngine(c.want, c.feat)
		if err != nil || got.Engine != c.engine || got.Reason != c.reason {
			t.Errorf("ChooseEngine(%q, %+v) = %+v, %v; want %s, %q", c.want, c.feat, got, err, c.engine, c.reason)
		}
	}
	if _, err := live.ChooseEngine("llvm", full); err == nil || !strings.Contains(err.Error(), `--engine "llvm"`) {
		t.Errorf("an unknown engine: %v", err)
	}
}

// The reason an engine answered is in the table's engine line and in the
// JSON, and reads back from it.
func TestEngineReasonInReports(t *testing.T) {
	a, _ := wakeupFleet(t)
	for _, res := range a.Results {
		res.Engine, res.EngineReason, res.Lost = live.EngineStream, "auto: this kernel has no hist triggers", 2
	}
	if tab := tableOf(t, a); !strings.Contains(tab, "engine: stream (sqlhist computed the triggers from the events; auto: this kernel has no hist triggers), 2 events lost") {
		t.Errorf("the table does not say why the engine answered:\n%s", tab)
	}
	js := jsonOf(t, a)
	if !strings.Contains(js, `"engine_reason": "auto: this kernel has no hist triggers"`) {
		t.Errorf("the JSON does not say why the engine answered:\n%s", js)
	}
	_, back := readBack(t, js)
	if back.Results[0].EngineReason != "auto: this kernel has no hist triggers" {
		t.Errorf("read back: reason %q", back.Results[0].EngineReason)
	}
}
