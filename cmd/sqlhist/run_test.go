package main

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

const wakeupSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`

func testEnv(w tracefs.Writer, stdin string) (env, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return env{
		stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr,
		dir:      func(string) (fs.FS, error) { return nil, fs.ErrNotExist },
		readFile: func(p string) ([]byte, error) { return nil, fs.ErrNotExist },
		writer:   func(string) tracefs.Writer { return w },
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

// TestExecuteAllOrNothing makes each write fail in turn: the writes made
// before it are undone in reverse order and the exit status is 1.
func TestExecuteAllOrNothing(t *testing.T) {
	tests := []struct {
		failAt int
		code   int
		writes []string
	}{
		{0, exitOK, []string{synthW, startW, endW}},
		{1, exitQuery, nil},
		{2, exitQuery, []string{synthW, undo(synthW)}},
		{3, exitQuery, []string{synthW, startW, undo(startW), undo(synthW)}},
	}
	for _, tt := range tests {
		rec := &tracefs.Recorder{FailAt: tt.failAt}
		e, stdout, stderr := testEnv(rec, "")
		code := run([]string{"--kernel", "6.1", "-e", "-n", "wl", wakeupSQL}, e)
		if code != tt.code {
			t.Errorf("failAt %d: exit %d, want %d (%s)", tt.failAt, code, tt.code, stderr)
		}
		if diff := cmp.Diff(tt.writes, rec.Writes); diff != "" {
			t.Errorf("failAt %d: writes (-want +got):\n%s", tt.failAt, diff)
		}
		if stdout.Len() != 0 {
			t.Errorf("failAt %d: -e printed %q", tt.failAt, stdout)
		}
		if tt.code != exitOK && !strings.Contains(stderr.String(), "injected failure") {
			t.Errorf("failAt %d: stderr does not give the reason: %q", tt.failAt, stderr)
		}
	}
}

func TestExecuteTeardown(t *testing.T) {
	rec := &tracefs.Recorder{}
	e, _, stderr := testEnv(rec, "")
	if code := run([]string{"--kernel", "6.1", "-e", "--teardown", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{undo(endW), undo(startW), undo(synthW)}
	if diff := cmp.Diff(want, rec.Writes); diff != "" {
		t.Errorf("teardown writes (-want +got):\n%s", diff)
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
