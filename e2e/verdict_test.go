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
