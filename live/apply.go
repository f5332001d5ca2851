package live

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ApplyError is a write the kernel refused, with the kernel's own reason
// when the write left one in error_log.
type ApplyError struct {
	Root    string       // the tracefs written to
	Command emit.Command // the refused command (its Pos and End are in the SQL)
	Err     error        // the write's error (EINVAL, ENOENT, …)
	Kernel  []tracefs.ErrorLogEntry
	// Undo holds the failures, if any, of undoing the writes made before
	// the refused one. Empty means tracefs is as it was.
	Undo []error
}

func (e *ApplyError) Error() string {
	if len(e.Kernel) > 0 {
		return fmt.Sprintf("the kernel refused the %s: %s", e.Command.What, e.Kernel[len(e.Kernel)-1].Error)
	}
	return fmt.Sprintf("the kernel refused the %s: %v", e.Command.What, errnoText(e.Err))
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Diag is the error at the SQL that produced the command, with the
// kernel's error_log entries (or the write itself) as the hint.
func (e *ApplyError) Diag() *source.Diag {
	d := &source.Diag{Pos: e.Command.Pos, End: e.Command.End, Msg: e.Error()}
	if len(e.Kernel) == 0 {
		d.Hint = fmt.Sprintf("writing %s to %s", emit.Quote(e.Command.Line), filepath.Join(e.Root, e.Command.File))
		return d
	}
	var b strings.Builder
	b.WriteString("the kernel's error_log:")
	for _, k := range e.Kernel {
		fmt.Fprintf(&b, "\n  %s: error: %s\n    Command: %s", k.Location, k.Error, k.Command)
		if k.Offset >= 0 {
			fmt.Fprintf(&b, "\n             %s^", strings.Repeat(" ", k.Offset))
		}
	}
	d.Hint = b.String()
	return d
}

// Apply writes the commands in order, all or nothing: on the first
// refused write it undoes the writes already made, in reverse, and
// returns an *ApplyError with the kernel's reason (the error_log entries
// that write added).
func Apply(t *Target, cmds []emit.Command) error {
	if len(cmds) == 0 {
		return nil
	}
	// A write that succeeds adds nothing to error_log: read it once, and
	// again only after a failure, to find that failure's entries.
	before := t.errorLog()
	for i, c := range cmds {
		err := t.write(c.Kind, c.File, c.Line)
		if err == nil {
			continue
		}
		ae := &ApplyError{Root: t.Root, Command: c, Err: err, Kernel: tracefs.NewEntries(before, t.errorLog())}
		for j := i - 1; j >= 0; j-- {
			if uerr := t.write(cmds[j].Kind, cmds[j].File, cmds[j].Undo); uerr != nil {
				ae.Undo = append(ae.Undo, fmt.Errorf("undoing the %s: %w", cmds[j].What, uerr))
			}
		}
		return ae
	}
	return nil
}

// Teardown makes the removal commands (emit.Teardown's) in order. It goes
// on past what is already gone, so it can be repeated, and past other
// failures, which it returns joined, each an *ApplyError.
func Teardown(t *Target, cmds []emit.Command) error {
	_, err := teardown(t, cmds, false)
	return err
}

// TeardownSkipped is Teardown that also returns the removals that found
// nothing to remove: what an -e killed or refused part way never made, or
// what was removed already. A removal is among them when its write fails
// with ENOENT, or when the listing of its file (dynamic_events, a trigger
// file) did not show what it removes before the write: the kernel accepts
// the removal of a hist trigger that does not exist. A disable (a write
// of 0 to an enable file, emit.DisableFirst) is never among them: the
// event's removal is.
func TeardownSkipped(t *Target, cmds []emit.Command) ([]emit.Command, error) {
	return teardown(t, cmds, true)
}

func teardown(t *Target, cmds []emit.Command, look bool) ([]emit.Command, error) {
	if len(cmds) == 0 {
		return nil, nil // no write: no error_log to read (a BPF run's stop)
	}
	var errs []error
	var skipped []emit.Command
	before := t.errorLog()
	for _, c := range cmds {
		absent := look && c.Kind != emit.KindEnable && t.gone(c)
		err := t.write(c.Kind, c.File, c.Line)
		if err == nil || errors.Is(err, fs.ErrNotExist) || absent || t.gone(c) {
			if (err != nil || absent) && c.Kind != emit.KindEnable {
				skipped = append(skipped, c)
			}
			continue
		}
		after := t.errorLog()
		errs = append(errs, &ApplyError{Root: t.Root, Command: c, Err: err, Kernel: tracefs.NewEntries(before, after)})
		before = after
	}
	return skipped, errors.Join(errs...)
}

// write makes one command's write: an append, or an instance's mkdir or
// rmdir.
func (t *Target) write(k emit.Kind, file, line string) error {
	if k == emit.KindDir {
		if line == "mkdir" {
			return t.W.Mkdir(file)
		}
		return t.W.Rmdir(file)
	}
	return t.W.Append(file, line)
}

// gone reports whether what a removal command removes is no longer listed
// in its file. Removing a join trigger whose variables are already gone
// fails while parsing (EINVAL), not with ENOENT, so a teardown asks the
// listing instead.
func (t *Target) gone(c emit.Command) bool {
	if t.FS == nil || c.Marker == "" {
		return false
	}
	data, err := fs.ReadFile(t.FS, c.File)
	if err != nil {
		return false // cannot tell: report the failure
	}
	return !strings.Contains(tracefs.RepairListing(string(data)), c.Marker)
}

// errorLog reads the kernel's error_log, if there is one.
func (t *Target) errorLog() []tracefs.ErrorLogEntry {
	if t.FS == nil {
		return nil
	}
	data, err := fs.ReadFile(t.FS, "error_log")
	if err != nil {
		return nil
	}
	return tracefs.ParseErrorLog(string(data))
}

// errnoText is the system's message for a failed write, without the path.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
