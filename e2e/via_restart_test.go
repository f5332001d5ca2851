package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The via line made to restart its shell (issue 45): the guest's line,
// a shell reading the serial port as its script, becomes the loop a
// board's serial console may have, `while true; do cat DEV | sh > DEV
// 2>&1; done`, whose shell restarts when its cat ends (at a disconnect,
// on a board); here the cat is killed every 4 to 9 s (an irregular
// cycle: a fixed period can fall in step with sqlhist's waits and catch
// every retry), at any moment of a
// run, and what the line carries in the 0.1 s between two shells is
// lost (read and dropped, as a port closed then drops it). sqlhist's print, -r, -i and --cleanup each succeed on
// their first try, and the traces show the shells it greeted again.

// viaRestartEvery are the pauses between two ends of the line's shell, in
// seconds, in a cycle.
const viaRestartEvery = "4 7 5 9 6"

// restartRunBound bounds one sqlhist process on the restarting line: each
// end of its shell costs a run a few seconds (the request lost, a sync, the
// greeting again), and under emulation beside other guests a -r of the
// JOIN took more than runBound's 3 minutes there (a serial line's
// requests; its trace showed no error).
const restartRunBound = 8 * time.Minute

// sqlhistRunFor is sqlhistRun with its own bound.
func sqlhistRunFor(bound time.Duration, bin string, args ...string) (string, string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, viaArgs(args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	if ctx.Err() != nil {
		fmt.Fprintf(&errb, "\n(the test's bound of %v on one sqlhist process ran out: it was killed)", bound)
	}
	return out.String(), errb.String(), code
}

// viaRestartingChecks makes the line of the target at via (its guest end
// dev) restart its shell, runs the checks, and puts the line back.
func viaRestartingChecks(t *testing.T, kname, via, dev, bin string, local []string, before string, gstate func() string) {
	q := viaSQL
	// One line, which the line's present shell reads whole and runs:
	// the loop, detached, starts reading the port a second later, once
	// that shell has exited (two readers of a port share its bytes, and
	// a piece of this line run by the new shell, kill $PPID, would end
	// the loop); that shell's parent, the guest's own loop, is killed.
	convert := fmt.Sprintf(`( sleep 1; while true; do { cat %[1]s & echo $! > /tmp/via-cat; wait; } | sh > %[1]s 2>&1; cat %[1]s > /dev/null & sleep 0.1; kill $!; done ) </dev/null >/dev/null 2>&1 3>&- & echo $! > /tmp/via-loop; `+
		`( while :; do for s in %[2]s; do sleep $s; kill $(cat /tmp/via-cat) 2>/dev/null; done; done ) </dev/null >/dev/null 2>&1 3>&- & echo $! > /tmp/via-killer; kill $PPID; exit
`, dev, viaRestartEvery)
	if out, err := viaSessionRaw(via, convert); err != nil {
		t.Fatalf("making the line restart its shell: %v: %s", err, out)
	}
	restored := false
	defer func() {
		if !restored {
			viaRestore(t, via, dev)
		}
	}()
	// The new loop answers (a few tries: its shells come and go, and
	// what comes before its first cat is lost). Each try's sockcat is
	// the process viaSession kills at its bound (exec: not a shell that
	// would leave it holding qemu's one connection).
	ok := false
	var probes []string
	for deadline := time.Now().Add(time.Minute); !ok && time.Now().Before(deadline); {
		out, err := viaSession("exec "+via, "echo fd0=$(readlink /proc/$$/fd/0) restarting-$((6*7))", 5*time.Second)
		ok = strings.Contains(out, "restarting-42") && !strings.Contains(out, "fd0="+dev)
		probes = append(probes, fmt.Sprintf("%q %v", out, err))
	}
	if !ok {
		t.Fatalf("the restarting line's shell (a pipe from cat as its input) never answered:\n%s", strings.Join(probes, "\n"))
	}

	// The runs' --via-trace files: kept in $SQLHIST_E2E_LOG when set.
	dir := t.TempDir()
	if d := e2eLogDir(); d != "" {
		dir = d
	}
	syncs := 0
	run := func(name string, args ...string) (string, string, int) {
		trace := filepath.Join(dir, "via-restart-"+kname+"-"+strings.TrimLeft(name, "-")+".trace")
		out, errs, code := sqlhistRunFor(restartRunBound, bin, append([]string{"--via", via, "--via-trace", trace}, args...)...)
		tr, _ := os.ReadFile(trace)
		n := strings.Count(string(tr), "greeted again")
		syncs += n
		t.Logf("%s: %s on the restarting line: exit %d, %d shells greeted again, %d requests sent again", kname, name, code, n, strings.Count(string(tr), "sent again as"))
		return out, errs, code
	}

	// Printing: the script the embedded catalog of the kernel prints.
	got, gerr, gcode := run("print", "-n", "wl", q.join)
	want, _, _ := sqlhistRun(bin, append(local, "-n", "wl", q.join)...)
	got, want = targetLineRE.ReplaceAllString(got, "TARGET"), targetLineRE.ReplaceAllString(want, "TARGET")
	if gcode != 0 || got != want || got == "" {
		t.Errorf("print on the restarting line (exit %d):\n%s%s\nwant:\n%s", gcode, got, gerr, want)
	}
	// -r.
	out, errs, code := run("-r", "-r", "-d", "2", "-o", "json", q.join)
	if code != 0 {
		t.Errorf("-r on the restarting line: exit %d:\n%s", code, errs)
	}
	checkJoin(t, "via restarting -r", out)
	// -i: the intervals add up to the total.
	out, errs, code = run("-i", "-r", "-i", "2", "-d", "7", "-o", "json", q.join)
	if code != 0 {
		t.Errorf("-i on the restarting line: exit %d:\n%s", code, errs)
	}
	checkViaIntervals(t, out)
	// --cleanup: a run SIGKILLed while it collects, its heartbeat let go
	// stale, is removed. Its setup on this line takes as long as -r's
	// (under emulation on a loaded host, over 2 minutes): it is waited
	// for as long as a run is.
	var errb syncBuffer
	cmd := exec.Command(bin, viaArgs("--via", via, "--via-trace", filepath.Join(dir, "via-restart-"+kname+"-killed.trace"), "-r", "-o", "json", q.join)...)
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Until it collects, or ends (a run that failed is not waited for
	// until the bound: once it took 8 minutes of the suite).
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	waiting := true
	for deadline := time.Now().Add(restartRunBound); waiting && !strings.Contains(errb.String(), "collecting") && time.Now().Before(deadline); {
		select {
		case <-exited:
			waiting = false
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	if !strings.Contains(errb.String(), "collecting") {
		t.Errorf("the run to kill on the restarting line never collected:\n%s", errb.String())
	}
	time.Sleep(11 * time.Second)
	out, errs, code = run("--cleanup", "--cleanup")
	if code != 0 || !strings.Contains(out, "_beat") {
		t.Errorf("--cleanup on the restarting line: exit %d:\n%s%s", code, out, errs)
	}
	if syncs == 0 {
		t.Errorf("no run met a restarted shell: the line did not restart (the check proves nothing)")
	}

	viaRestore(t, via, dev)
	restored = true
	if after := gstate(); after != before {
		t.Errorf("the tracefs after the restarting line's runs and --cleanup:\n%s\nbefore:\n%s", after, before)
	}
}

// viaRestore puts the guest's line back: the killer stopped first (the
// line then keeps its shell), then the loop replaced by the guest's own
// (a shell reading the port as its script), until a shell with the port
// as its input answers.
func viaRestore(t *testing.T, via, dev string) {
	for deadline := time.Now().Add(time.Minute); ; {
		out, _ := viaSession("exec "+via, "kill $(cat /tmp/via-killer) 2>/dev/null; kill -0 $(cat /tmp/via-killer) 2>/dev/null || echo killer-gone-$((6*7))", 5*time.Second)
		if strings.Contains(out, "killer-gone-42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stopping the line's killer: %q", out)
		}
	}
	// A shell of the loop answers first: with the killer stopped, the
	// line then keeps its shell, and the line that puts it back reaches
	// one whole (not the moment between two shells, whose bytes are
	// dropped).
	for deadline := time.Now().Add(time.Minute); ; {
		out, _ := viaSession("exec "+via, "echo loop-$((6*7))", 5*time.Second)
		if strings.Contains(out, "loop-42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarting line, its killer stopped, never answered: %q", out)
		}
	}
	back := fmt.Sprintf("kill $(cat /tmp/via-loop); ( sleep 1; exec 3<>%[1]s; while :; do sh %[1]s <&3 >&3 2>&3; done ) </dev/null >/dev/null 2>&1 & kill $(cat /tmp/via-cat); exit\n", dev)
	if out, err := viaSessionRaw(via, back); err != nil {
		t.Fatalf("putting the line back: %v: %s", err, out)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		out, _ := viaSession("exec "+via, "echo fd0=$(readlink /proc/$$/fd/0) back-$((6*7))", 5*time.Second)
		if strings.Contains(out, "fd0="+dev+" back-42") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the line put back never answered with its own shell: %q", out)
		}
	}
}
