package vm

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BPFTools are the programs of Debian's libbpf-tools that BPFToolFiles
// puts in a guest, at /usr/sbin/NAME as the package installs them.
var BPFTools = []string{"runqlat", "syscount", "funclatency"}

// bpfToolsSuite is the Debian suite whose libbpf-tools the guests run
// (bookworm: 0.26.0+ds-1, libbpf linked statically).
const bpfToolsSuite = "bookworm"

// bpfToolsPackages are downloaded and extracted into one tree: the tools
// and what their ELF files need (libbpf-tools depends on libc6, libelf1
// and zlib1g; libelf1 on libc6 and zlib1g).
var bpfToolsPackages = []string{"libbpf-tools", "libc6", "libelf1", "zlib1g"}

// debTriplets are the multiarch library directories' names.
var debTriplets = map[string]string{
	"amd64": "x86_64-linux-gnu",
	"arm64": "aarch64-linux-gnu",
	"armhf": "arm-linux-gnueabihf",
}

// bpfToolsRecord is <cache>/bpftools/<arch>/bpftools.json, written last.
type bpfToolsRecord struct {
	Suite   string
	Arch    string
	Debs    []string // the .deb files extracted into root/
	Fetched string
}

// BPFToolFiles returns the files a guest of the Debian architecture arch
// (amd64, arm64, armhf) needs to run BPFTools: each program at
// /usr/sbin/NAME, the shared libraries they load (DT_NEEDED, resolved
// recursively in the extracted packages, each at the path the package
// installs it, symbolic links followed) and the dynamic loader at the
// program's PT_INTERP path. The packages come from bpfToolsSuite, are
// downloaded once under the cache-wide lock and extracted into
// <cache>/bpftools/<arch>/root; later calls read that tree with no network.
func BPFToolFiles(ctx context.Context, arch string) ([]File, error) {
	if arch == "" {
		arch = "amd64"
	}
	triplet, ok := debTriplets[arch]
	if !ok {
		return nil, fmt.Errorf("libbpf-tools: no multiarch triplet for Debian architecture %q", arch)
	}
	root, err := bpfToolsTree(ctx, arch)
	if err != nil {
		return nil, err
	}
	var progs []string
	for _, t := range BPFTools {
		progs = append(progs, "/usr/sbin/"+t)
	}
	return ELFClosure(root, triplet, progs)
}

// bpfToolsTree returns the extracted packages' root for arch, downloading
// them on a cache miss.
func bpfToolsTree(ctx context.Context, arch string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "bpftools", arch)
	root := filepath.Join(dir, "root")
	record := filepath.Join(dir, "bpftools.json")
	if bpfToolsCached(record) {
		return root, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if bpfToolsCached(record) { // another run fetched it while we waited
		return root, nil
	}
	a, err := newAptEnv(cache, bpfToolsSuite, arch)
	if err != nil {
		return "", err
	}
	Logf("vm: libbpf-tools for %s: apt-get update", arch)
	if err := a.update(ctx); err != nil {
		return "", err
	}
	work := filepath.Join(dir, "work")
	partial := filepath.Join(dir, "root.partial")
	for _, p := range []string{work, partial, root} {
		os.RemoveAll(p)
	}
	defer os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return "", err
	}
	rec := bpfToolsRecord{Suite: bpfToolsSuite, Arch: arch}
	for _, pkg := range bpfToolsPackages {
		Logf("vm: apt-get download %s (%s)", pkg, arch)
		if _, err := a.run(ctx, work, "apt-get", "download", pkg); err != nil {
			return "", err
		}
		debs, _ := filepath.Glob(filepath.Join(work, pkg+"_*.deb"))
		if len(debs) != 1 {
			return "", fmt.Errorf("apt-get download %s (%s) left %d .deb files", pkg, arch, len(debs))
		}
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], partial).CombinedOutput(); err != nil {
			return "", fmt.Errorf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
		}
		rec.Debs = append(rec.Debs, filepath.Base(debs[0]))
		os.Remove(debs[0])
	}
	if err := os.Rename(partial, root); err != nil {
		return "", err
	}
	sort.Strings(rec.Debs)
	rec.Fetched = time.Now().UTC().Format(time.RFC3339)
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.WriteFile(record+".tmp", append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(record+".tmp", record); err != nil {
		return "", err
	}
	Logf("vm: libbpf-tools for %s: %v", arch, rec.Debs)
	return root, nil
}

func bpfToolsCached(record string) bool {
	b, err := os.ReadFile(record)
	if err != nil {
		return false
	}
	var rec bpfToolsRecord
	if json.Unmarshal(b, &rec) != nil || len(rec.Debs) != len(bpfToolsPackages) {
		return false
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(record), "root"))
	return err == nil
}

// ELFClosure returns the programs (guest paths under root, e.g.
// "/usr/sbin/runqlat") with every shared library they need and their
// dynamic loader, read from the tree at root, each at its guest path. A
// library named by DT_NEEDED is looked for, as the loader does with no
// ld.so.cache, in /lib/<triplet>, /usr/lib/<triplet>, /lib and /usr/lib;
// symbolic links (absolute ones relative to root) are followed and the
// file's content placed at the path looked up, since File has no links.
// A library found nowhere is an error naming it and who needs it. The
// loader is placed once, at PT_INTERP, even where libc names it too.
func ELFClosure(root, triplet string, progs []string) ([]File, error) {
	dirs := []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"}
	files := map[string]File{}
	queue := append([]string(nil), progs...)
	needer := map[string]string{}
	loaders := map[string]bool{} // base names of the PT_INTERPs seen
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, ok := files[p]; ok {
			continue
		}
		host, err := resolveIn(root, p)
		if err != nil {
			return nil, fmt.Errorf("%s (needed by %s): %w", p, needer[p], err)
		}
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(host)
		if err != nil {
			return nil, err
		}
		files[p] = File{Path: p, Mode: st.Mode().Perm(), Data: data}
		f, err := elf.Open(host)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		interp := ""
		for _, pr := range f.Progs {
			if pr.Type == elf.PT_INTERP {
				b := make([]byte, pr.Filesz)
				if _, err := pr.ReadAt(b, 0); err != nil {
					f.Close()
					return nil, fmt.Errorf("%s: PT_INTERP: %w", p, err)
				}
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
		needed, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: DT_NEEDED: %w", p, err)
		}
		if interp != "" {
			needer[interp] = p
			queue = append(queue, interp)
			loaders[path.Base(interp)] = true
		}
		for _, lib := range needed {
			if loaders[lib] {
				// libc names the loader (ld-linux-x86-64.so.2), which
				// is there already at PT_INTERP: glibc's loader
				// matches the name against its own soname and never
				// opens a second copy.
				continue
			}
			found := ""
			for _, d := range dirs {
				if _, err := resolveIn(root, path.Join(d, lib)); err == nil {
					found = path.Join(d, lib)
					break
				}
			}
			if found == "" {
				return nil, fmt.Errorf("%s needs %s, found in none of %v under %s", p, lib, dirs, root)
			}
			if _, ok := needer[found]; !ok {
				needer[found] = p
			}
			queue = append(queue, found)
		}
	}
	out := make([]File, 0, len(files))
	for _, f := range files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// resolveIn returns the host path of the regular file at guest path p in
// the tree at root, following symbolic links in p's components and at its
// end (an absolute target is taken relative to root).
func resolveIn(root, p string) (string, error) {
	p = path.Clean("/" + p)
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := "/"
		relinked := false
		for i, part := range parts {
			next := path.Join(cur, part)
			st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(next)))
			if err != nil {
				return "", err
			}
			if st.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(next)))
				if err != nil {
					return "", err
				}
				if !path.IsAbs(target) {
					target = path.Join(cur, target)
				}
				p = path.Clean(path.Join(append([]string{target}, parts[i+1:]...)...))
				relinked = true
				break
			}
			cur = next
		}
		if relinked {
			continue
		}
		host := filepath.Join(root, filepath.FromSlash(p))
		st, err := os.Stat(host)
		if err != nil {
			return "", err
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s is not a regular file", p)
		}
		return host, nil
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}
