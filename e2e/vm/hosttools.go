package vm

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// Host packages the harness needs. Both come from Debian's own mirrors.
var hostPackages = []string{"qemu-system-x86", "busybox-static"}

// busyboxCandidates are the places busybox-static installs its binary
// (/bin is a symlink to /usr/bin on merged-/usr systems).
var busyboxCandidates = []string{"/bin/busybox", "/usr/bin/busybox"}

var (
	hostToolsOnce sync.Once
	hostToolsErr  error
)

// EnsureHostTools makes sure qemu-system-x86_64 and a static busybox are
// present, installing the Debian packages qemu-system-x86 and busybox-static
// with apt-get (non-interactively, without recommends) when either is missing.
// It needs root, or passwordless sudo. It is safe to call many times.
func EnsureHostTools() error {
	hostToolsOnce.Do(func() { hostToolsErr = ensureHostTools() })
	return hostToolsErr
}

func hostToolsPresent() bool {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return false
	}
	_, err := StaticBusybox()
	return err == nil
}

func ensureHostTools() error {
	if hostToolsPresent() {
		return nil
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	run := func(args ...string) error {
		if os.Geteuid() != 0 {
			args = append([]string{"sudo", "-n"}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%v: %v\n%s", args, err, tail(out.Bytes(), 4000))
		}
		return nil
	}
	if err := run("apt-get", "update"); err != nil {
		return fmt.Errorf("installing host tools: %w", err)
	}
	args := append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, hostPackages...)
	if err := run(args...); err != nil {
		return fmt.Errorf("installing host tools: %w", err)
	}
	if !hostToolsPresent() {
		return fmt.Errorf("installing host tools: %v installed but qemu-system-x86_64 or a static busybox is still missing", hostPackages)
	}
	return nil
}

// StaticBusybox returns the path of a statically linked busybox on the host.
func StaticBusybox() (string, error) {
	for _, p := range busyboxCandidates {
		if ok, _ := isStaticELF(p); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no static busybox in %v (Debian package busybox-static)", busyboxCandidates)
}

// isStaticELF reports whether path is an ELF executable without a program
// interpreter (so it runs in an initramfs with no libc).
func isStaticELF(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
