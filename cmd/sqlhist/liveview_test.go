package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

const syscallSQL = "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"

// TestRunLive: -r --live on a terminal draws the run's results so far at
// each tick over the last screen, with no table printed after: the last
// screen, drawn from the final reading, says the run ended and stays; the
// cursor is hidden once and shown once at the end; everything is removed
// as -r removes it.
func TestRunLive(t *testing.T) {
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {
		syscallHist(10, 1), syscallHist(25, 1), syscallHist(40, 3)}}
	ticks := make(chan time.Time)
	e, stdout, stderr := liveEnv(f)
	e.IsTerminal = func(io.Writer) bool { return true }
	e.TermSize = func(io.Writer) (int, int, bool) { return 100, 30, true }
	e.Tick = func(d time.Duration) (<-chan time.Time, func()) {
		if d != results.DefaultLiveEvery {
			t.Errorf("redraws every %v, want %v", d, results.DefaultLiveEvery)
		}
		return ticks, func() {}
	}
	go func() { ticks <- time.Time{}; ticks <- time.Time{}; f.sigs <- os.Interrupt }()
	if code := run([]string{"-r", "--live", syscallSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "\x1b[?25l") || !strings.HasSuffix(out, "\x1b[?25h") || strings.Count(out, "\x1b[?25h") != 1 {
		t.Errorf("the cursor is not hidden first and shown once at the end: %q", out)
	}
	screens := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, "\x1b[?25l"), "\x1b[?25h"), "\x1b[H\x1b[J")[1:]
	// Two ticks, the final reading (OnTotal at the end) and the last screen.
	if len(screens) != 4 {
		t.Fatalf("%d screens, want 4:\n%s", len(screens), out)
	}
	for i, want := range []string{"sqlhist --live: 1.0 s, every 1s; engine kernel; events 11, dropped 0, lost 0; Ctrl-C ends\n",
		"sqlhist --live: 2.0 s, every 1s; engine kernel; events 26, dropped 0, lost 0; Ctrl-C ends\n"} {
		if !strings.HasPrefix(screens[i], want) {
			t.Errorf("screen %d starts %q, want %q", i+1, strings.SplitN(screens[i], "\n", 2)[0], want)
		}
	}
	last := screens[3]
	if !strings.HasPrefix(last, "sqlhist --live: ended after ") || !strings.Contains(last, "; engine kernel; events 43, dropped 0, lost 0\n") ||
		!rowMatches(last, "sys_read", "40") || strings.Index(last, "sys_read") > strings.Index(last, "sys_close") {
		t.Errorf("last screen:\n%s", last)
	}
	if strings.Contains(out, "===") {
		t.Errorf("--live printed -i's or the total's tables:\n%s", out)
	}
	if n := len(f.Writes); n == 0 || f.Writes[n-1] != "rmdir: instances/sqlhist_4242" {
		t.Errorf("not torn down: %q", f.Writes)
	}
}

// Without a terminal, --live prints each interval and the total as -i
// does (every second unless -i says), with a note; its refusals are
// usage errors before anything is written.
func TestRunLiveNotTerminal(t *testing.T) {
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {syscallHist(10, 1), syscallHist(12, 1)}}
	ticks := make(chan time.Time)
	e, stdout, stderr := liveEnv(f)
	e.Tick = func(d time.Duration) (<-chan time.Time, func()) {
		if d != 2*time.Second {
			t.Errorf("ticks every %v, want -i's 2s", d)
		}
		return ticks, func() {}
	}
	go func() { ticks <- time.Time{}; f.sigs <- os.Interrupt }()
	if code := run([]string{"-r", "--live", "-i", "2", syscallSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"=== interval 1: 0.0 s to 2.0 s\n", "=== interval 2: 2.0 s to ", "=== total\n"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("no %q in:\n%s", s, stdout)
		}
	}
	if strings.Contains(stdout.String(), "\x1b") {
		t.Errorf("terminal controls in a pipe: %q", stdout)
	}
	if !strings.Contains(stderr.String(), "sqlhist: note: --live: stdout is not a terminal: each interval is printed as -i 2s prints it") {
		t.Errorf("stderr: %s", stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--live", syscallSQL}, "--live goes with --run (-r)"},
		{[]string{"-r", "--live", "-o", "json", syscallSQL}, "--live draws tables: drop -o json"},
		{[]string{"-r", "--live", "--out", "x.txt", syscallSQL}, "--live draws the results on the terminal: drop --out"},
		{[]string{"-r", "--live", "--events", syscallSQL}, "--live redraws the results in place; --events streams every event"},
	} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		if code := run(c.args, e); code != exitUsage || !strings.Contains(stderr.String(), c.want) || len(f.Writes) != 0 {
			t.Errorf("%q: exit %d, writes %q: %s (want %q)", c.args, code, f.Writes, stderr, c.want)
		}
	}
}

// tmuxEnv is set in the sqlhist that TestLiveViewTmux starts in a tmux
// pane: this test binary, which then runs TestLiveViewHelper only.
const tmuxEnv = "SQLHIST_LIVE_HELPER"

// TestLiveViewHelper is, in a tmux pane, sqlhist -r --live -i 0.3 of a
// syscall count on liveEnv's fake tracefs whose counts grow at each
// reading, with this process's signals, clock and terminal; it writes the
// tracefs writes it made to the file $SQLHIST_LIVE_HELPER and exits
// with sqlhist's status. Run by itself (without that variable) it is
// skipped.
func TestLiveViewHelper(t *testing.T) {
	path := os.Getenv(tmuxEnv)
	if path == "" {
		t.Skip("the sqlhist of TestLiveViewTmux's pane: run by it")
	}
	f := &tmuxFake{liveFake: newLiveFake(t, 0), dirs: map[string]bool{}, began: time.Now()}
	e, _, _ := liveEnv(f.liveFake)
	e.Dir = func(p string) (fs.FS, error) {
		if p == "/sys/kernel/tracing" {
			return f, nil
		}
		return nil, fs.ErrNotExist
	}
	e.Writer = func(string) tracefs.Writer { return f }
	m := live.ThisMachine()
	e.Stdout, e.Stderr, e.Signals, e.Tick, e.IsTerminal, e.TermSize = m.Stdout, m.Stderr, m.Signals, nil, m.IsTerminal, m.TermSize
	code := run([]string{"-r", "--live", "-i", "0.3", syscallSQL}, e)
	os.WriteFile(path, []byte(strings.Join(append(f.Writes, f.lease...), "\n")), 0o644)
	os.Exit(code)
}

// tmuxFake is liveFake with the instances the run makes (the run checks
// every second that they are still there) and a syscall count that grows
// with the time since it began: 100 reads and 7 closes a second.
type tmuxFake struct {
	*liveFake
	dirs  map[string]bool
	began time.Time
}

func (f *tmuxFake) Open(name string) (fs.File, error) {
	if f.dirs[name] {
		return fstest.MapFS{name + "/.": &fstest.MapFile{}}.Open(name)
	}
	if name == runInst+"events/raw_syscalls/sys_enter/hist" {
		n := int(time.Since(f.began).Seconds()*100) + 1
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(syscallHist(n, n*7/100))}}.Open(name)
	}
	return f.liveFake.Open(name)
}

func (f *tmuxFake) Mkdir(dir string) error {
	f.dirs[dir] = true
	return f.liveFake.Mkdir(dir)
}

func (f *tmuxFake) Rmdir(dir string) error {
	delete(f.dirs, dir)
	return f.liveFake.Rmdir(dir)
}

// TestLiveViewTmux runs sqlhist -r --live in a tmux pane (TestLiveViewHelper:
// a fake tracefs, real signals, clock and terminal): the pane's screen
// changes in place (one header line, at the top, with a growing count;
// no copies scrolled), Ctrl-C ends the run with status 0, the last
// screen stays, the cursor is shown again, and every write was undone.
// tmux comes with make unit (tools/test-shells); without it the test
// fails under CI=true and is skipped elsewhere.
func TestLiveViewTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tmux is not installed (Debian package tmux): make unit installs it (go run ./tools/test-shells)")
		}
		t.Skip("tmux is not installed (Debian package tmux; go run ./tools/test-shells installs it)")
	}
	dir := t.TempDir()
	writes := filepath.Join(dir, "writes")
	status := filepath.Join(dir, "status")
	sock := filepath.Join(dir, "tmux.sock")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	// The pane's shell runs the helper, then writes its status and waits
	// (so that the pane, and its last screen, stay to be read).
	// A trap keeps the shell through Ctrl-C (its child gets SIGINT's
	// default back).
	cmd := fmt.Sprintf("trap : INT; %s=%s %s -test.run='^TestLiveViewHelper$' -test.count=1; echo $? > %s; sleep 60",
		tmuxEnv, writes, bin, status)
	tm("-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", "-s", "live", "sh", "-c", cmd)
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	capture := func() string { return tm("capture-pane", "-p", "-t", "live") }
	// Screens while it runs: wait for the first, then take a few.
	var screens []string
	deadline := time.Now().Add(20 * time.Second)
	for len(screens) < 4 && time.Now().Before(deadline) {
		s := capture()
		if strings.HasPrefix(s, "sqlhist --live: ") && (len(screens) == 0 || s != screens[len(screens)-1]) {
			screens = append(screens, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if len(screens) < 4 {
		t.Fatalf("%d different screens in 20 s; the pane shows:\n%s", len(screens), capture())
	}
	for i, s := range screens {
		if n := strings.Count(s, "sqlhist --live: "); n != 1 {
			t.Errorf("screen %d has %d header lines (scrolled copies?):\n%s", i+1, n, s)
		}
		if !strings.Contains(s, "; Ctrl-C ends") || !rowMatches(s, "call", "count") {
			t.Errorf("screen %d:\n%s", i+1, s)
		}
	}
	t.Logf("a screen while it runs:\n%s", screens[len(screens)-1])
	tm("send-keys", "-t", "live", "C-c")
	deadline = time.Now().Add(20 * time.Second)
	var code []byte
	for time.Now().Before(deadline) {
		if code, _ = os.ReadFile(status); len(code) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.TrimSpace(string(code)) != "0" {
		t.Fatalf("exit status %q after Ctrl-C; the pane shows:\n%s", code, capture())
	}
	last := capture()
	t.Logf("the last screen:\n%s", last)
	if !strings.HasPrefix(last, "sqlhist --live: ended after ") || strings.Count(last, "sqlhist --live: ") != 1 ||
		!strings.Contains(last, "sys_read") || strings.Index(last, "sys_read") > strings.Index(last, "sys_close") {
		t.Errorf("the last screen does not stay:\n%s", last)
	}
	if cur := strings.TrimSpace(tm("display-message", "-p", "-t", "live", "#{cursor_flag}")); cur != "1" {
		t.Errorf("the cursor is not shown after the run (cursor_flag %q)", cur)
	}
	data, err := os.ReadFile(writes)
	if err != nil {
		t.Fatal(err)
	}
	checkUndone(t, strings.Split(string(data), "\n"))
}

// checkUndone checks that every write a run made was undone after it: a
// mkdir by its rmdir, a trigger by its "!" line, a dynamic event by its
// "-:" line (":pause" stops a trigger before the read: the trigger's
// own removal undoes it).
func checkUndone(t *testing.T, writes []string) {
	t.Helper()
	made := 0
	for i, w := range writes {
		file, line, _ := strings.Cut(w, ": ")
		var undo string
		switch {
		case file == "mkdir":
			undo = "rmdir: " + line
		case strings.HasSuffix(file, "/trigger") && !strings.HasPrefix(line, "!") && !strings.HasSuffix(line, ":pause"):
			undo = file + ": !" + line
		case file == "dynamic_events" && strings.HasPrefix(line, "s:"):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "s:"), " ")
			undo = "dynamic_events: -:" + name
		default:
			continue
		}
		made++
		found := false
		for _, later := range writes[i+1:] {
			found = found || later == undo
		}
		if !found {
			t.Errorf("%q is not undone in:\n%s", w, strings.Join(writes, "\n"))
		}
	}
	if made == 0 {
		t.Errorf("no writes to check: %q", writes)
	}
}
