package cli

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: the collector's target is gcPercent, serveGCPercent while
// --metrics serves, unless GOGC is set.
func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	TuneGC(func(string) string { return "" }, false)
	if got := debug.SetGCPercent(7); got != gcPercent {
		t.Errorf("without GOGC: %d, want %d", got, gcPercent)
	}
	TuneGC(func(string) string { return "" }, true)
	if got := debug.SetGCPercent(7); got != serveGCPercent {
		t.Errorf("serving, without GOGC: %d, want %d", got, serveGCPercent)
	}
	for _, serving := range []bool{false, true} {
		TuneGC(func(k string) string {
			if k == "GOGC" {
				return "50"
			}
			return ""
		}, serving)
		if got := debug.SetGCPercent(7); got != 7 {
			t.Errorf("with GOGC=50 (serving %v): the target was changed to %d", serving, got)
		}
	}
}
