package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// ids lists the kernel ids of the engine's programs ("p") and maps
// ("m").
func (e *Engine) ids() ([]string, error) {
	var out []string
	for _, p := range e.coll.Programs {
		info, err := p.Info()
		if err != nil {
			return nil, err
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("p%d", id))
	}
	for _, m := range e.coll.Maps {
		info, err := m.Info()
		if err != nil {
			return nil, err
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("m%d", id))
	}
	return out, nil
}

// alive says whether the kernel still has the program or map of id.
func alive(id string) (bool, error) {
	n, err := strconv.ParseUint(id[1:], 10, 32)
	if err != nil {
		return false, err
	}
	var c interface{ Close() error }
	if id[0] == 'p' {
		c, err = ebpf.NewProgramFromID(ebpf.ProgramID(n))
	} else {
		c, err = ebpf.NewMapFromID(ebpf.MapID(n))
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.Close()
	return true, nil
}

// TestHoldEngine is TestKillLeavesNothing's victim: run alone (with
// SQLHIST_BPF_HOLD set) it starts the wakeup JOIN, prints its programs'
// and maps' ids and waits to be killed.
func TestHoldEngine(t *testing.T) {
	if os.Getenv("SQLHIST_BPF_HOLD") == "" {
		t.Skip("TestKillLeavesNothing's victim: runs when that test starts it")
	}
	ts, synths := wakeupJoin("sched_waking", nil)
	e, err := New(ts, synths, hostFormat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	ids, err := e.ids()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("@@started %s\n", strings.Join(ids, " "))
	time.Sleep(time.Hour)
}

// TestKillLeavesNothing starts the wakeup JOIN in a process, kills it
// with SIGKILL once its programs are attached, and checks that the
// kernel has freed every program and map it made: they lived only as
// the process's file descriptors (nothing pinned, nothing written to
// tracefs).
func TestKillLeavesNothing(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHoldEngine$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "SQLHIST_BPF_HOLD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var ids []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "@@started "); ok {
			ids = strings.Fields(rest)
			break
		}
		t.Logf("victim: %s", sc.Text())
	}
	if len(ids) == 0 {
		t.Fatal("the victim did not start its engine")
	}
	for _, id := range ids {
		if ok, err := alive(id); !ok || err != nil {
			t.Fatalf("%s of the running victim: alive %v, %v", id, ok, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kernel frees them once their last descriptor closes (after an
	// RCU grace period): wait for it, a while.
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids {
		for {
			ok, err := alive(id)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s outlived the killed process by 10 s", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("the killed process's %d programs and maps are gone: %s", len(ids), strings.Join(ids, " "))
}
