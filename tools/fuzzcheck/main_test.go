package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// feed runs the lines of a recorded go test -fuzz output through progress
// and returns the first error.
func feed(t *testing.T, file string) error {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := &progress{stall: 6 * time.Second}
	for _, l := range strings.Split(string(data), "\n") {
		if err := p.line(l); err != nil {
			return err
		}
	}
	return p.done()
}

// The output of a run of FuzzParse before the fix: the counter stood
// still at 40413 from 15 s to 24 s, and at 91225 from 24 s on.
func TestStalledRunIsCaught(t *testing.T) {
	err := feed(t, "testdata/stalled.log")
	if err == nil || !strings.Contains(err.Error(), "execs stayed at 40413 from 15s to 21s") {
		t.Fatalf("got %v, want a stall at 40413 from 15s to 21s", err)
	}
}

func TestHealthyRunPasses(t *testing.T) {
	if err := feed(t, "testdata/healthy.log"); err != nil {
		t.Fatal(err)
	}
}

// One report without progress (a worker minimizing for a second) is not a
// stall; two are.
func TestStallNeedsTheWholeDuration(t *testing.T) {
	p := &progress{stall: 6 * time.Second}
	for _, l := range []string{
		"fuzz: elapsed: 3s, execs: 10 (3/sec), new interesting: 0 (total: 1)",
		"fuzz: elapsed: 6s, execs: 10 (0/sec), new interesting: 0 (total: 1)",
		"fuzz: elapsed: 9s, execs: 20 (3/sec), new interesting: 0 (total: 1)",
		"fuzz: elapsed: 12s, execs: 20 (0/sec), new interesting: 0 (total: 1)",
	} {
		if err := p.line(l); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
	}
	if err := p.line("fuzz: elapsed: 15s, execs: 20 (0/sec), new interesting: 0 (total: 1)"); err == nil {
		t.Fatal("6 s without progress passed")
	}
}

func TestNoExecutionsFails(t *testing.T) {
	p := &progress{stall: 6 * time.Second}
	p.line("fuzz: elapsed: 0s, gathering baseline coverage: 0/98 completed")
	if err := p.done(); err == nil {
		t.Fatal("a run without a status line passed")
	}
}

// A process whose command line looks like a worker of the target is found;
// one of another target is not.
func TestLeftoverWorkersFound(t *testing.T) {
	start := func(target string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "sleep 30", "sh", "-test.fuzzworker", "-test.fuzz=^"+target+"$")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	mine, other := start("FuzzCheckSelfTest"), start("FuzzCheckOther")
	left := leftoverWorkers("FuzzCheckSelfTest")
	if !slices.Contains(left, mine.Process.Pid) || slices.Contains(left, other.Process.Pid) {
		t.Fatalf("leftoverWorkers = %v; want %d and not %d", left, mine.Process.Pid, other.Process.Pid)
	}
}

// A run that Go's coordinator failed at the end of -fuzztime with nothing
// but "context deadline exceeded" (golang/go#75804) is told apart from one
// that wrote a failing input.
func TestCoordinatorRace(t *testing.T) {
	data, err := os.ReadFile("testdata/deadline.log")
	if err != nil {
		t.Fatal(err)
	}
	p := &progress{stall: 6 * time.Second}
	for _, l := range strings.Split(string(data), "\n") {
		if err := p.line(l); err != nil {
			t.Fatal(err)
		}
	}
	if !p.coordinatorRace() {
		t.Fatal("the recorded deadline failure is not recognized")
	}
	p.line("    Failing input written to testdata/fuzz/FuzzParse/4b3389f562ec3dd4")
	if p.coordinatorRace() {
		t.Fatal("a failure that wrote an input passed as the race")
	}
}
