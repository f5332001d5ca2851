package tracefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Writer applies one command: it appends line to the tracefs file named by
// file (a path relative to the tracefs root). Every write is an append,
// never a truncation: truncating a trigger file or dynamic_events removes
// what is already there.
type Writer interface {
	Append(file, line string) error
	// Mkdir creates the directory dir (an instance: "instances/NAME").
	Mkdir(dir string) error
	// Rmdir removes the directory dir, which the kernel refuses while
	// anything in it is in use.
	Rmdir(dir string) error
}

// DirWriter writes into a tracefs mounted at Root.
type DirWriter struct{ Root string }

// Append opens Root/file with O_APPEND and writes line plus a newline in a
// single write call, as the kernel wants one command per write.
func (w DirWriter) Append(file, line string) error {
	p := filepath.Join(w.Root, filepath.FromSlash(file))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(line + "\n"))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// Mkdir creates Root/dir; in tracefs, mkdir under instances/ creates a
// trace instance.
func (w DirWriter) Mkdir(dir string) error {
	return os.Mkdir(filepath.Join(w.Root, filepath.FromSlash(dir)), 0o755)
}

// Rmdir removes Root/dir (an instance, with everything in it).
func (w DirWriter) Rmdir(dir string) error {
	return os.Remove(filepath.Join(w.Root, filepath.FromSlash(dir)))
}

// Recorder is a [Writer] for tests: it records every write and can be told
// to fail a given write.
type Recorder struct {
	Writes []string // "file: line"
	// FailAt makes the write with this 1-based number fail; 0 never fails.
	FailAt int

	n int
}

// Append records the write.
func (r *Recorder) Append(file, line string) error {
	r.n++
	if r.n == r.FailAt {
		return fmt.Errorf("write %s: injected failure", file)
	}
	r.Writes = append(r.Writes, file+": "+line)
	return nil
}

// Mkdir records "mkdir: dir".
func (r *Recorder) Mkdir(dir string) error { return r.Append("mkdir", dir) }

// Rmdir records "rmdir: dir".
func (r *Recorder) Rmdir(dir string) error { return r.Append("rmdir", dir) }

// String returns the recorded writes, one per line.
func (r *Recorder) String() string { return strings.Join(r.Writes, "\n") }
