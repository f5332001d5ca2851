package vm

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Host packages the harness needs, from Debian's own mirrors:
// qemu-system-arm has qemu-system-aarch64 and qemu-system-arm.
var hostPackages = []string{"qemu-system-x86", "qemu-system-arm", "busybox-static"}

// hostQemus are the qemu binaries the harness runs.
var hostQemus = []string{"qemu-system-x86_64", "qemu-system-aarch64", "qemu-system-arm"}

// busyboxCandidates are the places busybox-static installs its binary
// (/bin is a symlink to /usr/bin on merged-/usr systems).
var busyboxCandidates = []string{"/bin/busybox", "/usr/bin/busybox"}

var (
	hostToolsOnce sync.Once
	hostToolsErr  error
)

// EnsureHostTools makes sure the qemu-system binaries and a static busybox
// are present, installing the Debian packages qemu-system-x86,
// qemu-system-arm and busybox-static with apt-get (non-interactively,
// without recommends) when one is missing.
// It needs root, or passwordless sudo. It is safe to call many times.
func EnsureHostTools() error {
	hostToolsOnce.Do(func() { hostToolsErr = ensureHostTools() })
	return hostToolsErr
}

func hostToolsPresent() bool {
	for _, q := range hostQemus {
		if _, err := exec.LookPath(q); err != nil {
			return false
		}
	}
	_, err := StaticBusybox()
	return err == nil
}

func ensureHostTools() error {
	if hostToolsPresent() {
		return nil
	}
	if err := aptInstall(hostPackages); err != nil {
		return fmt.Errorf("installing host tools: %w", err)
	}
	if !hostToolsPresent() {
		return fmt.Errorf("installing host tools: %v installed but one of %v or a static busybox is still missing", hostPackages, hostQemus)
	}
	return nil
}

// aptInstall runs apt-get update, then apt-get install -y
// --no-install-recommends with the host's own apt configuration,
// non-interactively (no stdin), as root or through passwordless sudo.
func aptInstall(pkgs []string) error {
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
		return err
	}
	return run(append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, pkgs...)...)
}

// TestShells are the shells emit's unit tests run printed scripts under
// (TestScriptsUnderShells), by binary, with the Debian package of each.
var TestShells = []struct{ Bin, Package string }{
	{"dash", "dash"}, {"mksh", "mksh"}, {"busybox", "busybox-static"}, {"bash", "bash"},
}

// MissingTestShells returns the packages of the TestShells that are not
// on the PATH.
func MissingTestShells() []string {
	var pkgs []string
	for _, s := range TestShells {
		if _, err := exec.LookPath(s.Bin); err != nil {
			pkgs = append(pkgs, s.Package)
		}
	}
	return pkgs
}

// EnsureTestShells installs the packages of the missing TestShells with
// apt-get (as EnsureHostTools does: root or passwordless sudo).
func EnsureTestShells() error {
	pkgs := MissingTestShells()
	if len(pkgs) == 0 {
		return nil
	}
	if err := aptInstall(pkgs); err != nil {
		return fmt.Errorf("installing the test shells: %w", err)
	}
	if still := MissingTestShells(); len(still) > 0 {
		return fmt.Errorf("installing the test shells: %v installed but still missing", still)
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

// busyboxSuite is the Debian suite whose busybox-static the guests of
// other architectures run (the host's is x86-64).
const busyboxSuite = "bookworm"

// BusyboxFor returns a static busybox for a Debian architecture: the
// host's for amd64, else busybox-static of that architecture from
// busyboxSuite, downloaded once into <cache>/busybox/<arch>/busybox.
func BusyboxFor(ctx context.Context, arch string) (string, error) {
	if arch == "" || arch == "amd64" {
		return StaticBusybox()
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "busybox", arch)
	bin := filepath.Join(dir, "busybox")
	if ok, _ := isStaticELF(bin); ok {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	a, err := newAptEnv(cache, busyboxSuite, arch)
	if err != nil {
		return "", err
	}
	Logf("vm: busybox-static for %s", arch)
	if err := a.update(ctx); err != nil {
		return "", err
	}
	work := filepath.Join(dir, "work")
	os.RemoveAll(work)
	defer os.RemoveAll(work)
	if err := os.MkdirAll(filepath.Join(work, "root"), 0o755); err != nil {
		return "", err
	}
	if _, err := a.run(ctx, work, "apt-get", "download", "busybox-static"); err != nil {
		return "", err
	}
	debs, _ := filepath.Glob(filepath.Join(work, "busybox-static_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download busybox-static (%s) left %d .deb files", arch, len(debs))
	}
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], filepath.Join(work, "root")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	data, err := os.ReadFile(filepath.Join(work, "root", "bin", "busybox"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(bin+".tmp", data, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	return bin, nil
}
