package remote

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/sqlhist/sqlhist/emit"
)

// Writer writes to the target's tracefs at Root: each command is the
// line a printed script has for it (emit.Line), run by the target's shell.
type Writer struct {
	s    *Session
	Root string
}

// Writer returns a tracefs.Writer for the target's tracefs at root.
func (s *Session) Writer(root string) *Writer { return &Writer{s: s, Root: root} }

// Append appends line to the file, in one write.
func (w *Writer) Append(file, line string) error {
	cmd := emit.Line(emit.Command{File: file, Line: line}, w.Root)
	return w.do("writing to "+file, file, "write", cmd)
}

// Mkdir creates a directory (an instance).
func (w *Writer) Mkdir(dir string) error {
	return w.do("creating "+dir, dir, "mkdir", "mkdir "+emit.Quote(path.Join(w.Root, dir)))
}

// Rmdir removes a directory (an instance).
func (w *Writer) Rmdir(dir string) error {
	return w.do("removing "+dir, dir, "rmdir", "rmdir "+emit.Quote(path.Join(w.Root, dir)))
}

func (w *Writer) do(step, file, op, cmd string) error {
	if op != "write" || structural(file) {
		w.s.forget()
	}
	_, err := w.s.request(context.Background(), step, cmd)
	if err == nil {
		return nil
	}
	var ae *AnswerError
	if errors.As(err, &ae) {
		err = errnoOf(ae.Output, err)
	}
	return &fs.PathError{Op: op, Path: path.Join(w.Root, file), Err: err}
}

// structural reports whether a write to file can add or remove events
// (the files that define dynamic events); a trigger, an enable or a
// trace_marker write cannot.
func structural(file string) bool {
	switch path.Base(file) {
	case "dynamic_events", "synthetic_events", "kprobe_events", "uprobe_events":
		return true
	}
	return false
}

// errnos are the errors a shell reports for a refused tracefs write or a
// mkdir, by the C library's message for them.
var errnos = []syscall.Errno{
	syscall.EINVAL, syscall.ENOENT, syscall.EEXIST, syscall.EBUSY, syscall.ENOSPC, syscall.ENOMEM,
	syscall.EACCES, syscall.EPERM, syscall.ENODEV, syscall.E2BIG, syscall.ENOTDIR, syscall.EISDIR,
	syscall.EROFS, syscall.ENOTEMPTY, syscall.ENAMETOOLONG, syscall.ENOSYS, syscall.EFAULT, syscall.EAGAIN,
	syscall.EIO,
}

// errnoOf finds the error the shell's message names ("sh: write error:
// Invalid argument", "mkdir: can't create directory 'x': File exists");
// def when it names none of errnos.
func errnoOf(msg string, def error) error {
	low := strings.ToLower(msg)
	if strings.Contains(low, "nonexistent directory") || strings.Contains(low, "directory nonexistent") {
		return syscall.ENOENT // busybox ash's and dash's own words
	}
	for _, e := range errnos {
		if strings.Contains(low, e.Error()) {
			return e
		}
	}
	return def
}
