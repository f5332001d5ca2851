package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// costReport turns the guest's lines into per-event overheads: (traced −
// bare) / events of the shape's part, the median over the rounds, and the
// range of the rounds over that median; a missing run is an error.
func TestCostReport(t *testing.T) {
	shapes := []costShape{{name: "a", part: "wakeups"}, {name: "b", part: "syscalls"}}
	var out strings.Builder
	out.WriteString("@@count wakeups sched/sched_waking 1000\n@@count syscalls raw_syscalls/sys_enter 2000\n")
	for r := 1; r <= costRounds; r++ {
		// a: bare 5 ms of wakeups, traced 5 ms + 1000 × (3000 + 10r) ns.
		fmt.Fprintf(&out, "@@bare %d 0 syscalls 0 0 wakeups 1000 5000000 opens 0 0\n", r)
		fmt.Fprintf(&out, "@@run %d 0 syscalls 0 0 wakeups 1000 %d opens 0 0\n", r, 5000000+1000*(3000+10*r))
		// b: bare 1 ms of syscalls, traced 2 ms: 500 ns a call, every round.
		fmt.Fprintf(&out, "@@bare %d 1 syscalls 2000 1000000 wakeups 0 0 opens 0 0\n", r)
		fmt.Fprintf(&out, "@@run %d 1 syscalls 2000 2000000 wakeups 0 0 opens 0 0\n", r)
	}
	out.WriteString("@@errorlog 0\n")
	_, lines, err := costReport(shapes, out.String())
	if err != nil {
		t.Fatal(err)
	}
	mid := 3000 + 10*(costRounds+1)/2
	spread := float64(10*(costRounds-1)) / float64(mid) * 100
	want := []string{
		fmt.Sprintf("cost a overhead_ns=%d spread=%.1f%% vs_bare=%.3f", mid, spread, float64(5000000+1000*mid)/5000000),
		"cost b overhead_ns=500 spread=0.0% vs_bare=2.000",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// A round short: not a figure.
	cut := strings.Replace(out.String(), "@@run 1 1 ", "@@xrun 1 1 ", 1)
	if _, _, err := costReport(shapes, cut); err == nil {
		t.Error("a missing run gave a report")
	}
	if _, _, err := costReport(shapes, strings.Replace(out.String(), "@@errorlog 0", "@@errorlog 2", 1)); err == nil {
		t.Error("entries in error_log gave a report")
	}
}
