package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// FS is a directory of the target, read through a session. It implements
// fs.FS, fs.ReadFileFS, fs.ReadDirFS and fs.StatFS, each call one request
// (a listing of events/, read for a system's listing or a stat of a
// system or an event, is kept until this session writes something, and
// answers for the files of the events it does not list).
type FS struct {
	s   *Session
	dir string
}

// FS returns the target's directory dir (an absolute path).
func (s *Session) FS(dir string) *FS { return &FS{s: s, dir: path.Clean("/" + dir)} }

func (f *FS) abs(name string) string { return path.Join(f.dir, name) }

// Status codes of the read commands.
const (
	statusNotExist = 2
	statusIsDir    = 21
	statusNotDir   = 20
)

func (f *FS) pathErr(op, name string, err error) error {
	var ae *AnswerError
	if errors.As(err, &ae) {
		switch ae.Status {
		case statusNotExist:
			err = fs.ErrNotExist
		case statusIsDir:
			err = syscall.EISDIR
		case statusNotDir:
			err = syscall.ENOTDIR
		default:
			err = errnoOf(ae.Output, err)
		}
	}
	return &fs.PathError{Op: op, Path: f.abs(name), Err: err}
}

// ReadFile reads a file of the target whole.
func (f *FS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	if ok, _, known := f.s.listed(f.abs(name)); known && !ok {
		return nil, &fs.PathError{Op: "read", Path: f.abs(name), Err: fs.ErrNotExist}
	}
	p := emit.Quote(f.abs(name))
	read := "cat " + p + " 2>&1"
	if smallFile(name) {
		read = readBuiltin(p)
	}
	out, err := f.s.read(context.Background(), "reading "+f.abs(name),
		"if [ -d "+p+" ]; then Q 21; elif [ -e "+p+" ]; then "+read+"; else Q 2; fi")
	if err != nil {
		return nil, f.pathErr("read", name, err)
	}
	return []byte(out), nil
}

// smallFile reports whether a tracefs file holds a few lines at most (a
// trigger file, an enable): such a file is read with the shell's read
// builtin, which starts no process (a cat is a fork and an exec: under
// qemu's emulation about 20 ms, and a run checks its triggers every
// second).
func smallFile(name string) bool {
	switch path.Base(name) {
	case "trigger", "enable", "filter", "tracing_on", "buffer_size_kb", "id", "uptime":
		return true
	}
	return false
}

// readBuiltin is a command that prints the file p (quoted) byte for byte
// with builtins only: each line, then a last one without its newline.
func readBuiltin(p string) string {
	return "{ while IFS= read -r l; do P \"$l\"; done; [ -z \"$l\" ] || printf %s \"$l\"; } < " + p
}

// ReadDir lists a directory of the target, sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	if ents, ok := f.s.listing(f.abs(name)); ok {
		return ents, nil
	}
	p := emit.Quote(f.abs(name))
	out, err := f.s.read(context.Background(), "listing "+f.abs(name),
		"if [ -d "+p+" ]; then for f in "+p+"/* "+p+"/.[!.]*; do if [ -d \"$f\" ]; then P \"d${f##*/}\"; elif [ -e \"$f\" ]; then P \"f${f##*/}\"; fi; done; elif [ -e "+p+" ]; then Q 20; else Q 2; fi")
	if err != nil {
		return nil, f.pathErr("readdir", name, err)
	}
	return parseListing(out), nil
}

// parseListing reads "d<name>" and "f<name>" lines; anything else (a name
// with a newline, noise) is left out.
func parseListing(out string) []fs.DirEntry {
	var ents []fs.DirEntry
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if len(l) < 2 || (l[0] != 'd' && l[0] != 'f') || strings.ContainsRune(l[1:], '/') || l[1:] == "." || l[1:] == ".." || seen[l[1:]] {
			continue
		}
		seen[l[1:]] = true
		ents = append(ents, entry{name: l[1:], dir: l[0] == 'd'})
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents
}

// Stat says whether a path of the target is a directory, a file or
// missing.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if ok, isDir, known := f.s.listed(f.abs(name)); known {
		if !ok {
			return nil, &fs.PathError{Op: "stat", Path: f.abs(name), Err: fs.ErrNotExist}
		}
		return entry{name: path.Base(f.abs(name)), dir: isDir}, nil
	}
	p := emit.Quote(f.abs(name))
	out, err := f.s.read(context.Background(), "looking for "+f.abs(name),
		"if [ -d "+p+" ]; then printf d; elif [ -e "+p+" ]; then printf f; else Q 2; fi")
	if err != nil {
		return nil, f.pathErr("stat", name, err)
	}
	if out != "d" && out != "f" {
		return nil, &fs.PathError{Op: "stat", Path: f.abs(name), Err: errors.New("the target answered " + clip(out))}
	}
	return entry{name: path.Base(f.abs(name)), dir: out == "d"}, nil
}

// Open opens a file (read whole) or a directory (listed) of the target.
func (f *FS) Open(name string) (fs.File, error) {
	st, err := f.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		ents, err := f.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: st.(entry), ents: ents}, nil
	}
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &file{info: st.(entry), r: bytes.NewReader(data)}, nil
}

// Sub is the target's directory dir under f.
func (f *FS) Sub(dir string) (fs.FS, error) {
	if !fs.ValidPath(dir) {
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: fs.ErrInvalid}
	}
	return &FS{s: f.s, dir: f.abs(dir)}, nil
}

// entry is a file or directory of the target: only its name and kind
// are known.
type entry struct {
	name string
	dir  bool
}

func (e entry) Name() string { return e.name }
func (e entry) IsDir() bool  { return e.dir }
func (e entry) Type() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e entry) Info() (fs.FileInfo, error) { return e, nil }
func (e entry) Size() int64                { return 0 }
func (e entry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (e entry) ModTime() time.Time { return time.Time{} }
func (e entry) Sys() any           { return nil }

type file struct {
	info entry
	r    *bytes.Reader
}

// Stat says what the listing said: no size (tracefs has none either).
func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *file) Close() error               { return nil }

type dirFile struct {
	info entry
	ents []fs.DirEntry
	off  int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: syscall.EISDIR}
}
func (d *dirFile) Close() error { return nil }
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return rest[:n], nil
}

// events is the listing of a tracefs's events/ directory, read in one
// request: every system and every event of it. A write through the
// session drops it.
type events struct {
	mu   sync.Mutex
	dirs map[string]*eventTree // the events/ directory's path → its tree
}

type eventTree struct {
	systems map[string][]fs.DirEntry // system → its events (directories) and files
}

// eventsDir splits an absolute path into the events/ directory it is
// under (".../events") and the rest ("sched/sched_switch/format").
func eventsDir(p string) (dir, rest string, ok bool) {
	if strings.HasSuffix(p, "/events") && !strings.Contains(p, "/instances/") {
		return p, "", true
	}
	i := strings.LastIndex(p, "/events/")
	if i < 0 {
		return "", "", false
	}
	// Only a tracefs's own events/, which the event catalog reads: not an
	// instance's (a run reads a few of its files, a listing would cost
	// more), not a directory named events deeper in an event.
	dir, rest = p[:i+len("/events")], p[i+len("/events/"):]
	if strings.Count(rest, "/") > 2 || strings.Contains(dir, "/instances/") {
		return "", "", false
	}
	return dir, rest, true
}

// tree returns the listing of the events/ directory dir, reading it
// when it is not kept.
func (s *Session) tree(dir string) *eventTree {
	s.ev.mu.Lock()
	t, ok := s.ev.dirs[dir]
	s.ev.mu.Unlock()
	if ok {
		return t
	}
	p := emit.Quote(dir)
	out, err := s.read(context.Background(), "listing the events of "+dir,
		"if [ -d "+p+" ]; then for e in "+p+"/*/*; do if [ -d \"$e\" ]; then P \"d$e\"; elif [ -e \"$e\" ]; then P \"f$e\"; fi; done; for e in "+p+"/*/; do P \"d$e\"; done; else Q 2; fi")
	if err != nil {
		return nil
	}
	t = &eventTree{systems: map[string][]fs.DirEntry{}}
	for _, l := range strings.Split(out, "\n") {
		if len(l) < 2 || l[0] != 'd' && l[0] != 'f' {
			continue
		}
		rel, ok := strings.CutPrefix(l[1:], dir+"/")
		rel = strings.TrimSuffix(rel, "/")
		sys, name, two := strings.Cut(rel, "/")
		if !ok || sys == "" || strings.ContainsAny(rel, "*") {
			continue
		}
		if !two {
			if _, seen := t.systems[sys]; !seen && l[0] == 'd' {
				t.systems[sys] = nil
			}
			continue
		}
		if name == "" || strings.Contains(name, "/") {
			continue
		}
		t.systems[sys] = append(t.systems[sys], entry{name: name, dir: l[0] == 'd'})
	}
	s.ev.mu.Lock()
	if s.ev.dirs == nil {
		s.ev.dirs = map[string]*eventTree{}
	}
	s.ev.dirs[dir] = t
	s.ev.mu.Unlock()
	return t
}

// listed answers whether the path p exists, and is a directory, from
// the events/ listing: known is false when the listing does not tell (a
// path outside it, a file of an event other than its format). The
// listing is read for a system or an event; for a file of an event (a
// format, a trigger) only a listing already kept is asked. The event
// catalog finds events in available_events, and reads the formats of
// those it uses, a request each; a run's checks of its triggers,
// --teardown's look before each removal, and the planner's look for the
// run's own synthetic event (which is not there yet) would otherwise read
// the whole listing (85 KB on 6.1, about a second of a serial line).
func (s *Session) listed(p string) (ok, dir, known bool) {
	d, rest, isEv := eventsDir(p)
	if !isEv || rest == "" {
		return false, false, false
	}
	var t *eventTree
	if strings.Count(rest, "/") == 2 {
		s.ev.mu.Lock()
		t = s.ev.dirs[d]
		s.ev.mu.Unlock()
	} else {
		t = s.tree(d)
	}
	if t == nil || len(t.systems) == 0 {
		return false, false, false
	}
	parts := strings.Split(rest, "/")
	ents, hasSys := t.systems[parts[0]]
	if len(parts) == 1 {
		// A system, or one of the files in events/ (enable, header_page).
		if hasSys {
			return true, true, true
		}
		return false, false, false
	}
	if !hasSys {
		return false, false, true
	}
	i := slices.IndexFunc(ents, func(e fs.DirEntry) bool { return e.Name() == parts[1] })
	if i < 0 {
		return false, false, true
	}
	if len(parts) == 2 {
		return true, ents[i].IsDir(), true
	}
	if ents[i].IsDir() && len(parts) == 3 && parts[2] == "format" {
		return true, false, true // every event has its format
	}
	return false, false, false
}

// listing returns the entries of a system's directory from the events/
// listing.
func (s *Session) listing(p string) ([]fs.DirEntry, bool) {
	dir, rest, isEv := eventsDir(p)
	if !isEv || rest == "" || strings.Contains(rest, "/") {
		return nil, false
	}
	t := s.tree(dir)
	if t == nil {
		return nil, false
	}
	ents, ok := t.systems[rest]
	if !ok {
		return nil, false
	}
	ents = slices.Clone(ents)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, true
}

// forget drops the kept listings: the session wrote to the tracefs in a
// way that can add or remove events.
func (s *Session) forget() {
	s.ev.mu.Lock()
	s.ev.dirs = nil
	s.ev.mu.Unlock()
}
