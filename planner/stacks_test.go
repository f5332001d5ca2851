package planner

import "testing"

// TestOffCPUResults: --run of a JOIN that carries the start's stack keys
// its results by the stack (.stacktrace, which makes the kernel print the
// frames) and the latency's log2 bucket, and shows the stack as a column.
func TestOffCPUResults(t *testing.T) {
	const q = `SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS offcpu
FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid
WHERE start.prev_state == 2`
	for _, k := range []string{"6.12", "7.2"} {
		plan := buildOK(t, embedded(t, k), q, Options{Run: true})
		h := plan.Units[0].Results
		if h == nil {
			t.Fatalf("%s: no results histogram", k)
		}
		if got, want := ExprStrings(h.Keys), []string{"stack.stacktrace", "offcpu.log2"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: results keys %q, want %q", k, got, want)
		}
		if c := h.Columns[0]; c.Label != "stack" || c.Kind != ColKey || c.Index != 0 {
			t.Errorf("%s: first column %+v", k, c)
		}
	}
}
