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

// A stream shape's traced figure is its part's time plus its sqlhist's CPU
// time after the part (not the wall time, which holds idle waits); its
// line adds the share of the row over no workload (fixed_ns) and the
// rest (per_event_ns) and the most events a round lost (lost=); a round
// without its count of lost events or without the stop is an error.
func TestCostReportStream(t *testing.T) {
	q := "SELECT …"
	shapes := []costShape{{name: "s", part: "syscalls", stream: q}, {part: "syscalls", stream: q, empty: true}}
	var out strings.Builder
	out.WriteString("@@count syscalls raw_syscalls/sys_enter 2000\n")
	for r := 1; r <= costRounds; r++ {
		// s: bare 1 ms, traced 2 ms, then 30 ms of sqlhist's CPU (100 ms
		// wall): (1 ms + 30 ms) / 2000 = 15500 ns an event.
		fmt.Fprintf(&out, "@@bare %d 0 syscalls 2000 1000000 wakeups 0 0 opens 0 0\n", r)
		fmt.Fprintf(&out, "@@run %d 0 syscalls 2000 2000000 wakeups 0 0 opens 0 0 stop 30000000 100000000\n", r)
		fmt.Fprintf(&out, "@@stream %d 0 0 2100\n", r)
		// Over no workload: 10 ms of CPU, 5000 ns an event of the part.
		fmt.Fprintf(&out, "@@bare %d 1 syscalls 0 100 wakeups 0 0 opens 0 0\n", r)
		fmt.Fprintf(&out, "@@run %d 1 syscalls 0 100 wakeups 0 0 opens 0 0 stop 10000000 90000000\n", r)
		fmt.Fprintf(&out, "@@stream %d 1 0 0\n", r)
	}
	out.WriteString("@@errorlog 0\n")
	report, lines, err := costReport(shapes, out.String())
	if err != nil {
		t.Fatal(err)
	}
	want := "cost s overhead_ns=15500 spread=0.0% vs_bare=32.000 lost=0 fixed_ns=5000 per_event_ns=10500"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if !strings.Contains(report, "30.0 ms CPU (15000 ns/event), 100.0 ms wall; 2100 hits, lost [0 0") {
		t.Errorf("the report does not give sqlhist's stop:\n%s", report)
	}
	// Events lost in a round: said on its line.
	_, lines, err = costReport(shapes, strings.Replace(out.String(), "@@stream 2 0 0 2100", "@@stream 2 0 3 2100", 1))
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], " lost=3 ") {
		t.Errorf("a round that lost 3 events: %q, %v", lines, err)
	}
	for _, c := range []struct{ what, old, new string }{
		{"no count of the lost events", "@@stream 2 0 0 2100", "@@stream 2 0  "},
		{"a run without the stop", "0 stop 30000000 100000000\n@@stream 1 ", "0\n@@stream 1 "},
	} {
		if _, _, err := costReport(shapes, strings.Replace(out.String(), c.old, c.new, 1)); err == nil {
			t.Errorf("%s gave a report", c.what)
		}
	}
}
