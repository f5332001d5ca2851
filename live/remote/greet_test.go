package remote

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// A shell that loses the start of what it is sent (the 300 bytes dd
// swallows before sh reads the rest, as a serial line read by no shell
// yet, or closed between shells, does): the greeting sent once is never
// answered; sent again while nothing answers, it is, and the session
// works, its next requests answered once each.
func TestGreetingResentOnALossyLine(t *testing.T) {
	old := GreetEvery
	defer func() { GreetEvery = old }()
	lossy := "dd bs=1 count=300 of=/dev/null 2>/dev/null; exec sh"

	GreetEvery = 0 // never sent again
	if _, err := Dial(context.Background(), lossy, Options{Timeout: 2 * time.Second}); err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Fatalf("the greeting sent once: %v, want no answer", err)
	}

	GreetEvery = 200 * time.Millisecond
	var trace bytes.Buffer
	s, err := Dial(context.Background(), lossy, Options{Timeout: 10 * time.Second, Trace: &trace})
	if err != nil {
		t.Fatalf("the greeting sent again: %v\n%s", err, trace.String())
	}
	defer s.Close()
	if !strings.Contains(trace.String(), "no answer yet, sent again") || s.Info.Release == "" {
		t.Errorf("no resend traced, or no release (%q):\n%s", s.Info.Release, trace.String())
	}
	for i := range 3 {
		out, err := s.request(context.Background(), "counting", "echo "+strings.Repeat("x", i+1))
		if err != nil || out != strings.Repeat("x", i+1)+"\n" {
			t.Errorf("request %d after the greeting: %q, %v", i+1, out, err)
		}
	}
}
