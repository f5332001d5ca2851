package vm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// CacheEntry is one top-level entry of the cache and its size on disk.
type CacheEntry struct {
	Path  string // relative to CacheRoot: kernels/6.1, kernels/built/5.10-hist, kernels/apt/bookworm …
	Bytes int64
}

// CacheUsage lists what the cache holds, one entry per kernel, build,
// apt state and busybox, sorted by path, with the cache's root.
func CacheUsage() (root string, entries []CacheEntry, err error) {
	root, err = CacheRoot()
	if err != nil {
		return "", nil, err
	}
	// Entries are two levels down where a directory groups them.
	groups := map[string]bool{"kernels": true, "kernels/built": true, "kernels/apt": true, "kernels/busybox": true}
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Name() == ".lock" {
				continue
			}
			p := filepath.Join(rel, e.Name())
			if e.IsDir() && groups[filepath.ToSlash(p)] {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			n, err := diskUsage(filepath.Join(root, p))
			if err != nil {
				return err
			}
			entries = append(entries, CacheEntry{filepath.ToSlash(p), n})
		}
		return nil
	}
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return root, nil, nil
	}
	if err := walk("."); err != nil {
		return root, nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return root, entries, nil
}

func diskUsage(path string) (int64, error) {
	var n int64
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// CleanCache empties the cache. It waits for the cache-wide lock, so it
// does not pull a download from under a run; a build in progress holds
// only its kernel's lock and fails when its tree goes away, as a build
// does when the disk is full: its kernel is built again next time.
func CleanCache() (root string, freed int64, err error) {
	root, entries, err := CacheUsage()
	if err != nil {
		return root, 0, err
	}
	for _, e := range entries {
		freed += e.Bytes
	}
	kernels := filepath.Join(root, "kernels")
	if _, err := os.Stat(kernels); err == nil {
		unlock, err := lockFile(filepath.Join(kernels, ".lock"))
		if err != nil {
			return root, 0, err
		}
		defer unlock()
	}
	ents, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return root, 0, nil
	}
	if err != nil {
		return root, 0, err
	}
	for _, e := range ents {
		if err := removeAllButLock(filepath.Join(root, e.Name())); err != nil {
			return root, freed, fmt.Errorf("emptying %s: %w", root, err)
		}
	}
	return root, freed, nil
}

// removeAllButLock removes a tree, keeping a directory's .lock (held by
// whoever calls CleanCache, or by a run waiting on it).
func removeAllButLock(path string) error {
	info, err := os.Lstat(path)
	if err != nil || !info.IsDir() {
		return os.RemoveAll(path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == ".lock" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
