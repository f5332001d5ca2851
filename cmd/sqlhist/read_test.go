package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/internal/execfile"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// readSQL is the query of the read tests: a JOIN grouped by a string and
// a log2 bucket, ordered by its count.
const readSQL = `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat ORDER BY n DESC`

// readStandIn makes a stand-in tracefs under dir for a printed awk
// script run by dash: bin's mkdir makes the instance with a trace_pipe
// holding text (awk reads it to its end), its rmdir removes it, its awk
// runs argv.
func readStandIn(t *testing.T, dir string, text []byte, argv []string) (root, bin string) {
	t.Helper()
	root, bin = filepath.Join(dir, "tracefs"), filepath.Join(dir, "bin")
	for _, d := range []string{root + "/instances", bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dir+"/text", text, 0o644); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var awk []string
	for _, a := range argv {
		awk = append(awk, q(a))
	}
	files := map[string]string{
		"mkdir": "#!/bin/sh\n/bin/mkdir \"$1\" || exit 1\ncase \"$1\" in *_own_*) exit 0 ;; esac\n" +
			"for e in sched/sched_waking sched/sched_switch; do /bin/mkdir -p \"$1/events/$e\"; done; /bin/mkdir \"$1/options\"\n" +
			"/bin/cp " + q(dir+"/text") + " \"$1/trace_pipe\"\n",
		"rmdir": "#!/bin/sh\n/bin/rm -r \"$1\"\n",
		"awk":   "#!/bin/sh\nexec " + strings.Join(awk, " ") + " \"$@\"\n",
	}
	for n, body := range files {
		if err := execfile.Write(bin+"/"+n, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return root, bin
}

// readWant is the table (or JSON, CSV) the plan of readSQL gives over
// text: the hist files the awk engine's program must print for it
// (live.AwkReplay), read as -r reads them.
func readWant(t *testing.T, text []byte, format string) string {
	t.Helper()
	a, err := tracefs.LookupArch("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tracefs.EmbeddedOf("5.10", a)
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	cat.SetArch(a, "--arch")
	plan, diags := live.Compile(source.NewSource("q", readSQL), cat, live.AwkPrepare(planner.Options{}))
	if plan == nil {
		t.Fatal(diags)
	}
	printed, err := live.AwkReplay(plan, cat, a, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	out, err := live.ReadAwkOutput(strings.NewReader(printed))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := live.AwkReport(plan, out)
	if err != nil {
		t.Fatal(err)
	}
	var b, errb bytes.Buffer
	if err := results.WriteResults(&b, &errb, rep, results.ResultsOptions{Format: format}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sqlhist read: a script printed for the awk engine (--engine stream),
// run by dash under busybox awk and mawk over a real kernel's trace_pipe
// text (a stand-in tracefs), saves its output; sqlhist read turns that
// output alone, from a file or stdin, into the table, JSON and CSV the
// plan gives over the same text; an output whose kernel lost events says
// so at its top.
func TestReadAwkOutput(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	trace, err := os.ReadFile("../../live/testdata/awk/trace-5.10.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The same text with 7 events lost on CPU 1 midway.
	lines := strings.SplitAfter(string(trace), "\n")
	lossy := []byte(strings.Join(lines[:700], "") + "CPU:1 [LOST 7 EVENTS]\n" + strings.Join(lines[700:], ""))
	var impls [][]string
	if p, err := exec.LookPath("busybox"); err == nil {
		impls = append(impls, []string{p, "awk"})
	}
	if p, err := exec.LookPath("mawk"); err == nil {
		impls = append(impls, []string{p})
	}
	if len(impls) == 0 {
		t.Skip("SKIPPING: neither busybox nor mawk is installed (make test-shells installs them)")
	}
	for _, argv := range impls {
		for _, c := range []struct {
			name string
			text []byte
		}{{"whole", trace}, {"lossy", lossy}} {
			t.Run(filepath.Base(argv[0])+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				root, bin := readStandIn(t, dir, c.text, argv)
				e, stdout, stderr := testEnv(&tracefs.Recorder{}, "")
				if code := run([]string{"--kernel", "5.10", "--arch", "x86_64", "--engine", "stream", "-t", root, "-d", "1", readSQL}, e); code != exitOK {
					t.Fatalf("printing: exit %d: %s", code, stderr)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, dash, "-s")
				cmd.Stdin = bytes.NewReader(stdout.Bytes())
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("the script: %v\n%s", err, errb.String())
				}
				if !strings.HasPrefix(out.String(), live.AwkQueryPrefix+`{"args":["--kernel=5.10","--arch=x86_64","--engine=stream","--tracefs=`) {
					t.Fatalf("the output does not start with its query line:\n%s", out.String())
				}
				saved := filepath.Join(dir, "out.txt")
				if err := os.WriteFile(saved, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				for _, format := range []string{"table", "json", "csv"} {
					want := readWant(t, c.text, format)
					for _, from := range []string{"file", "stdin"} {
						e, stdout, stderr := testEnv(nil, out.String())
						e.ReadFile = os.ReadFile
						args := []string{"read", "-o", format, saved}
						if from == "stdin" {
							args[3] = "-"
						}
						if code := run(args, e); code != exitOK {
							t.Fatalf("%s from %s: exit %d: %s", format, from, code, stderr)
						}
						if got := stdout.String(); got != want {
							t.Errorf("%s from %s:\n%s\nwant (the plan's over the same text):\n%s", format, from, got, want)
						}
					}
				}
				e, stdout, _ = testEnv(nil, out.String())
				run([]string{"read", "-"}, e)
				head := strings.Join(strings.SplitN(stdout.String(), "\n", 3)[:2], "\n")
				lost := strings.Contains(head, "7 events lost")
				if lost != (c.name == "lossy") {
					t.Errorf("the table's top says the loss: %v, want %v:\n%s", lost, c.name == "lossy", stdout.String())
				}
			})
		}
	}
}

// sqlhist read refuses, with exit 1 and the reason, an output without
// its query line, one cut short, and a query line that is not one; bad
// usage is exit 2.
func TestReadRefuses(t *testing.T) {
	trace, err := os.ReadFile("../../live/testdata/awk/trace-5.10.txt")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tracefs.LookupArch("x86_64")
	fsys, _ := tracefs.EmbeddedOf("5.10", a)
	cat := tracefs.Open(fsys)
	plan, diags := live.Compile(source.NewSource("q", readSQL), cat, live.AwkPrepare(planner.Options{}))
	if plan == nil {
		t.Fatal(diags)
	}
	printed, err := live.AwkReplay(plan, cat, a, bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	query := live.AwkQueryLine([]string{"--kernel=5.10", "--arch=x86_64", "--", readSQL}) + "\n"
	for _, c := range []struct {
		name, in string
		code     int
		err      string
	}{
		{"no query line", printed, exitQuery, "no query line"},
		{"cut short", query + printed[:len(printed)/2], exitQuery, "ends before its end line"},
		{"a bad query line", live.AwkQueryPrefix + `{"args":"x"} <==` + "\n" + printed, exitQuery, "a bad query line"},
		{"a query line later", strings.Replace(printed, "\n", "\n"+query, 1), exitQuery, "a query line after the first line"},
		{"another query", live.AwkQueryLine([]string{"--kernel=5.10", "--", "SELECT prev_comm, COUNT(*) FROM sched_switch GROUP BY prev_comm"}) + "\n" + printed, exitQuery, "the awk engine printed no"},
		{"a bad query", live.AwkQueryLine([]string{"--kernel=5.10", "--", "SELECT nosuch FROM sched_switch"}) + "\n" + printed, exitQuery, "<the query of stdin>:1:8: "},
	} {
		e, stdout, stderr := testEnv(nil, c.in)
		if code := run([]string{"read"}, e); code != c.code || stdout.Len() > 0 || !strings.Contains(stderr.String(), c.err) {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q (want %q)", c.name, code, c.code, stdout, stderr, c.err)
		}
	}
	// With the right query line it reads.
	e, stdout, stderr := testEnv(nil, query+printed)
	if code := run([]string{"read"}, e); code != exitOK || !strings.Contains(stdout.String(), "engine: awk") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"read", "-o", "pprof"}, {"read", "a", "b"}, {"read", "--nosuch"}} {
		e, _, stderr := testEnv(nil, "")
		if code := run(args, e); code != exitUsage || !strings.Contains(stderr.String(), "sqlhist read: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}
