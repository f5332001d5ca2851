package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/emit"
)

// The --via guests: kernels booted with no sqlhist inside, whose shell the
// host reaches only through a second channel (vm.StartVia: a serial port
// on x86-64, a virtio console on arm), with tools/sockcat as the --via
// command.

// viaKernels are the kernels TestVia boots: those of $SQLHIST_KERNELS
// that are not built from source (their configs have no virtio modules),
// else x86-64 6.1 and arm64 6.1.
func viaKernels() []string {
	if os.Getenv("SQLHIST_KERNELS") == "" {
		return []string{"6.1", "6.1-arm64"}
	}
	var out []string
	for _, k := range kernelNames() {
		if kk, err := vm.LookupKernel(k); err == nil && !kk.Built() {
			out = append(out, k)
		}
	}
	return out
}

// sockcat builds tools/sockcat for this machine once per test process,
// into a directory removed when t (the caller's top test) ends.
func sockcat(t *testing.T) string {
	t.Helper()
	sockcatOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sqlhist-sockcat-")
		if err != nil {
			sockcatErr = err
			return
		}
		bin := filepath.Join(dir, "sockcat")
		cmd := exec.Command("go", "build", "-o", bin, "../tools/sockcat")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			sockcatErr = fmt.Errorf("building tools/sockcat: %v\n%s", err, out)
			return
		}
		sockcatBin = bin
	})
	if sockcatErr != nil {
		t.Fatal(sockcatErr)
	}
	return sockcatBin
}

var (
	sockcatOnce sync.Once
	sockcatBin  string
	sockcatErr  error
)

// viaCommand is the --via command that reaches g's shell.
func viaCommand(t *testing.T, g *vm.ViaGuest) string {
	return emit.Quote(sockcat(t)) + " " + emit.Quote(g.Socket)
}

// viaBoot boots kernel kname with a via channel (vm.StartVia: the guest
// waits for the host until vm.ViaDone exists, 20 min at most) and returns
// once its shell answers. The guest is ended by t's cleanup if the caller
// did not Stop it first; a second Stop returns the same result. A boot
// that fails is INFRASTRUCTURE, never a verdict.
func viaBoot(t *testing.T, kname string) *vm.ViaGuest {
	t.Helper()
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), fetchTimeout)
	k, err = vm.Fetch(fctx, k)
	fcancel()
	if err != nil {
		t.Fatalf("fetching kernel %s (not a test verdict): %v", kname, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	g, err := vm.StartVia(ctx, k, vm.Guest{CPUs: guestCPUs(), CombinedOutput: true})
	if err != nil && vm.IsInfra(err) {
		vm.Logf("via: retrying after: %v", strings.SplitN(err.Error(), "\n", 2)[0])
		g, err = vm.StartVia(ctx, k, vm.Guest{CPUs: guestCPUs(), CombinedOutput: true})
	}
	if err != nil {
		cancel()
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	t.Cleanup(func() {
		g.Stop()
		cancel()
	})
	return g
}

// viaShell runs script in the shell at the end of viaCmd (through sh -c,
// as sqlhist --via does) and returns what it printed, up to a marker the
// shell prints after it; then it closes the command's stdin and waits for
// it to exit. bound limits the whole.
func viaShell(t *testing.T, viaCmd, script string, bound time.Duration) string {
	t.Helper()
	out, err := viaSession(viaCmd, script, bound)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// viaResync ends whatever a cut session left unfinished in the line's
// shell, as sqlhist's greeting does (live/remote's resync): a line
// continuation, an open single quote, an open double quote (sqlhist sends
// a newline of a command as "<newline>"), each closed by a comment line's
// quote, then blank lines that run what is left (which sqlhist's request
// function rejects). On a shell that was reading a new line, they are
// blank lines and comments.
const viaResync = "\n\n# '\n# \"\n\n"

func viaSession(viaCmd, script string, bound time.Duration) (string, error) {
	nonce := fmt.Sprintf("%x", time.Now().UnixNano())
	begin, end := "via-begin-"+nonce+"-42\n", "via-end-"+nonce+"-42\n"
	cmd := exec.Command("sh", "-c", viaCmd)
	// Its own process group, all of it killed at the bound: a transport
	// the shell forked (dash runs `sockcat SOCK` as a child) would else
	// outlive it, holding the line's one connection, and nobody after
	// it would be answered (CI, 2026-12-05: a check that timed out, then
	// the fleet's and the exporter's runs on that guest).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		exited <- err
	}()
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			b.Write(buf[:n])
			if i := bytes.Index(b.Bytes(), []byte(end)); i >= 0 {
				got <- b.String()[:i]
				io.Copy(io.Discard, pr)
				return
			}
			if err != nil {
				got <- "\x00" + b.String()
				return
			}
		}
	}()
	// The line's shell may be in the middle of a request a cut session
	// left (sqlhist's run whose transport was killed): viaResync ends it,
	// and what it ran is before the begin marker, not in the answer.
	fmt.Fprintf(stdin, "%secho via-begin-%s-$((6*7))\n%s\necho via-end-%s-$((6*7))\n", viaResync, nonce, strings.TrimRight(script, "\n"), nonce)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var out string
	select {
	case out = <-got:
	case <-timer.C:
		kill()
		return "", fmt.Errorf("no answer through %q within %v", viaCmd, bound)
	}
	if rest, cut := strings.CutPrefix(out, "\x00"); cut {
		kill()
		return "", fmt.Errorf("%q ended before the shell answered (stderr %q); it printed %q", viaCmd, stderr.String(), rest)
	}
	if i := strings.Index(out, begin); i >= 0 {
		out = out[i+len(begin):]
	} else {
		kill()
		return "", fmt.Errorf("the answer through %q has no begin marker: %q", viaCmd, out)
	}
	stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			return out, fmt.Errorf("%q: %v (stderr %q)", viaCmd, err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		kill()
		return out, fmt.Errorf("%q did not exit within 10 s of its stdin's end", viaCmd)
	}
	return out, nil
}

// viaTiming is one kernel's TestVia timings, printed at the end.
type viaTiming struct {
	kernel, release     string
	ready, boot, total  time.Duration
	sessions, callbacks time.Duration
	down, up            float64 // KB/s
	rtt                 time.Duration
}

// viaRates sends 64 KB of base64 from the guest and 32 KB to it through
// viaCmd, checks both with md5sum, and returns the rates in KB/s.
func viaRates(t *testing.T, viaCmd string) (down, up float64) {
	t.Helper()
	t0 := time.Now()
	out := viaShell(t, viaCmd, "head -c 49152 /dev/urandom | base64 > /tmp/via-rate; cat /tmp/via-rate; md5sum < /tmp/via-rate; rm /tmp/via-rate", 5*time.Minute)
	d := time.Since(t0)
	i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
	data, sum := out[:i+1], strings.Fields(out[i+1:])
	if len(data) < 65536 || len(sum) == 0 || fmt.Sprintf("%x", md5.Sum([]byte(data))) != sum[0] {
		t.Errorf("64 KB from the guest: got %d bytes, md5sum line %q", len(data), out[i+1:])
	}
	down = float64(len(data)) / 1024 / d.Seconds()

	b := make([]byte, 24576)
	rand.Read(b)
	var text strings.Builder
	for e := base64.StdEncoding.EncodeToString(b); e != ""; {
		n := min(76, len(e))
		text.WriteString(e[:n] + "\n")
		e = e[n:]
	}
	t0 = time.Now()
	out = viaShell(t, viaCmd, "md5sum <<'EOF'\n"+text.String()+"EOF", 5*time.Minute)
	d = time.Since(t0)
	if want := fmt.Sprintf("%x", md5.Sum([]byte(text.String()))); !strings.HasPrefix(out, want) {
		t.Errorf("32 KB to the guest: md5sum says %q, want %s", out, want)
	}
	return down, float64(text.Len()) / 1024 / d.Seconds()
}

// viaRoundTrip runs n short commands one after another in one session of
// viaCmd, each sent when the previous one answered, and returns the mean
// time from sending one to its answer.
func viaRoundTrip(t *testing.T, viaCmd string, n int) time.Duration {
	t.Helper()
	cmd := exec.Command("sh", "-c", viaCmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed whole, as viaSession's
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	timer := time.AfterFunc(2*time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	r := bufio.NewReader(stdout)
	start := time.Now()
	for i := 0; i < n; i++ {
		fmt.Fprintf(stdin, "echo rt-$((%d+1))\n", i)
		want := fmt.Sprintf("rt-%d\n", i+1)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Errorf("round trip %d: %v", i, err)
				return 0
			}
			if l == want {
				break
			}
		}
	}
	return time.Since(start) / time.Duration(n)
}

// viaJob boots kname with a via channel and no sqlhist, checks the channel
// with plain shell through sockcat (an answer; no echo, no CR; not
// interactive; nothing of sqlhist in the guest; tracefs; a second session
// and a session cut mid-command reach the same shell), runs check with the
// --via command while the guest is up, and ends the guest, which must end
// cleanly.
func viaJob(t *testing.T, kname string, check func(t *testing.T, viaCmd string)) viaTiming {
	start := time.Now()
	g := viaBoot(t, kname)
	tm := viaTiming{kernel: kname, release: g.Kernel.Release, ready: g.Ready}
	via := viaCommand(t, g)
	t.Logf("%s: the via shell (%s) answered %v after qemu started; --via %s", kname, g.Device, g.Ready.Round(time.Millisecond), via)

	s0 := time.Now()
	first := viaShell(t, via, `echo hello; uname -r
echo pid=$$ flags=$-
echo fd0=$(readlink /proc/$$/fd/0)
command -v sqlhist || echo no-sqlhist
echo find:; find / -xdev -name '*sqlhist*'
echo ls:; ls /
test -e /sys/kernel/tracing/trace && test -d /sys/kernel/tracing/events/sched && echo tracefs-ok`, time.Minute)
	lines := strings.Split(first, "\n")
	if len(lines) < 2 || lines[0] != "hello" || lines[1] != g.Kernel.Release {
		t.Errorf("echo hello; uname -r: want hello and %q, got:\n%s", g.Kernel.Release, first)
	}
	if strings.Contains(first, "\r") {
		t.Errorf("the channel turns line ends into CRLF: %q", first)
	}
	if strings.Contains(first, "echo hello") {
		t.Errorf("the channel echoes what the host sends:\n%s", first)
	}
	pid, flags := "", ""
	for _, l := range lines {
		if w := strings.Fields(l); len(w) == 2 && strings.HasPrefix(w[0], "pid=") && strings.HasPrefix(w[1], "flags=") {
			pid, flags = w[0], strings.TrimPrefix(w[1], "flags=")
		}
	}
	if pid == "" || strings.Contains(flags, "i") {
		t.Errorf("want a pid and a non-interactive shell (no i in $-), got pid %q flags %q", pid, flags)
	}
	wantLines(t, first, "fd0="+g.Device, "no-sqlhist", "tracefs-ok")
	find, ls, _ := strings.Cut(first[strings.Index(first, "find:\n")+len("find:\n"):], "ls:\n")
	if strings.TrimSpace(find) != "" || strings.Contains(ls, "sqlhist") || !strings.Contains(ls, "work") {
		t.Errorf("the guest must have nothing of sqlhist: find printed %q, ls / printed %q", find, ls)
	}

	// A second session (the first one's sockcat has exited) reaches the
	// same shell.
	second := viaShell(t, via, "echo pid=$$ second=$((2+3))", time.Minute)
	if second != pid+" second=5\n" {
		t.Errorf("second session: want %q (the same shell), got %q", pid+" second=5\n", second)
	}

	// A session cut while its command runs: the shell finishes it, and
	// the next session gets that command's late output first, then its
	// own answers (so a transport must frame what it reads).
	cut := exec.Command("sh", "-c", via)
	cut.Stdin = strings.NewReader("sleep 2; echo late-output\n")
	if out, err := cut.CombinedOutput(); err != nil {
		t.Errorf("a session whose stdin ends at once: %v %q", err, out)
	}
	third := viaShell(t, via, "echo pid=$$ third", time.Minute)
	if third != "late-output\n"+pid+" third\n" {
		t.Errorf("after a cut session: want the cut command's late output, then %q; got %q", pid+" third\n", third)
	}

	// A session that ends the shell (exit): the guest starts another on
	// the same line, and the next session reaches that one. (What comes
	// in before the old shell has exited may be read, and lost, by it:
	// hence the retries.)
	if out, err := exec.Command("sh", "-c", "echo exit | "+via).CombinedOutput(); err != nil {
		t.Errorf("a session sending exit: %v %q", err, out)
	}
	// Asked until a new shell answers (a fixed second's pause was a
	// guess at a loaded guest's pace), for a minute at most; a session
	// whose command the exiting shell swallowed ends after 10 s.
	var fourth string
	for deadline := time.Now().Add(time.Minute); ; {
		out, err := viaSession(via, "echo pid=$$ fourth", 10*time.Second)
		if fourth = out; err == nil && !strings.HasSuffix(out, pid+" fourth\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.HasSuffix(fourth, " fourth\n") || strings.HasSuffix(fourth, pid+" fourth\n") {
		t.Errorf("after exit: want a new shell's %q, got %q", "pid=N fourth", fourth)
	}
	tm.sessions = time.Since(s0)

	// What the line carries: 64 KB from the guest, 32 KB to it (each
	// checked with md5sum), and the round trip of one short command.
	tm.down, tm.up = viaRates(t, via)
	tm.rtt = viaRoundTrip(t, via, 20)
	t.Logf("%s: guest to host %.0f KB/s, host to guest %.0f KB/s, round trip %v", kname, tm.down, tm.up, tm.rtt.Round(100*time.Microsecond))

	if check != nil {
		c0 := time.Now()
		t.Run("via", func(t *testing.T) { check(t, via) })
		tm.callbacks = time.Since(c0)
	}

	res, err := g.Stop()
	if err != nil {
		t.Fatalf("ending the guest: %v", err)
	}
	if res.ExitStatus != 0 {
		t.Errorf("the guest's wait script: exit %d: %s", res.ExitStatus, res.Stdout)
	}
	tm.boot, tm.total = res.BootTime, time.Since(start)
	return tm
}

// TestVia boots each of viaKernels once with a via channel and checks it
// (viaJob); the --via checks of sqlhist itself go in the callback. It
// prints each kernel's time from qemu's start to the channel's first
// answer and the job's total.
func TestVia(t *testing.T) {
	needKernels(t)
	old := vm.Logf
	vm.Logf = t.Logf
	t.Cleanup(func() { vm.Logf = old })
	if err := vm.EnsureHostTools(); err != nil {
		t.Fatal(err)
	}
	sockcat(t)
	kernels := viaKernels()
	if len(kernels) == 0 {
		t.Skip("SQLHIST_KERNELS names no kernel with a via channel")
	}
	var mu sync.Mutex
	var timings []viaTiming
	t.Run("kernels", func(t *testing.T) {
		for _, kname := range kernels {
			t.Run(kname, func(t *testing.T) {
				t.Parallel()
				tm := viaJob(t, kname, nil)
				mu.Lock()
				timings = append(timings, tm)
				mu.Unlock()
			})
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-24s %10s %12s %9s %14s %14s %10s %7s\n", "kernel", "release", "via ready", "script boot", "sessions",
		"guest→host", "host→guest", "round trip", "total")
	for _, tm := range timings {
		fmt.Fprintf(&b, "%-10s %-24s %10v %12v %9v %9.0f KB/s %9.0f KB/s %10v %7v\n", tm.kernel, tm.release,
			tm.ready.Round(100*time.Millisecond), tm.boot.Round(100*time.Millisecond), tm.sessions.Round(100*time.Millisecond),
			tm.down, tm.up, tm.rtt.Round(100*time.Microsecond), tm.total.Round(100*time.Millisecond))
	}
	t.Logf("via guests (%s, %d CPUs on the host):\n%s", runtime.GOARCH, runtime.NumCPU(), b.String())
}
