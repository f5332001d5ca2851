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
	return w.do("writing to "+file, file, "write", cmd, w.appendCheck(file, line))
}

// Mkdir creates a directory (an instance).
func (w *Writer) Mkdir(dir string) error {
	p := emit.Quote(path.Join(w.Root, dir))
	return w.do("creating "+dir, dir, "mkdir", "mkdir "+p, existsCheck(p, true))
}

// Rmdir removes a directory (an instance).
func (w *Writer) Rmdir(dir string) error {
	p := emit.Quote(path.Join(w.Root, dir))
	return w.do("removing "+dir, dir, "rmdir", "rmdir "+p, existsCheck(p, false))
}

// A write whose answer the line lost is answered by the target's record
// of its status (Session.write); where the target keeps none, by reading
// back what it changes: these are the checks (see Session.RunChecked).
// A check that cannot tell leaves the write an error.

// existsCheck reads back a write that creates (made) or removes the
// path p (quoted).
func existsCheck(p string, made bool) string {
	yes, no := checkApplied, checkUnapplied
	if !made {
		yes, no = no, yes
	}
	return "if [ -e " + p + " ]; then P " + yes + "; else P " + no + "; fi"
}

// idempotentFile reports whether writing the same line to file twice
// leaves it as writing it once: a setting (an enable, a filter, an
// option), not an append (a trigger, a dynamic event, a marker).
func idempotentFile(file string) bool {
	switch path.Base(file) {
	case "enable", "tracing_on", "buffer_size_kb", "buffer_percent", "trace_clock", "filter", "current_tracer":
		return true
	}
	return path.Base(path.Dir(file)) == "options"
}

// appendCheck is the check of an append of line to file: a setting is
// written again (idempotentFile); a dynamic event (synthetic_events,
// dynamic_events, kprobe_events, uprobe_events) is there when its
// directory under events/ is; a trigger that names a variable is there
// when its trigger file lists the variable. Other appends have none.
func (w *Writer) appendCheck(file, line string) string {
	if idempotentFile(file) {
		return checkResend
	}
	switch path.Base(file) {
	case "synthetic_events", "dynamic_events", "kprobe_events", "uprobe_events":
		if dir, made, ok := dynamicEventDir(path.Base(file), line); ok {
			return existsCheck(emit.Quote(path.Join(w.Root, path.Dir(file), "events", dir)), made)
		}
	case "trigger":
		if v, made, ok := triggerVar(line); ok && !pauses(line) {
			p := emit.Quote(path.Join(w.Root, file))
			yes, no := checkApplied, checkUnapplied
			if !made {
				yes, no = no, yes
			}
			return "f=; while IFS= read -r l; do case $l in hist:*" + emit.Quote(":"+v+"=") + "*) f=1;; esac; done < " + p + "; if [ -n \"$f\" ]; then P " + yes + "; else P " + no + "; fi"
		}
	}
	return ""
}

// dynamicEventDir is the directory under events/ of the dynamic event a
// line of file defines or removes (made false): "synthetic/NAME" for
// synthetic_events' "NAME fields" and "!NAME", "GROUP/NAME" for
// "p:GROUP/NAME …" and "-:GROUP/NAME" (s:NAME is synthetic/NAME).
func dynamicEventDir(file, line string) (dir string, made, ok bool) {
	line = strings.TrimSpace(line)
	if strings.Contains(line, "\n") {
		return "", false, false // several definitions at once
	}
	if file == "synthetic_events" {
		made = !strings.HasPrefix(line, "!")
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "!"), " ")
		name, _, _ = strings.Cut(name, "\t")
		if !validName(name) {
			return "", false, false
		}
		return "synthetic/" + name, made, true
	}
	head, _, _ := strings.Cut(line, " ")
	kind, id, found := strings.Cut(head, ":")
	if !found || kind == "" {
		return "", false, false
	}
	made = kind != "-"
	group, name, two := strings.Cut(id, "/")
	if !two {
		if kind != "s" {
			return "", false, false // the kernel's default group: not named here
		}
		group, name = "synthetic", id
	}
	if !validName(group) || !validName(name) {
		return "", false, false
	}
	return group + "/" + name, made, true
}

// triggerVar is the first variable a hist trigger (or its removal, made
// false) assigns: only what this trigger's listing shows.
func triggerVar(line string) (v string, made, ok bool) {
	line = strings.TrimSpace(line)
	made = !strings.HasPrefix(line, "!")
	spec, _, _ := strings.Cut(strings.TrimPrefix(line, "!"), " if ")
	if !strings.HasPrefix(spec, "hist:") {
		return "", false, false
	}
	for _, seg := range strings.Split(spec, ":")[1:] {
		name, val, found := strings.Cut(seg, "=")
		switch name {
		case "keys", "key", "vals", "values", "sort", "size", "name", "clock":
			continue
		}
		if found && validName(name) && val != "" {
			return name, made, true
		}
	}
	return "", false, false
}

// pauses reports whether a hist trigger line pauses, continues or clears
// a trigger that is there: its listing is there either way.
func pauses(line string) bool {
	spec, _, _ := strings.Cut(line, " if ")
	for _, seg := range strings.Split(spec, ":") {
		switch seg {
		case "pause", "cont", "continue", "clear":
			return true
		}
	}
	return false
}

// validName reports whether s is a tracefs name: letters, digits, "_".
func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

func (w *Writer) do(step, file, op, cmd, check string) error {
	if op != "write" || structural(file) {
		w.s.forget()
	}
	_, err := w.s.write(context.Background(), step, cmd, check)
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
