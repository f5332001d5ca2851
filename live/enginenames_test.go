package live_test

import (
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
)

// A report names its engine with live's constants; results reads and
// prints them with its own: they are the same names.
func TestEngineNamesAgree(t *testing.T) {
	for _, c := range [][2]string{
		{live.EngineKernel, results.EngineKernel},
		{live.EngineStream, results.EngineStream},
		{live.EngineBPF, results.EngineBPF},
		{live.EngineAwk, results.EngineAwk},
	} {
		if c[0] != c[1] {
			t.Errorf("live's engine %q is %q in results", c[0], c[1])
		}
	}
}
