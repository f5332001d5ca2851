package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Kernel is a Debian kernel the harness can boot.
type Kernel struct {
	Name  string // short name used on command lines: "5.10", "6.1", "6.12", "7.2", "6.1-arm64"
	Suite string // Debian suite it comes from: bullseye, bookworm, trixie, sid
	// Arch is Debian's architecture of the kernel: amd64 (when empty),
	// arm64, armhf or riscv64. It picks the qemu, the machine and the
	// busybox.
	Arch string
	// Meta is the flavour's metapackage, which depends on the current
	// image package of the suite: linux-image-cloud-<arch> when empty.
	Meta string

	// HistTriggers says whether the kernel is expected to have hist
	// triggers and synthetic events (5.10 in bullseye does not).
	HistTriggers bool
	// Build, when set, makes the kernel from Debian's source package
	// with a config fragment instead of fetching Debian's image (see
	// KernelBuild). Such kernels are not in the suite's default loops.
	Build *KernelBuild `json:",omitempty"`

	// Filled by Fetch (and recorded in the cache's kernel.json):
	Version string   // Debian package version, e.g. "6.1.192-2" (of the source package when built)
	Package string   // image package, e.g. "linux-image-6.1.0-56-cloud-amd64", or the source package
	Debs    []string // every package extracted to find the vmlinuz (the source .deb when built)
	Release string   // uname -r, e.g. "6.1.0-56-cloud-amd64", "6.1.192-sqlhist"
	Vmlinuz string   // path of the kernel image on the host (bzImage when built)
	Fetched string   // when it was fetched or built (RFC 3339, UTC)
	// Of a built kernel: its cache key (<source version>-<hash12>) and
	// how long make bzImage took.
	BuildKey  string `json:",omitempty"`
	BuildTime string `json:",omitempty"`
}

// Kernels lists the kernels the harness knows, x86-64 oldest first, then
// the other architectures. The amd64 and arm64 ones are the "cloud"
// flavour, which has ftrace, hist triggers (from 6.1 here) and kprobe
// events built in, and boots fast without modules; 32-bit arm has no cloud
// flavour: armmp-lpae (Cortex-A15 and later, which qemu's virt machine
// emulates) has the same tracing options. riscv64 (an official Debian
// architecture from trixie on) has one flavour, linux-image-riscv64, with
// ftrace, kprobe and uprobe events but no hist triggers: RISC-V does not
// select ARCH_HAVE_NMI_SAFE_CMPXCHG, which HIST_TRIGGERS depends on.
var Kernels = []Kernel{
	{Name: "5.10", Suite: "bullseye", HistTriggers: false},
	{Name: "6.1", Suite: "bookworm", HistTriggers: true},
	{Name: "6.12", Suite: "trixie", HistTriggers: true},
	{Name: "7.2", Suite: "sid", HistTriggers: true},
	{Name: "6.1-arm64", Suite: "bookworm", Arch: "arm64", HistTriggers: true},
	{Name: "6.12-arm64", Suite: "trixie", Arch: "arm64", HistTriggers: true},
	{Name: "7.2-arm64", Suite: "sid", Arch: "arm64", HistTriggers: true},
	{Name: "6.1-armhf", Suite: "bookworm", Arch: "armhf", Meta: "linux-image-armmp-lpae", HistTriggers: true},
	{Name: "6.12-riscv64", Suite: "trixie", Arch: "riscv64", Meta: "linux-image-riscv64", HistTriggers: false},
	// Built from Debian's source with kconfig/tiny.fragment: 6.1 with
	// boot-time tracing (Debian's images lack CONFIG_BOOT_CONFIG), and
	// bullseye's 5.10 with the hist triggers Debian's 5.10 lacks.
	{Name: "6.1-boot", Suite: "bookworm", HistTriggers: true,
		Build: &KernelBuild{Source: "linux-source-6.1", Fragment: "tiny.fragment"}},
	// 5.10-hist uses SLUB, as Debian's 5.10 does: with tinyconfig's SLOB,
	// 5.10 reports every kmalloc below a page as kmem:kmalloc_node (6.0
	// merged the two events), and the suite's kmalloc histograms saw none.
	// And BASE_FULL, as Debian: tinyconfig's BASE_SMALL makes pid_max 4096,
	// and the forks of --run's two minutes under load reused pids so soon
	// that a wakeup JOIN keyed by pid matched switches to new processes
	// with wakeups of exited ones (latencies of 25-30 s).
	{Name: "5.10-hist", Suite: "bullseye", HistTriggers: true,
		Build: &KernelBuild{Source: "linux-source-5.10", Fragment: "tiny.fragment",
			Extra: []string{"CONFIG_SLUB=y", "# CONFIG_SLOB is not set", "CONFIG_BASE_FULL=y"}}},
}

// DebArch is the kernel's Debian architecture.
func (k Kernel) DebArch() string {
	if k.Arch == "" {
		return "amd64"
	}
	return k.Arch
}

// ShortVersion is the kernel's version without the architecture or the
// variant of a built kernel: "6.1" for 6.1, 6.1-arm64 and 6.1-boot. It
// names a version, not a kernel: a built 6.1 and Debian's 6.1 share it.
func (k Kernel) ShortVersion() string {
	v, _, _ := strings.Cut(k.Name, "-")
	return v
}

// Built reports whether the kernel is built from source (see KernelBuild).
func (k Kernel) Built() bool { return k.Build != nil }

// metaPackage is the flavour's metapackage; it depends on the current
// versioned image package of the suite.
func (k Kernel) metaPackage() string {
	if k.Meta != "" {
		return k.Meta
	}
	return "linux-image-cloud-" + k.DebArch()
}

// LookupKernel returns the kernel with the given short name (or suite).
func LookupKernel(name string) (Kernel, error) {
	var names []string
	for _, k := range Kernels {
		if k.Name == name || k.Suite == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return Kernel{}, fmt.Errorf("unknown kernel %q (known: %s)", name, strings.Join(names, ", "))
}

// Logf receives progress messages (downloads, boots). It discards them
// unless a caller replaces it, e.g. with log.Printf or a testing.T's Logf.
var Logf = func(format string, args ...any) {}

// CacheRoot is the harness's cache, shared by every clone and run on a
// machine like Go's build cache: $SQLHIST_CACHE_DIR when set, else
// sqlhist in the user's cache directory (~/.cache/sqlhist). Two runs may
// share it: every entry is written under a lock (flock, held per kernel
// for a build, cache-wide for downloads) to a temporary name and renamed
// into place, and an entry is used only when its record (kernel.json),
// written last, is there.
func CacheRoot() (string, error) {
	if d := os.Getenv("SQLHIST_CACHE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set SQLHIST_CACHE_DIR (%w)", err)
	}
	return filepath.Join(d, "sqlhist"), nil
}

// CacheDir is where kernels, their apt state and the other architectures'
// busybox are kept: <CacheRoot>/kernels.
func CacheDir() (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "kernels"), nil
}

// RepoRoot finds the root of the sqlhist module above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/sqlhist/sqlhist\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/sqlhist/sqlhist above the working directory")
		}
		dir = parent
	}
}

// Fetch returns k with its Version, Package, Release and Vmlinuz filled in,
// downloading the kernel when the cache does not have it yet. At download
// time it resolves the newest version the suite offers (security updates
// included) and records what it used in <cache>/<name>/kernel.json; later
// calls reuse that kernel until SQLHIST_KERNEL_REFRESH=1 forces a new
// resolution.
//
// A kernel with a Build is built instead, on a cache miss only: the source
// package version resolved once (<cache>/built/<name>/source.json, again
// with SQLHIST_KERNEL_REFRESH=1), its .deb kept in <cache>/built/sources,
// and the result in <cache>/built/<name>/<version>-<hash12>/ (bzImage,
// config, kernel.json), the hash covering the fragment's settings. A cold
// build takes many minutes: give ctx room for it.
func Fetch(ctx context.Context, k Kernel) (Kernel, error) {
	if k.Vmlinuz != "" {
		if _, err := os.Stat(k.Vmlinuz); err == nil {
			return k, nil
		}
	}
	if k.Suite == "" {
		kk, err := LookupKernel(k.Name)
		if err != nil {
			return k, err
		}
		k = kk
	}
	cache, err := CacheDir()
	if err != nil {
		return k, err
	}
	if k.Build != nil {
		return fetchBuilt(ctx, k, cache)
	}
	dir := filepath.Join(cache, k.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return k, err
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return k, err
	}
	defer unlock()

	record := filepath.Join(dir, "kernel.json")
	if os.Getenv("SQLHIST_KERNEL_REFRESH") != "1" {
		if got, err := readRecord(record); err == nil {
			return got, nil
		}
	}
	got, err := download(ctx, k, cache, dir)
	if err != nil {
		return k, fmt.Errorf("fetching kernel %s (%s): %w", k.Name, k.Suite, err)
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	if err := os.WriteFile(record+".tmp", append(b, '\n'), 0o644); err != nil {
		return k, err
	}
	if err := os.Rename(record+".tmp", record); err != nil {
		return k, err
	}
	return got, nil
}

func readRecord(path string) (Kernel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Kernel{}, err
	}
	var k Kernel
	if err := json.Unmarshal(b, &k); err != nil {
		return Kernel{}, err
	}
	if k.Vmlinuz == "" {
		return Kernel{}, fmt.Errorf("%s: no vmlinuz recorded", path)
	}
	// The cache may have moved with the checkout: look next to the record.
	k.Vmlinuz = filepath.Join(filepath.Dir(path), filepath.Base(k.Vmlinuz))
	if _, err := os.Stat(k.Vmlinuz); err != nil {
		return Kernel{}, err
	}
	return k, nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// aptEnv is a private apt configuration for one suite: its own sources list,
// package lists and archive cache, so the host's /etc/apt is not used.
type aptEnv struct {
	dir  string
	opts []string
}

const debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

func newAptEnv(cache, suite, arch string) (*aptEnv, error) {
	if arch == "" {
		arch = "amd64"
	}
	name := suite
	if arch != "amd64" {
		name += "-" + arch
	}
	dir := filepath.Join(cache, "apt", name)
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	opts := " [arch=" + arch
	if _, err := os.Stat(debianKeyring); err == nil {
		opts += " signed-by=" + debianKeyring
	}
	opts += "]"
	src := fmt.Sprintf("deb%s http://deb.debian.org/debian %s main\n", opts, suite)
	if suite != "sid" && suite != "unstable" {
		src += fmt.Sprintf("deb%s http://deb.debian.org/debian-security %s-security main\n", opts, suite)
	}
	list := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(list, []byte(src), 0o644); err != nil {
		return nil, err
	}
	return &aptEnv{dir: dir, opts: []string{
		"-o", "Dir::Etc::SourceList=" + list,
		"-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "APT::Architecture=" + arch,
		"-o", "APT::Architectures=" + arch,
		"-o", "Acquire::Languages=none",
		"-o", "APT::Sandbox::User=root",
		"-o", "Debug::NoLocking=1",
	}}, nil
}

func (a *aptEnv) run(ctx context.Context, workdir, tool string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, tool, append(append([]string{}, a.opts...), args...)...)
	cmd.Dir = workdir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, tail(errb.Bytes(), 3000))
	}
	return out.String(), nil
}

// update runs apt-get update. A mirror caught mid-sync serves an index
// that does not match its Release file ("File has unexpected size …
// Mirror sync in progress?", seen for bookworm-security's armhf index):
// apt then keeps going with the other indexes and exits 100. That is
// logged and tolerated when some index was read (the suite's own, at
// least), since what is missing is only newer security builds; the
// kernel resolved is recorded in kernel.json either way.
func (a *aptEnv) update(ctx context.Context) error {
	_, err := a.run(ctx, a.dir, "apt-get", "update")
	if err == nil {
		return nil
	}
	lists, _ := filepath.Glob(filepath.Join(a.dir, "lists", "*_Packages*"))
	if len(lists) == 0 {
		return err
	}
	Logf("vm: apt-get update failed in part; using the indexes it read (%d): %v", len(lists), firstLine(err.Error()))
	return nil
}

// depends returns the names a package directly depends on (first
// alternative of each dependency).
func (a *aptEnv) depends(ctx context.Context, pkg string) ([]string, error) {
	out, err := a.run(ctx, a.dir, "apt-cache", "depends", "--no-recommends", "--no-suggests",
		"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", pkg)
	if err != nil {
		return nil, err
	}
	var deps []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(strings.TrimLeft(sc.Text(), " |"))
		if len(f) == 2 && (f[0] == "Depends:" || f[0] == "PreDepends:") {
			deps = append(deps, f[1])
		}
	}
	return deps, nil
}

// candidate returns the version apt would install.
func (a *aptEnv) candidate(ctx context.Context, pkg string) (string, error) {
	out, err := a.run(ctx, a.dir, "apt-cache", "show", "--no-all-versions", pkg)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Version: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("apt-cache show %s: no Version", pkg)
}

var vmlinuzRe = regexp.MustCompile(`^vmlinu([zx])-(.+)$`)

// findVmlinuz looks for boot/vmlinuz-<release> (or boot/vmlinux-<release>,
// riscv64's uncompressed ELF image, which qemu boots as is) or
// usr/lib/modules/<release>/vmlinuz under an extracted package tree.
func findVmlinuz(root string) (path, release string) {
	ents, _ := os.ReadDir(filepath.Join(root, "boot"))
	for _, z := range []string{"z", "x"} {
		for _, e := range ents {
			if m := vmlinuzRe.FindStringSubmatch(e.Name()); m != nil && m[1] == z {
				return filepath.Join(root, "boot", e.Name()), m[2]
			}
		}
	}
	for _, mods := range []string{"usr/lib/modules", "lib/modules"} {
		ents, _ := os.ReadDir(filepath.Join(root, mods))
		for _, e := range ents {
			p := filepath.Join(root, mods, e.Name(), "vmlinuz")
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, e.Name()
			}
		}
	}
	return "", ""
}

func download(ctx context.Context, k Kernel, cache, dir string) (Kernel, error) {
	a, err := newAptEnv(cache, k.Suite, k.Arch)
	if err != nil {
		return k, err
	}
	Logf("vm: apt-get update for %s (%s)", k.Suite, k.DebArch())
	if err := a.update(ctx); err != nil {
		return k, err
	}
	meta := k.metaPackage()
	deps, err := a.depends(ctx, meta)
	if err != nil {
		return k, err
	}
	var image string
	for _, d := range deps {
		if strings.HasPrefix(d, "linux-image-") {
			image = d
			break
		}
	}
	if image == "" {
		return k, fmt.Errorf("%s in %s depends on no linux-image-* package (depends: %v)", meta, k.Suite, deps)
	}
	version, err := a.candidate(ctx, image)
	if err != nil {
		return k, err
	}
	work := filepath.Join(dir, "work")
	os.RemoveAll(work)
	if err := os.MkdirAll(filepath.Join(work, "root"), 0o755); err != nil {
		return k, err
	}
	defer os.RemoveAll(work)

	// The image package holds the vmlinuz (boot/vmlinuz-<release>) in
	// bullseye, bookworm and trixie; in sid it is a shell depending on
	// linux-binary-<release>, which has usr/lib/modules/<release>/vmlinuz.
	pkgs := []string{image}
	var vmlinuz, release string
	for i := 0; i < len(pkgs) && vmlinuz == ""; i++ {
		pkg := pkgs[i]
		Logf("vm: apt-get download %s", pkg)
		if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
			return k, err
		}
		debs, _ := filepath.Glob(filepath.Join(work, pkg+"_*.deb"))
		if len(debs) != 1 {
			return k, fmt.Errorf("apt-get download %s left %d .deb files", pkg, len(debs))
		}
		k.Debs = append(k.Debs, filepath.Base(debs[0]))
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], filepath.Join(work, "root")).CombinedOutput(); err != nil {
			return k, fmt.Errorf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
		}
		os.Remove(debs[0])
		vmlinuz, release = findVmlinuz(filepath.Join(work, "root"))
		if vmlinuz == "" && i == 0 {
			deps, err := a.depends(ctx, pkg)
			if err != nil {
				return k, err
			}
			for _, d := range deps {
				if strings.HasPrefix(d, "linux-binary-") {
					pkgs = append(pkgs, d)
				}
			}
		}
	}
	if vmlinuz == "" {
		return k, fmt.Errorf("no boot/vmlinuz-* or boot/vmlinux-* in %v", pkgs)
	}
	dst := filepath.Join(dir, "vmlinuz")
	b, err := os.ReadFile(vmlinuz)
	if err != nil {
		return k, err
	}
	if err := os.WriteFile(dst+".tmp", b, 0o644); err != nil {
		return k, err
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return k, err
	}
	sort.Strings(k.Debs)
	k.Version, k.Package, k.Release, k.Vmlinuz = version, image, release, dst
	k.Fetched = time.Now().UTC().Format(time.RFC3339)
	Logf("vm: kernel %s = %s %s (%s)", k.Name, image, version, release)
	return k, nil
}

// Cached reports whether Fetch would return k from the cache without
// downloading or building anything: a Debian kernel's record and image
// are there, or a built kernel's build for its recorded source version and
// the current fragment. (SQLHIST_KERNEL_REFRESH=1 makes Fetch resolve
// again all the same.)
func Cached(k Kernel) bool {
	cache, err := CacheDir()
	if err != nil {
		return false
	}
	if k.Build == nil {
		_, err := readRecord(filepath.Join(cache, k.Name, "kernel.json"))
		return err == nil
	}
	settings, err := k.Build.settings()
	if err != nil {
		return false
	}
	dir := filepath.Join(cache, "built", k.Name)
	var src sourceRecord
	b, err := os.ReadFile(filepath.Join(dir, "source.json"))
	if err != nil || json.Unmarshal(b, &src) != nil || src.Package != k.Build.Source || src.Version == "" {
		return false
	}
	_, err = readRecord(filepath.Join(dir, buildKey(src.Version, settings), "kernel.json"))
	return err == nil
}
