package main

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

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/live/remote"
	"github.com/sqlhist/sqlhist/tracefs"
)

// runVia does what the flags ask on the targets --via and --via-file
// name: one target like this machine, several as a fleet.
func (o *options) runVia(e env, fl *pflag.FlagSet) int {
	cmds, code := o.viaCommands(e)
	if code != exitOK {
		return code
	}
	if len(cmds) == 1 {
		return o.viaOne(e, fl, cmds[0])
	}
	return o.viaFleet(e, fl, cmds)
}

// viaCommands are the transport commands of --via and --via-file.
func (o *options) viaCommands(e env) ([]string, int) {
	cmds := append([]string{}, o.via...)
	if o.viaFile != "" {
		data, err := e.readFile(o.viaFile)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: --via-file: %v\n", err)
			return nil, exitQuery
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				cmds = append(cmds, l)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if strings.TrimSpace(c) == "" {
			return nil, usageError(e, "--via: empty command")
		}
		if seen[c] {
			return nil, usageError(e, "--via %s: the same target twice", c)
		}
		seen[c] = true
	}
	if len(cmds) == 0 {
		return nil, usageError(e, "--via-file %s: no command in it", o.viaFile)
	}
	if o.viaJobs < 1 {
		return nil, usageError(e, "--via-jobs must be at least 1")
	}
	return cmds, exitOK
}

// viaOne does what the flags ask on one target.
func (o *options) viaOne(e env, fl *pflag.FlagSet, cmd string) int {
	ropt := remote.Options{Stderr: e.stderr}
	if o.viaTrace != "" {
		f, err := os.Create(o.viaTrace)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: --via-trace: %v\n", err)
			return exitQuery
		}
		defer f.Close()
		ropt.Trace = f
	}
	s, err := remote.Dial(context.Background(), cmd, ropt)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --via %s: %v\n", cmd, err)
		return exitQuery
	}
	defer s.Close()
	re := viaEnv(e, s)
	o.viaRoot(re, fl)
	code := o.main(re, fl)
	if serr := s.Err(); serr != nil && (o.run || o.execute || o.cleanup) {
		viaLost(re, o, serr)
	}
	return code
}

// viaRoot finds the target's tracefs when -t does not name one, and
// makes it the event catalog of a printing run: the formats are the
// target's, as they are this machine's without --via.
func (o *options) viaRoot(e env, fl *pflag.FlagSet) {
	var mounts []byte
	if !fl.Changed("tracefs") {
		mounts, _ = e.mounts()
	}
	root, err := live.Find(o.tracefsDir, !fl.Changed("tracefs"), string(mounts), e.dir)
	if err != nil {
		return // -e, -r and --cleanup say so
	}
	o.tracefsDir, o.viaTarget = root, e.via
	if !o.execute && !o.run && !o.cleanup && !o.dryRun && o.formats == "" && o.kernel == "" && o.planFile == "" {
		o.formats, o.machine = root, true
	}
}

// viaEnv is e with the target reached through s: its directories, its
// tracefs writes, its trace_pipe, its release, and a run id that cannot
// be one of its processes (a run keeps a heartbeat there instead).
func viaEnv(e env, s *remote.Session) env {
	re := e
	re.hostDir = e.dir
	root := s.FS("/")
	// Directories are looked up once, but for /proc's (processes come
	// and go).
	var mu sync.Mutex
	dirs := map[string]error{}
	re.dir = func(p string) (fs.FS, error) {
		clean := path.Clean("/" + p)
		mu.Lock()
		err, known := dirs[clean]
		mu.Unlock()
		if known {
			if err != nil {
				return nil, err
			}
			return s.FS(p), nil
		}
		fsys, err := lookDir(root, s, p)
		if !strings.HasPrefix(clean, "/proc/") {
			mu.Lock()
			dirs[clean] = err
			mu.Unlock()
		}
		return fsys, err
	}
	getenv := e.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	re.writer = killHook(func(root string) tracefs.Writer { return s.Writer(root) }, getenv, e.stderr, selfKill)
	re.mounts = s.Mounts
	re.pipe = s.OpenPipe
	re.readRaw = s.ReadRaw
	re.shell = s.RunFor
	re.writable = s.Writable
	re.uname = func() (string, string) { return s.Info.Release, s.Info.Machine }
	re.beat, re.uptime = true, s.Uptime
	re.pid = remoteRunID()
	re.via = s.Command
	targets := ""
	if e.cacheDir != "" {
		targets = filepath.Join(e.cacheDir, "targets")
	}
	re.catalogDir = func(p string) (fs.FS, error) {
		if _, err := re.dir(p); err != nil {
			return nil, err
		}
		c := s.CachedFS(p, targets)
		s.OnClose(func() { c.Save() })
		return c, nil
	}
	return re
}

// lookDir opens the target's directory p, which must exist.
func lookDir(root *remote.FS, s *remote.Session, p string) (fs.FS, error) {
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if name == "" {
		name = "."
	}
	st, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", p)
	}
	return s.FS(p), nil
}

// remoteRunID is an id for a run made through a transport: eight digits,
// above any process id a Linux kernel hands out (PID_MAX_LIMIT is 2^22),
// so that no target mistakes it for one of its processes.
func remoteRunID() int {
	var b [8]byte
	rand.Read(b[:])
	return 10_000_000 + int(binary.LittleEndian.Uint64(b[:])%90_000_000)
}

// viaLost says what a lost transport may have left on the target and
// how to remove it.
func viaLost(e env, o *options, err error) {
	fmt.Fprintf(e.stderr, "sqlhist: the target cannot be reached any more (%v)\n", err)
	switch {
	case o.run:
		fmt.Fprintf(e.stderr, "sqlhist: the run's instances %s, %s and %s, and what its lease lists, may be left on the target;\n"+
			"sqlhist: once its heartbeat is %v old, this removes them: sqlhist --cleanup --via %s\n",
			live.InstancePrefix+fmt.Sprint(e.pid), live.LeaseName(e.pid), live.BeatName(e.pid), live.BeatStale, emit.Quote(e.via))
	case o.execute:
		fmt.Fprintf(e.stderr, "sqlhist: some of the commands may be applied on the target; the same command with --teardown -e removes them\n")
	}
}

// viaFleet does what the flags ask on every target, --via-jobs at a
// time. With -r the targets' results are printed labelled, then merged
// (live.MergeLabelled: exact where the data is); otherwise each target's
// output is printed whole under a "# target: LABEL" line, in the order
// the targets were given. A target that fails is reported and the others
// still answer; the exit status is that of the first that failed.
func (o *options) viaFleet(e env, fl *pflag.FlagSet, cmds []string) int {
	if o.run && (fl.Changed("interval") || o.live.events) {
		return usageError(e, "with several targets, -r prints each target's results and the merged ones: -i and --events take one --via")
	}
	if o.run && isStackFormat(o.live.output) {
		return usageError(e, "with several targets, -o takes table, json or csv")
	}
	if o.run {
		// Checked once, before any target is reached.
		if _, code := o.checkLive(e, fl.Changed); code != exitOK {
			return code
		}
	}
	type answer struct {
		code   int
		out    bytes.Buffer
		rep    *live.Report
		err    error
		stderr *prefixed
	}
	exp, stopMetrics, code := o.fleetMetrics(e, len(cmds))
	if code != exitOK {
		return code
	}
	answers := make([]*answer, len(cmds))
	sem := make(chan struct{}, o.viaJobs)
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		a := &answer{stderr: &prefixed{w: e.stderr, prefix: "[" + cmd + "] "}}
		answers[i] = a
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer a.stderr.flush()
			te := e
			te.stdout, te.stderr = &a.out, a.stderr
			te.collect = func(rep *live.Report) { a.rep = rep }
			te.exporter, te.label = exp, cmd
			to := *o
			ropt := remote.Options{Stderr: a.stderr}
			if o.viaTrace != "" {
				// A file a target: FILE.N, N its place in the fleet.
				f, err := os.Create(fmt.Sprintf("%s.%d", o.viaTrace, i+1))
				if err != nil {
					a.code, a.err = exitQuery, err
					fmt.Fprintf(a.stderr, "sqlhist: --via-trace: %v\n", err)
					return
				}
				defer f.Close()
				ropt.Trace = f
			}
			s, err := remote.Dial(context.Background(), cmd, ropt)
			if err != nil {
				a.code, a.err = exitQuery, err
				fmt.Fprintf(a.stderr, "sqlhist: --via %s: %v\n", cmd, err)
				return
			}
			defer s.Close()
			re := viaEnv(te, s)
			to.viaRoot(re, fl)
			a.code = to.main(re, fl)
			if serr := s.Err(); serr != nil && (to.run || to.execute || to.cleanup) {
				viaLost(re, &to, serr)
			}
			if a.code != exitOK && a.err == nil {
				a.err = fmt.Errorf("exit status %d (its messages are above, each line starting with [%s])", a.code, cmd)
			}
		}()
	}
	wg.Wait()
	stopMetrics()
	for _, a := range answers {
		if a.code != exitOK && code == exitOK {
			code = a.code
		}
	}
	if !o.run {
		for i, a := range answers {
			if a.out.Len() > 0 {
				fmt.Fprintf(e.stdout, "# target: %s\n", cmds[i])
				e.stdout.Write(a.out.Bytes())
			}
		}
		return code
	}
	var targets []live.Labelled
	for i, a := range answers {
		l := live.Labelled{Label: cmds[i], Report: a.rep}
		if a.rep == nil {
			l.Err = a.err
			if l.Err == nil {
				l.Err = fmt.Errorf("no results")
			}
		}
		targets = append(targets, l)
	}
	merged, err := live.MergeLabelled(targets)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: merging the targets' results: %v\n", err)
		if code == exitOK {
			code = exitQuery
		}
	}
	werr := o.toOut(e, o.live.out, func(w io.Writer) error {
		return live.WriteFleet(w, e.stderr, o.live.output, targets, merged)
	})
	if werr != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", werr)
		return exitQuery
	}
	return code
}

// prefixed writes each whole line to w with prefix before it: a fleet's
// targets write their messages to one stderr at once.
type prefixed struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	part   []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
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

func (p *prefixed) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.part) > 0 {
		io.WriteString(p.w, p.prefix+string(p.part)+"\n")
		p.part = nil
	}
}
