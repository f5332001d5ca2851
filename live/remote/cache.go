package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/emit"
)

// CachedFS is a target's tracefs for the event catalog: what it reads
// (formats, README, listings) is kept on this machine, in a file named
// after the target's release, boot and the checksum of its
// available_events, so that the next compile against the same target
// reads nothing but that checksum. An event created or removed changes
// the checksum; a reboot the boot id. Only for reading formats: a
// histogram or anything that changes while a run goes is read with FS.
type CachedFS struct {
	remote *FS
	file   string // "" keeps nothing
	mu     sync.Mutex
	data   cacheData
	dirty  bool
}

type cacheData struct {
	Files map[string][]byte       `json:"files"`
	Stats map[string]string       `json:"stats"` // "d", "f" or "-" (missing)
	Dirs  map[string][]cachedDirE `json:"dirs"`
}

type cachedDirE struct {
	Name string `json:"n"`
	Dir  bool   `json:"d,omitempty"`
}

// CachedFS returns the tracefs at root for the catalog, kept under dir
// (the user's cache directory); with dir "" or a checksum that cannot be
// read, it keeps nothing across runs.
func (s *Session) CachedFS(root, dir string) *CachedFS {
	c := &CachedFS{remote: s.FS(root), data: cacheData{Files: map[string][]byte{}, Stats: map[string]string{}, Dirs: map[string][]cachedDirE{}}}
	if dir == "" || s.Info.BootID == "" || s.Info.BootID == "-" {
		return c
	}
	// cksum is in toybox and coreutils, not in every busybox: md5sum is.
	sum, err := s.read(context.Background(), "checksumming available_events",
		"f="+emit.Quote(root+"/available_events")+"; cksum < \"$f\" 2>/dev/null || md5sum < \"$f\" 2>/dev/null || sha1sum < \"$f\"")
	if err != nil || strings.TrimSpace(sum) == "" {
		return c
	}
	h := sha256.Sum256([]byte(s.Info.Release + "\x00" + s.Info.Machine + "\x00" + s.Info.BootID + "\x00" + root + "\x00" + sum))
	c.file = filepath.Join(dir, "target-"+hex.EncodeToString(h[:12])+".json")
	if b, err := os.ReadFile(c.file); err == nil {
		var d cacheData
		if json.Unmarshal(b, &d) == nil && d.Files != nil && d.Stats != nil && d.Dirs != nil {
			c.data = d
		}
	}
	return c
}

// Open opens through the kept answers.
func (c *CachedFS) Open(name string) (fs.File, error) {
	return fs.FS(fsAdapter{c}).Open(name)
}

// ReadFile reads a file, from the cache when it holds it.
func (c *CachedFS) ReadFile(name string) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.data.Files[name]
	st := c.data.Stats[name]
	c.mu.Unlock()
	if ok {
		return append([]byte(nil), b...), nil
	}
	if st == "-" {
		return nil, &fs.PathError{Op: "read", Path: c.remote.abs(name), Err: fs.ErrNotExist}
	}
	b, err := c.remote.ReadFile(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.data.Files[name], c.dirty = b, true
	case errors.Is(err, fs.ErrNotExist):
		c.data.Stats[name], c.dirty = "-", true
	}
	return b, err
}

// Stat says what is at name, from the cache when it knows.
func (c *CachedFS) Stat(name string) (fs.FileInfo, error) {
	c.mu.Lock()
	st := c.data.Stats[name]
	_, file := c.data.Files[name]
	c.mu.Unlock()
	switch {
	case st == "-":
		return nil, &fs.PathError{Op: "stat", Path: c.remote.abs(name), Err: fs.ErrNotExist}
	case st == "d" || st == "f":
		return entry{name: baseName(name), dir: st == "d"}, nil
	case file:
		return entry{name: baseName(name)}, nil
	}
	info, err := c.remote.Stat(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil && info.IsDir():
		c.data.Stats[name], c.dirty = "d", true
	case err == nil:
		c.data.Stats[name], c.dirty = "f", true
	case errors.Is(err, fs.ErrNotExist):
		c.data.Stats[name], c.dirty = "-", true
	}
	return info, err
}

// ReadDir lists a directory, from the cache when it holds it.
func (c *CachedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.mu.Lock()
	d, ok := c.data.Dirs[name]
	c.mu.Unlock()
	if ok {
		ents := make([]fs.DirEntry, len(d))
		for i, e := range d {
			ents[i] = entry{name: e.Name, dir: e.Dir}
		}
		return ents, nil
	}
	ents, err := c.remote.ReadDir(name)
	if err == nil {
		d := make([]cachedDirE, len(ents))
		for i, e := range ents {
			d[i] = cachedDirE{Name: e.Name(), Dir: e.IsDir()}
		}
		c.mu.Lock()
		c.data.Dirs[name], c.dirty = d, true
		c.mu.Unlock()
	}
	return ents, err
}

// Save writes what was read to the cache file, when there is one and
// something new was read. A failure only costs the next run a read.
func (c *CachedFS) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == "" || !c.dirty {
		return nil
	}
	b, err := json.Marshal(c.data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.file), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(c.file), filepath.Base(c.file)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	f.Close()
	c.dirty = false
	return os.Rename(f.Name(), c.file)
}

// fsAdapter opens files of a CachedFS with its ReadFile, Stat and
// ReadDir.
type fsAdapter struct{ c *CachedFS }

func (a fsAdapter) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	st, err := a.c.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		ents, err := a.c.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: entry{name: st.Name(), dir: true}, ents: ents}, nil
	}
	data, err := a.c.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &file{info: entry{name: st.Name()}, r: bytes.NewReader(data)}, nil
}

func baseName(name string) string {
	if name == "." {
		return "."
	}
	return filepath.Base(name)
}
