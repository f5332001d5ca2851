package main

import (
	"bytes"
	"io/fs"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

const wakeupSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`

func testEnv(w tracefs.Writer, stdin string) (env, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return env{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Dir:      func(string) (fs.FS, error) { return nil, fs.ErrNotExist },
		ReadFile: func(p string) ([]byte, error) { return nil, fs.ErrNotExist },
		Writer:   func(string) tracefs.Writer { return w },
	}, &stdout, &stderr
}

var (
	synthW = "dynamic_events: s:wl char comm[16]; u64 lat"
	startW = "events/sched/sched_waking/trigger: hist:keys=pid:wl_ts_us=common_timestamp.usecs"
	endW   = "events/sched/sched_switch/trigger: hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_comm,$wl_lat)"
)

func undo(w string) string {
	file, line, _ := strings.Cut(w, ": ")
	if strings.HasPrefix(line, "s:") {
		return file + ": -:wl"
	}
	return file + ": !" + line
}

// fakeTracefs is a tracefs for -e tests: the embedded 6.1 catalog for
// reading, a recorder for writing, and an error_log that, like the
// kernel's, gets an entry when a write is refused.
type fakeTracefs struct {
	tracefs.Recorder
	base     fs.FS
	errorLog string
	refuse   error // the error a refused write returns
}

func (f *fakeTracefs) Open(name string) (fs.File, error) {
	if name == "error_log" {
		return fstest.MapFS{"error_log": &fstest.MapFile{Data: []byte(f.errorLog)}}.Open(name)
	}
	return f.base.Open(name)
}

func (f *fakeTracefs) Append(file, line string) error {
	err := f.Recorder.Append(file, line)
	if err != nil {
		if f.refuse != nil {
			err = f.refuse
		}
		f.errorLog += "[  312.501234] hist:sched:sched_switch: error: Param type doesn't match synthetic event field type\n" +
			"  Command: " + line + "\n" + strings.Repeat(" ", len("  Command: ")+12) + "^\n"
	}
	return err
}

func newFake(t *testing.T, failAt int) *fakeTracefs {
	base, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	return &fakeTracefs{Recorder: tracefs.Recorder{FailAt: failAt}, base: base,
		errorLog: "[    9.000001] hist:kmem:kmalloc: error: Couldn't find field\n  Command: hist:keys=stale\n                  ^\n"}
}

func fakeEnv(f *fakeTracefs, stdin string) (env, *bytes.Buffer, *bytes.Buffer) {
	e, stdout, stderr := testEnv(f, stdin)
	e.Dir = func(p string) (fs.FS, error) {
		if p == "/sys/kernel/tracing" {
			return f, nil
		}
		return nil, fs.ErrNotExist
	}
	return e, stdout, stderr
}

// TestExecuteAllOrNothing makes each write fail in turn: the writes made
// before it are undone in reverse order, the exit status is 1, and the
// message is the kernel's fresh error_log entry (not the stale one),
// placed at the SQL that produced the refused command.
func TestExecuteAllOrNothing(t *testing.T) {
	tests := []struct {
		failAt int
		code   int
		writes []string
		caret  string // the source text the diagnostic underlines
	}{
		{0, exitOK, []string{synthW, startW, endW}, ""},
		{1, exitQuery, nil, "-n"},
		{2, exitQuery, []string{synthW, undo(synthW)}, "sched_waking"},
		{3, exitQuery, []string{synthW, startW, undo(startW), undo(synthW)}, "sched_switch"},
	}
	for _, tt := range tests {
		f := newFake(t, tt.failAt)
		e, stdout, stderr := fakeEnv(f, "")
		code := run([]string{"-e", "-n", "wl", wakeupSQL}, e)
		if code != tt.code {
			t.Errorf("failAt %d: exit %d, want %d (%s)", tt.failAt, code, tt.code, stderr)
		}
		if diff := cmp.Diff(tt.writes, f.Writes); diff != "" {
			t.Errorf("failAt %d: writes (-want +got):\n%s", tt.failAt, diff)
		}
		if stdout.Len() != 0 {
			t.Errorf("failAt %d: -e printed %q", tt.failAt, stdout)
		}
		if tt.code == exitOK {
			continue
		}
		msg := stderr.String()
		if !strings.Contains(msg, "Param type doesn't match synthetic event field type") || strings.Contains(msg, "hist:keys=stale") {
			t.Errorf("failAt %d: want the fresh error_log entry only:\n%s", tt.failAt, msg)
		}
		if tt.caret != "-n" && !strings.Contains(msg, "<args>:1:"+strconv.Itoa(strings.Index(wakeupSQL, tt.caret)+1)+":") {
			t.Errorf("failAt %d: the diagnostic is not at %q:\n%s", tt.failAt, tt.caret, msg)
		}
	}
}

func TestExecuteTeardownIsIdempotent(t *testing.T) {
	f := newFake(t, 0)
	e, _, stderr := fakeEnv(f, "")
	if code := run([]string{"-e", "--teardown", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The synthetic event is disabled before its removal: the kernel
	// refuses to remove an enabled one.
	want := []string{undo(endW), undo(startW), disableW, undo(synthW)}
	if diff := cmp.Diff(want, f.Writes); diff != "" {
		t.Errorf("teardown writes (-want +got):\n%s", diff)
	}
	if stderr.Len() != 0 {
		t.Errorf("a teardown that removed everything wrote to stderr: %s", stderr)
	}
	// Removing what is not there (ENOENT) is not an error: teardown can
	// be repeated, and says what it skipped. Other failures are errors.
	for _, tt := range []struct {
		refuse error
		code   int
		note   string
	}{
		{fs.ErrNotExist, exitOK, "sqlhist: note: 1 of the 3 removals found nothing to remove (never made, or removed already), skipped: start trigger on sched/sched_waking\n"},
		{fs.ErrPermission, exitQuery, ""},
	} {
		f := newFake(t, 2)
		f.refuse = &fs.PathError{Op: "write", Path: "trigger", Err: tt.refuse}
		e, _, stderr := fakeEnv(f, "")
		if code := run([]string{"-e", "--teardown", "-n", "wl", wakeupSQL}, e); code != tt.code {
			t.Errorf("refuse %v: exit %d, want %d: %s", tt.refuse, code, tt.code, stderr)
		}
		if len(f.Writes) != 3 {
			t.Errorf("refuse %v: teardown stopped early: %q", tt.refuse, f.Writes)
		}
		if tt.note != "" && stderr.String() != tt.note {
			t.Errorf("refuse %v: stderr\n%s\nwant\n%s", tt.refuse, stderr, tt.note)
		}
		if tt.note == "" && strings.Contains(stderr.String(), "note:") {
			t.Errorf("refuse %v: a failure reported as skipped: %s", tt.refuse, stderr)
		}
	}
}

// TestTeardownSkipsWhatWasNeverMade: after an -e killed part way (here
// after its start trigger) --teardown -e removes what is there, skips the
// rest (ENOENT), exits 0 and names what it skipped. The disable of an
// event that is not there is not listed; the event's removal is.
func TestTeardownSkipsWhatWasNeverMade(t *testing.T) {
	f := &missingFake{fakeTracefs: newFake(t, 0), missing: map[string]bool{
		"events/synthetic/wl/enable": true, "dynamic_events": true, "events/sched/sched_switch/trigger": true}}
	e, _, stderr := fakeEnv(f.fakeTracefs, "")
	e.Writer = func(string) tracefs.Writer { return f }
	if code := run([]string{"-e", "--teardown", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "sqlhist: note: 2 of the 3 removals found nothing to remove (never made, or removed already), skipped: end trigger on sched/sched_switch; synthetic event wl\n"
	if stderr.String() != want {
		t.Errorf("stderr\n%s\nwant\n%s", stderr, want)
	}
	if diff := cmp.Diff([]string{undo(startW)}, f.Writes); diff != "" {
		t.Errorf("writes that landed (-want +got):\n%s", diff)
	}
}

// disableW is the teardown's disable of the synthetic event wl.
const disableW = "events/synthetic/wl/enable: 0"

// missingFake is a fake tracefs where writes to some files fail with
// ENOENT: what an -e killed part way never made.
type missingFake struct {
	*fakeTracefs
	missing map[string]bool
}

func (f *missingFake) Append(file, line string) error {
	if f.missing[file] {
		return &fs.PathError{Op: "write", Path: file, Err: fs.ErrNotExist}
	}
	return f.fakeTracefs.Append(file, line)
}

func TestExecuteNeedsTracefs(t *testing.T) {
	e, _, stderr := testEnv(&tracefs.Recorder{}, "")
	e.Mounts = func() ([]byte, error) { return []byte("proc /proc proc rw 0 0\n"), nil }
	if code := run([]string{"-e", wakeupSQL}, e); code != exitQuery || !strings.Contains(stderr.String(), "does not mount it") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	// Found through /proc/mounts when -t is not given.
	f := newFake(t, 0)
	e, _, stderr = fakeEnv(f, "")
	e.Dir = func(p string) (fs.FS, error) {
		if p == "/mnt/trace" {
			return f, nil
		}
		return nil, fs.ErrNotExist
	}
	e.Mounts = func() ([]byte, error) { return []byte("tracefs /mnt/trace tracefs rw 0 0\n"), nil }
	if code := run([]string{"-e", "-n", "wl", wakeupSQL}, e); code != exitOK || len(f.Writes) != 3 {
		t.Errorf("exit %d, writes %q, stderr %s", code, f.Writes, stderr)
	}
	// With -t, nothing else is tried.
	e, _, _ = testEnv(&tracefs.Recorder{}, "")
	e.Mounts = func() ([]byte, error) { return []byte("tracefs /mnt/trace tracefs rw 0 0\n"), nil }
	if code := run([]string{"-e", "-t", "/elsewhere", wakeupSQL}, e); code != exitQuery {
		t.Errorf("-t /elsewhere: exit %d", code)
	}
	if code := run([]string{"-e", "--kernel", "6.1", wakeupSQL}, e); code != exitUsage {
		t.Errorf("-e --kernel: exit %d", code)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string // substring
		stdout string // substring
	}{
		{"no SQL", nil, "", exitUsage, "no SQL given", ""},
		{"help", []string{"--help"}, "", exitOK, "", "usage: sqlhist"},
		{"unknown flag", []string{"--frobnicate", wakeupSQL}, "", exitUsage, "unknown flag", ""},
		{"snapshot without handler", []string{"-s", wakeupSQL}, "", exitUsage, "add -m VAR or -c VAR", ""},
		{"max and change", []string{"-m", "lat", "-c", "lat", wakeupSQL}, "", exitUsage, "cannot be used together", ""},
		{"file and args", []string{"-f", "q.sql", wakeupSQL}, "", exitUsage, "not both", ""},
		{"bad name", []string{"-n", "x'y", wakeupSQL}, "", exitUsage, "a synthetic event name uses letters", ""},
		{"bad save list", []string{"-m", "lat", "-S", ",", wakeupSQL}, "", exitUsage, "is not a field name", ""},
		{"bad instance", []string{"-B", "../x", wakeupSQL}, "", exitUsage, "not a valid instance name", ""},
		{"unknown kernel", []string{"--kernel", "9.9", wakeupSQL}, "", exitUsage, "no embedded catalog", ""},
		{"formats and kernel", []string{"--kernel", "6.1", "--formats", "/x", wakeupSQL}, "", exitUsage, "give one", ""},
		{"missing file", []string{"--kernel", "6.1", "-f", "nope.sql"}, "", exitQuery, "file does not exist", ""},
		{"stdin", []string{"--kernel", "6.1", "-n", "wl", "-f", "-"}, wakeupSQL, exitOK, "", "s:wl char comm[16]; u64 lat"},
		{"bad query", []string{"--kernel", "6.1", "SELECT nope FROM nowhere"}, "", exitQuery, `<args>:1:18: unknown event "nowhere"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, stdout, stderr := testEnv(nil, tt.stdin)
			code := run(tt.args, e)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.stderr)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, tt.stdout)
			}
			if tt.code != exitOK && stdout.Len() > 0 {
				t.Errorf("a failing run printed %q", stdout)
			}
		})
	}
}

// A tracefs this process cannot write to is refused before any write.
func TestExecuteNotWritable(t *testing.T) {
	for _, args := range [][]string{{"-e", wakeupSQL}, {"-r", "-d", "1", wakeupSQL}} {
		f := newFake(t, 0)
		e, _, stderr := fakeEnv(f, "")
		e.Writable = func(p string) error {
			if p != "/sys/kernel/tracing/dynamic_events" {
				return fs.ErrNotExist
			}
			return &fs.PathError{Op: "access", Path: p, Err: fs.ErrPermission}
		}
		if code := run(args, e); code != exitQuery || !strings.Contains(stderr.String(), "cannot write to the tracefs at /sys/kernel/tracing: permission denied") {
			t.Errorf("%q: exit %d, stderr %s", args, code, stderr)
		}
		if len(f.Writes) != 0 {
			t.Errorf("%q: wrote %q", args, f.Writes)
		}
	}
}

// -e -B NAME creates a missing instance first (undone with the rest when a
// write fails); --teardown leaves it.
func TestExecuteCreatesInstance(t *testing.T) {
	for _, tt := range []struct {
		failAt int
		code   int
		writes []string
	}{
		{0, exitOK, []string{"mkdir: instances/mine", "dynamic_events: s:wl char comm[16]; u64 lat"}},
		{3, exitQuery, []string{"mkdir: instances/mine", "dynamic_events: s:wl char comm[16]; u64 lat", "dynamic_events: -:wl", "rmdir: instances/mine"}},
	} {
		f := newFake(t, tt.failAt)
		e, _, stderr := fakeEnv(f, "")
		if code := run([]string{"-e", "-B", "mine", "-n", "wl", wakeupSQL}, e); code != tt.code {
			t.Errorf("failAt %d: exit %d: %s", tt.failAt, code, stderr)
		}
		if len(f.Writes) < 2 || !cmp.Equal(tt.writes, f.Writes[:len(tt.writes)]) || tt.failAt == 0 && len(f.Writes) != 4 {
			t.Errorf("failAt %d: writes %q", tt.failAt, f.Writes)
		}
		if !strings.Contains(stderr.String(), "creating instance mine") {
			t.Errorf("stderr %s", stderr)
		}
	}
	f := newFake(t, 0)
	e, _, _ := fakeEnv(f, "")
	run([]string{"-e", "--teardown", "-B", "mine", "-n", "wl", wakeupSQL}, e)
	if strings.Contains(f.String(), "rmdir") || strings.Contains(f.String(), "mkdir") {
		t.Errorf("--teardown touched the instance: %q", f.Writes)
	}
}

// --version names the architecture and the embedded catalogs, and exits 0
// without reading SQL.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	e := env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
	if code := run([]string{"--version"}, e); code != exitOK || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "sqlhist ") || !strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) ||
		!strings.Contains(out, "embedded catalogs: "+tracefs.EmbeddedSummary()+"\n") {
		t.Errorf("--version printed %q", out)
	}
}
