package vm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The via channel is a second line between host and guest, beside the
// console, with a shell on its guest end: what `sqlhist --via` drives in
// a target that has only a shell. On the host it is a unix socket that
// qemu listens on (Guest.Via); a client that connects talks to the
// shell's stdin and reads its stdout and stderr (one stream).
//
// Like a serial line, it carries no end of file either way: when the
// host's client goes away the guest's shell keeps running and waits for
// more input, and the next client talks to that same shell. A shell that
// exits (exit sent to it) is started again at once on the same open line.
//
//   - x86-64: a second 16550 UART (the pc machine's second ISA port,
//     0x2f8), /dev/ttyS1 in the guest.
//
//   - arm64 (and armhf, untested): qemu's virt board has one PL011 (the
//     console), so a PCI 16550 (qemu's pci-serial), /dev/ttyS0 in the
//     guest; Debian's arm64 kernel has 8250_pci and the generic PCI host
//     built in, so no module is needed. A virtio console (virtconsole,
//     /dev/hvc0, with virtio, virtio_ring, virtio_mmio and virtio_console
//     loaded from the kernel package) worked too, but qemu drops what a
//     console port writes when the socket is full (virtio-console.c: "we
//     should be queuing data … rather than silently dropping"): 70 KB of
//     400 KB sent by the guest were lost with two guests on two cores. A
//     16550 waits for the socket instead: nothing is lost, either way,
//     with the host slow or the guest's shell busy (160 KB sent to a
//     sleeping shell arrived whole).
//
//   - riscv64: virt's one 16550 is the console too, so a PCI 16550 as on
//     arm64, /dev/ttyS1 in the guest (the console's is ttyS0); Debian's
//     riscv64 kernel has 8250_pci and the ECAM PCI host built in. The
//     shell answers about 7 s after qemu starts.
//
// All run the same 8250 driver, built into the Debian kernels.
// The guest end is in raw mode without echo and ignores the modem lines
// (stty raw -echo clocal -hupcl), so nothing sent is echoed back, output
// line ends are LF, not CRLF, and a host going away hangs nothing up. The
// shell is busybox sh reading the line as its script (sh /dev/ttyS1): not
// interactive, so no prompt and no line editing (ash is interactive on a
// tty stdin, +i notwithstanding), but like any non-interactive shell it
// exits on a syntax error, losing what it had read ahead; /init's loop
// starts another. Its stdin, stdout and stderr are the line too. The
// line stays open in the loop between shells, so what is sent while no
// shell runs waits in the tty's buffer for the next one.
type viaSetup struct {
	qemu   []string // qemu's arguments for the channel
	device string   // the guest's end
	init   string   // /init's lines that start the shell loop
}

// viaChannel returns the channel of a Debian architecture, its socket at
// sock on the host.
func viaChannel(arch, sock string) (viaSetup, error) {
	chardev := "socket,id=via,path=" + strings.ReplaceAll(sock, ",", ",,") + ",server=on,wait=off"
	var v viaSetup
	switch arch {
	case "", "amd64":
		// Any -serial or isa-serial device drops -nographic's default
		// console (mon:stdio), so both ports are named.
		v = viaSetup{device: "/dev/ttyS1",
			qemu: []string{"-chardev", chardev, "-serial", "mon:stdio", "-serial", "chardev:via"}}
	case "arm64", "armhf":
		v = viaSetup{device: "/dev/ttyS0",
			qemu: []string{"-chardev", chardev, "-device", "pci-serial,chardev=via"}}
	case "riscv64":
		// virt's one 16550 is the console (ttyS0): the PCI 16550 is
		// the next port.
		v = viaSetup{device: "/dev/ttyS1",
			qemu: []string{"-chardev", chardev, "-device", "pci-serial,chardev=via"}}
	default:
		return v, fmt.Errorf("no via channel for architecture %q", arch)
	}
	d := v.device
	v.init = fmt.Sprintf(`# The via channel: a shell on %[1]s, started again whenever it exits.
i=0
while [ ! -c %[1]s ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
[ -c %[1]s ] && ( exec 3<>%[1]s
  stty -F %[1]s raw -echo clocal -hupcl
  while :; do sh %[1]s <&3 >&3 2>&3; done ) </dev/null >/dev/null 2>&1 &
`, d)
	return v, nil
}

// ViaDone is the file whose creation in the guest (through the via
// shell: touch /tmp/via-done) ends ViaWaitScript.
const ViaDone = "/tmp/via-done"

// ViaWaitScript is a guest script that waits until ViaDone exists, at
// most bound, and fails when the bound passed first. Meanwhile it reads
// the console: a line viaDumpLine (ViaGuest.Dump) makes it print, on the
// console, what the guest's processes are doing (each one's state, wait
// channel and kernel stack), the serial lines' counters and the tracefs
// instances: how a via shell that stopped answering is seen from inside.
func ViaWaitScript(bound time.Duration) string {
	n := max(int(bound/(200*time.Millisecond)), 1)
	return fmt.Sprintf(`via_dump() {
  echo "== %[4]s at $(cut -d' ' -f1 /proc/uptime) s"
  for d in /proc/[0-9]*; do
    c=$(tr '\0' ' ' < $d/cmdline 2>/dev/null)
    [ -n "$c" ] || continue
    echo "-- ${d#/proc/} $(sed -n 's/^State:[[:space:]]*//p' $d/status 2>/dev/null) wchan $(cat $d/wchan 2>/dev/null): $c" | cut -c1-240
    [ -r $d/stack ] && head -8 $d/stack | sed 's/^/     /'
  done
  cat /proc/tty/driver/serial 2>/dev/null
  echo "instances: $(ls /sys/kernel/tracing/instances 2>/dev/null | tr '\n' ' ')"
  echo "== end of %[4]s"
}
con=; { : < /dev/console; } 2>/dev/null && con=1
i=0
while [ ! -e %[1]s ] && [ $i -lt %[2]d ]; do
  if [ -z "$con" ]; then sleep 0.2
  elif read -t 0.2 l < /dev/console; then
    case $l in *%[4]s*) via_dump > /dev/console 2>&1;; esac
  fi
  i=$((i+1))
done
if [ ! -e %[1]s ]; then echo "via: nobody created %[1]s in %[3]v"; exit 1; fi
`, ViaDone, n, bound, viaDumpLine)
}

// viaDumpLine is what ViaGuest.Dump sends on the console.
const viaDumpLine = "sqlhist-via-dump"

// Dump asks the guest's wait script (ViaWaitScript) to print on the
// console what its processes are doing; the console is in the Result
// Stop returns (ConsoleDumps picks the dumps out). It does not wait.
func (v *ViaGuest) Dump() error {
	if v.console == nil {
		return fmt.Errorf("the guest's console takes no input")
	}
	_, err := v.console.Write([]byte("\n" + viaDumpLine + "\n"))
	return err
}

// ConsoleDumps returns the dumps Dump made, from a guest's console.
func ConsoleDumps(console string) string {
	var b strings.Builder
	for {
		i := strings.Index(console, "== "+viaDumpLine+" at ")
		if i < 0 {
			return b.String()
		}
		console = console[i:]
		j := strings.Index(console, "== end of "+viaDumpLine)
		if j < 0 {
			b.WriteString(console)
			return b.String()
		}
		j += len("== end of " + viaDumpLine)
		b.WriteString(console[:j] + "\n")
		console = console[j:]
	}
}

// ViaGuest is a guest started by StartVia. It runs until Stop (or its
// context or its Timeout ends it); meanwhile its shell answers through
// the unix socket Socket.
type ViaGuest struct {
	Kernel  Kernel        // as fetched: Release is uname -r
	Socket  string        // the host's unix socket to the guest's shell
	Device  string        // the guest's end of the channel (/dev/ttyS1, /dev/hvc0)
	Started time.Time     // when qemu started
	Ready   time.Duration // from qemu's start to the first answer of the shell through Socket

	dir     string
	console *os.File // the write end of qemu's stdin: the guest's console input
	cancel  context.CancelFunc
	done    chan struct{}
	res     Result
	err     error
	once    sync.Once
}

// StartVia boots kernel k like Run, with a via channel (see viaChannel)
// whose host end is the unix socket ViaGuest.Socket, and returns once the
// shell on it has answered (an echo through the socket), at most 5 min
// after qemu started; by then whatever earlier probes were sent has been
// answered too, so the next client starts on a quiet line. When g.Script
// is empty the guest runs ViaWaitScript: it stays up until ViaDone exists
// (Stop makes it) or g.Timeout less a minute passed; g.Timeout (the whole
// boot) defaults to 21 minutes here. Cancelling ctx kills qemu.
//
// A boot that failed, or a shell that never answered, is an *InfraError;
// the guest is then already gone.
func StartVia(ctx context.Context, k Kernel, g Guest) (*ViaGuest, error) {
	if g.Timeout == 0 {
		g.Timeout = 21 * time.Minute
	}
	if g.Script == "" {
		g.Script = ViaWaitScript(max(g.Timeout-time.Minute, 30*time.Second))
	}
	dir, err := os.MkdirTemp("", "sqlhist-via-")
	if err != nil {
		return nil, &InfraError{Kernel: k.Name, Reason: "temp dir", Err: err}
	}
	v := &ViaGuest{Kernel: k, Socket: filepath.Join(dir, "via.sock"), dir: dir, done: make(chan struct{})}
	setup, err := viaChannel(k.DebArch(), v.Socket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, &InfraError{Kernel: k.Name, Reason: "via channel", Err: err}
	}
	v.Device = setup.device
	g.Via = v.Socket
	if r, w, err := os.Pipe(); err == nil {
		g.stdin, v.console = r, w
	}
	started := make(chan time.Time, 1)
	g.onStart = func(t time.Time) { started <- t }
	rctx, cancel := context.WithCancel(ctx)
	v.cancel = cancel
	go func() {
		defer close(v.done)
		v.res, v.err = Run(rctx, k, g)
		if g.stdin != nil {
			g.stdin.Close()
		}
	}()
	fail := func(reason string, err error) (*ViaGuest, error) {
		cancel()
		<-v.done
		os.RemoveAll(dir)
		if v.err != nil {
			return nil, v.err
		}
		return nil, &InfraError{Kernel: k.Name, Reason: reason, Console: v.res.Console, Err: err}
	}
	select {
	case v.Started = <-started:
	case <-v.done:
		return fail("the guest ended before qemu started", nil)
	}
	if err := v.probe(rctx, 5*time.Minute); err != nil {
		return fail("the via shell never answered", err)
	}
	v.Ready = time.Since(v.Started)
	if kk, err := Fetch(ctx, k); err == nil {
		v.Kernel = kk // Run fetched it: this reads the cache's record
	}
	Logf("vm: %s: via shell on %s answers %v after qemu started", k.Name, v.Device, v.Ready.Round(time.Millisecond))
	return v, nil
}

// probe connects to the socket and sends an echo every second until the
// shell answers, then a last one and waits for its answer, so that every
// earlier probe has been answered too (the shell reads in order).
// The answers are computed by the shell ($((6*7))), so neither an echo of
// the input nor a probe cut by a starting line fakes them.
func (v *ViaGuest) probe(ctx context.Context, bound time.Duration) error {
	nb := make([]byte, 8)
	rand.Read(nb)
	nonce := hex.EncodeToString(nb)
	deadline := time.Now().Add(bound)
	var conn net.Conn
	for conn == nil {
		c, err := net.Dial("unix", v.Socket)
		switch {
		case err == nil:
			conn = c
		case time.Now().After(deadline):
			return err
		default:
			select {
			case <-v.done:
				return fmt.Errorf("the guest ended")
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	defer conn.Close()
	var mu sync.Mutex
	var got bytes.Buffer
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := conn.Read(b)
			mu.Lock()
			got.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	has := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Contains(got.Bytes(), []byte(s))
	}
	wait := func(answer string, every time.Duration, send string) error {
		next := time.Now()
		for !has(answer) {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("no %q within %v; the line said %q", answer, bound, lastBytes(got.String(), 300))
			}
			if !next.After(time.Now()) {
				if _, err := conn.Write([]byte(send)); err != nil {
					return err
				}
				next = time.Now().Add(every)
			}
			select {
			case <-v.done:
				return fmt.Errorf("the guest ended")
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	}
	if err := wait("via-ready-42-"+nonce, time.Second, "echo via-ready-$((6*7))-"+nonce+"\n"); err != nil {
		return err
	}
	return wait("via-sync-42-"+nonce, bound, "echo via-sync-$((6*7))-"+nonce+"\n")
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Done is closed when the guest has ended (Stop, its context, its
// Timeout, or a crash).
func (v *ViaGuest) Done() <-chan struct{} { return v.done }

// Stop ends the guest: it creates ViaDone through the via shell, waits
// (at most 30 s) for the guest script to end and qemu to exit, kills qemu
// when it did not, and returns what Run returned. The socket's directory
// is removed. Stop may be called more than once.
func (v *ViaGuest) Stop() (Result, error) {
	v.once.Do(func() {
		select {
		case <-v.done:
		default:
			if c, err := net.Dial("unix", v.Socket); err == nil {
				c.Write([]byte("\ntouch " + ViaDone + "\n"))
				// Half-close, and wait for qemu to close: on a full
				// close it would drop what it had not yet read.
				c.(*net.UnixConn).CloseWrite()
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.Copy(io.Discard, c)
				c.Close()
			}
			select {
			case <-v.done:
			case <-time.After(30 * time.Second):
				Logf("vm: %s: the guest did not stop within 30 s of %s; killing qemu", v.Kernel.Name, ViaDone)
			}
		}
		v.cancel()
		<-v.done
		if v.console != nil {
			v.console.Close()
		}
		os.RemoveAll(v.dir)
	})
	return v.res, v.err
}
