package live

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live/remote"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Via is a target reached through a transport command whose input and
// output are a POSIX shell there (sqlhist --via): every directory, read
// and write of its tracefs goes through the session (package
// live/remote), whose methods it has.
type Via struct {
	*remote.Session
	trace io.Closer // the TraceFile, closed with the session
	root  *remote.FS
	mu    sync.Mutex
	dirs  map[string]error // what Dir found, but for /proc's
}

// DefaultViaTimeout is how long a request waits for its answer unless
// --via-timeout says otherwise.
const DefaultViaTimeout = remote.DefaultTimeout

// ViaOptions configure DialVia.
type ViaOptions struct {
	// Stderr receives what the transport prints on its standard error.
	Stderr io.Writer
	// Trace, when set, receives each request and when its answer came.
	Trace io.Writer
	// TraceFile, when set, is created to be the Trace (--via-trace).
	TraceFile string
	// Timeout bounds each request's answer (--via-timeout); 0 is
	// remote.DefaultTimeout. A slow line, or a target loaded or
	// emulated, needs more.
	Timeout time.Duration
}

// DialVia starts command (run with sh -c) and greets the shell at its
// other end. Its errors name the flag: --via COMMAND or --via-trace.
func DialVia(ctx context.Context, command string, opt ViaOptions) (*Via, error) {
	var trace *os.File
	if opt.TraceFile != "" {
		f, err := os.Create(opt.TraceFile)
		if err != nil {
			return nil, fmt.Errorf("--via-trace: %v", err)
		}
		trace, opt.Trace = f, f
	}
	s, err := remote.Dial(ctx, command, remote.Options{Stderr: opt.Stderr, Trace: opt.Trace, Timeout: opt.Timeout})
	if err != nil {
		if trace != nil {
			trace.Close()
		}
		return nil, fmt.Errorf("--via %s: %w", command, err)
	}
	v := &Via{Session: s, root: s.FS("/"), dirs: map[string]error{}}
	if trace != nil {
		v.trace = trace
	}
	return v, nil
}

// Close ends the session, and closes the trace file.
func (v *Via) Close() error {
	err := v.Session.Close()
	if v.trace != nil {
		v.trace.Close()
	}
	return err
}

// Dir opens the target's directory p, which must exist. Directories are
// looked up once, but for /proc's (processes come and go).
func (v *Via) Dir(p string) (fs.FS, error) {
	clean := path.Clean("/" + p)
	v.mu.Lock()
	err, known := v.dirs[clean]
	v.mu.Unlock()
	if known {
		if err != nil {
			return nil, err
		}
		return v.FS(p), nil
	}
	name := strings.TrimPrefix(clean, "/")
	if name == "" {
		name = "."
	}
	st, err := v.root.Stat(name)
	if err == nil && !st.IsDir() {
		err = fmt.Errorf("%s: not a directory", p)
	}
	if !strings.HasPrefix(clean, "/proc/") {
		v.mu.Lock()
		v.dirs[clean] = err
		v.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return v.FS(p), nil
}

// Writer writes under the target's tracefs at root.
func (v *Via) Writer(root string) tracefs.Writer { return v.Session.Writer(root) }

// Uname is the target's release and machine.
func (v *Via) Uname() (release, machine string) { return v.Info.Release, v.Info.Machine }

// CatalogDir opens the target's tracefs directories for the event
// catalog, keeping what was read in cacheDir/targets across runs ("" keeps
// nothing) when the session closes.
func (v *Via) CatalogDir(cacheDir string) func(p string) (fs.FS, error) {
	targets := ""
	if cacheDir != "" {
		targets = filepath.Join(cacheDir, "targets")
	}
	return func(p string) (fs.FS, error) {
		if _, err := v.Dir(p); err != nil {
			return nil, err
		}
		c := v.CachedFS(p, targets)
		v.OnClose(func() { c.Save() })
		return c, nil
	}
}

// RemoteRunID is an id for a run made through a transport: eight digits,
// above any process id a Linux kernel hands out (PID_MAX_LIMIT is 2^22),
// so that no target mistakes it for one of its processes.
func RemoteRunID() int {
	var b [8]byte
	rand.Read(b[:])
	return 10_000_000 + int(binary.LittleEndian.Uint64(b[:])%90_000_000)
}

// WriteLost says on w what a lost transport (err) may have left on the
// target and how to remove it: a run's (id) instances and lease after
// -r, some of the commands after -e; after a run by the target's awk
// (awk, its instance), what its script removes by itself.
func WriteLost(w io.Writer, err error, run, execute bool, id int, via, awk string) {
	fmt.Fprintf(w, "sqlhist: the target cannot be reached any more (%v)\n", err)
	switch {
	case run && awk != "":
		fmt.Fprintf(w, "sqlhist: the awk engine's script on the target ends at -d by itself and removes its instance %s;\n"+
			"sqlhist: with -i, its output file %s.* is left under $TMPDIR or /tmp\n", awk, awk)
	case run:
		fmt.Fprintf(w, "sqlhist: the run's instances %s, %s and %s, and what its lease lists, may be left on the target;\n"+
			"sqlhist: once its heartbeat is %v old, this removes them: sqlhist --cleanup --via %s\n",
			InstancePrefix+fmt.Sprint(id), LeaseName(id), BeatName(id), BeatStale, emit.Quote(via))
	case execute:
		fmt.Fprintf(w, "sqlhist: some of the commands may be applied on the target; the same command with --teardown -e removes them\n")
	}
}

// ViaCommands are the transport commands of a fleet: those given, then
// the lines of file (data, "" for none), without blank lines and #
// comments. The same command twice, or an empty one, is an error.
func ViaCommands(given []string, file string) ([]string, error) {
	cmds := append([]string{}, given...)
	for _, l := range strings.Split(file, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if strings.TrimSpace(c) == "" {
			return nil, fmt.Errorf("--via: empty command")
		}
		if seen[c] {
			return nil, fmt.Errorf("--via %s: the same target twice", c)
		}
		seen[c] = true
	}
	return cmds, nil
}

// FleetTarget is one target of RunFleet: its place and label (its --via
// command), where its work writes (its output is kept whole, its
// messages go to the fleet's stderr a line at a time under "[LABEL] "),
// and what it answered.
type FleetTarget struct {
	N      int // 1, 2, … in the order given
	Label  string
	Stdout io.Writer
	Stderr io.Writer
	Code   int             // its exit status
	Report *results.Report // -r's results, when there are some
	Err    error           // what ended it, when it failed
	out    bytes.Buffer
}

// RunFleet calls do for each label, jobs at a time, and returns the
// targets in the order of labels. A target that fails does not stop the
// others.
func RunFleet(labels []string, jobs int, stderr io.Writer, do func(t *FleetTarget)) []*FleetTarget {
	targets := make([]*FleetTarget, len(labels))
	sem := make(chan struct{}, max(jobs, 1))
	var wg sync.WaitGroup
	for i, label := range labels {
		t := &FleetTarget{N: i + 1, Label: label}
		pw := &linePrefixer{w: stderr, prefix: "[" + label + "] "}
		t.Stdout, t.Stderr = &t.out, pw
		targets[i] = t
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer pw.flush()
			do(t)
			if t.Code != 0 && t.Err == nil {
				t.Err = fmt.Errorf("exit status %d (its messages are above, each line starting with [%s])", t.Code, label)
			}
		}()
	}
	wg.Wait()
	return targets
}

// FleetCode is the exit status of the first target that failed, else 0.
func FleetCode(targets []*FleetTarget) int {
	for _, t := range targets {
		if t.Code != 0 {
			return t.Code
		}
	}
	return 0
}

// WriteFleetOutput writes each target's output whole under a
// "# target: LABEL" line, in the order given.
func WriteFleetOutput(w io.Writer, targets []*FleetTarget) {
	for _, t := range targets {
		if t.out.Len() > 0 {
			fmt.Fprintf(w, "# target: %s\n", t.Label)
			w.Write(t.out.Bytes())
		}
	}
}

// FleetLabelled is the targets' reports for MergeLabelled and
// WriteFleet; a target without one has its error.
func FleetLabelled(targets []*FleetTarget) []results.Labelled {
	var ls []results.Labelled
	for _, t := range targets {
		l := results.Labelled{Label: t.Label, Report: t.Report}
		if t.Report == nil {
			l.Err = t.Err
			if l.Err == nil {
				l.Err = fmt.Errorf("no results")
			}
		}
		ls = append(ls, l)
	}
	return ls
}

// linePrefixer writes each whole line to w with prefix before it: a
// fleet's targets write their messages to one stderr at once.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	part   []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		io.WriteString(p.w, p.prefix+string(p.part[:i+1]))
		p.part = p.part[i+1:]
	}
	return len(b), nil
}

func (p *linePrefixer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.part) > 0 {
		io.WriteString(p.w, p.prefix+string(p.part)+"\n")
		p.part = nil
	}
}

// WriteFleetResults merges the targets' -r results (MergeLabelled:
// exact where the data is) and writes each target's and the merge in
// format (WriteFleet); a merge that failed is said on errw and returned
// as mergeErr, the targets still written.
func WriteFleetResults(w, errw io.Writer, format string, targets []*FleetTarget) (mergeErr, err error) {
	labelled := FleetLabelled(targets)
	merged, mergeErr := results.MergeLabelled(labelled)
	if mergeErr != nil {
		fmt.Fprintf(errw, "sqlhist: merging the targets' results: %v\n", mergeErr)
	}
	return mergeErr, results.WriteFleet(w, errw, format, labelled, merged)
}
