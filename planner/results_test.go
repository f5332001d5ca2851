package planner

import "testing"

// With a ResultsInstance, a JOIN's results and negative-latency counter
// and a histogram aggregating the plan's own synthetic event go there;
// the JOIN's triggers, a histogram on another event, one with a handler
// that snapshots, and the steps of a chain (they carry variables) stay in
// the run's instance.
func TestResultsInstance(t *testing.T) {
	opt := Options{Run: true, Instance: "run", ResultsInstance: "res"}
	where := func(u *Unit) (start, end, results, neg string) {
		start = u.Start.Instance
		if u.End != nil {
			end = u.End.Instance
		}
		if u.Results != nil {
			results = u.Results.Instance
		}
		if u.Negatives != nil {
			neg = u.Negatives.Instance
		}
		return
	}
	join := `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	u := buildOK(t, embedded(t, "6.1"), join, opt).Units[0]
	if s, e, r, n := where(u); s != "run" || e != "run" || r != "res" || n != "res" {
		t.Errorf("JOIN: start %q, end %q, results %q, negatives %q", s, e, r, n)
	}
	agg := `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*), MAX(TIMESTAMP_DELTA_USECS) AS worst
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat`
	units := buildOK(t, embedded(t, "6.1"), agg, opt).Units
	if len(units) != 2 || units[1].End != nil || units[1].Start.System != "synthetic" {
		t.Fatalf("the aggregate is not a JOIN then a histogram: %d units", len(units))
	}
	if s, e, _, _ := where(units[0]); s != "run" || e != "run" {
		t.Errorf("aggregate's JOIN: start %q, end %q", s, e)
	}
	if got := units[1].Start.Instance; got != "res" {
		t.Errorf("the aggregate's histogram (actions %q) is in %q, want res", units[1].Start.Actions, got)
	}
	hist := buildOK(t, embedded(t, "6.1"), `SELECT CAST(id AS SYSCALL), COUNT(*) FROM sys_enter GROUP BY id`, opt).Units[0]
	if hist.Start.Instance != "run" {
		t.Errorf("a histogram on sys_enter is in %q", hist.Start.Instance)
	}
	snap := opt
	snap.OnMax, snap.Snapshot = "lat", true
	u = buildOK(t, embedded(t, "6.1"), join, snap).Units[0]
	if u.Results.Instance != "res" || u.End.Instance != "run" {
		t.Errorf("-m -s: results %q, end %q", u.Results.Instance, u.End.Instance)
	}
	for i, u := range buildOK(t, embedded(t, "6.1"), threeEvents, opt).Units {
		if u.Start.Instance != "run" || u.End != nil && u.End.Instance != "run" {
			t.Errorf("chain step %d: start %q", i, u.Start.Instance)
		}
	}
	// Without one, everything is beside the triggers.
	opt.ResultsInstance = ""
	if _, _, r, n := where(buildOK(t, embedded(t, "6.1"), join, opt).Units[0]); r != "run" || n != "run" {
		t.Errorf("no ResultsInstance: results %q, negatives %q", r, n)
	}
}
