package vm

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// KernelBuild says how a kernel is built from a Debian source package
// instead of fetched as Debian's image: `make tinyconfig`, the fragment
// (and Extra) merged into .config, `make olddefconfig`, a check that every
// line of the fragment holds in the result, then `make bzImage`. x86-64
// only.
type KernelBuild struct {
	// Source is the binary package that ships the source tarball
	// /usr/src/<Source>.tar.xz, e.g. linux-source-6.1. It is resolved in
	// the kernel's Suite (and <suite>-security).
	Source string
	// Fragment is a config fragment file of e2e/vm/kconfig (embedded in
	// this package), e.g. "tiny.fragment".
	Fragment string
	// Extra are .config lines for this kernel only, applied after the
	// fragment and checked the same way: options a kernel has that
	// another sharing the fragment lacks.
	Extra []string `json:",omitempty"`
}

// builderVersion is part of every built kernel's cache key: bump it when
// the way kernels are built changes (make targets, environment), so cached
// builds are redone.
const builderVersion = "1"

//go:embed kconfig/*.fragment
var kconfigFS embed.FS

// buildPackages are the Debian packages a kernel build needs on the host:
// the compiler and libc headers (host programs), make, flex and bison
// (kconfig's parser), bc (timeconst.h), libelf-dev (objtool), xz-utils
// (the source tarball).
var buildPackages = []string{"gcc", "libc6-dev", "make", "flex", "bison", "bc", "libelf-dev", "xz-utils"}

// buildToolsPresent reports what of the build tools is missing.
func buildToolsMissing() []string {
	var missing []string
	for _, c := range []string{"gcc", "make", "flex", "bison", "bc", "xz", "tar", "dpkg-deb"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	for _, h := range []string{"/usr/include/stdio.h", "/usr/include/gelf.h"} {
		if _, err := os.Stat(h); err != nil {
			missing = append(missing, h)
		}
	}
	return missing
}

// EnsureBuildTools installs buildPackages with apt-get (after apt-get
// update) when a tool or header of a kernel build is missing. Fetch calls
// it only when a built kernel is not in the cache.
func EnsureBuildTools() error {
	missing := buildToolsMissing()
	if len(missing) == 0 {
		return nil
	}
	Logf("vm: installing kernel build tools (missing: %s): %s", strings.Join(missing, " "), strings.Join(buildPackages, " "))
	start := time.Now()
	if err := aptInstall(buildPackages); err != nil {
		return fmt.Errorf("installing kernel build tools: %w", err)
	}
	if missing := buildToolsMissing(); len(missing) > 0 {
		return fmt.Errorf("installing kernel build tools: %v installed but %v still missing", buildPackages, missing)
	}
	Logf("vm: installed the kernel build tools in %v", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// kconfigLine is one setting of a config fragment.
type kconfigLine struct {
	Sym   string // without CONFIG_
	Value string // y, m, n (also for "# CONFIG_X is not set"), a number or a quoted string
	Line  int    // line number in its fragment (0 for Extra lines)
}

func (l kconfigLine) String() string {
	if l.Value == "n" {
		return "# CONFIG_" + l.Sym + " is not set"
	}
	return "CONFIG_" + l.Sym + "=" + l.Value
}

var (
	kconfigSetRE   = regexp.MustCompile(`^CONFIG_([A-Za-z0-9_]+)=(.*)$`)
	kconfigUnsetRE = regexp.MustCompile(`^# CONFIG_([A-Za-z0-9_]+) is not set$`)
	// kconfigValueRE is a value a fragment may give: a tristate, a number
	// or a quoted string (nothing after it: .config has no trailing
	// comments).
	kconfigValueRE = regexp.MustCompile(`^(?:[ymn]|-?[0-9]+|0x[0-9a-fA-F]+|"(?:[^"\\]|\\.)*")$`)
)

// parseKconfig reads .config syntax: CONFIG_X=value and "# CONFIG_X is not
// set" lines; other comments and blank lines are skipped. With strict (a
// fragment), anything else is an error, and so is a symbol set twice.
func parseKconfig(text string, strict bool) ([]kconfigLine, error) {
	var out []kconfigLine
	seen := map[string]int{}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		var l kconfigLine
		if m := kconfigSetRE.FindStringSubmatch(line); m != nil {
			l = kconfigLine{Sym: m[1], Value: m[2], Line: i + 1}
			if l.Value == "" {
				if strict {
					return nil, fmt.Errorf("line %d: %q has no value", i+1, line)
				}
				continue
			}
			if strict && !kconfigValueRE.MatchString(l.Value) {
				return nil, fmt.Errorf("line %d: %q: the value is not y, m, n, a number or a quoted string", i+1, line)
			}
		} else if m := kconfigUnsetRE.FindStringSubmatch(line); m != nil {
			l = kconfigLine{Sym: m[1], Value: "n", Line: i + 1}
		} else if line == "" || strings.HasPrefix(line, "#") {
			continue
		} else if strict {
			return nil, fmt.Errorf("line %d: %q is not CONFIG_X=value or \"# CONFIG_X is not set\"", i+1, line)
		} else {
			continue
		}
		if strict {
			if prev, ok := seen[l.Sym]; ok {
				return nil, fmt.Errorf("line %d: CONFIG_%s is set again (first on line %d)", i+1, l.Sym, prev)
			}
			seen[l.Sym] = i + 1
		}
		out = append(out, l)
	}
	return out, nil
}

// settings returns the fragment's lines followed by Extra's (which may set
// a symbol of the fragment again: the later line wins), read from the
// embedded kconfig directory.
func (b *KernelBuild) settings() ([]kconfigLine, error) {
	text, err := fs.ReadFile(kconfigFS, "kconfig/"+b.Fragment)
	if err != nil {
		return nil, fmt.Errorf("config fragment %q: %w", b.Fragment, err)
	}
	lines, err := parseKconfig(string(text), true)
	if err != nil {
		return nil, fmt.Errorf("config fragment kconfig/%s: %w", b.Fragment, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("config fragment kconfig/%s sets nothing", b.Fragment)
	}
	extra, err := parseKconfig(strings.Join(b.Extra, "\n"), true)
	if err != nil {
		return nil, fmt.Errorf("extra config lines: %w", err)
	}
	for i := range extra {
		extra[i].Line = 0
	}
	return effective(append(lines, extra...)), nil
}

// effective keeps the last line of each symbol, in first-seen order.
func effective(lines []kconfigLine) []kconfigLine {
	last := map[string]int{}
	for i, l := range lines {
		last[l.Sym] = i
	}
	var out []kconfigLine
	for i, l := range lines {
		if last[l.Sym] == i {
			out = append(out, l)
		}
	}
	return out
}

// buildKey is the cache key of a build: the source package version (made
// safe for a directory name), then the first 12 hex digits of a sha256 over
// the builder version, the architecture and the settings in a canonical
// order (so comments and the order of lines in the fragment do not count).
func buildKey(srcVersion string, settings []kconfigLine) string {
	canon := make([]string, 0, len(settings))
	for _, l := range effective(settings) {
		canon = append(canon, l.String())
	}
	sort.Strings(canon)
	h := sha256.New()
	fmt.Fprintf(h, "sqlhist kernel build %s\narch amd64\n", builderVersion)
	for _, c := range canon {
		fmt.Fprintln(h, c)
	}
	v := strings.NewReplacer(":", "%3a", "/", "_").Replace(srcVersion)
	return v + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// mergeKconfig returns dotconfig with every symbol of settings removed and
// the settings appended, as scripts/kconfig/merge_config.sh does.
func mergeKconfig(dotconfig string, settings []kconfigLine) string {
	set := map[string]bool{}
	for _, l := range settings {
		set[l.Sym] = true
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(dotconfig, "\n"), "\n") {
		t := strings.TrimSpace(line)
		if m := kconfigSetRE.FindStringSubmatch(t); m != nil && set[m[1]] {
			continue
		}
		if m := kconfigUnsetRE.FindStringSubmatch(t); m != nil && set[m[1]] {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteString("# sqlhist config fragment\n")
	for _, l := range settings {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// configMismatch is a setting of the fragment that the final .config does
// not have.
type configMismatch struct {
	Want kconfigLine
	Got  string // the value in .config, "n" when not set or absent
}

func (m configMismatch) String() string {
	got := "is not set"
	if m.Got != "n" {
		got = "is " + m.Got
	}
	return fmt.Sprintf("CONFIG_%s (want %s, %s)", m.Want.Sym, m.Want.Value, got)
}

// checkKconfig returns the settings that dotconfig (a .config after
// olddefconfig) does not hold: a y that became "not set" because a
// dependency is unmet or the symbol does not exist, and so on.
func checkKconfig(dotconfig string, settings []kconfigLine) []configMismatch {
	got := map[string]string{}
	lines, _ := parseKconfig(dotconfig, false)
	for _, l := range lines {
		got[l.Sym] = l.Value
	}
	var bad []configMismatch
	for _, want := range settings {
		have, ok := got[want.Sym]
		if !ok {
			have = "n"
		}
		if have != want.Value {
			bad = append(bad, configMismatch{Want: want, Got: have})
		}
	}
	return bad
}

// kconfigDefined reports which of syms some Kconfig file under tree
// defines (config X or menuconfig X): a symbol no Kconfig defines does not
// exist in that kernel.
func kconfigDefined(tree string, syms []string) map[string]bool {
	want := map[string]bool{}
	for _, s := range syms {
		want[s] = true
	}
	found := map[string]bool{}
	re := regexp.MustCompile(`^\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$`)
	filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "Kconfig") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && want[m[1]] {
				found[m[1]] = true
			}
		}
		return nil
	})
	return found
}

// sourceRecord is the source package resolved for a built kernel, kept in
// <cache>/built/<name>/source.json so that later runs neither resolve nor
// download again (until SQLHIST_KERNEL_REFRESH=1).
type sourceRecord struct {
	Package  string
	Version  string
	Deb      string // file name under <cache>/built/sources
	Resolved string // RFC 3339, UTC
}

// fetchBuilt is Fetch for a kernel with a Build: it returns the cached
// build for the recorded source version and the current fragment, or
// builds it.
func fetchBuilt(ctx context.Context, k Kernel, cache string) (Kernel, error) {
	b := k.Build
	if k.DebArch() != "amd64" {
		return k, fmt.Errorf("kernel %s: only x86-64 kernels can be built (arch %s)", k.Name, k.DebArch())
	}
	if b.Source == "" || b.Fragment == "" {
		return k, fmt.Errorf("kernel %s: a build needs a source package and a config fragment", k.Name)
	}
	settings, err := b.settings()
	if err != nil {
		return k, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	dir := filepath.Join(cache, "built", k.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return k, err
	}
	// One build per kernel at a time; the cache-wide lock is taken only
	// around apt, which shares its per-suite state with Fetch.
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return k, err
	}
	defer unlock()

	srcFile := filepath.Join(dir, "source.json")
	var src sourceRecord
	resolved := false
	if os.Getenv("SQLHIST_KERNEL_REFRESH") != "1" {
		if b, err := os.ReadFile(srcFile); err == nil && json.Unmarshal(b, &src) == nil && src.Package == k.Build.Source && src.Version != "" {
			resolved = true
		}
	}
	if !resolved {
		if src, err = resolveSource(ctx, k, cache); err != nil {
			return k, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
	}
	key := buildKey(src.Version, settings)
	out := filepath.Join(dir, key)
	if got, err := readRecord(filepath.Join(out, "kernel.json")); err == nil {
		if !resolved {
			writeJSON(srcFile, src)
		}
		Logf("vm: kernel %s: cached build %s (%s)", k.Name, key, got.Release)
		return got, nil
	}

	Logf("vm: kernel %s: no build %s in the cache: building %s %s with kconfig/%s", k.Name, key, src.Package, src.Version, b.Fragment)
	if err := EnsureBuildTools(); err != nil {
		return k, err
	}
	deb, err := sourceDeb(ctx, k, cache, &src)
	if err != nil {
		return k, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	if err := writeJSON(srcFile, src); err != nil {
		return k, err
	}
	got, err := buildKernel(ctx, k, src, deb, settings, out)
	if err != nil {
		return k, fmt.Errorf("building kernel %s (%s %s): %w", k.Name, src.Package, src.Version, err)
	}
	got.BuildKey = key
	if err := writeJSON(filepath.Join(out, "kernel.json"), got); err != nil {
		return k, err
	}
	return got, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// resolveSource asks apt which version of the source package the suite
// (with its security updates) offers now.
func resolveSource(ctx context.Context, k Kernel, cache string) (sourceRecord, error) {
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return sourceRecord{}, err
	}
	defer unlock()
	a, err := newAptEnv(cache, k.Suite, k.Arch)
	if err != nil {
		return sourceRecord{}, err
	}
	Logf("vm: apt-get update for %s (%s)", k.Suite, k.DebArch())
	start := time.Now()
	if err := a.update(ctx); err != nil {
		return sourceRecord{}, err
	}
	v, err := a.candidate(ctx, k.Build.Source)
	if err != nil {
		return sourceRecord{}, err
	}
	Logf("vm: kernel %s: %s %s in %s (resolved in %v)", k.Name, k.Build.Source, v, k.Suite, time.Since(start).Round(100*time.Millisecond))
	return sourceRecord{Package: k.Build.Source, Version: v, Resolved: time.Now().UTC().Format(time.RFC3339)}, nil
}

// sourceDeb returns the path of the source package's .deb in
// <cache>/built/sources, downloading it when it is not there. Other
// versions of the same package are removed after a download.
func sourceDeb(ctx context.Context, k Kernel, cache string, src *sourceRecord) (string, error) {
	dir := filepath.Join(cache, "built", "sources")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if src.Deb != "" {
		p := filepath.Join(dir, src.Deb)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	a, err := newAptEnv(cache, k.Suite, k.Arch)
	if err != nil {
		return "", err
	}
	// The version may come from a source.json older than the package
	// lists (or the lists may have been removed): ask for it by version,
	// and update the lists once if apt does not know it.
	pkg := src.Package + "=" + src.Version
	work, err := os.MkdirTemp(dir, "download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	start := time.Now()
	Logf("vm: apt-get download %s", pkg)
	if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
		Logf("vm: %v; apt-get update for %s and again", firstLine(err.Error()), k.Suite)
		if err := a.update(ctx); err != nil {
			return "", err
		}
		if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
			return "", err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(work, src.Package+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %d .deb files", pkg, len(debs))
	}
	name := filepath.Base(debs[0])
	dst := filepath.Join(dir, name)
	if err := os.Rename(debs[0], dst); err != nil {
		return "", err
	}
	st, _ := os.Stat(dst)
	Logf("vm: downloaded %s (%.0f MB) in %v", name, float64(st.Size())/1e6, time.Since(start).Round(100*time.Millisecond))
	old, _ := filepath.Glob(filepath.Join(dir, src.Package+"_*.deb"))
	for _, o := range old {
		if filepath.Base(o) != name {
			Logf("vm: removing the older %s", filepath.Base(o))
			os.Remove(o)
		}
	}
	src.Deb = name
	return dst, nil
}

// extractSource unpacks /usr/src/<pkg>.tar.xz of the .deb into dir and
// returns the tree's path. The tarball is streamed out of the package's
// data archive into tar -xJ.
func extractSource(ctx context.Context, deb, pkg, dir string) (string, error) {
	fsys := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	pipe, err := fsys.StdoutPipe()
	if err != nil {
		return "", err
	}
	var fsysErr strings.Builder
	fsys.Stderr = &fsysErr
	if err := fsys.Start(); err != nil {
		return "", err
	}
	defer func() {
		io.Copy(io.Discard, pipe)
		fsys.Wait()
	}()
	want := "usr/src/" + pkg + ".tar.xz"
	tr := tar.NewReader(pipe)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%s has no %s (%s)", filepath.Base(deb), want, strings.TrimSpace(fsysErr.String()))
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %v", filepath.Base(deb), err)
		}
		if strings.TrimPrefix(h.Name, "./") != want {
			continue
		}
		x := exec.CommandContext(ctx, "tar", "-xJ", "-C", dir)
		x.Stdin = tr
		if out, err := x.CombinedOutput(); err != nil {
			return "", fmt.Errorf("tar -xJ %s: %v\n%s", want, err, tail(out, 2000))
		}
		break
	}
	tree := filepath.Join(dir, pkg)
	if _, err := os.Stat(filepath.Join(tree, "Makefile")); err != nil {
		return "", fmt.Errorf("%s did not unpack to %s: %v", want, pkg, err)
	}
	return tree, nil
}

// buildKernel unpacks the source beside the kernel's builds
// (<cache>/built/<name>/tree.partial), configures and builds it, and keeps
// bzImage and .config in out. Its caller holds the kernel's lock, so a
// tree already there is what a killed build left: it is removed first.
func buildKernel(ctx context.Context, k Kernel, src sourceRecord, deb string, settings []kconfigLine, out string) (Kernel, error) {
	tmp := filepath.Join(filepath.Dir(out), "tree.partial")
	if err := os.RemoveAll(tmp); err != nil {
		return k, fmt.Errorf("removing the tree a killed build left: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return k, err
	}
	defer func() {
		start := time.Now()
		os.RemoveAll(tmp)
		Logf("vm: removed the build tree in %v", time.Since(start).Round(100*time.Millisecond))
	}()
	total := time.Now()
	start := time.Now()
	Logf("vm: unpacking %s", filepath.Base(deb))
	tree, err := extractSource(ctx, deb, src.Package, tmp)
	if err != nil {
		return k, err
	}
	Logf("vm: unpacked in %v", time.Since(start).Round(100*time.Millisecond))

	logPath := filepath.Join(tmp, "build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return k, err
	}
	defer logf.Close()
	failed := func(step string, err error) (Kernel, error) {
		logf.Sync()
		b, _ := os.ReadFile(logPath)
		keep := filepath.Join(filepath.Dir(out), "failed-build.log")
		os.WriteFile(keep, b, 0o644)
		return k, fmt.Errorf("%s: %v (log: %s)\n%s", step, err, keep, lastLines(string(b), 40))
	}
	makeArgs := []string{"ARCH=x86_64"}
	env := append(os.Environ(), "LC_ALL=C",
		// Reproducible version strings; LOCALVERSION set (empty) keeps
		// setlocalversion from appending "+" in a git checkout.
		"LOCALVERSION=", "KBUILD_BUILD_USER=sqlhist", "KBUILD_BUILD_HOST=sqlhist",
		"KBUILD_BUILD_TIMESTAMP="+src.Package+" "+src.Version)
	mk := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "make", append(append([]string{}, makeArgs...), args...)...)
		cmd.Dir = tree
		cmd.Env = env
		cmd.Stdout = logf
		cmd.Stderr = logf
		fmt.Fprintf(logf, "+ make %s\n", strings.Join(cmd.Args[1:], " "))
		return cmd.Run()
	}

	start = time.Now()
	if err := mk("tinyconfig"); err != nil {
		return failed("make tinyconfig", err)
	}
	dotPath := filepath.Join(tree, ".config")
	tiny, err := os.ReadFile(dotPath)
	if err != nil {
		return k, err
	}
	if err := os.WriteFile(dotPath, []byte(mergeKconfig(string(tiny), settings)), 0o644); err != nil {
		return k, err
	}
	if err := mk("olddefconfig"); err != nil {
		return failed("make olddefconfig", err)
	}
	final, err := os.ReadFile(dotPath)
	if err != nil {
		return k, err
	}
	if bad := checkKconfig(string(final), settings); len(bad) > 0 {
		var syms []string
		for _, m := range bad {
			syms = append(syms, m.Want.Sym)
		}
		defined := kconfigDefined(tree, syms)
		var why []string
		for _, m := range bad {
			w := m.String()
			if !defined[m.Want.Sym] {
				w += ": no Kconfig of " + src.Package + " defines it"
			} else {
				w += ": unmet dependencies"
			}
			if m.Want.Line > 0 {
				w = fmt.Sprintf("kconfig/%s:%d: %s", k.Build.Fragment, m.Want.Line, w)
			} else {
				w = "Extra: " + w
			}
			why = append(why, w)
		}
		os.MkdirAll(filepath.Dir(out), 0o755)
		os.WriteFile(filepath.Join(filepath.Dir(out), "failed.config"), final, 0o644)
		return k, fmt.Errorf("make olddefconfig dropped %d setting(s) of the config fragment:\n\t%s", len(bad), strings.Join(why, "\n\t"))
	}
	Logf("vm: configured (tinyconfig + %d settings of kconfig/%s, all kept by olddefconfig) in %v",
		len(settings), k.Build.Fragment, time.Since(start).Round(100*time.Millisecond))

	jobs := runtime.NumCPU()
	start = time.Now()
	Logf("vm: make -j%d bzImage (%s %s)", jobs, src.Package, src.Version)
	if err := mk(fmt.Sprintf("-j%d", jobs), "bzImage"); err != nil {
		return failed("make bzImage", err)
	}
	buildTime := time.Since(start)
	rel, err := os.ReadFile(filepath.Join(tree, "include", "config", "kernel.release"))
	if err != nil {
		return k, err
	}
	release := strings.TrimSpace(string(rel))
	img, err := os.ReadFile(filepath.Join(tree, "arch", "x86", "boot", "bzImage"))
	if err != nil {
		return k, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return k, err
	}
	dst := filepath.Join(out, "bzImage")
	if err := os.WriteFile(dst+".tmp", img, 0o644); err != nil {
		return k, err
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return k, err
	}
	if err := os.WriteFile(filepath.Join(out, "config"), final, 0o644); err != nil {
		return k, err
	}
	Logf("vm: kernel %s = %s built in %v (bzImage %.1f MB; unpack+config+build %v)", k.Name, release,
		buildTime.Round(time.Second), float64(len(img))/1e6, time.Since(total).Round(time.Second))
	k.Version, k.Package, k.Debs = src.Version, src.Package, []string{src.Deb}
	k.Release, k.Vmlinuz = release, dst
	k.Fetched = time.Now().UTC().Format(time.RFC3339)
	k.BuildTime = buildTime.Round(time.Second).String()
	return k, nil
}
