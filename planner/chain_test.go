package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const threeEvents = `SELECT w.pid, wk.TIMESTAMP - w.TIMESTAMP AS wake, sw.TIMESTAMP - wk.TIMESTAMP AS queue, TIMESTAMP_DELTA AS total
FROM sched_waking AS w JOIN sched_wakeup AS wk ON w.pid = wk.pid JOIN sched_switch AS sw ON sw.next_pid = wk.pid`

// TestChainSteps checks the shape of a three-event chain: one synthetic
// event per JOIN, the first carrying exactly what the second needs (a
// value the ON makes equal in two events once), the
// second starting from the first, and latencies known as such.
func TestChainSteps(t *testing.T) {
	plan := buildOK(t, embedded(t, "6.1"), threeEvents, Options{Run: true})
	if len(plan.Units) != 2 {
		t.Fatalf("%d units, want 2", len(plan.Units))
	}
	first, last := plan.Units[0], plan.Units[1]
	if !first.Feeds || last.Feeds {
		t.Errorf("Feeds = %v, %v; want true, false", first.Feeds, last.Feeds)
	}
	if first.Results != nil || last.Results == nil {
		t.Errorf("results histograms: first %v, last %v; want only the last", first.Results, last.Results)
	}
	if got, want := first.Synth.Name+" "+first.Synth.Definition(), "sched_waking_to_sched_wakeup pid_t w_pid; u64 w_ts; u64 wk_ts"; got != want {
		t.Errorf("first step: %s, want %s", got, want)
	}
	if got, want := last.Start.System+"/"+last.Start.Event, "synthetic/sched_waking_to_sched_wakeup"; got != want {
		t.Errorf("second step starts from %s, want %s", got, want)
	}
	// wk.pid is w.pid (ON w.pid = wk.pid): carried once, as w_pid.
	if got, want := strings.Join(ExprStrings(last.Start.Keys), ","), "w_pid"; got != want {
		t.Errorf("second step keyed by %s, want %s", got, want)
	}
	units := map[string]string{}
	for _, f := range last.Synth.Fields {
		units[f.Name] = f.Unit
	}
	if diff := cmp.Diff(map[string]string{"pid": "", "wake": "ns", "queue": "ns", "total": "ns"}, units); diff != "" {
		t.Errorf("latency units (-want +got):\n%s", diff)
	}
	// total is computed from the carried first timestamp, not from the
	// first step's own timestamp (which is later than the wakeup's).
	if !strings.Contains(last.End.Spec(), "=common_timestamp-$sched_waking_to_sched_switch_w_ts") {
		t.Errorf("the end trigger does not subtract the carried w_ts: %s", last.End.Spec())
	}
}

// TestChainNamesAndHandlers: -n names the last step and the others after
// it; -m acts on the last step only; a suffix (--run) goes on derived names.
func TestChainNamesAndHandlers(t *testing.T) {
	plan := buildOK(t, embedded(t, "6.1"), threeEvents, Options{Name: "wl", OnMax: "total", Trace: true})
	var names []string
	for _, u := range plan.Units {
		names = append(names, u.Synth.Name)
	}
	if diff := cmp.Diff([]string{"wl_step1", "wl"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	for i, u := range plan.Units {
		has := strings.Contains(u.End.Spec(), "onmax(")
		if has != (i == 1) {
			t.Errorf("step %d: onmax present = %v: %s", i+1, has, u.End.Spec())
		}
	}
	plan = buildOK(t, embedded(t, "6.1"), threeEvents, Options{Suffix: "42"})
	if got := plan.Units[0].Synth.Name + " " + plan.Units[1].Synth.Name; got != "sched_waking_to_sched_wakeup_42 sched_waking_to_sched_switch_42" {
		t.Errorf("suffixed names: %s", got)
	}
}

// TestAggregateOverJoin: the JOIN's synthetic event holds the raw values
// and a histogram on it groups them; with --run the histogram is what is
// read, and no results histogram is added to the synthetic event.
func TestAggregateOverJoin(t *testing.T) {
	const q = `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*)
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
GROUP BY comm, lat ORDER BY COUNT(*) DESC LIMIT 3`
	plan := buildOK(t, embedded(t, "6.1"), q, Options{Run: true})
	if len(plan.Units) != 2 {
		t.Fatalf("%d units, want 2", len(plan.Units))
	}
	join, hist := plan.Units[0], plan.Units[1]
	if !join.Feeds || join.Results != nil {
		t.Errorf("the JOIN unit: Feeds %v, Results %v; want it to only feed the histogram", join.Feeds, join.Results)
	}
	if got, want := join.Synth.Definition(), "char comm[16]; u64 lat"; got != want {
		t.Errorf("synthetic event %q, want %q", got, want)
	}
	if hist.Synth != nil || hist.End != nil {
		t.Fatalf("the second unit is not a histogram")
	}
	if got, want := hist.Start.TriggerFile()+" "+hist.Start.Spec(), "events/synthetic/sched_waking_to_sched_switch/trigger hist:keys=comm,lat.log2:sort=hitcount.descending"; got != want {
		t.Errorf("histogram %q, want %q", got, want)
	}
	if hist.Start.Limit != 3 {
		t.Errorf("LIMIT = %d, want 3", hist.Start.Limit)
	}
	var labels []string
	for _, c := range hist.Start.Columns {
		labels = append(labels, c.Label)
	}
	if diff := cmp.Diff([]string{"comm", "lat", "count"}, labels); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
}
