package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestVerdictLatencyBounds: systematic implausible latencies fail a case,
// an isolated outlier is reported but does not.
func TestVerdictLatencyBounds(t *testing.T) {
	c := kernelCase{name: "x", bounds: map[string]string{"lat": "us"}}
	mk := func(bad, good int) *caseResult {
		r := &caseResult{compile: 0, setup: 0, teardown: 0, elapsedUS: 1000000,
			commands: "echo 's:wl u64 lat' >> /sys/kernel/tracing/dynamic_events\n", hists: map[string]string{}}
		for i := 0; i < good; i++ {
			r.trace = append(r.trace, fmt.Sprintf("  sh-1 [000] d..4. 1.%06d: wl: lat=%d", i, 100+i))
		}
		for i := 0; i < bad; i++ {
			r.trace = append(r.trace, "  sh-1 [000] d..4. 2.000000: wl: lat=18446744073709538298")
		}
		return r
	}
	tests := []struct {
		bad, good int
		fail      bool
		outliers  int
	}{
		{0, 20, false, 0},
		{1, 19, false, 1}, // 5%: an outlier
		{3, 17, true, 0},  // 15%: systematic
		{5, 0, true, 0},   // all wrong
	}
	for _, tt := range tests {
		problems, outliers, _, fired, _ := verdict(c, mk(tt.bad, tt.good))
		failed := false
		for _, p := range problems {
			failed = failed || strings.Contains(p, "implausible")
		}
		if failed != tt.fail || len(outliers) != tt.outliers || !fired {
			t.Errorf("%d bad of %d: failed %v (want %v), outliers %d (want %d), fired %v; problems %q",
				tt.bad, tt.bad+tt.good, failed, tt.fail, len(outliers), tt.outliers, fired, problems)
		}
	}
}

// TestVerdictWants: a "want FIELD VALUE" line fails a case unless some
// line of its synthetic events carries exactly that value.
func TestVerdictWants(t *testing.T) {
	c := kernelCase{name: "x", bounds: map[string]string{}, wants: [][2]string{{"filename", "/etc/passwd"}}}
	mk := func(lines ...string) *caseResult {
		return &caseResult{commands: "echo 's:op char filename[]; long ret' >> /sys/kernel/tracing/dynamic_events\n",
			hists: map[string]string{}, trace: lines}
	}
	tests := []struct {
		lines []string
		ok    bool
	}{
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=/etc/passwd ret=3"}, true},
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=/etc/passwd.bak ret=3"}, false},
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=140725713398952 ret=3"}, false},
		{[]string{"  cat-9 [000] ...1. 1.0: other: filename=/etc/passwd"}, false},
	}
	for _, tt := range tests {
		problems, _, _, _, _ := verdict(c, mk(tt.lines...))
		if ok := len(problems) == 0; ok != tt.ok {
			t.Errorf("%q: ok %v, want %v (problems %q)", tt.lines, ok, tt.ok, problems)
		}
	}
}

// TestMaskDemo: only the demo binary's offsets are masked.
func TestMaskDemo(t *testing.T) {
	in := "# uprobe: main.work in /work/bin/demo is at file offset 0x1345\n" +
		"echo 'p:sqlhist/demo_main_work /work/bin/demo:0x1345 n=%ax:s64' >> x\n" +
		"echo 'p:sqlhist/app /usr/bin/app:0x1345' >> x\n"
	want := "# uprobe: main.work in /work/bin/demo is at file offset OFFSET\n" +
		"echo 'p:sqlhist/demo_main_work /work/bin/demo:OFFSET n=%ax:s64' >> x\n" +
		"echo 'p:sqlhist/app /usr/bin/app:0x1345' >> x\n"
	if got := maskDemo(in); got != want {
		t.Errorf("maskDemo:\n%s\nwant\n%s", got, want)
	}
}
