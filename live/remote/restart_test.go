package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// restartingLine is a transport whose shell restarts, as a serial line's
// fed by `while true; do cat /dev/ttyS1 | sh; done` does at each
// disconnect: each shell (sh) reads the next k bytes of the line and no
// more (then it has an end of file: it runs what it read, a cut last line
// too, and exits), and the next drop bytes between two shells are lost.
// k goes through a fixed pseudo-random sequence from k0, so that the cuts
// fall at many places of the greeting and the requests. The line ends
// when the host's input does.
func restartingLine(sh string, k0, drop int) string {
	return fmt.Sprintf(`k=%d; while :; do
  dd bs=1 count=$k 2>/dev/null | %s 2>&1
  n=$(dd bs=1 count=%d 2>/dev/null | wc -c)
  [ "$n" -gt 0 ] || exit 0
  k=$(( (k * 7 + 301) %% 3000 + 300 ))
done`, k0, sh, drop)
}

// dropMarkers is a filter of a shell's output that loses every nth line
// that is a begin or end marker of an answer (SQH<nonce> SEQ B, SQH<nonce>
// SEQ E STATUS), as a line that drops bytes the target sends loses them:
// the requests whose markers it drops ran, and their answers are lost.
func dropMarkers(n int) string {
	return fmt.Sprintf(`awk '/^SQH[0-9a-f]+ [0-9]+ [BE]/ { if (++m %% %d == 0) { fflush(); next } } { print; fflush() }'`, n)
}

// TestRequestsSurviveARestartingShell: on a line whose shell restarts
// every 300 to 3300 bytes and which loses bytes between shells, every
// request (reads, writes, a request sent in pieces) is answered, and each
// write ran exactly once: the file the writes append to holds each line
// once, in order. The trace shows that shells were lost and greeted again
// (else the test proved nothing).
func TestRequestsSurviveARestartingShell(t *testing.T) {
	oldR, oldG, oldS := ResendAfter, GreetEvery, StallAfter
	ResendAfter, GreetEvery, StallAfter = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	// Restored once the shells' subtests, run at once (each mostly waits
	// on its line), are done.
	t.Cleanup(func() { ResendAfter, GreetEvery, StallAfter = oldR, oldG, oldS })
	eachShell(t, func(t *testing.T, sh string) {
		t.Parallel()
		for _, drop := range []int{1, 7} {
			// With drop 7, every 9th marker of the answers is lost too.
			line := restartingLine(sh, 600, drop)
			if drop == 7 {
				line = "{ " + line + "; } | " + dropMarkers(9)
			}
			t.Run(fmt.Sprintf("drop%d", drop), func(t *testing.T) {
				dir := t.TempDir()
				root := filepath.Join(dir, "tracefs")
				os.MkdirAll(filepath.Join(root, "instances"), 0o755)
				os.WriteFile(filepath.Join(root, "stats"), []byte("entries: 3\noverrun: 0\n"), 0o644)
				var trace bytes.Buffer
				s, err := Dial(context.Background(), "cd "+emit.Quote(dir)+" && "+line,
					Options{Timeout: 30 * time.Second, Trace: &trace})
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				defer s.Close()
				w := s.Writer(root)
				f := s.FS(root)
				var want strings.Builder
				long := strings.Repeat("hist:keys=pid:vals=hitcount 'x' ", 25) // > maxRequestLine escaped: sent in pieces
				for i := range 40 {
					line := fmt.Sprintf("line %d 'q' $x >", i)
					if i%10 == 3 {
						line += long
					}
					if err := w.Append("trigger", line); err != nil {
						t.Fatalf("append %d: %v\n%s", i, err, trace.String())
					}
					want.WriteString(line + "\n")
					got, err := f.ReadFile("stats")
					if err != nil || string(got) != "entries: 3\noverrun: 0\n" {
						t.Fatalf("read %d: %q, %v\n%s", i, got, err, trace.String())
					}
					if i%8 == 0 {
						inst := fmt.Sprintf("instances/i%d", i)
						if err := w.Mkdir(inst); err != nil {
							t.Fatalf("mkdir %s: %v\n%s", inst, err, trace.String())
						}
						if err := w.Rmdir(inst); err != nil {
							t.Fatalf("rmdir %s: %v\n%s", inst, err, trace.String())
						}
					}
				}
				if got, _ := os.ReadFile(filepath.Join(root, "trigger")); string(got) != want.String() {
					t.Errorf("the writes, each once and in order: got\n%s\nwant\n%s", got, want.String())
				}
				if ents, _ := os.ReadDir(filepath.Join(root, "instances")); len(ents) != 0 {
					t.Errorf("instances left: %v", ents)
				}
				tr := trace.String()
				if !strings.Contains(tr, "finding out what the target did") || !strings.Contains(tr, "greeted again") {
					t.Errorf("no shell was lost and greeted again: the line did not restart its shell:\n%s", tr)
				}
				if _, err := os.Stat(filepath.Join(root, "pwned")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("something ran: %v", err)
				}
				if drop == 7 && !strings.Contains(tr, "the target's record says status 0") {
					t.Errorf("no write's answer was lost and answered by the record: the markers were not dropped:\n%s", tr)
				}
				t.Logf("%d requests; %d sent again, %d syncs, %d answered by the record", s.Stats().Requests, strings.Count(tr, "sent again as"), strings.Count(tr, "greeted again"), strings.Count(tr, "record says"))
			})
		}
	})
}

// TestRanAnswerLost: a write the target ran but whose answer the line
// lost (the shell's record, read by the sync, says it started it) is an
// error, never run again; a read in the same case is sent again. The
// transport drops the markers of the first request after the greeting
// (sequence 2).
func TestRanAnswerLost(t *testing.T) {
	oldR := ResendAfter
	ResendAfter = 200 * time.Millisecond
	defer func() { ResendAfter = oldR }()
	filter := `dash 2>&1 | while IFS= read -r l; do case $l in *" Y "*) printf '%s\n' "$l";; *" 2 B"|*" 2 E "*) ;; *) printf '%s\n' "$l";; esac; done`
	dir := t.TempDir()
	var trace bytes.Buffer
	s := dial(t, "cd "+emit.Quote(dir)+" && "+filter, Options{Timeout: 10 * time.Second, Trace: &trace})
	_, err := s.Run(context.Background(), "a write", "echo x >> log")
	if err == nil || !strings.Contains(err.Error(), "not run twice") {
		t.Errorf("a write whose answer was lost: %v\n%s", err, trace.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "log")); string(got) != "x\n" {
		t.Errorf("the write ran %q times, want once", got)
	}
	s = dial(t, "cd "+emit.Quote(dir)+" && "+filter, Options{Timeout: 10 * time.Second})
	out, err := s.read(context.Background(), "a read", "echo x >> reads; cat reads")
	if err != nil || out != "x\nx\n" {
		t.Errorf("a read whose answer was lost: %q, %v (want it run again)", out, err)
	}
}

// TestPieceLost: a request sent in pieces (longer than maxRequestLine)
// whose middle piece the line loses reaches R whole in form but short:
// its length says so, the target rejects it unrun, and it is sent again
// (its write runs once).
func TestPieceLost(t *testing.T) {
	dir := t.TempDir()
	drop := `while IFS= read -r l; do case $l in 'C=${C}'*) if [ ! -e dropped ]; then : > dropped; continue; fi;; esac; printf '%s\n' "$l"; done | dash`
	var trace bytes.Buffer
	s := dial(t, "cd "+emit.Quote(dir)+" && "+drop, Options{Timeout: 10 * time.Second, Trace: &trace})
	long := strings.Repeat("x y ", 600)
	out, err := s.Run(context.Background(), "a long write", "echo "+emit.Quote(long)+" >> log; echo done")
	if err != nil || out != "done\n" {
		t.Fatalf("a long write: %q, %v\n%s", out, err, trace.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "dropped")); err != nil {
		t.Fatal("the filter dropped no piece: the test proves nothing")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "log")); string(got) != long+"\n" {
		t.Errorf("the write ran %d bytes, want %d once", len(got), len(long)+1)
	}
	if !strings.Contains(trace.String(), "rejected as cut") {
		t.Errorf("the short request was not rejected:\n%s", trace.String())
	}
}

// TestLostMarkersOfWrites: on a line that loses every 3rd marker of the
// answers (begin or end), every write of a Writer runs once: answered
// by the target's record of its status, or, on a target where the record
// cannot be written (TMPDIR a missing directory), read back (a trigger
// by its variable, an instance by its directory; a setting is written
// again). The trace shows which.
func TestLostMarkersOfWrites(t *testing.T) {
	oldR, oldG, oldS := ResendAfter, GreetEvery, StallAfter
	ResendAfter, GreetEvery, StallAfter = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { ResendAfter, GreetEvery, StallAfter = oldR, oldG, oldS })
	eachShell(t, func(t *testing.T, sh string) {
		t.Parallel()
		for _, record := range []bool{true, false} {
			t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
				dir := t.TempDir()
				root := filepath.Join(dir, "tracefs")
				os.MkdirAll(filepath.Join(root, "instances"), 0o755)
				env := "TMPDIR=" + emit.Quote(dir)
				if !record {
					env = "TMPDIR=" + emit.Quote(filepath.Join(dir, "missing"))
				}
				var trace bytes.Buffer
				s := dial(t, "cd "+emit.Quote(dir)+" && "+env+" "+sh+" 2>&1 | "+dropMarkers(3), Options{Timeout: 20 * time.Second, Trace: &trace})
				w := s.Writer(root)
				var want strings.Builder
				for i := range 5 {
					line := fmt.Sprintf("hist:keys=pid:v%d=common_timestamp", i)
					if err := w.Append("trigger", line); err != nil {
						t.Fatalf("append %d: %v\n%s", i, err, trace.String())
					}
					want.WriteString(line + "\n")
					if err := w.Append("enable", "1"); err != nil {
						t.Fatalf("enable %d: %v\n%s", i, err, trace.String())
					}
					inst := fmt.Sprintf("instances/i%d", i)
					if err := w.Mkdir(inst); err != nil {
						t.Fatalf("mkdir %s: %v\n%s", inst, err, trace.String())
					}
					if err := w.Rmdir(inst); err != nil {
						t.Fatalf("rmdir %s: %v\n%s", inst, err, trace.String())
					}
				}
				if got, _ := os.ReadFile(filepath.Join(root, "trigger")); string(got) != want.String() {
					t.Errorf("the writes, each once and in order: got\n%s\nwant\n%s", got, want.String())
				}
				if ents, _ := os.ReadDir(filepath.Join(root, "instances")); len(ents) != 0 {
					t.Errorf("instances left: %v", ents)
				}
				tr := trace.String()
				how := "the target's record says status 0"
				if !record {
					how = "reading back what it changes"
				}
				if !strings.Contains(tr, how) {
					t.Errorf("no lost answer was settled by %q:\n%s", how, tr)
				}
				if record && strings.Contains(tr, "reading back") {
					t.Errorf("a write was read back while the record could tell:\n%s", tr)
				}
				s.Close()
				if ents, _ := filepath.Glob(filepath.Join(dir, "sqh*")); len(ents) != 0 {
					t.Errorf("the record outlived the session: %v", ents)
				}
				t.Logf("%d requests; %d by the record, %d read back", s.Stats().Requests, strings.Count(tr, "record says"), strings.Count(tr, "reading back"))
			})
		}
	})
}

// TestCheckUnapplied: a write the target's shell says it started, its
// answer lost and no record, whose check says it is not there, is sent
// again (here the check says so once: the write then runs twice, as told).
func TestCheckUnapplied(t *testing.T) {
	oldR := ResendAfter
	ResendAfter = 200 * time.Millisecond
	defer func() { ResendAfter = oldR }()
	filter := `TMPDIR=/nonexistent/x dash 2>&1 | while IFS= read -r l; do case $l in *" Y "*) printf '%s\n' "$l";; *" 2 B"|*" 2 E "*) ;; *) printf '%s\n' "$l";; esac; done`
	dir := t.TempDir()
	var trace bytes.Buffer
	s := dial(t, "cd "+emit.Quote(dir)+" && "+filter, Options{Timeout: 10 * time.Second, Trace: &trace})
	out, err := s.RunChecked(context.Background(), "a write", "echo x >> log; echo out", "if [ -e checked ]; then P applied; P again; else : > checked; P unapplied; fi")
	if err != nil || out != "out\n" {
		t.Fatalf("a write read back as unapplied, then sent again: %q, %v\n%s", out, err, trace.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "log")); string(got) != "x\nx\n" {
		t.Errorf("the write ran %q, want twice (the check said it was not there)", got)
	}
	out, err = s.RunChecked(context.Background(), "a write", "echo y >> log2; echo out", "P applied; P read back")
	if err != nil || out != "out\n" {
		t.Fatalf("a write answered whole: %q, %v", out, err)
	}
}

// TestRunWithCheck: a command given to Run with WithCheck (the awk
// engine's launch, through live.ShellRunner) whose answer the line lost
// is answered by its read-back, not run again.
func TestRunWithCheck(t *testing.T) {
	oldR := ResendAfter
	ResendAfter = 200 * time.Millisecond
	defer func() { ResendAfter = oldR }()
	filter := `TMPDIR=. dash 2>&1 | while IFS= read -r l; do case $l in *" Y "*) printf '%s\n' "$l";; *" 2 B"|*" 2 E "*) ;; *) printf '%s\n' "$l";; esac; done`
	dir := t.TempDir()
	var trace bytes.Buffer
	s := dial(t, "cd "+emit.Quote(dir)+" && "+filter, Options{Timeout: 10 * time.Second, Trace: &trace})
	out, err := s.RunFor(WithCheck(context.Background(), "if [ -e launched ]; then P applied; P \"@@file $(cat launched)\"; else P unapplied; fi"),
		"a launch", "echo f1 > launched; echo \"@@file $(cat launched)\"", time.Second)
	if err != nil || out != "@@file f1\n" {
		t.Fatalf("a launch whose answer was lost: %q, %v\n%s", out, err, trace.String())
	}
	if !strings.Contains(trace.String(), "reading back what it changes") {
		t.Errorf("the launch was not read back:\n%s", trace.String())
	}
}

// holdingLine is a transport that gives the shell each line only when the
// next one comes, as a board's `cat /dev/ttyS1 | sh` does under busybox
// (its cat's splice keeps the pipe locked until the port's next bytes:
// e2e/FINDINGS.md).
const holdingLine = `awk '{ if (NR > 1) { print prev; fflush() } prev = $0 }' | sh 2>&1`

// TestRequestsThroughALineThatHoldsTheirLastBytes: on holdingLine every
// request after the greeting (which its resend answers: blank lines wait
// until the greeting has shown that the line does not echo) is answered
// through the blank lines that follow it (NudgeAfter), not through a
// resend or a sync (ResendAfter is set past the requests' bound here, so
// that only the blank lines can answer them); without them the same line
// answers nothing within the bound, which proves that it holds.
func TestRequestsThroughALineThatHoldsTheirLastBytes(t *testing.T) {
	oldR, oldG := ResendAfter, GreetEvery
	ResendAfter, GreetEvery = time.Hour, 200*time.Millisecond
	t.Cleanup(func() { ResendAfter, GreetEvery = oldR, oldG })
	dir := t.TempDir()
	var trace bytes.Buffer
	s, err := Dial(context.Background(), "cd "+emit.Quote(dir)+" && "+holdingLine, Options{Timeout: 20 * time.Second, Trace: &trace})
	if err != nil {
		t.Fatalf("Dial: %v\n%s", err, trace.String())
	}
	const n = 12
	for i := range n {
		out, err := s.Run(context.Background(), "echo", fmt.Sprintf("echo line $((%d * 2)) >> f; cat f | wc -l", i))
		if err != nil || strings.TrimSpace(out) != fmt.Sprint(i+1) {
			t.Fatalf("request %d: %q, %v\n%s", i, out, err, trace.String())
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f"))
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "line %d\n", i*2)
	}
	if string(got) != want.String() {
		t.Errorf("the writes ran as:\n%s\nwant each once, in order:\n%s", got, want.String())
	}
	st := s.Stats()
	s.Close()
	if st.Nudges < n {
		t.Errorf("%d blank lines for %d requests: each needed one\n%s", st.Nudges, n, trace.String())
	}
	if strings.Contains(trace.String(), "sent again as") || strings.Contains(trace.String(), "finding out") {
		t.Errorf("a request was sent again or synced: the blank lines should have answered it\n%s", trace.String())
	}

	// The control: no blank lines, and the first request is never
	// answered.
	old := NudgeAfter
	NudgeAfter = 0
	defer func() { NudgeAfter = old }()
	s2, err := Dial(context.Background(), "cd "+emit.Quote(dir)+" && "+holdingLine, Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatalf("Dial without blank lines: %v", err)
	}
	defer s2.Close()
	_, err = s2.Run(context.Background(), "echo", "echo held")
	if err == nil {
		t.Fatal("without blank lines the holding line answered a request: it does not hold, and the test proves nothing")
	}
	if !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("without blank lines: %v", err)
	}
}

// TestGreetingCutIsSentAgain: a shell that has the functions and reads
// the greeting's request line cut (its line ended in the middle of it)
// rejects it as cut; the greeting is sent again to the next shell and
// answered, not taken as the line's failure (seen in the suite: a run
// on a restarting line whose greeting straddled a restart ended with
// "rejected a request line as cut").
func TestGreetingCutIsSentAgain(t *testing.T) {
	probe := &Session{m1: "SQH" + strings.Repeat("0", 16), m2: strings.Repeat("0", 16)}
	cut := len(probe.greeting()) + len("R 1 ") + 6 // inside the request line, after the functions
	line := fmt.Sprintf("dd bs=1 count=%d 2>/dev/null | sh 2>&1; exec sh 2>&1", cut)
	var trace bytes.Buffer
	s, err := Dial(context.Background(), line, Options{Timeout: 20 * time.Second, Trace: &trace})
	if err != nil {
		t.Fatalf("Dial: %v\n%s", err, trace.String())
	}
	defer s.Close()
	if !strings.Contains(trace.String(), "rejected as cut: sent again") {
		t.Errorf("the first shell did not reject the cut greeting: the test proves nothing\n%s", trace.String())
	}
	out, err := s.Run(context.Background(), "echo", "echo ok-$((6*7))")
	if err != nil || strings.TrimSpace(out) != "ok-42" {
		t.Errorf("after the greeting sent again: %q, %v\n%s", out, err, trace.String())
	}
}
