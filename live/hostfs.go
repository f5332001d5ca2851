package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/mattn/go-isatty"
)

// OpenDir opens the directory p of this machine.
func OpenDir(p string) (fs.FS, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", p)
	}
	return newTracefsDir(p), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// CacheDir is sqlhist's directory in the user's cache directory
// ($SQLHIST_CACHE_DIR when set), or "" when there is none.
func CacheDir() string {
	if d := os.Getenv("SQLHIST_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sqlhist")
}

// ReplaceFile writes data to a temporary file next to path and renames
// it over path, keeping path's permissions: a reader sees the old file or
// the new one, never a part.
func ReplaceFile(path string, data []byte) (err error) {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sqlhist-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// tracefsDir is os.DirFS(root) whose ReadFile reads in reads of
// readChunk: tracefs files report no size, and os.ReadFile's reads then
// start at 512 bytes and grow, so that available_events (37 KB in Debian's
// 6.1, 70 KB in a 6.18) took 25 reads, each of which walks the kernel's
// event list again from its start to where the last one stopped.
type tracefsDir struct{ dir fs.FS }

// readChunk is the size of tracefsDir's reads.
const readChunk = 64 << 10

var readChunks = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

func newTracefsDir(root string) fs.FS { return tracefsDir{os.DirFS(root)} }

func (d tracefsDir) Open(name string) (fs.File, error) { return d.dir.Open(name) }

func (d tracefsDir) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.dir, name) }

func (d tracefsDir) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.dir, name) }

func (d tracefsDir) ReadFile(name string) ([]byte, error) {
	f, err := d.dir.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bp := readChunks.Get().(*[]byte)
	defer readChunks.Put(bp)
	out := []byte{}
	for {
		n, err := f.Read(*bp)
		out = append(out, (*bp)[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, &fs.PathError{Op: "read", Path: name, Err: unwrapPath(err)}
		}
	}
}

// unwrapPath is the error under a *fs.PathError (whose path is the
// file's full one), else err.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
