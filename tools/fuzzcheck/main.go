// Command fuzzcheck runs one fuzz target and fails when the run stalls,
// which `go test -fuzz` alone does not do.
//
//	go run ./tools/fuzzcheck [-time 20s] [-parallel N] PKG TARGET
//
// Go's fuzzer has no per-input time limit and reports its progress only as
// "execs: N (R/sec)" lines every three seconds: an input that runs for
// minutes, or a worker minimizing a large input for the default minute,
// shows as a counter that stops while the step still passes. fuzzcheck
// streams those lines and ends the run with an error when the counter has
// not moved for -stall (6 s: two reports). It passes -fuzzminimizetime
// (1 s) so that shrinking a new corpus entry pauses a worker for a second,
// not a minute; the per-input bound itself is each target's, through
// internal/fuzzguard. After the run it looks for fuzz workers of the
// target that outlived it, kills them and fails.
//
// Before the run it keeps the newest -cached inputs (32) of the corpus
// the fuzzer saved in the build cache and removes the rest: go test
// first runs every seed and cached input ("gathering baseline
// coverage"), inside -fuzztime, and a cache that every run adds to
// (make test's warm HOME) had grown until the baseline took the whole
// -fuzztime of FuzzCompile under load, and nothing was fuzzed.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	fuzztime := flag.Duration("time", 20*time.Second, "how long to fuzz (-fuzztime)")
	parallel := flag.Int("parallel", 0, "fuzz workers (-parallel; 0: go test's default, GOMAXPROCS)")
	minimize := flag.Duration("minimize", time.Second, "time to minimize one input (-fuzzminimizetime)")
	stall := flag.Duration("stall", 6*time.Second, "fail when the execs counter stays still this long")
	cached := flag.Int("cached", 32, "inputs of the fuzzer's cached corpus to keep (the newest)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: fuzzcheck [flags] PKG TARGET")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	pkg, target := flag.Arg(0), flag.Arg(1)
	if dir, err := cacheDir(pkg, target); err == nil {
		if kept, removed, err := pruneCorpus(dir, *cached); err != nil {
			fmt.Fprintf(os.Stderr, "fuzzcheck %s %s: pruning the cached corpus: %v\n", pkg, target, err)
			os.Exit(1)
		} else if removed > 0 {
			fmt.Printf("fuzzcheck: kept the newest %d of the %d cached inputs of %s\n", kept, kept+removed, target)
		}
	}
	args := []string{"test", pkg, "-run", "^$", "-fuzz", "^" + target + "$",
		"-fuzztime", fuzztime.String(), "-fuzzminimizetime", minimize.String()}
	if *parallel > 0 {
		args = append(args, "-parallel", strconv.Itoa(*parallel))
	}
	// The build comes first and is not fuzzing: the deadline allows for it.
	err := run(args, target, *stall, *fuzztime+3*time.Minute, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuzzcheck %s %s: %v\n", pkg, target, err)
		os.Exit(1)
	}
}

// run runs go with args, streaming its output to out, and checks the
// progress lines as they come.
func run(args []string, target string, stall, deadline time.Duration, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	// A group of its own, so the coordinator and its workers can be ended
	// together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()

	p := &progress{stall: stall}
	var verdict error
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		if err := p.line(line); err != nil && verdict == nil {
			verdict = err
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	io.Copy(io.Discard, pr)
	werr := <-waited
	// Workers that survived their coordinator (they were seen to spin at
	// 100% CPU after a run ended) are found by their command line.
	if left := leftoverWorkers(target); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if verdict == nil {
			verdict = fmt.Errorf("%d fuzz worker(s) outlived the run (pids %v); killed them", len(left), left)
		}
	}
	switch {
	case verdict != nil:
		return verdict
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the run did not end within %v", deadline)
	case werr != nil && p.coordinatorRace():
		// Go's coordinator can report the end of -fuzztime itself as a
		// failure (golang/go#75804, fixed in Go 1.27): no input failed and
		// none was written, and the progress was checked above.
		fmt.Fprintf(out, "fuzzcheck: go test reported only %q at the end of -fuzztime, with no failing input: Go's coordinator race (golang/go#75804), not a finding\n", "context deadline exceeded")
	case werr != nil:
		return fmt.Errorf("go test failed: %v", werr)
	}
	return p.done()
}

// statusRE matches the fuzzer's progress report, e.g.
// "fuzz: elapsed: 9s, execs: 9048 (0/sec), new interesting: 16 (total: 114)".
var statusRE = regexp.MustCompile(`^fuzz: elapsed: (\S+), execs: (\d+) \(`)

// baselineRE matches the report of the corpus's first run, e.g.
// "fuzz: elapsed: 3s, gathering baseline coverage: 53/316 completed".
var baselineRE = regexp.MustCompile(`^fuzz: elapsed: \S+, gathering baseline coverage: (\d+)/(\d+) completed`)

// progress follows the execs counter through the status lines.
type progress struct {
	deadline bool // the run's failure message was only "context deadline exceeded"
	written  bool // the fuzzer wrote a failing input
	failures int  // "--- FAIL" lines
	stall    time.Duration
	started  bool // a status line with execs was seen
	// The baseline's progress: inputs run of the corpus's.
	baseline, baselineTotal int
	execs                   uint64        // the counter at the last status line
	since                   time.Duration // elapsed time when the counter last moved
	last                    time.Duration // elapsed time of the last status line
}

// line reads one line of output and returns an error when the counter has
// been still for the stall duration.
func (p *progress) line(s string) error {
	switch t := strings.TrimSpace(s); {
	case strings.HasPrefix(t, "--- FAIL"):
		p.failures++
	case t == "context deadline exceeded":
		p.deadline = true
	case strings.HasPrefix(t, "Failing input written to"):
		p.written = true
	}
	if m := baselineRE.FindStringSubmatch(s); m != nil {
		p.baseline, _ = strconv.Atoi(m[1])
		p.baselineTotal, _ = strconv.Atoi(m[2])
		return nil
	}
	m := statusRE.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	elapsed, err := time.ParseDuration(m[1])
	if err != nil {
		return nil
	}
	execs, _ := strconv.ParseUint(m[2], 10, 64)
	p.last = elapsed
	if !p.started || execs != p.execs {
		p.started, p.execs, p.since = true, execs, elapsed
		return nil
	}
	if still := elapsed - p.since; still >= p.stall {
		return fmt.Errorf("stalled: execs stayed at %d from %v to %v (a worker is stuck on one input, or minimizing one for longer than -minimize)", execs, p.since, elapsed)
	}
	return nil
}

// coordinatorRace reports whether a failed run failed only with Go's
// spurious end-of-fuzztime error.
func (p *progress) coordinatorRace() bool {
	return p.deadline && !p.written && p.failures == 1
}

// done checks the run as a whole once it has ended.
func (p *progress) done() error {
	if !p.started && p.baselineTotal > 0 {
		return fmt.Errorf("nothing fuzzed: the baseline coverage of the corpus (%d of %d inputs run) took the whole -fuzztime", p.baseline, p.baselineTotal)
	}
	if !p.started || p.execs == 0 {
		return errors.New("no progress: the fuzzer never reported an execution")
	}
	return nil
}

// cacheDir is where go test keeps the inputs it found for a fuzz target
// of package pkg: GOCACHE/fuzz/IMPORTPATH/TARGET.
func cacheDir(pkg, target string) (string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		return "", err
	}
	cache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSpace(string(cache)), "fuzz", filepath.FromSlash(strings.TrimSpace(string(out))), target), nil
}

// pruneCorpus removes all but the newest keep files of dir (by
// modification time, then name) and says how many it kept and removed;
// a missing dir holds none.
func pruneCorpus(dir string, keep int) (kept, removed int, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(files, func(a, b int) bool {
		if !files[a].mod.Equal(files[b].mod) {
			return files[a].mod.After(files[b].mod)
		}
		return files[a].name < files[b].name
	})
	for i, f := range files {
		if i < keep {
			kept++
			continue
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil {
			return kept, removed, err
		}
		removed++
	}
	return kept, removed, nil
}

// leftoverWorkers returns the pids of fuzz workers of the target that are
// still running.
func leftoverWorkers(target string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		worker, ours := false, false
		for _, a := range args {
			worker = worker || a == "-test.fuzzworker"
			ours = ours || a == "-test.fuzz=^"+target+"$"
		}
		if worker && ours {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
