package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sqlhist/sqlhist/live/remote"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Host is everything a command touches outside itself: its standard
// streams, the machine (or, with --via, the target) it reaches, and the
// clock. ThisMachine is the running one; tests replace each part.
type Host struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Dir            func(path string) (fs.FS, error)  // a directory: tracefs, --formats, /proc/PID
	ReadFile       func(path string) ([]byte, error) // -f FILE
	Writer         func(root string) tracefs.Writer  // writes under a tracefs (-e, -r, --cleanup)
	Mounts         func() ([]byte, error)            // /proc/mounts, to find tracefs
	// Signals delivers SIGINT, SIGTERM and SIGHUP while -r collects; the
	// function it returns stops the delivery.
	Signals  func() (<-chan os.Signal, func())
	After    func(time.Duration) <-chan time.Time           // time.After, for -d
	Tick     func(time.Duration) (<-chan time.Time, func()) // a ticker for -i; nil: time.NewTicker
	Pipe     func(path string) (io.ReadCloser, error)       // trace_pipe for --events; nil: the machine's
	PID      int                                            // makes -r's names and instance unique
	Writable func(path string) error                        // Writable's access check; nil skips it
	// ReplaceFile replaces a file's contents all at once (--initrd, --out).
	ReplaceFile func(path string, data []byte) error
	// IsTerminal reports whether a writer is a terminal (-o pprof
	// refuses one); nil: never.
	IsTerminal func(w io.Writer) bool
	// TermSize is the size of the terminal a writer is (--live cuts its
	// screen to it); nil: not known.
	TermSize func(w io.Writer) (cols, rows int, ok bool)
	// With --via: HostDir opens this machine's directories (--formats),
	// while Dir, Writer, Mounts, Pipe and Writable reach the target;
	// Uname is the target's release and machine; Beat and Uptime make
	// -r keep a heartbeat on the target (Target.Beat); Collect, for a
	// fleet, takes -r's report instead of printing it.
	HostDir func(path string) (fs.FS, error)
	Uname   func() (release, machine string)
	Beat    bool
	Uptime  func() (float64, error)
	Collect func(*results.Report)
	// Exporter, for a fleet with --metrics, serves every target's
	// results, this one's labelled Label (nil: a lone run serves its
	// own).
	Exporter MetricsSink
	Label    string
	// Via describes the target for messages ("" on this machine).
	Via string
	// Local says that Dir reads this machine's own directories, so that
	// a tracefs found there is this machine's (Target.Local): the BPF
	// engine attaches to its events.
	Local bool
	// Getenv reads the environment (the kill hook of the kernel suite);
	// nil reads nothing.
	Getenv func(string) string
	// CatalogDir, when set, opens the tracefs the event catalog is read
	// from (with --via: a target's, kept in CacheDir across runs).
	CatalogDir func(path string) (fs.FS, error)
	CacheDir   string // the user's cache directory for sqlhist; "" keeps nothing
	// ReadRaw reads the ring buffer's pages of per-CPU directories under
	// a tracefs root through a transport (the stream engine with --via);
	// nil: the run opens trace_pipe_raw on this machine.
	ReadRaw func(root string, dirs []string, pageSize int) ([][]byte, error)
	// Shell runs a command on the target (--via; nil here): the awk
	// engine aggregates there (RunAwkVia).
	Shell ShellRunner
	// AwkRan, when not nil, is set to the instance of the awk engine's
	// script once a run has sent it (for WriteLost: that path makes no
	// sqlhist_<id> instance).
	AwkRan *string
	// StaleRecords, with --via, lists the record files that killed
	// sessions of the transport left on the target (remote.DeadRecords),
	// and RemoveRecords removes them (--cleanup); nil: none.
	StaleRecords  func() ([]remote.DeadRecord, error)
	RemoveRecords func([]remote.DeadRecord) error
}

// ThisMachine is the Host of the running process.
func ThisMachine() Host {
	return Host{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Dir:      OpenDir,
		ReadFile: os.ReadFile,
		Writer:   KillHook(func(root string) tracefs.Writer { return tracefs.DirWriter{Root: root} }, os.Getenv, os.Stderr, SelfKill),
		Mounts:   func() ([]byte, error) { return os.ReadFile("/proc/mounts") },
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
		After: time.After,
		PID:   os.Getpid(),
		// nil Pipe: the Target's own.
		Writable:    Access,
		ReplaceFile: ReplaceFile,
		IsTerminal:  IsTerminal,
		TermSize:    TermSize,
		Getenv:      os.Getenv,
		CacheDir:    CacheDir(),
		Local:       true,
	}
}

// Target is the tracefs at root as h reaches it.
func (h Host) Target(root string) *Target {
	fsys, _ := h.Dir(root)
	t := &Target{Root: root, FS: fsys, W: h.Writer(root), OpenPipe: h.Pipe, Beat: h.Beat, Uptime: h.Uptime, Local: h.Local}
	if read := h.ReadRaw; read != nil {
		t.ReadRaw = func(dirs []string, pageSize int) ([][]byte, error) { return read(root, dirs, pageSize) }
	}
	return t
}

// Alive reports whether process pid exists on h (h's own run is).
func (h Host) Alive(pid int) bool {
	_, err := h.Dir(fmt.Sprintf("/proc/%d", pid))
	return err == nil || pid == h.PID
}

// Host is h with the target reached through v: its directories, its
// tracefs writes, its trace_pipe, its release, and a run id that cannot
// be one of its processes (a run keeps a heartbeat there instead).
func (v *Via) Host(h Host) Host {
	re := h
	re.HostDir, re.Dir = h.Dir, v.Dir
	getenv := h.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	re.Writer = KillHook(v.Writer, getenv, h.Stderr, SelfKill)
	re.Mounts, re.Pipe, re.ReadRaw, re.Writable = v.Mounts, v.OpenPipe, v.ReadRaw, v.Writable
	re.Shell = v.RunFor
	re.AwkRan = new(string)
	re.Uname, re.Beat, re.Uptime = v.Uname, true, v.Uptime
	re.Local = false
	re.PID, re.Via = RemoteRunID(), v.Command
	re.CatalogDir = v.CatalogDir(h.CacheDir)
	re.StaleRecords = func() ([]remote.DeadRecord, error) { return v.DeadRecords(context.Background()) }
	re.RemoveRecords = func(recs []remote.DeadRecord) error { return v.Session.RemoveRecords(context.Background(), recs) }
	return re
}

// SignalContext is a context that h's signals (SIGINT, SIGTERM, SIGHUP:
// Ctrl-C) cancel, with the signal as its cause; stop ends it and the
// delivery.
func (h Host) SignalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs, unnotify := h.Signals()
	go func() {
		select {
		case s := <-sigs:
			cancel(errors.New(s.String()))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { unnotify(); cancel(nil) }
}

// MetricsSink is where a fleet's target sends its results for --metrics
// (the fleet's exporter): Start when its run starts (suffix: the names'
// suffix of the run), Update at each reading, Down when it ends.
type MetricsSink interface {
	Start(target, suffix string)
	Update(target string, rs []*results.Result)
	Down(target string, err error)
}
