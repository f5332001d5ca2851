package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestHeaviestLeaf: a tie for the most off-CPU time between the
// scheduler's leaf and another is the scheduler's, whatever the names'
// order; a heavier other leaf still wins.
func TestHeaviestLeaf(t *testing.T) {
	for _, c := range []struct {
		leaves map[string]int64
		top    string
	}{
		{map[string]int64{"__schedule": 900, "__cond_resched": 40}, "__schedule"},
		{map[string]int64{"__schedule": 900, "__cond_resched": 900}, "__schedule"},
		{map[string]int64{"a_leaf": 500, "__schedule": 500, "schedule_hrtimeout_range": 500}, "__schedule"},
		{map[string]int64{"__schedule": 100, "__cond_resched": 900}, "__cond_resched"},
		{map[string]int64{"b": 7, "a": 7}, "a"},
	} {
		top, most := heaviestLeaf(c.leaves)
		if top != c.top || most != c.leaves[c.top] {
			t.Errorf("heaviestLeaf(%v) = %q, %d; want %q", c.leaves, top, most, c.top)
		}
	}
	if top, _ := heaviestLeaf(nil); top != "" || isSchedulerLeaf(top) {
		t.Errorf("no leaves: %q", top)
	}
}

// intervalLines prints an -i run's JSON lines: the intervals' counts
// (the last partial), then the total's.
func intervalLines(counts ...uint64) string {
	var b strings.Builder
	var total uint64
	row := func(n uint64) string {
		return fmt.Sprintf(`{"event":"synthetic/x","rows":[{"comm":"sh","count":%d}]}`, n)
	}
	for i, n := range counts {
		fmt.Fprintf(&b, `{"interval":%d,"start":%d,"end":%d,"partial":%v,"results":[%s]}`+"\n", i+1, 2*i, 2*i+2, i == len(counts)-1, row(n))
		total += n
	}
	fmt.Fprintf(&b, `{"total":true,"results":[%s]}`+"\n", row(total))
	return b.String()
}

// TestIntervalsProblem: -i 2 -d 7's three whole intervals and a partial
// pass, and so do fewer when a starved guest dropped a tick (the counts
// still add up); a count that does not add up, a partial interval that
// is not the last, a missing total and too many intervals fail.
func TestIntervalsProblem(t *testing.T) {
	for _, ok := range []string{intervalLines(10, 12, 9, 4), intervalLines(22, 9, 4), intervalLines(31, 4)} {
		if p := intervalsProblem(ok, 3); p != "" {
			t.Errorf("%s\n%s", p, ok)
		}
	}
	for name, bad := range map[string]string{
		"intervals do not add up": strings.Replace(intervalLines(10, 12, 9, 4), `"count":35`, `"count":36`, 1),
		"partial not last":        strings.Replace(intervalLines(10, 12, 9, 4), `"interval":2,"start":2,"end":4,"partial":false`, `"interval":2,"start":2,"end":4,"partial":true`, 1),
		"no total":                strings.Replace(intervalLines(10, 12, 9, 4), `"total":true`, `"total":false`, 1),
		"five intervals":          intervalLines(10, 12, 9, 4, 1),
		"only the partial":        intervalLines(35),
		"nothing counted":         intervalLines(0, 0, 0, 0),
		"numbered from 2":         strings.Replace(intervalLines(10, 12, 9, 4), `"interval":1,`, `"interval":2,`, 1),
	} {
		if p := intervalsProblem(bad, 3); p == "" {
			t.Errorf("%s: no problem:\n%s", name, bad)
		}
	}
}
