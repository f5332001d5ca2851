package main

import (
	"bytes"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/tools/txtar"
)

// inspectGolden holds the expected standard output of each inspectCases
// entry, as a txtar file per case name; -update rewrites it.
const inspectGolden = "testdata/inspect.txtar"

// demoFormats is a small tracefs copy with one event name in two systems.
var demoFormats = fstest.MapFS{
	"events/alpha/tick/format": {Data: []byte("name: tick\nID: 7\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" +
		"\tfield:u64 count;\toffset:8;\tsize:8;\tsigned:0;\n\n" +
		"print fmt: \"count=%llu\", REC->count\n")},
	"events/beta/tick/format": {Data: []byte("name: tick\nID: 8\nformat:\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n")},
	"events/beta/tock/format": {Data: []byte("name: tock\nID: 9\nformat:\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n" +
		"\tfield:__data_loc char[] label;\toffset:8;\tsize:4;\tsigned:1;\n")},
}

// inspectEnv serves demoFormats at /demo, and at /sys/kernel/tracing when
// live is set (a live tracefs).
func inspectEnv(live bool, stdin string) (env, *bytes.Buffer, *bytes.Buffer) {
	e, stdout, stderr := testEnv(nil, stdin)
	e.Dir = func(p string) (fs.FS, error) {
		if p == "/demo" || live && p == "/sys/kernel/tracing" {
			return demoFormats, nil
		}
		return nil, fs.ErrNotExist
	}
	e.ReadFile = func(p string) ([]byte, error) {
		if p == "chain.sql" {
			return []byte("CREATE VIEW ontime AS SELECT start.pid, TIMESTAMP_DELTA_USECS AS lat\n" +
				"FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid;\n"), nil
		}
		return nil, fs.ErrNotExist
	}
	return e, stdout, stderr
}

var inspectCases = []struct {
	name string
	args []string
	live bool
}{
	{"describe-6.1-sched_waking", []string{"--kernel", "6.1", "--describe", "sched_waking"}, false},
	{"describe-7.2-system.event", []string{"--kernel", "7.2", "--describe", "irq.irq_handler_entry"}, false},
	{"describe-6.12-system/event", []string{"--kernel", "6.12", "--describe", "syscalls/sys_enter_openat"}, false},
	{"describe-query-synthetic", []string{"--kernel", "6.12", "--describe", "wakeup_lat", "-n", "wakeup_lat",
		"SELECT end.next_comm AS comm, start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS lat " +
			"FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"}, false},
	{"describe-query-file", []string{"--kernel", "6.1", "--describe", "synthetic/ontime", "-f", "chain.sql"}, false},
	{"describe-query-kretprobe", []string{"--kernel", "6.12", "--describe", "sqlhist.do_sys_openat2__return",
		"SELECT start.filename, end.ret FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start " +
			"JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid"}, false},
	{"describe-query-eprobe", []string{"--kernel", "6.1", "--describe", "sqlhist/sys_enter_openat",
		"SELECT filename, COUNT(*) FROM eprobe(sys_enter_openat, filename=+0($filename):ustring)"}, false},
	{"describe-formats", []string{"--formats", "/demo", "--describe", "alpha/tick"}, false},
	{"describe-live", []string{"--describe", "tock"}, true},
	{"list-6.1-system-glob", []string{"--kernel", "6.1", "--list-events", "sched/sched_wak*"}, false},
	{"list-6.12-event-glob", []string{"--kernel", "6.12", "--list-events", "irq_handler_*", "timer.hrtimer_st*"}, false},
	{"list-query", []string{"--kernel", "7.2", "--list-events", "-f", "chain.sql", "synthetic/*"}, false},
	{"list-live-all", []string{"--list-events"}, true},
}

func TestInspectGolden(t *testing.T) {
	a, err := txtar.ParseFile(inspectGolden)
	if err != nil && !*update {
		t.Fatal(err)
	}
	if a == nil {
		a = &txtar.Archive{}
	}
	want := map[string]string{}
	for _, f := range a.Files {
		want[f.Name] = string(f.Data)
	}
	got := map[string]string{}
	for _, tc := range inspectCases {
		t.Run(tc.name, func(t *testing.T) {
			e, stdout, stderr := inspectEnv(tc.live, "")
			if code := run(tc.args, e); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr)
			}
			e2, again, _ := inspectEnv(tc.live, "")
			run(tc.args, e2)
			if stdout.String() != again.String() {
				t.Fatalf("nondeterministic output:\n%s\nthen\n%s", stdout, again)
			}
			got[tc.name] = stdout.String()
			if !*update && stdout.String() != want[tc.name] {
				t.Errorf("stdout differs from %s (-want +got):\n%s", inspectGolden, diffLines(want[tc.name], stdout.String()))
			}
		})
	}
	if *update {
		out := &txtar.Archive{Comment: []byte("Expected standard output of TestInspectGolden's cases (go test ./cmd/sqlhist -run TestInspectGolden -update).\n")}
		for _, tc := range inspectCases {
			out.Files = append(out.Files, txtar.File{Name: tc.name, Data: []byte(got[tc.name])})
		}
		if err := os.WriteFile(inspectGolden, txtar.Format(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // substring
	}{
		{"unknown event", []string{"--kernel", "6.1", "--describe", "sched_swich"}, exitQuery,
			`sqlhist: unknown event "sched_swich"; did you mean "sched_switch"?`},
		{"unknown qualified event", []string{"--kernel", "6.1", "--describe", "sched.sched_wakin"}, exitQuery,
			`unknown event "sched.sched_wakin"; did you mean "sched/sched_waking"?`},
		{"unknown, nothing near", []string{"--kernel", "6.1", "--describe", "zzzzzzzz"}, exitQuery, `unknown event "zzzzzzzz"` + "\n"},
		{"unknown system", []string{"--kernel", "6.1", "--describe", "nosuch/sched_switch"}, exitQuery, `unknown event "nosuch/sched_switch"`},
		{"ambiguous", []string{"--formats", "/demo", "--describe", "tick"}, exitQuery,
			`event "tick" is ambiguous: it exists in systems alpha, beta` + "\nhint: name the system: alpha/tick or beta/tick"},
		{"not a name", []string{"--kernel", "6.1", "--describe", "a/b/c"}, exitUsage, "write event, system.event or system/event"},
		{"bad glob", []string{"--kernel", "6.1", "--list-events", "sched/[a-"}, exitUsage, `--list-events "sched/[a-": bad glob`},
		{"no match", []string{"--kernel", "6.1", "--list-events", "nosuch*", "x/y"}, exitQuery, `no event matches "nosuch*" or "x/y"`},
		{"both", []string{"--kernel", "6.1", "--list-events", "--describe", "sched_switch"}, exitUsage, "give one"},
		{"execute", []string{"-e", "--describe", "sched_switch"}, exitUsage, "only print: drop -e"},
		{"run", []string{"-r", "--describe", "sched_switch"}, exitUsage, "only print: drop -e, -r and --teardown"},
		{"teardown", []string{"--teardown", "--list-events"}, exitUsage, "only print: drop -e, -r and --teardown"},
		{"query error", []string{"--kernel", "6.1", "--describe", "x", "SELECT nope FROM sched_switch"}, exitQuery,
			`<args>:1:8: unknown field "nope" in event sched/sched_switch`},
		{"defined only in 6.12", []string{"--kernel", "6.1", "--describe", "st", "-n", "st",
			"SELECT start.STACKTRACE AS st FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"}, exitQuery,
			"passing a stack trace to a synthetic event needs Linux 6.3"},
		{"no catalog", []string{"--formats", "/empty", "--list-events"}, exitUsage, "--formats: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, stdout, stderr := inspectEnv(false, "")
			code := run(tt.args, e)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.stderr)
			}
			if stdout.Len() > 0 {
				t.Errorf("a failing run printed %q", stdout)
			}
		})
	}
}

// The list is sorted, one name per line, and a glob matches the whole
// name or the bare event name.
func TestListEventsShape(t *testing.T) {
	e, stdout, stderr := inspectEnv(false, "")
	if code := run([]string{"--kernel", "6.1", "--list-events", "*"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) < 1000 {
		t.Fatalf("%d events listed, want the whole 6.1 catalog", len(lines))
	}
	for i, l := range lines {
		sys, ev, ok := strings.Cut(l, "/")
		if !ok || sys == "" || ev == "" || strings.Contains(ev, "/") {
			t.Fatalf("line %d %q is not system/event", i+1, l)
		}
		if i > 0 && lines[i-1] >= l {
			t.Fatalf("not sorted: %q before %q", lines[i-1], l)
		}
	}
	// "*" matches every bare event name, "*/*" every full name: the same list.
	e2, all, _ := inspectEnv(false, "")
	run([]string{"--kernel", "6.1", "--list-events", "*/*"}, e2)
	if all.String() != stdout.String() {
		t.Errorf(`--list-events "*/*" and "*" differ`)
	}
}
