package vm

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCacheUsageAndClean: the cache is $SQLHIST_CACHE_DIR; its usage lists
// each kernel, build and apt state with its size (locks left out), and
// CleanCache empties it, keeping the lock files, and says what it freed.
func TestCacheUsageAndClean(t *testing.T) {
	root := t.TempDir()
	t.Setenv("SQLHIST_CACHE_DIR", root)
	if d, err := CacheDir(); err != nil || d != filepath.Join(root, "kernels") {
		t.Fatalf("CacheDir = %q, %v", d, err)
	}
	files := map[string]int{
		"kernels/6.1/vmlinuz": 100, "kernels/6.1/kernel.json": 10,
		"kernels/apt/bookworm/lists/x": 7, "kernels/built/5.10-hist/v-abc/bzImage": 50,
		"kernels/built/sources/linux-source.deb": 1000, "kernels/.lock": 0, "kernels/built/5.10-hist/.lock": 0,
	}
	for p, n := range files {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, entries, err := CacheUsage()
	if err != nil || got != root {
		t.Fatalf("CacheUsage: %q, %v", got, err)
	}
	want := []CacheEntry{{"kernels/6.1", 110}, {"kernels/apt/bookworm", 7}, {"kernels/built/5.10-hist", 50}, {"kernels/built/sources", 1000}}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("usage:\n got %v\nwant %v", entries, want)
	}
	_, freed, err := CleanCache()
	if err != nil || freed != 1167 {
		t.Fatalf("CleanCache freed %d, %v", freed, err)
	}
	if _, entries, _ := CacheUsage(); len(entries) != 0 {
		t.Errorf("after CleanCache: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(root, "kernels", ".lock")); err != nil {
		t.Errorf("the cache-wide lock file went: %v", err)
	}
}
