package emit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/planner"
)

// A --run creates every synthetic event first, then the statements from
// the last to the first, so a trigger reading a synthetic event (the
// second join's start trigger, the histogram over the second view, each
// results histogram) is in place before the trigger that fires it.
func TestRunCommandsConsumersFirst(t *testing.T) {
	hist := func(sys, ev, role string) *planner.Hist {
		return &planner.Hist{System: sys, Event: ev, Role: role, Keys: planner.MustExprs(role), Instance: "run"}
	}
	p := &planner.Plan{Units: []*planner.Unit{
		{Synth: &planner.Synth{Name: "one"}, Start: hist("a", "b", "s1"), End: hist("c", "d", "e1"), Results: hist("synthetic", "one", "r1")},
		{Synth: &planner.Synth{Name: "two"}, Start: hist("synthetic", "one", "s2"), End: hist("c", "d", "e2"), Results: hist("synthetic", "two", "r2")},
		{Start: hist("synthetic", "two", "h3")},
	}}
	var got []string
	for _, c := range RunCommands(p, Options{}, RunOptions{Instance: "run", CreateInstance: true, Enable: true}) {
		got = append(got, c.File+": "+c.Line)
	}
	want := []string{
		"instances/run: mkdir",
		"dynamic_events: s:one ",
		"dynamic_events: s:two ",
		"instances/run/events/synthetic/two/trigger: hist:keys=h3",
		"instances/run/events/synthetic/two/trigger: hist:keys=r2",
		"instances/run/events/synthetic/two/enable: 1",
		"instances/run/events/synthetic/one/trigger: hist:keys=s2",
		"instances/run/events/c/d/trigger: hist:keys=e2",
		"instances/run/events/synthetic/one/trigger: hist:keys=r1",
		"instances/run/events/synthetic/one/enable: 1",
		"instances/run/events/a/b/trigger: hist:keys=s1",
		"instances/run/events/c/d/trigger: hist:keys=e1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if td := Teardown(RunCommands(p, Options{}, RunOptions{Instance: "run", CreateInstance: true})); !strings.HasSuffix(td[len(td)-1].File, "instances/run") || td[len(td)-1].Line != "rmdir" {
		t.Errorf("the instance is not removed last: %+v", td[len(td)-1])
	}
}
