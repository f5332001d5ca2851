package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/sqlhist/sqlhist/tracefs"
)

// Target is a tracefs to apply commands to and read results from.
type Target struct {
	// Root is the tracefs mount point, for trace_pipe and for messages.
	Root string
	// FS reads the tracefs (error_log, hist files, instances/, the event
	// formats); W writes to it.
	FS fs.FS
	W  tracefs.Writer
	// OpenPipe opens a trace_pipe (a path under Root) for blocking reads;
	// Close must end a read that waits. Nil means the machine's.
	OpenPipe func(path string) (io.ReadCloser, error)
	// Beat makes a run keep a heartbeat (see [BeatName]): set when the
	// run's process is not on the target (sqlhist --via), where its
	// process id tells nothing.
	Beat bool
	// Uptime returns the target's seconds since boot, the clock of
	// heartbeats; nil reads this machine's /proc/uptime.
	Uptime func() (float64, error)
	// ReadRaw reads the ring-buffer pages each per-CPU directory of dirs
	// (relative to Root) holds now, without waiting, for the stream
	// engine; nil reads this machine's trace_pipe_raw files.
	ReadRaw func(dirs []string, pageSize int) ([][]byte, error)
	// Symbols names kernel addresses from the target's /proc/kallsyms;
	// nil reads this machine's.
	Symbols func(addrs []uint64) (map[uint64]Sym, error)
	// Local says that Root is a directory of this machine (see [Dir]):
	// the BPF engine may attach this process's programs to its events.
	Local bool
}

// Dir returns the tracefs mounted at root on this machine. It does not
// check that one is there: see [Find].
func Dir(root string) *Target {
	return &Target{Root: root, FS: newTracefsDir(root), W: tracefs.DirWriter{Root: root}, Local: true}
}

// ErrNoTracefs is returned by Find when there is no tracefs to use: none
// is mounted. ErrNotPermitted is returned when one is there but this
// process (or the target's shell) may not read it: not root.
var (
	ErrNoTracefs    = errors.New("no tracefs")
	ErrNotPermitted = errors.New("tracefs not readable")
)

// Find returns the tracefs at root, or, when root holds none and
// searchMounts is set, the first tracefs that mounts (the text of
// /proc/mounts) lists. sqlhist never mounts one. dir opens a directory of
// the machine (os.DirFS for the real one). When none is found, the error
// tells a tracefs that is not mounted (ErrNoTracefs, with the mount
// command) from one this user may not read (ErrNotPermitted: tracefs is
// root's).
func Find(root string, searchMounts bool, mounts string, dir func(string) (fs.FS, error)) (string, error) {
	if HasEvents(dir, root) {
		return root, nil
	}
	var mounted []string
	for _, l := range strings.Split(mounts, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[2] == "tracefs" {
			mounted = append(mounted, f[1])
		}
	}
	if searchMounts {
		for _, m := range mounted {
			if HasEvents(dir, m) {
				return m, nil
			}
		}
	}
	denied := permissionDenied(dir, root)
	for _, m := range mounted {
		denied = denied || m == root || searchMounts && permissionDenied(dir, m)
	}
	if denied {
		return "", fmt.Errorf("%w: the tracefs at %s cannot be read: permission denied (tracefs is root's: run sqlhist as root, sudo sqlhist …; printing needs no tracefs with --kernel VERSION)", ErrNotPermitted, root)
	}
	return "", fmt.Errorf("%w at %s: it is not mounted (sqlhist does not mount it); as root: mount -t tracefs nodev %s", ErrNoTracefs, root, root)
}

// permissionDenied reports whether reading the events/ of the tracefs
// at root is refused for want of permission.
func permissionDenied(dir func(string) (fs.FS, error), root string) bool {
	fsys, err := dir(root)
	if err == nil {
		_, err = fs.Stat(fsys, "events")
	}
	return errors.Is(err, fs.ErrPermission)
}

// HasEvents reports whether dir opens a directory holding events/.
func HasEvents(dir func(string) (fs.FS, error), root string) bool {
	fsys, err := dir(root)
	if err != nil {
		return false
	}
	_, err = fs.Stat(fsys, "events")
	return err == nil
}

// Access reports whether this process may write to the file at p, with
// access(2).
func Access(p string) error {
	if err := accessW(p); err != nil {
		return &fs.PathError{Op: "access", Path: p, Err: err}
	}
	return nil
}

// Writable reports why this process cannot write to the tracefs at root
// (not root, a read-only mount), or nil, before anything is written. It
// asks access (nil: [Access]) about the file that defines events.
func Writable(root string, access func(path string) error) error {
	if access == nil {
		access = Access
	}
	for _, f := range []string{"dynamic_events", "synthetic_events"} {
		err := access(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot write to the tracefs at %s: %v (run as root)", root, errnoText(err))
		}
		return nil
	}
	return nil
}

// HasInstance reports whether the tracefs has the instance name.
func (t *Target) HasInstance(name string) bool {
	if t.FS == nil {
		return false
	}
	_, err := fs.Stat(t.FS, path.Join("instances", name))
	return err == nil
}

// openPipe opens trace_pipe with OpenPipe, or the machine's.
func (t *Target) openPipe(p string) (io.ReadCloser, error) {
	if t.OpenPipe != nil {
		return t.OpenPipe(p)
	}
	return osPipe(p)
}
