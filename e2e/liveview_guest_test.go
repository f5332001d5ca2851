package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// liveViewInit is the guest's /init for TestLiveViewGuest: the console
// (ttyS0) sized as the tmux pane, a load of wakeups, then sqlhist -r
// --live of the wakeup JOIN in a session whose controlling terminal is
// the console (so that Ctrl-C there is SIGINT to sqlhist, not to this
// shell), its status, then what the run left in tracefs, between
// markers.
const liveViewInit = `#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing
echo 1 > /proc/sys/kernel/printk
stty -F /dev/ttyS0 rows 32 cols 100
( while :; do /bin/busybox true; sleep 0.01; done ) > /dev/null 2>&1 &
setsid cttyhack /work/sqlhist -r --live -n wakeup 'SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid' 2>/tmp/err
echo "@@status $?"
echo "@@left $(ls /sys/kernel/tracing/instances | wc -l) instances, $(wc -l < /sys/kernel/tracing/dynamic_events) dynamic events"
grep -v '^sqlhist: collecting\|^sqlhist: interrupt' /tmp/err
echo "@@end"
sleep 600
`

// TestLiveViewGuest runs sqlhist -r --live in Debian's 6.1 under qemu,
// its serial console in a tmux pane: the pane's screen is redrawn in
// place (one header, the wakeup JOIN's table and distribution, counts
// that grow), Ctrl-C (sent through qemu to the guest's terminal) ends the
// run with status 0, the last screen stays, and the run left no
// instance and no dynamic event. The last screen is logged (docs/run.md
// shows one). SQLHIST_E2E=1 and tmux (make test-shells) are needed.
func TestLiveViewGuest(t *testing.T) {
	needKernels(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is not installed (Debian package tmux): make test-shells installs it")
	}
	ctx := context.Background()
	if err := vm.EnsureHostTools(); err != nil {
		t.Fatal(err)
	}
	k, err := vm.LookupKernel("6.1")
	if err != nil {
		t.Fatal(err)
	}
	if k, err = vm.Fetch(ctx, k); err != nil {
		t.Fatal(err)
	}
	bb, err := vm.BusyboxFor(ctx, k.Arch)
	if err != nil {
		t.Fatal(err)
	}
	im, err := vm.NewInitramfs(bb)
	if err != nil {
		t.Fatal(err)
	}
	im.Add(vm.File{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")})
	im.Add(vm.File{Path: "/init", Mode: 0o755, Data: []byte(liveViewInit)})
	img, err := im.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.gz")
	if err := os.WriteFile(initrd, img, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	qemu := append([]string{"qemu-system-x86_64"}, vm.QemuArgs...)
	qemu = append(qemu, "-m", "1024", "-smp", "2", "-kernel", k.Vmlinuz, "-initrd", initrd, "-append", vm.KernelCmdline)
	for i, a := range qemu {
		qemu[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	// No status line: the pane is the whole window, 32 rows as the
	// guest's stty says.
	conf := filepath.Join(dir, "tmux.conf")
	os.WriteFile(conf, []byte("set -g status off\n"), 0o644)
	tm("-f", conf, "new-session", "-d", "-x", "100", "-y", "32", "-s", "guest", strings.Join(qemu, " "))
	if h := strings.TrimSpace(tm("display-message", "-p", "-t", "guest", "#{pane_height}")); h != "32" {
		t.Fatalf("the pane has %s rows, not 32", h)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	capture := func() string { return tm("capture-pane", "-p", "-t", "guest") }
	header := "sqlhist --live: "
	var screens []string
	deadline := time.Now().Add(3 * time.Minute)
	for len(screens) < 4 && time.Now().Before(deadline) {
		s := capture()
		if strings.HasPrefix(s, header) && strings.Contains(s, "lat (us):") && (len(screens) == 0 || s != screens[len(screens)-1]) {
			screens = append(screens, s)
		}
		time.Sleep(700 * time.Millisecond)
	}
	if len(screens) < 4 {
		t.Fatalf("%d different screens of the live view in 3 minutes; the pane shows:\n%s", len(screens), capture())
	}
	var prev uint64
	for i, s := range screens {
		var events uint64
		if _, err := fmt.Sscanf(s[strings.Index(s, "events "):], "events %d", &events); err != nil || strings.Count(s, header) != 1 || events < prev {
			t.Errorf("screen %d (events %d after %d, %v):\n%s", i+1, events, prev, err, s)
		}
		prev = events
	}
	t.Logf("a screen while it runs:\n%s", screens[len(screens)-1])
	tm("send-keys", "-t", "guest", "C-c")
	// What follows the last screen (the status, what is left) may
	// scroll its top into the pane's history: read that too.
	var end string
	deadline = time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if end = tm("capture-pane", "-p", "-S", "-200", "-t", "guest"); strings.Contains(end, "@@end") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	last, after, _ := strings.Cut(end, "@@status ")
	last = last[max(strings.LastIndex(last, header), 0):]
	t.Logf("the last screen, and what followed:\n%s@@status %s", last, after)
	if !strings.HasPrefix(after, "0\n") || !strings.Contains(after, "@@left 0 instances, 0 dynamic events") || !strings.Contains(after, "@@end") {
		t.Errorf("after Ctrl-C: not status 0 with nothing left:\n%s", end)
	}
	if !strings.HasPrefix(last, header+"ended after ") || !strings.Contains(last, "synthetic/wakeup") || !strings.Contains(last, "lat (us):") {
		t.Errorf("the last screen does not stay:\n%s", end)
	}
}
