package live_test

import (
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "0.5": 500 * time.Millisecond, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond} {
		if got, err := live.ParseDuration(in); err != nil || got != want {
			t.Errorf("live.ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
