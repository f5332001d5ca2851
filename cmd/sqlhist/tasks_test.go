package main

import (
	"bytes"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/tracefs"
)

// procEnv serves /proc/4242/task (threads 4242, 4250, 4301) and
// /proc/77/task (thread 77) as this machine's /proc, and the 6.1 catalog
// as --formats /formats.
func procEnv(t *testing.T) (env, *bytes.Buffer, *bytes.Buffer) {
	e, stdout, stderr := testEnv(nil, "")
	catalog := embeddedOrFail(t, "6.1")
	procs := map[string]fstest.MapFS{
		"/proc/4242/task": {"4301/stat": {}, "4242/stat": {}, "4250/stat": {}},
		"/proc/77/task":   {"77/stat": {}},
		"/proc/9/task":    {},
	}
	e.Dir = func(p string) (fs.FS, error) {
		if p == "/formats" {
			return catalog, nil
		}
		if m, ok := procs[p]; ok {
			if len(m) == 0 {
				return fstest.MapFS{".": {Mode: fs.ModeDir}}, nil
			}
			return m, nil
		}
		return nil, fs.ErrNotExist
	}
	return e, stdout, stderr
}

func embeddedOrFail(t *testing.T, k string) fs.FS {
	t.Helper()
	fsys, err := tracefs.Embedded(k)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// -p finds the process's threads in /proc/PID/task, sorted numerically,
// merges them with -L, and says in a comment what it found.
func TestPIDReadsThreads(t *testing.T) {
	e, stdout, stderr := procEnv(t)
	code := run([]string{"--formats", "/formats", "-p", "4242", "-L", "77,4250", "SELECT common_pid, COUNT(*) FROM sched_switch"}, e)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "# sqlhist: compiled for Linux 6.1.0-57-cloud-amd64 x86_64 (event formats: --formats /formats)\n" +
		"# -p: process 4242 (threads 4242 4250 4301) as sqlhist found them; threads started later are not traced\n" +
		"echo 'hist:keys=common_pid if common_pid == 77 || common_pid == 4242 || common_pid == 4250 || common_pid == 4301' >> /sys/kernel/tracing/events/sched/sched_switch/trigger\n" +
		"# to read what it measures, once applied:\n" +
		"# the answer: cat '/sys/kernel/tracing/events/sched/sched_switch/hist'\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
}

func TestPIDErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no such process", []string{"-p", "5"}, exitQuery, "sqlhist: -p 5: no such process on this machine"},
		{"no threads left", []string{"-p", "9"}, exitQuery, "sqlhist: -p 9: the process has no threads left"},
		{"zero", []string{"-p", "0"}, exitUsage, `-p "0": "0" is not a process id (a number from 1 to 4194304)`},
		{"negative", []string{"-L", "-3"}, exitUsage, `-L "-3": "-3" is not a thread id`},
		{"too large", []string{"-L", "4194305"}, exitUsage, `"4194305" is not a thread id`},
		{"not a number", []string{"-p", "4242,x"}, exitUsage, `-p "4242,x": "x" is not a process id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, stdout, stderr := procEnv(t)
			args := append([]string{"--formats", "/formats"}, tt.args...)
			code := run(append(args, "SELECT common_pid FROM sched_switch"), e)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if stdout.Len() > 0 {
				t.Errorf("a failing run printed %q", stdout)
			}
		})
	}
}

// Many threads make a long filter: the kernel's one-page limit on a
// trigger write is checked as for any other filter.
func TestTIDsTooManyForOneWrite(t *testing.T) {
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = strconv.Itoa(1000000 + i)
	}
	e, stdout, stderr := procEnv(t)
	code := run([]string{"--formats", "/formats", "-L", strings.Join(ids, ","), "SELECT common_pid FROM sched_switch"}, e)
	if code != exitQuery || !strings.Contains(stderr.String(), "the kernel takes at most 4095 in one write") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if stdout.Len() > 0 {
		t.Errorf("printed %q", stdout)
	}
}

// The same ids in any order and with repeats give the same script.
func TestTIDsOrderAndRepeats(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"-L", "3,1", "-L", "2"}, {"-L", "1,2,3,3"}, {"-L", "2", "-L", "3", "-L", "1"}} {
		e, stdout, stderr := procEnv(t)
		if code := run(append(append([]string{"--formats", "/formats"}, args...), "SELECT common_pid FROM sched_switch"), e); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] || outs[1] != outs[2] || !strings.Contains(outs[0], "if common_pid == 1 || common_pid == 2 || common_pid == 3'") {
		t.Errorf("scripts differ or are wrong:\n%s", strings.Join(outs, "\n"))
	}
}
