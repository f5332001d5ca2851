package planner

import (
	"strings"
	"testing"
)

// TestHandlerRunWarning: under --run, -s or -S without -T leave nothing
// to fire the synthetic event, and the plan says so; with -T it fires.
func TestHandlerRunWarning(t *testing.T) {
	const q = `SELECT start.pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	for _, tt := range []struct {
		name string
		opt  Options
		warn bool
	}{
		{"snapshot", Options{Run: true, OnMax: "lat", Snapshot: true}, true},
		{"save", Options{Run: true, OnChange: "lat", Save: []string{"prev_prio"}}, true},
		{"trace", Options{Run: true, OnMax: "lat", Trace: true}, false},
		{"snapshot without --run", Options{OnMax: "lat", Snapshot: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := build(t, embedded(t, "6.1"), q, tt.opt)
			warned := false
			for _, d := range diags {
				if d.Warning && strings.Contains(d.Msg, "--run will show no rows") {
					warned = true
				}
			}
			if warned != tt.warn {
				t.Errorf("warned = %v, want %v: %v", warned, tt.warn, diags)
			}
		})
	}
}
