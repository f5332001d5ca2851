package vm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// Guest describes what to run in the VM.
type Guest struct {
	// Script is a shell script run by busybox sh as /work/guest.sh, with
	// /work as the working directory, tracefs mounted at
	// /sys/kernel/tracing ($TRACEFS) and PATH set to busybox's applets.
	Script string
	// Files are added to the initramfs (e.g. a static Go binary built with
	// CGO_ENABLED=0, mode 0755).
	Files []File
	// CombinedOutput sends the script's stderr into Stdout (interleaved as
	// written); otherwise stderr is collected separately into Result.Stderr.
	CombinedOutput bool
	// Collect lists guest paths (files or directories) that are sent back
	// after the script as `tar cz | base64` on the console and returned in
	// Result.Files. Note that tracefs files report size 0, so copy them
	// (cat) to /tmp before collecting them.
	Collect []string
	// Timeout bounds the whole boot; 0 means 5 minutes.
	Timeout time.Duration
	// MemoryMB defaults to 1024; CPUs to 2.
	MemoryMB int
	CPUs     int
	// Cmdline is appended to the kernel command line (after the
	// machine's console and quiet panic=-1), e.g. "bootconfig".
	Cmdline string
	// Initrd, when set, is called with the path of the initrd file
	// (gzip-compressed cpio) once it is written and before qemu starts;
	// it may change the file, e.g. append a bootconfig to it. Its error
	// ends Run (not as an *InfraError).
	Initrd func(path string) error
	// Modules are kernel modules (modprobe's names) that /init loads
	// with insmod, dependencies first, before the script; they come
	// from the kernel's Debian package (see Modules), and built-in ones
	// are skipped.
	Modules []string
	// Via, when set, is the host path of a unix socket (qemu listens on
	// it) joined to a second channel of the guest on which a shell runs
	// in a loop from before the script starts: see StartVia, which also
	// tells when that shell answers.
	Via string
	// QemuArgs are appended to qemu's command line after the machine's
	// own, e.g. "-icount", "shift=0,sleep=off" for instruction-counted
	// guest time (the kernel cost benchmark).
	QemuArgs []string

	onStart func(time.Time) // called when qemu starts
	stdin   *os.File        // qemu's stdin (the console's input); nil: /dev/null
	preinit string          // run by /init before the begin marker
}

// Result is what a boot brought back.
type Result struct {
	Kernel     Kernel
	Stdout     string            // the script's output, between the markers
	Stderr     string            // the script's stderr (empty with CombinedOutput)
	ExitStatus int               // the script's exit status
	Files      map[string][]byte // Collect-ed files, by path without leading "/"
	Console    string            // the raw console log (CRLF turned into LF)
	BootTime   time.Duration     // from starting qemu to the script starting
	Duration   time.Duration     // from starting qemu to qemu exiting
	CPU        time.Duration     // qemu's user and system time: what the guest cost the host
}

// InfraError is a failure of the harness or the VM rather than of what the
// script tested: qemu failed to start, the kernel crashed or hung, the boot
// timed out, or the end marker never came. Callers may retry once and must
// report it as an infrastructure problem, never as a pass.
type InfraError struct {
	Kernel  string
	Reason  string
	Console string // whatever the console printed
	Err     error
}

func (e *InfraError) Error() string {
	msg := fmt.Sprintf("vm infrastructure error (kernel %s): %s", e.Kernel, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if c := lastLines(e.Console, 15); c != "" {
		msg += "\n--- console (last lines) ---\n" + c
	}
	return msg
}

func (e *InfraError) Unwrap() error { return e.Err }

// IsInfra reports whether err is (or wraps) an *InfraError.
func IsInfra(err error) bool {
	var ie *InfraError
	return errors.As(err, &ie)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// QemuArgs are the machine flags: TCG (KVM is unreliable here), a Skylake
// CPU without cx16 (with -cpu max 6.12 double-faults now and then).
//
// TCG runs single-threaded: with one host thread per vCPU (the default on
// x86), Debian bookworm's QEMU 7.2 crashed a 7.2 guest twice in a row in
// ttwu_do_activate on a jump-label NOP while tracepoints were being switched
// on and off — the translation race fixed in QEMU 8.1 ("accel/tcg: Always
// lock pages before translation"). The guest still has two CPUs.
var QemuArgs = []string{"-accel", "tcg,thread=single", "-cpu", "Skylake-Client-v4,-cx16", "-nographic", "-no-reboot"}

// KernelCmdline is the kernel command line (of x86-64; see Machine).
//
// mitigations=off: the Skylake model above tells the guest it is open to
// Meltdown, so the kernel isolates its page tables (PTI) and switches
// them on every system call and interrupt, and under TCG each switch
// flushes qemu's software TLB. In a 6.1 guest, 200,000 one-byte reads
// and writes of dd took 5.54 s with PTI and 0.37 s without; the whole
// boot and script of a short check, 13.5 s and 8 s. Nothing the suite
// proves about tracefs or BPF depends on it (the BPF verifier's Spectre
// hardening is off for root either way). The arm64, armhf and riscv64
// guests gain nothing from it (measured alike) and keep their defaults;
// the benches (make bench-kernel, bench-run, TestAwkKeepsUp) put the
// mitigations back (CostCmdline), so that their figures stay those of a
// stock kernel.
const KernelCmdline = "console=ttyS0 quiet panic=-1 mitigations=off"

// CostCmdline, appended to the command line, restores the kernel's
// default mitigations where KernelCmdline turned them off (the later
// mitigations= wins).
const CostCmdline = "mitigations=auto"

// Machine is how qemu runs a kernel of one architecture.
type Machine struct {
	Qemu    string   // qemu-system-x86_64, qemu-system-aarch64, qemu-system-arm, qemu-system-riscv64
	Args    []string // the machine flags
	Cmdline string   // the kernel command line (its console)
	// Package is the Debian package that has Qemu when EnsureHostTools
	// does not install it (see EnsureMachine).
	Package string
}

// MachineOf returns the qemu machine of a Debian architecture.
//
// arm64: qemu's virt board with -cpu max; pointer authentication emulated
// the architected way (QARMA) makes booting three times slower than the
// implementation-defined algorithm, pauth-impdef=on. armhf: virt with a
// Cortex-A15 (the armmp-lpae kernels need LPAE); qemu makes the device
// tree. The PL011 UART is ttyAMA0. Both keep TCG single-threaded as on
// x86-64 (multi-threaded TCG booted no faster here). riscv64: virt with
// qemu's OpenSBI (-bios default, from qemu-system-data) and its default
// CPU, rv64 (qemu 7.2 has no "max" there); the UART is a 16550, ttyS0.
// TCG single-threaded too: Debian's 6.12 boots to the script in 3-3.5 s.
func MachineOf(arch string) (Machine, error) {
	switch arch {
	case "", "amd64":
		return Machine{Qemu: "qemu-system-x86_64", Args: QemuArgs, Cmdline: KernelCmdline}, nil
	case "arm64":
		return Machine{Qemu: "qemu-system-aarch64", Cmdline: "console=ttyAMA0 quiet panic=-1",
			Args: []string{"-M", "virt", "-accel", "tcg,thread=single", "-cpu", "max,pauth-impdef=on", "-nographic", "-no-reboot"}}, nil
	case "armhf":
		return Machine{Qemu: "qemu-system-arm", Cmdline: "console=ttyAMA0 quiet panic=-1",
			Args: []string{"-M", "virt", "-accel", "tcg,thread=multi", "-cpu", "cortex-a15", "-nographic", "-no-reboot"}}, nil
	case "riscv64":
		return Machine{Qemu: "qemu-system-riscv64", Package: "qemu-system-misc", Cmdline: "console=ttyS0 quiet panic=-1",
			Args: []string{"-M", "virt", "-bios", "default", "-accel", "tcg,thread=single", "-nographic", "-no-reboot"}}, nil
	}
	return Machine{}, fmt.Errorf("no qemu machine for architecture %q", arch)
}

func initScript(nonce string, g Guest) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TRACEFS=/sys/kernel/tracing
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
# Keep kernel messages off the console while the script runs (they stay in dmesg).
echo 1 > /proc/sys/kernel/printk
hostname guest
N=%s
cd /work
`, nonce)
	b.WriteString(g.preinit)
	b.WriteString(`echo "@@SQLHIST-BEGIN-$N@@"
`)
	if g.CombinedOutput {
		b.WriteString("/bin/sh /work/guest.sh </dev/null 2>&1\n")
	} else {
		b.WriteString("/bin/sh /work/guest.sh </dev/null 2>/tmp/.guest-stderr\n")
	}
	b.WriteString(`rc=$?
echo "@@SQLHIST-END-$N status=$rc@@"
`)
	if !g.CombinedOutput {
		b.WriteString(`echo "@@SQLHIST-STDERR-$N@@"
cat /tmp/.guest-stderr
echo "@@SQLHIST-STDERR-END-$N@@"
`)
	}
	if len(g.Collect) > 0 {
		var paths []string
		for _, p := range g.Collect {
			paths = append(paths, emit.Quote(strings.TrimPrefix(filepathClean(p), "/")))
		}
		fmt.Fprintf(&b, `echo "@@SQLHIST-FILES-$N@@"
tar -cz -C / %s | base64
echo "@@SQLHIST-FILES-END-$N@@"
`, strings.Join(paths, " "))
	}
	// poweroff -f drops what the console has not sent yet (a riscv64
	// guest lost its DONE line so, the kernel's "Power down" after its
	// END line): stty sets the console's modes again, with TCSADRAIN,
	// which returns once everything written to it is out.
	b.WriteString(`echo "@@SQLHIST-DONE-$N@@"
stty -F /dev/console "$(stty -F /dev/console -g)" 2>/dev/null
poweroff -f
`)
	return b.String()
}

func filepathClean(p string) string { return filepath.Clean("/" + p) }

// Run boots kernel k (fetching it first if needed) with an initramfs holding
// busybox, the guest's files and script, and returns the script's output and
// exit status. A non-zero exit status is not an error. Failures of the VM
// itself are returned as *InfraError.
func Run(ctx context.Context, k Kernel, g Guest) (Result, error) {
	if err := EnsureHostTools(); err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "host tools", Err: err}
	}
	mach, err := MachineOf(k.Arch)
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "machine", Err: err}
	}
	if err := EnsureMachine(mach); err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "host tools", Err: err}
	}
	k, err = Fetch(ctx, k)
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "fetching kernel", Err: err}
	}
	bb, err := BusyboxFor(ctx, k.Arch)
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "busybox", Err: err}
	}
	nonceb := make([]byte, 8)
	rand.Read(nonceb)
	nonce := hex.EncodeToString(nonceb)

	im, err := NewInitramfs(bb)
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "initramfs", Err: err}
	}
	for _, f := range g.Files {
		if err := im.Add(f); err != nil {
			return Result{}, err
		}
	}
	im.Add(File{Path: "/work/guest.sh", Mode: 0o755, Data: []byte(g.Script)})
	var viaArgs []string
	viaInit := ""
	if g.Via != "" {
		v, err := viaChannel(k.DebArch(), g.Via)
		if err != nil {
			return Result{}, &InfraError{Kernel: k.Name, Reason: "via channel", Err: err}
		}
		viaArgs, viaInit = v.qemu, v.init
	}
	if len(g.Modules) > 0 {
		files, err := Modules(ctx, k, g.Modules...)
		if err != nil {
			return Result{}, &InfraError{Kernel: k.Name, Reason: "kernel modules", Err: err}
		}
		for _, f := range files {
			im.Add(f)
			g.preinit += "insmod " + emit.Quote(f.Path) + "\n"
		}
	}
	g.preinit += viaInit
	im.Add(File{Path: "/init", Mode: 0o755, Data: []byte(initScript(nonce, g))})
	img, err := im.Bytes()
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "initramfs", Err: err}
	}
	tmp, err := os.MkdirTemp("", "sqlhist-vm-")
	if err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "temp dir", Err: err}
	}
	defer os.RemoveAll(tmp)
	initrd := filepath.Join(tmp, "initrd.gz")
	if err := os.WriteFile(initrd, img, 0o644); err != nil {
		return Result{}, &InfraError{Kernel: k.Name, Reason: "initramfs", Err: err}
	}
	if g.Initrd != nil {
		if err := g.Initrd(initrd); err != nil {
			return Result{Kernel: k}, fmt.Errorf("kernel %s: the guest's initrd hook: %w", k.Name, err)
		}
	}
	cmdline := mach.Cmdline
	if c := strings.TrimSpace(g.Cmdline); c != "" {
		cmdline += " " + c
	}

	timeout := g.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	mem, cpus := g.MemoryMB, g.CPUs
	if mem == 0 {
		mem = 1024
	}
	if cpus == 0 {
		cpus = 2
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append([]string{}, mach.Args...),
		"-m", fmt.Sprint(mem), "-smp", fmt.Sprint(cpus),
		"-kernel", k.Vmlinuz, "-initrd", initrd, "-append", cmdline)
	args = append(args, viaArgs...)
	args = append(args, g.QemuArgs...)
	cmd := exec.CommandContext(cctx, mach.Qemu, args...)
	if g.stdin != nil {
		cmd.Stdin = g.stdin
	}
	cmd.WaitDelay = 5 * time.Second
	con := &consoleWriter{begin: []byte(fmt.Sprintf(markBegin, nonce))}
	cmd.Stdout = con
	cmd.Stderr = con
	start := time.Now()
	con.start = start
	Logf("vm: booting %s (%s)", k.Name, k.Release)
	var runErr error
	if g.onStart == nil {
		runErr = cmd.Run()
	} else if runErr = cmd.Start(); runErr == nil {
		g.onStart(start)
		runErr = cmd.Wait()
	}
	res := Result{Kernel: k, Duration: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	res.Console = normalizeConsole(con.String())
	if !con.begunAt.IsZero() {
		res.BootTime = con.begunAt.Sub(start)
	}
	p, perr := parseConsole(res.Console, nonce)
	res.Stdout, res.Stderr, res.ExitStatus, res.Files = p.stdout, p.stderr, p.status, p.files
	Logf("vm: %s done in %v (boot %v, qemu's CPU %v), status %d", k.Name, res.Duration.Round(time.Millisecond), res.BootTime.Round(time.Millisecond), res.CPU.Round(time.Millisecond), res.ExitStatus)
	infra := func(reason string, err error) (Result, error) {
		return res, &InfraError{Kernel: k.Name, Reason: reason, Console: res.Console, Err: err}
	}
	switch {
	case cctx.Err() == context.DeadlineExceeded && !p.complete(g):
		return infra(fmt.Sprintf("timed out after %v", timeout), nil)
	case ctx.Err() != nil:
		return infra("cancelled", ctx.Err())
	case !p.begun:
		return infra("the guest script never started"+crashHint(res.Console), runErr)
	case !p.ended:
		return infra("no end marker: the guest crashed or hung while the script ran"+crashHint(res.Console), runErr)
	case perr != nil:
		return infra("bad file payload", perr)
	case !p.complete(g):
		return infra("the guest stopped before sending everything back"+crashHint(res.Console), runErr)
	}
	return res, nil
}

func crashHint(console string) string {
	for _, s := range []string{"Kernel panic", "double fault", "BUG:", "Oops", "general protection fault"} {
		if strings.Contains(console, s) {
			return " (console shows " + s + ")"
		}
	}
	return ""
}

// RunRetry is Run, retried once when the first attempt fails with an
// *InfraError. A second infrastructure failure is returned as is.
func RunRetry(ctx context.Context, k Kernel, g Guest) (Result, error) {
	res, err := Run(ctx, k, g)
	if err != nil && IsInfra(err) && ctx.Err() == nil {
		Logf("vm: retrying after: %v", firstLine(err.Error()))
		res, err = Run(ctx, k, g)
	}
	return res, err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// consoleWriter accumulates qemu's output and notes when the begin marker
// shows up.
type consoleWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	begin   []byte
	start   time.Time
	begunAt time.Time
}

func (c *consoleWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.begunAt.IsZero() {
		tailLen := len(p) + len(c.begin)
		b := c.buf.Bytes()
		if len(b) > tailLen {
			b = b[len(b)-tailLen:]
		}
		if bytes.Contains(b, c.begin) {
			c.begunAt = time.Now()
		}
	}
	return len(p), nil
}

func (c *consoleWriter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
