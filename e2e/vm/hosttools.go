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

// machineToolsMu and machineToolsErr make EnsureMachine install each
// package once per process (its result, success or error, is kept).
var (
	machineToolsMu  sync.Mutex
	machineToolsErr = map[string]error{}
)

// EnsureMachine makes sure the qemu of a machine is present: the ones of
// x86-64 and arm come with EnsureHostTools; another's package (riscv64's
// qemu-system-misc, 46 MB to download, 200 MB installed, with OpenSBI in
// qemu-system-data) is installed only when a kernel of that architecture
// boots, the first time, with apt-get as EnsureHostTools does.
func EnsureMachine(m Machine) error {
	if _, err := exec.LookPath(m.Qemu); err == nil {
		return nil
	}
	if m.Package == "" {
		return fmt.Errorf("%s is missing and no Debian package is known for it", m.Qemu)
	}
	machineToolsMu.Lock()
	defer machineToolsMu.Unlock()
	if err, done := machineToolsErr[m.Package]; done {
		return err
	}
	Logf("vm: installing %s for %s", m.Package, m.Qemu)
	err := aptInstall([]string{m.Package})
	if err == nil {
		if _, lerr := exec.LookPath(m.Qemu); lerr != nil {
			err = fmt.Errorf("%s installed but %s is still missing", m.Package, m.Qemu)
		}
	}
	if err != nil {
		err = fmt.Errorf("installing %s: %w", m.Package, err)
	}
	machineToolsErr[m.Package] = err
	return err
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
// (TestScriptsUnderShells), and the awks the awk engine's scripts are run
// with (live's TestAwkScript: busybox's, mawk, gawk and original-awk), by binary, with
// the Debian package of each; the programs that look at sqlhist's
// pictures and metrics in live's tests: chromium renders the heatmaps
// (TestHeatmapInChromium), prometheus queries a generated dashboard's
// panels (TestDashboardInPrometheus); and tmux, the terminal
// cmd/sqlhist's TestLiveViewTmux draws --live in.
var TestShells = []struct{ Bin, Package string }{
	{"dash", "dash"}, {"mksh", "mksh"}, {"busybox", "busybox-static"}, {"bash", "bash"},
	{"mawk", "mawk"}, {"gawk", "gawk"}, {"original-awk", "original-awk"},
	{"chromium", "chromium"}, {"prometheus", "prometheus"}, {"tmux", "tmux"},
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
// other architectures run (the host's is x86-64), but for those that
// busyboxSuites names.
const busyboxSuite = "bookworm"

// busyboxSuites are the architectures whose busybox-static comes from
// another suite than busyboxSuite: riscv64 is a Debian architecture from
// trixie on (bookworm's riscv64 is in debian-ports only).
var busyboxSuites = map[string]string{"riscv64": "trixie"}

// busyboxPaths are where busybox-static packages keep the binary: bin/
// in bookworm's, usr/bin/ in trixie's (merged /usr).
var busyboxPaths = []string{"bin/busybox", "usr/bin/busybox"}

// BusyboxFor returns a static busybox for a Debian architecture: the
// host's for amd64, else busybox-static of that architecture from
// busyboxSuite (or its busyboxSuites entry), downloaded once into
// <cache>/busybox/<arch>/busybox.
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
	suite := busyboxSuite
	if s, ok := busyboxSuites[arch]; ok {
		suite = s
	}
	a, err := newAptEnv(cache, suite, arch)
	if err != nil {
		return "", err
	}
	Logf("vm: busybox-static for %s (%s)", arch, suite)
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
	var data []byte
	for _, p := range busyboxPaths {
		if data, err = os.ReadFile(filepath.Join(work, "root", p)); err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("busybox-static (%s, %s) has none of %v", arch, suite, busyboxPaths)
	}
	if err := os.WriteFile(bin+".tmp", data, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	return bin, nil
}

// prometheusOnce makes EnsurePrometheus install the package once per
// process.
var (
	prometheusOnce sync.Once
	prometheusPath string
	prometheusErr  error
)

// EnsurePrometheus returns the path of Debian's prometheus (the server,
// for the --metrics checks), installing the package with apt-get the
// first time it is missing.
func EnsurePrometheus() (string, error) {
	prometheusOnce.Do(func() {
		if p, err := exec.LookPath("prometheus"); err == nil {
			prometheusPath = p
			return
		}
		Logf("vm: installing prometheus")
		if err := aptInstall([]string{"prometheus"}); err != nil {
			prometheusErr = fmt.Errorf("installing prometheus: %w", err)
			return
		}
		prometheusPath, prometheusErr = exec.LookPath("prometheus")
	})
	return prometheusPath, prometheusErr
}
