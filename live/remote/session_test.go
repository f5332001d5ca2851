package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// shells are the shells a target may have: Debian's sh, busybox's ash
// (boards), Android's mksh and bash. make unit installs them
// (tools/test-shells); a missing one fails under CI=true.
var shells = []struct{ name, cmd string }{
	{"dash", "dash"}, {"busybox-ash", "busybox sh"}, {"mksh", "mksh"}, {"bash", "bash --posix"},
}

func eachShell(t *testing.T, f func(t *testing.T, sh string)) {
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			if _, err := exec.LookPath(strings.Fields(sh.cmd)[0]); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed: make unit installs it (go run ./tools/test-shells)", sh.name)
				}
				t.Skipf("%s is not installed", sh.name)
			}
			f(t, sh.cmd)
		})
	}
}

func dial(t *testing.T, command string, opt Options) *Session {
	t.Helper()
	s, err := Dial(context.Background(), command, opt)
	if err != nil {
		t.Fatalf("Dial(%q): %v", command, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hostile are strings a request carries byte for byte (no \r: answers
// are read with a tty's \r\n turned back into \n).
var hostile = []string{
	"", "plain", "it's", "'", "''", `"`, `\`, `\'`, "$(touch pwned)", "`touch pwned`", "a\nb", "\n", "a\\\nb",
	"tab\there", "semi; touch pwned", "!hist", "*", "~root", "-n", "-e", "%s\\n", "\x01\x7f", "ünïcödé",
	"x'; touch pwned; echo '", "\x81\x82\x83\x84\x85\x86\x87\x88", "\xff\xfe", "$M1$M2 1 E 0", "R 1 x 1",
	"# '", "{ }", "}", "a  b   c", "trailing ", "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0 if comm ~ \"a*'\\\\\"",
}

// TestRequestsCarryEveryByte sends each hostile string through the
// request line and back with the target's P: what comes back is the
// string, and nothing ran.
func TestRequestsCarryEveryByte(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		dir := t.TempDir()
		s := dial(t, "cd "+emit.Quote(dir)+" && exec "+sh, Options{Timeout: 10 * time.Second})
		for _, h := range hostile {
			out, err := s.Run(context.Background(), "echoing", "P "+emit.Quote(h))
			if err != nil {
				t.Fatalf("%q: %v", h, err)
			}
			if out != h+"\n" {
				t.Errorf("P %q came back as %q", h, out)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("a request ran something: %v", ents)
		}
		if got := s.Stats().Requests; got != int64(len(hostile))+1 {
			t.Errorf("%d requests counted, want %d", got, len(hostile)+1)
		}
	})
}

// TestStatusAndNoNewline: a non-zero status is an AnswerError with the
// command's output; an answer without a final newline keeps it so.
func TestStatusAndNoNewline(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		s := dial(t, sh, Options{})
		out, err := s.Run(context.Background(), "printing", "printf abc")
		if err != nil || out != "abc" {
			t.Errorf("printf abc: %q, %v", out, err)
		}
		_, err = s.Run(context.Background(), "failing", "echo oops >&2; Q 7")
		var ae *AnswerError
		if !errors.As(err, &ae) || ae.Status != 7 || ae.Output != "oops\n" || !strings.Contains(err.Error(), "failing: oops") {
			t.Errorf("want status 7 with oops, got %#v (%v)", ae, err)
		}
		// The session goes on after a failure.
		if out, err := s.Run(context.Background(), "again", "echo ok"); err != nil || out != "ok\n" {
			t.Errorf("after a failure: %q, %v", out, err)
		}
		if s.Info.Release == "" || s.Info.Machine == "" {
			t.Errorf("the handshake read no release or machine: %+v", s.Info)
		}
	})
}

// TestTransports: a tty that echoes what it receives into the output, one
// that turns \n into \r\n, a banner and prompts before the shell, and a
// shell left with a cut line by an earlier session (a serial console's)
// all answer as a plain pipe does.
func TestTransports(t *testing.T) {
	quote := "'"
	cases := map[string]string{
		// A tty echoes what it receives before the shell reads it.
		"echo":              "mkfifo in && { dash < in & exec 4>in; while IFS= read -r l; do printf '%s\\n' \"$l\"; printf '%s\\n' \"$l\" >&4; done; }",
		"crlf":              "dash | sed -u 's/$/\\r/'",
		"banner":            "echo 'Welcome to the board'; echo '$ '; exec dash -i 2>&1",
		"cut-open-single":   "{ printf '%s' " + emit.Quote("R 9 P\\ x"+quote+"abc") + "; cat; } | dash",
		"cut-open-double":   "{ printf '%s' " + emit.Quote(`R 9 P\ x"abc`) + "; cat; } | dash",
		"cut-continuation":  "{ printf '%s' " + emit.Quote(`R 9 P\ touch\ pwned\`) + "; cat; } | dash",
		"cut-before-seq":    "{ printf '%s' " + emit.Quote(`R 9 touch\ pwned`) + "; cat; } | dash",
		"cut-in-definition": "{ printf '%s' " + emit.Quote(`D=R\(\)\ \{\ if`) + "; cat; } | dash",
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := dial(t, "cd "+emit.Quote(dir)+" && "+cmd, Options{Timeout: 10 * time.Second})
			for _, h := range []string{"plain", "it's", "a\nb", `\`} {
				out, err := s.Run(context.Background(), "echoing", "P "+emit.Quote(h))
				if err != nil || out != h+"\n" {
					t.Errorf("P %q: %q, %v", h, out, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
				t.Error("a cut line ran")
			}
		})
	}
}

// TestHostileTargets: a target that floods, answers nothing, ends, or
// answers too much gives an error naming the step, in bounded time.
func TestHostileTargets(t *testing.T) {
	start := time.Now()
	_, err := Dial(context.Background(), "yes 'garbage line'", Options{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "greeting") || !strings.Contains(err.Error(), "did not answer within 1s") {
		t.Errorf("a flooding target: %v", err)
	}
	_, err = Dial(context.Background(), "sleep 30", Options{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("a silent target: %v", err)
	}
	_, err = Dial(context.Background(), "echo 'ssh: connect to host board port 22: Connection refused' >&2; exit 255", Options{Timeout: 5 * time.Second})
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("a transport that fails: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the hostile targets took %v", d)
	}
	s := dial(t, "dash", Options{MaxAnswer: 1 << 20})
	_, err = s.Run(context.Background(), "reading a big file", "head -c 3000000 /dev/zero | tr '\\0' x")
	if err == nil || !strings.Contains(err.Error(), "reading a big file") || !strings.Contains(err.Error(), "exceeds 1 MiB") {
		t.Errorf("a too big answer: %v", err)
	}
	if _, err := s.Run(context.Background(), "after", "echo ok"); err == nil {
		t.Error("a session that was cut off mid-answer goes on")
	}
	s = dial(t, "dash", Options{})
	if _, err := s.Run(context.Background(), "ending the shell", "exit 3"); !errors.Is(err, ErrLost) {
		t.Errorf("a shell that exits: %v", err)
	}
}

// TestFS: the target's directory read through the session behaves as a
// file system (testing/fstest), under every shell.
func TestFS(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		dir := t.TempDir()
		files := map[string]string{
			"README":                            "tracefs\n",
			"events/sched/sched_switch/format":  "name: sched_switch\n",
			"events/sched/sched_switch/enable":  "0\n",
			"events/sched/sched_waking/format":  "name: sched_waking\n",
			"events/sched/enable":               "0\n",
			"events/header_page":                "x",
			"instances/a b/trace":               "# tracer: nop\n",
			"odd/it's $(x)/f":                   "no newline",
			"events/sched/sched_switch/trigger": "hist:keys=pid:vals=hitcount \\n\n\n# x 'y' $z\nlast without a newline",
			"instances/a b/tracing_on":          "1\n",
			"instances/a b/trigger":             "",
			"events/syscalls/sys_enter_read/id": "5\n",
		}
		var names []string
		for n, c := range files {
			p := filepath.Join(dir, n)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(c), 0o644)
			names = append(names, n)
		}
		s := dial(t, sh, Options{})
		fsys := s.FS(dir)
		if err := fstest.TestFS(fsys, names...); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			got, err := fs.ReadFile(fsys, n)
			if err != nil || string(got) != c {
				t.Errorf("%s: %q, %v", n, got, err)
			}
		}
		if _, err := fs.ReadFile(fsys, "events/sched/nope/format"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing event: %v", err)
		}
		if _, err := fs.ReadFile(fsys, "nope"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing file: %v", err)
		}
		if _, err := fs.ReadFile(fsys, "events"); !errors.Is(err, syscall.EISDIR) {
			t.Errorf("reading a directory: %v", err)
		}
		// A write drops the kept listing of events/.
		w := s.Writer(dir)
		if err := w.Mkdir("events/synthetic"); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, "events/synthetic/lat"), 0o755)
		os.WriteFile(filepath.Join(dir, "events/synthetic/lat/format"), []byte("name: lat\n"), 0o644)
		if err := w.Append("events/synthetic/lat/enable", "1"); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(fsys, "events/synthetic/lat/format"); err != nil {
			t.Errorf("an event made after the listing: %v", err)
		}
	})
}

// TestFSTriggerNoListing: reading an event's trigger or format is one
// request, not a listing of events/ too (a run's checks of its triggers,
// --teardown's look before each removal, the formats the catalog reads);
// a system's listing lists events/ once, and a file read after it is
// answered from that listing when the event is not there.
func TestFSTriggerNoListing(t *testing.T) {
	dir := t.TempDir()
	for n, c := range map[string]string{
		"events/sched/sched_switch/format":  "name: sched_switch\n",
		"events/sched/sched_switch/trigger": "# Available triggers:\n",
	} {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	s := dial(t, "sh", Options{})
	fsys := s.FS(dir)
	requests := func() int64 { return s.Stats().Requests }
	before := requests()
	if b, err := fs.ReadFile(fsys, "events/sched/sched_switch/trigger"); err != nil || string(b) != "# Available triggers:\n" {
		t.Fatalf("trigger: %q, %v", b, err)
	}
	if n := requests() - before; n != 1 {
		t.Errorf("a trigger read took %d requests, want 1 (no listing of events/)", n)
	}
	before = requests()
	if _, err := fs.ReadFile(fsys, "events/sched/sched_switch/format"); err != nil {
		t.Fatal(err)
	}
	if n := requests() - before; n != 1 {
		t.Errorf("a format read took %d requests, want 1", n)
	}
	before = requests()
	if ents, err := fs.ReadDir(fsys, "events/sched"); err != nil || len(ents) != 1 {
		t.Fatalf("events/sched: %v, %v", ents, err)
	}
	if n := requests() - before; n != 1 {
		t.Errorf("a system's listing took %d requests, want 1 (the listing of events/)", n)
	}
	before = requests()
	if _, err := fs.ReadFile(fsys, "events/sched/nope/trigger"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing event's trigger: %v", err)
	}
	if n := requests() - before; n != 0 {
		t.Errorf("a missing event's trigger took %d requests with the listing kept, want 0", n)
	}
}

// TestWriter: appends are the script's lines, byte for byte; refusals
// come back as the errno the shell names.
func TestWriter(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		dir := t.TempDir()
		root := filepath.Join(dir, "trace fs 'x'")
		os.MkdirAll(filepath.Join(root, "instances"), 0o755)
		s := dial(t, sh, Options{})
		w := s.Writer(root)
		var want string
		for _, h := range hostile {
			if err := w.Append("dynamic_events", h); err != nil {
				t.Fatalf("%q: %v", h, err)
			}
			want += h + "\n"
		}
		if got, _ := os.ReadFile(filepath.Join(root, "dynamic_events")); string(got) != want {
			t.Errorf("dynamic_events holds %q, want %q", got, want)
		}
		if err := w.Mkdir("instances/x"); err != nil {
			t.Fatal(err)
		}
		if err := w.Mkdir("instances/x"); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("mkdir twice: %v", err)
		}
		if err := w.Append("nodir/trigger", "x"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("append to a missing directory: %v", err)
		}
		if err := w.Rmdir("instances/x"); err != nil {
			t.Fatal(err)
		}
		if err := w.Rmdir("instances/x"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("rmdir twice: %v", err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("something ran: %v", ents)
		}
	})
}

// TestPipe: trace_pipe read in polls passes every line in order, no
// token, and consumes nothing past each token (a FIFO stands in for
// trace_pipe: a read of it takes what it returns, as trace_pipe's does).
func TestPipe(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		old := PollEvery
		PollEvery = 20 * time.Millisecond
		defer func() { PollEvery = old }()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "tracing_on"), []byte("1\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "trace_marker"), nil, 0o644)
		pipePath := filepath.Join(dir, "trace_pipe")
		if err := syscall.Mkfifo(pipePath, 0o644); err != nil {
			t.Fatal(err)
		}
		fifo, err := os.OpenFile(pipePath, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fifo.Close()
		// The kernel's side: for each token written to trace_marker, a
		// few events, the token, and events after it that belong to the
		// next poll.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			seen, n := 0, 0
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				data, _ := os.ReadFile(filepath.Join(dir, "trace_marker"))
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				for ; seen < len(lines) && lines[seen] != ""; seen++ {
					var b strings.Builder
					for range 3 {
						n++
						b.WriteString("  task-1  [000] ..... 1.0: lat: n=" + itoa(n) + "\n")
					}
					b.WriteString("  sh-2  [000] ..... 1.0: tracing_mark_write: " + lines[seen] + "\n")
					n++
					b.WriteString("  task-1  [000] ..... 1.0: lat: n=" + itoa(n) + "\n")
					fifo.WriteString(b.String())
				}
			}
		}()
		s := dial(t, sh, Options{})
		p, err := s.OpenPipe(pipePath)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 0, 4096)
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(string(buf), "\n") < 40 && time.Now().Before(deadline) {
			b := make([]byte, 512)
			k, err := p.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, b[:k]...)
		}
		p.Close()
		lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
		if len(lines) < 40 {
			t.Fatalf("%d lines in 20 s", len(lines))
		}
		for i, l := range lines {
			if strings.Contains(l, "sqlhist-poll") {
				t.Fatalf("line %d is a poll token: %q", i+1, l)
			}
			if !strings.HasSuffix(l, " n="+itoa(i+1)) {
				t.Fatalf("line %d is %q: a line was lost or reordered", i+1, l)
			}
		}
	})
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

var _ = io.EOF

// TestTerminals: each shell interactive on a terminal (util-linux script
// makes a pty in canonical mode, with echo and \r\n, as adb shell or a
// serial login do; bash edits its lines with readline, mksh with its own
// editor): every hostile string, control bytes and a request longer than a
// terminal keeps in a line come back byte for byte, and nothing runs.
func TestTerminals(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("util-linux's script is not installed (Debian's bsdutils, an essential package)")
	}
	long := strings.Repeat("hist:keys=common_pid,\t'quoted' ", 200) // 6400 bytes, twice that escaped
	strs := append(append([]string{}, hostile...), "\x03\x04\x08\x11\x13\x15\x16\x17\x1a\x1b[A\x7f", "tab\tcompletion\t", long)
	eachShell(t, func(t *testing.T, sh string) {
		if strings.HasPrefix(sh, "bash") {
			sh = "bash --norc --noprofile"
		}
		dir := t.TempDir()
		s := dial(t, "cd "+emit.Quote(dir)+" && exec script -qfc "+emit.Quote(sh+" -i")+" /dev/null", Options{Timeout: 10 * time.Second})
		for _, h := range strs {
			if strings.Contains(h, "\r") {
				continue
			}
			out, err := s.Run(context.Background(), "echoing", "P "+emit.Quote(h))
			if err != nil {
				t.Fatalf("%q: %v", clip(h), err)
			}
			if out != h+"\n" {
				t.Errorf("P %q came back as %q", clip(h), clip(out))
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("a request ran something: %v", ents)
		}
	})
}

// TestNoBlankLinesOnATerminal: a line that echoes (an interactive shell
// on a pty, as adb shell or a serial login are) gets no blank lines
// after its requests, however soon they would fall due: its echo of one
// would land in the answer being written (seen in CI: busybox ash's
// answer to P gained "\n\n").
func TestNoBlankLinesOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("util-linux's script is not installed (Debian's bsdutils, an essential package)")
	}
	old := NudgeAfter
	NudgeAfter = time.Microsecond
	t.Cleanup(func() { NudgeAfter = old })
	eachShell(t, func(t *testing.T, sh string) {
		if strings.HasPrefix(sh, "bash") {
			sh = "bash --norc --noprofile"
		}
		s := dial(t, "exec script -qfc "+emit.Quote(sh+" -i")+" /dev/null", Options{Timeout: 10 * time.Second})
		for i := range 20 {
			want := fmt.Sprintf("line %d ünï", i)
			out, err := s.Run(context.Background(), "echoing", "P "+emit.Quote(want))
			if err != nil || out != want+"\n" {
				t.Errorf("P %q came back as %q, %v", want, out, err)
			}
		}
		if n := s.Stats().Nudges; n != 0 {
			t.Errorf("%d blank lines sent on a terminal", n)
		}
	})
}
