package vm

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostFixture copies a dynamically linked host program and the libraries
// it loads into a tree laid out like Debian's packages (libraries in
// lib/<triplet>, the loader behind lib64's symbolic link as libc6 amd64
// has it), so that ELFClosure can be tested with no network. It skips on
// a host that is not x86-64 glibc Debian-like.
func hostFixture(t *testing.T) (root string) {
	t.Helper()
	const triplet = "x86_64-linux-gnu"
	prog := "/bin/true"
	f, err := elf.Open(prog)
	if err != nil {
		t.Skipf("fixture: %v", err)
	}
	needed, _ := f.ImportedLibraries()
	f.Close()
	if len(needed) == 0 {
		t.Skipf("fixture: %s is not dynamically linked here", prog)
	}
	root = t.TempDir()
	cp := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Skipf("fixture: %v", err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp(prog, filepath.Join(root, "usr/sbin/prog"))
	for _, lib := range needed {
		cp(filepath.Join("/lib", triplet, lib), filepath.Join(root, "lib", triplet, lib+".real"))
		// A library reached through a relative link, as libelf.so.1 is.
		if err := os.Symlink(lib+".real", filepath.Join(root, "lib", triplet, lib)); err != nil {
			t.Fatal(err)
		}
	}
	cp("/lib/"+triplet+"/ld-linux-x86-64.so.2", filepath.Join(root, "lib", triplet, "ld-linux-x86-64.so.2"))
	os.MkdirAll(filepath.Join(root, "lib64"), 0o755)
	// An absolute link, taken relative to the tree, as libc6 ships it.
	if err := os.Symlink("/lib/"+triplet+"/ld-linux-x86-64.so.2", filepath.Join(root, "lib64", "ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestELFClosure(t *testing.T) {
	root := hostFixture(t)
	files, err := ELFClosure(root, "x86_64-linux-gnu", []string{"/usr/sbin/prog"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range files {
		got[f.Path] = len(f.Data)
	}
	for _, want := range []string{"/usr/sbin/prog", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"} {
		if got[want] == 0 {
			t.Errorf("closure lacks %s (or it is empty): %v", want, got)
		}
	}
	if got["/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"] != 0 {
		t.Errorf("the loader is there twice (at PT_INTERP and in /lib/x86_64-linux-gnu): %v", got)
	}
	if len(files) != len(got) {
		t.Errorf("duplicate paths in %v", got)
	}
	// The library's content, not the link: an ELF file.
	for _, f := range files {
		if !strings.HasPrefix(string(f.Data), "\x7fELF") {
			t.Errorf("%s is not an ELF file (%d bytes)", f.Path, len(f.Data))
		}
	}

	// A missing library is an error that names it and who needs it.
	os.Remove(filepath.Join(root, "lib/x86_64-linux-gnu/libc.so.6.real"))
	_, err = ELFClosure(root, "x86_64-linux-gnu", []string{"/usr/sbin/prog"})
	if err == nil || !strings.Contains(err.Error(), "libc.so.6") || !strings.Contains(err.Error(), "/usr/sbin/prog") {
		t.Errorf("missing libc: err = %v, want one naming libc.so.6 and /usr/sbin/prog", err)
	}
}

func TestResolveInLoop(t *testing.T) {
	root := t.TempDir()
	os.Symlink("b", filepath.Join(root, "a"))
	os.Symlink("/a", filepath.Join(root, "b"))
	if _, err := resolveIn(root, "/a"); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Errorf("link loop: err = %v", err)
	}
}

// TestBPFToolFiles fetches Debian bookworm's libbpf-tools for amd64 and
// arm64 (network, only with SQLHIST_E2E=1 unless already cached) and checks
// the closure: each tool, libelf, zlib, libc and the loader at the tools'
// PT_INTERP; a second call must come from the cache (well under a second).
func TestBPFToolFiles(t *testing.T) {
	cache, err := CacheDir()
	if err != nil {
		t.Skip(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			if !bpfToolsCached(filepath.Join(cache, "bpftools", arch, "bpftools.json")) && os.Getenv("SQLHIST_E2E") != "1" {
				t.Skip("libbpf-tools not cached: set SQLHIST_E2E=1 to download it (network)")
			}
			old := Logf
			Logf = t.Logf
			t.Cleanup(func() { Logf = old })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			files, err := BPFToolFiles(ctx, arch)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			again, err := BPFToolFiles(ctx, arch)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 2*time.Second || len(again) != len(files) {
				t.Errorf("second call: %v, %d files (first %d): not from the cache?", d, len(again), len(files))
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Path)
				t.Logf("%s %d bytes", f.Path, len(f.Data))
			}
			all := strings.Join(names, " ")
			want := []string{"libelf.so.1", "libz.so.1", "libc.so.6", "ld-linux-"}
			for _, tool := range BPFTools {
				want = append(want, "/usr/sbin/"+tool)
			}
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("no %s in %v", w, names)
				}
			}
		})
	}
}
