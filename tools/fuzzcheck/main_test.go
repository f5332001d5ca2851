package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// A run whose baseline took the whole -fuzztime fails and says so.
func TestBaselineOnlyFails(t *testing.T) {
	p := &progress{stall: 6 * time.Second}
	for _, l := range []string{"fuzz: elapsed: 0s, gathering baseline coverage: 0/316 completed", "fuzz: elapsed: 15s, gathering baseline coverage: 293/316 completed"} {
		if err := p.line(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.done(); err == nil || !strings.Contains(err.Error(), "293 of 316") {
		t.Fatalf("got %v", err)
	}
}

// The newest inputs of the cached corpus are kept, the others removed,
// and a missing directory is no error.
func TestPruneCorpus(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i := range 10 {
		f := filepath.Join(dir, "in"+strconv.Itoa(i))
		if err := os.WriteFile(f, []byte("go test fuzz v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(f, now, now.Add(time.Duration(i)*time.Minute))
	}
	kept, removed, err := pruneCorpus(dir, 4)
	if err != nil || kept != 4 || removed != 6 {
		t.Fatalf("kept %d, removed %d, %v", kept, removed, err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "in6 in7 in8 in9" {
		t.Errorf("left %v, want the four newest", names)
	}
	if k, r, err := pruneCorpus(filepath.Join(dir, "none"), 4); k != 0 || r != 0 || err != nil {
		t.Errorf("missing dir: %d %d %v", k, r, err)
	}
}
