package live_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// One place chooses the engine, and says why: auto takes BPF where its
// programs load, then the kernel's hist triggers where the kernel has
// them and synthetic events, else the stream, saying why not BPF; a
// forced engine says it was asked for; awk runs the stream's plan;
// anything else is refused.
func TestChooseEngine(t *testing.T) {
	full := tracefs.Features{HistTriggers: true, SyntheticEvents: true}
	noSynth := tracefs.Features{HistTriggers: true}
	via := errors.New("through a shell")
	for _, c := range []struct {
		want   string
		feat   tracefs.Features
		noBPF  error
		engine string
		reason string
	}{
		{"", full, nil, live.EngineBPF, "auto: BPF programs load here, the cheapest engine"},
		{"auto", tracefs.Features{}, nil, live.EngineBPF, "auto: BPF programs load here, the cheapest engine"},
		{"", full, via, live.EngineKernel, "auto: the kernel has hist triggers and synthetic events; no BPF: through a shell"},
		{"auto", full, via, live.EngineKernel, "auto: the kernel has hist triggers and synthetic events; no BPF: through a shell"},
		{"auto", tracefs.Features{}, via, live.EngineStream, "auto: this kernel has no hist triggers; no BPF: through a shell"},
		{"auto", noSynth, via, live.EngineStream, "auto: this kernel has no synthetic events; no BPF: through a shell"},
		{"stream", full, nil, live.EngineStream, "asked for with --engine stream"},
		{"kernel", tracefs.Features{}, nil, live.EngineKernel, "asked for with --engine kernel"},
		{"bpf", full, via, live.EngineBPF, "asked for with --engine bpf"},
		{"awk", full, nil, live.EngineStream, "asked for with --engine awk"},
	} {
		got, err := live.ChooseEngine(c.want, c.feat, c.noBPF)
		if err != nil || got.Engine != c.engine || got.Reason != c.reason {
			t.Errorf("ChooseEngine(%q, %+v, %v) = %+v, %v; want %s, %q", c.want, c.feat, c.noBPF, got, err, c.engine, c.reason)
		}
	}
	if _, err := live.ChooseEngine("llvm", full, nil); err == nil || !strings.Contains(err.Error(), `--engine "llvm"`) {
		t.Errorf("an unknown engine: %v", err)
	}
}
