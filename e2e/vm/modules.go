package vm

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Modules returns the kernel modules named (as modprobe names them:
// virtio_console, virtio-mmio) and the modules they depend on, in the
// order insmod must load them, as files for the guest's initramfs under
// /lib/modules/<release>/. A module built into the kernel is left out.
//
// They come from the kernel's own Debian image package (the exact version
// Fetch recorded). Fetch keeps only the vmlinuz, so the first call for a
// module downloads the package again (about 25 MB for a cloud kernel),
// and keeps the modules it needs, decompressed, with modules.dep and
// modules.builtin in <cache>/<name>/modules-<version>/; later calls read
// them from there. Built kernels have no modules.
func Modules(ctx context.Context, k Kernel, names ...string) ([]File, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if k.Built() {
		return nil, fmt.Errorf("kernel %s is built without modules", k.Name)
	}
	k, err := Fetch(ctx, k)
	if err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	dir := filepath.Join(cache, k.Name, "modules-"+k.Version)
	if mods, err := cachedModules(dir, names); err == nil {
		return moduleFiles(dir, k.Release, mods)
	}
	if err := extractModules(ctx, k, cache, dir, names); err != nil {
		return nil, fmt.Errorf("kernel %s: modules %s: %w", k.Name, strings.Join(names, ", "), err)
	}
	mods, err := cachedModules(dir, names)
	if err != nil {
		return nil, err
	}
	return moduleFiles(dir, k.Release, mods)
}

// moduleName is the name of a module file as modprobe knows it:
// kernel/drivers/char/virtio_console.ko.xz → virtio_console.
func moduleName(p string) string {
	b := path.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

// uncompressed is a module's path without its compression suffix.
func uncompressed(p string) string {
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		if s, ok := strings.CutSuffix(p, ".ko"+ext); ok {
			return s + ".ko"
		}
	}
	return p
}

// moduleIndex is what modules.dep and modules.builtin say.
type moduleIndex struct {
	path    map[string]string   // name → path in the package (maybe compressed)
	deps    map[string][]string // name → names it depends on
	builtin map[string]bool
}

func readModuleIndex(dep, builtin []byte) moduleIndex {
	x := moduleIndex{path: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(dep))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n := moduleName(mod)
		x.path[n] = strings.TrimSpace(mod)
		for _, d := range strings.Fields(rest) {
			x.deps[n] = append(x.deps[n], moduleName(d))
		}
	}
	for _, l := range strings.Split(string(builtin), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			x.builtin[moduleName(l)] = true
		}
	}
	return x
}

// order returns the modules to load for names, dependencies first, as
// their paths in the package.
func (x moduleIndex) order(names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(n string, depth int) error
	visit = func(n string, depth int) error {
		n = strings.ReplaceAll(n, "-", "_")
		if seen[n] {
			return nil
		}
		seen[n] = true
		p, ok := x.path[n]
		switch {
		case !ok && x.builtin[n]:
			return nil
		case !ok:
			return fmt.Errorf("no module %s in modules.dep or modules.builtin", n)
		case depth > 64:
			return fmt.Errorf("module dependencies nest too deep at %s", n)
		}
		for _, d := range x.deps[n] {
			if err := visit(d, depth+1); err != nil {
				return err
			}
		}
		out = append(out, p)
		return nil
	}
	for _, n := range names {
		if err := visit(n, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cachedModules returns the load order of names from a cache directory,
// or an error when the directory lacks the index or one of the modules.
func cachedModules(dir string, names []string) ([]string, error) {
	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	builtin, err := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	mods, err := readModuleIndex(dep, builtin).order(names)
	if err != nil {
		return nil, err
	}
	for _, m := range mods {
		if _, err := os.Stat(filepath.Join(dir, uncompressed(m))); err != nil {
			return nil, err
		}
	}
	return mods, nil
}

func moduleFiles(dir, release string, mods []string) ([]File, error) {
	var files []File
	for _, m := range mods {
		b, err := os.ReadFile(filepath.Join(dir, uncompressed(m)))
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: "/lib/modules/" + release + "/" + uncompressed(m), Data: b})
	}
	return files, nil
}

// extractModules downloads k's image package and copies into dir the
// modules names need (decompressed) and, last, modules.builtin and
// modules.dep. The caller holds the cache's lock.
func extractModules(ctx context.Context, k Kernel, cache, dir string, names []string) error {
	a, err := newAptEnv(cache, k.Suite, k.Arch)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Join(cache, k.Name), "modules-work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pkg := k.Package + "=" + k.Version
	Logf("vm: apt-get download %s (for its modules)", pkg)
	if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
		// The lists may be older than the version recorded.
		if uerr := a.update(ctx); uerr != nil {
			return uerr
		}
		if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(work, k.Package+"_*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s left %d .deb files", pkg, len(debs))
	}
	root := filepath.Join(work, "root")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	var tree string
	for _, m := range []string{"usr/lib/modules", "lib/modules"} {
		p := filepath.Join(root, m, k.Release)
		if _, err := os.Stat(filepath.Join(p, "modules.builtin")); err == nil {
			tree = p
			break
		}
	}
	if tree == "" {
		return fmt.Errorf("%s has no lib/modules/%s", debs[0], k.Release)
	}
	// The package ships modules.builtin but no modules.dep (depmod makes
	// it at install time): follow each module's depends= field instead,
	// from the names asked for, and add what that finds to the cache's
	// modules.dep.
	builtin, err := os.ReadFile(filepath.Join(tree, "modules.builtin"))
	if err != nil {
		return err
	}
	byName := map[string]string{}
	err = filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".ko") {
			rel, _ := filepath.Rel(tree, p)
			byName[moduleName(rel)] = filepath.ToSlash(rel)
		}
		return err
	})
	if err != nil {
		return err
	}
	old, _ := os.ReadFile(filepath.Join(dir, "modules.dep"))
	x := readModuleIndex(old, builtin)
	dep := bytes.NewBuffer(old)
	todo := append([]string(nil), names...)
	for len(todo) > 0 {
		n := strings.ReplaceAll(todo[0], "-", "_")
		todo = todo[1:]
		if _, ok := x.path[n]; ok || x.builtin[n] {
			if _, err := os.Stat(filepath.Join(dir, uncompressed(x.path[n]))); err == nil || x.builtin[n] {
				continue
			}
		}
		rel, ok := byName[n]
		if !ok {
			return fmt.Errorf("no module %s in the package, and modules.builtin does not name it", n)
		}
		b, err := decompressModule(ctx, filepath.Join(tree, rel))
		if err != nil {
			return err
		}
		deps, err := moduleDepends(b)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err := writeAtomic(filepath.Join(dir, uncompressed(rel)), b); err != nil {
			return err
		}
		if _, ok := x.path[n]; !ok {
			fmt.Fprintf(dep, "%s:", rel)
			for _, d := range deps {
				p, ok := byName[d]
				if !ok {
					return fmt.Errorf("%s depends on %s, which the package does not have", rel, d)
				}
				fmt.Fprintf(dep, " %s", p)
			}
			dep.WriteByte('\n')
			x.path[n] = rel
		}
		todo = append(todo, deps...)
	}
	if err := writeAtomic(filepath.Join(dir, "modules.builtin"), builtin); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "modules.dep"), dep.Bytes())
}

// moduleDepends reads the depends= field of a module's .modinfo section.
func moduleDepends(ko []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, err
	}
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("no .modinfo section")
	}
	info, err := s.Data()
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, kv := range bytes.Split(info, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, moduleName(d))
				}
			}
		}
	}
	return deps, nil
}

// decompressModule reads a module, decompressing .ko.xz and .ko.zst with
// the host's xz or zstd (busybox's insmod takes a plain .ko).
func decompressModule(ctx context.Context, p string) ([]byte, error) {
	var tool string
	switch {
	case strings.HasSuffix(p, ".ko"):
		return os.ReadFile(p)
	case strings.HasSuffix(p, ".ko.xz"):
		tool = "xz"
	case strings.HasSuffix(p, ".ko.zst"):
		tool = "zstd"
	case strings.HasSuffix(p, ".ko.gz"):
		tool = "gzip"
	default:
		return nil, fmt.Errorf("%s: not a kernel module", p)
	}
	out, err := exec.CommandContext(ctx, tool, "-dc", p).Output()
	if err != nil {
		return nil, fmt.Errorf("%s -dc %s: %v", tool, p, err)
	}
	return out, nil
}

func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}
