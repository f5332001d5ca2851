package fuzzguard

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestReturnsWhenInTime(t *testing.T) {
	ran := false
	Run(time.Second, "quick", func() { ran = true })
	if !ran {
		t.Fatal("fn did not run")
	}
	// The timer is stopped: waiting past the bound must not crash.
	time.Sleep(10 * time.Millisecond)
	Run(5*time.Millisecond, "quick", func() {})
	time.Sleep(20 * time.Millisecond)
}

// An input that runs past the bound crashes the process with the input
// quoted and the stuck goroutine's stack. Run in a child process, since
// the crash ends it.
func TestCrashesPastTheBound(t *testing.T) {
	if os.Getenv("FUZZGUARD_CHILD") == "1" {
		Run(50*time.Millisecond, "SELECT ---", func() { stuckForever() })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashesPastTheBound$")
	cmd.Env = append(os.Environ(), "FUZZGUARD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child exited 0:\n%s", out)
	}
	for _, want := range []string{
		`fuzzguard: input still running after 50ms (a stall): "SELECT ---"`,
		"fuzzguard.stuckForever", // every goroutine's stack, the stuck one's included
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

//go:noinline
func stuckForever() {
	for {
		time.Sleep(time.Second)
	}
}
