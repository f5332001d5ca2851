// Package remote reaches a target's tracefs through a shell: sqlhist runs
// a command on this machine (ssh root@board, adb shell, kubectl exec -i
// POD -- sh, a serial line through socat, nc to a busybox nc -l -e sh)
// whose standard input and output are a POSIX shell on the target, and
// every read and write of the tracefs becomes a short shell command sent
// to it. The target needs only a shell and the tools busybox, toybox and
// coreutils all have (cat, mkdir, rmdir, kill, uname); nothing is
// installed there.
//
// The target is untrusted input. Each request is one line the shell runs
// through a function defined at the start of the session; its answer is
// framed by markers made from a random nonce that is never sent whole (a
// tty that echoes what it receives cannot forge them), and is bounded in
// time and size. Anything else the transport prints (echo, prompts, a
// banner) is ignored; an answer that is cut, late or too big is an error
// naming the step. Nothing sent to the target blocks without a bound, and
// every request line is built so that a line cut by a lost transport is
// rejected, not run, when a later session's input completes it (a serial
// console's shell outlives the host).
package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a session.
type Options struct {
	// Timeout bounds each request; 0 is DefaultTimeout.
	Timeout time.Duration
	// MaxAnswer bounds the bytes of one answer; 0 is DefaultMaxAnswer.
	MaxAnswer int
	// Stderr receives what the transport command prints on its standard
	// error (ssh's warnings, say); nil keeps only its end, for errors.
	Stderr io.Writer
	// Shell runs the command; nil is "sh".
	Shell string
	// Trace, when set, receives a line for each request and each answer
	// (what is sent to the target, and how long it took): for a user who
	// wants to see it (sqlhist --via-trace FILE) and for debugging.
	Trace io.Writer
}

// GreetEvery is how often the greeting is sent again while nothing
// answers it (until Options.Timeout): a serial line's shell that was
// restarting, or a line closed while the greeting came, gets it whole.
var GreetEvery = 2 * time.Second

// Defaults of Options.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxAnswer = 64 << 20
)

// ErrLost is the error of every request once the transport ended.
var ErrLost = errors.New("the transport to the target ended")

// Session is one shell on a target. Its methods may be called from
// several goroutines: requests are made one at a time.
type Session struct {
	Command string // the transport command, as given

	opt   Options
	cmd   *exec.Cmd
	in    io.WriteCloser
	m1    string // the nonce, sent in two halves
	m2    string
	mark  string // m1+m2: never sent whole
	tail  *tailWriter
	lines chan []byte // lines of the transport's output
	done  chan struct{}
	// exited is closed once the transport command has exited; state is
	// then its status. out is its output, closed by Close.
	exited chan struct{}
	state  *os.ProcessState
	out    io.Closer
	// errDone is closed once the command's standard error has been
	// copied to tail to its end (its last words are in tail then).
	errDone chan struct{}
	errOut  io.Closer

	mu     sync.Mutex // one request at a time
	seq    int
	broken error    // set once the session cannot be used
	nudge  *nudging // the blank lines due after what was last sent (NudgeAfter)
	// nudgeOK says that blank lines may follow requests: the greeting
	// was answered and the line did not echo it (a terminal echoes a
	// blank line too, into the answer the shell is writing).
	nudgeOK     bool
	greetEchoed bool // the greeting's line came back before its answer

	// Counters, for measurements: bytes sent and received, requests,
	// blank lines sent after requests (NudgeAfter).
	sent, received, requests, nudges atomic.Int64
	// rawPages is the pages ReadRaw asks for next (0: rawPagesStart).
	rawPages atomic.Int64

	started time.Time
	ev      events   // kept listings of events/ directories
	onClose []func() // run by Close

	// Info is what the handshake read.
	Info Info
}

// Info describes the target.
type Info struct {
	Release string // uname -r
	Machine string // uname -m
	BootID  string // /proc/sys/kernel/random/boot_id
	Host    string // uname -n
}

// Dial starts the transport command and greets the shell at its far end.
// The command runs in its own process group, so that a Ctrl-C meant for
// sqlhist does not end it before sqlhist has cleaned up on the target.
func Dial(ctx context.Context, command string, opt Options) (*Session, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("--via: empty command")
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.MaxAnswer <= 0 {
		opt.MaxAnswer = DefaultMaxAnswer
	}
	shell := opt.Shell
	if shell == "" {
		shell = "sh"
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	h := hex.EncodeToString(nonce)
	s := &Session{Command: command, opt: opt, m1: "SQH" + h[:16], m2: h[16:], tail: &tailWriter{max: 4096},
		lines: make(chan []byte, 256), done: make(chan struct{}), exited: make(chan struct{}),
		errDone: make(chan struct{})}
	s.mark = s.m1 + s.m2
	s.started = time.Now()
	s.cmd = exec.Command(shell, "-c", command)
	ownGroup(s.cmd)
	var errw io.Writer = s.tail
	if opt.Stderr != nil {
		errw = io.MultiWriter(s.tail, opt.Stderr)
	}
	// Our own pipe, not Cmd.Stderr: exec's copy of a writer ends only
	// in Cmd.Wait, and the error that says the transport ended must
	// wait for its last words.
	errr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.errOut = errr
	in, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.in = in
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("--via %s: %v", command, err)
	}
	s.out = out
	go func() {
		defer close(s.errDone)
		io.Copy(errw, errr)
	}()
	go func() {
		// Process.Wait, not Cmd.Wait: it leaves the output pipe to
		// readLines, which may still be reading it.
		s.state, _ = s.cmd.Process.Wait()
		close(s.exited)
	}()
	go s.readLines(out)
	if err := s.greet(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// readLines reads the transport's output into s.lines until it ends,
// then waits for the command (a little, before saying the output ended:
// its exit status goes in the error that says so).
func (s *Session) readLines(out io.Reader) {
	defer close(s.done)
	defer func() {
		select {
		case <-s.exited:
		case <-time.After(500 * time.Millisecond):
		}
	}()
	r := bufio.NewReaderSize(out, 64*1024)
	for {
		l, err := r.ReadSlice('\n')
		if len(l) > 0 {
			s.received.Add(int64(len(l)))
			s.lines <- append([]byte(nil), l...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// greet sends the lines that make any partial line an earlier session
// left harmless, defines the request function and reads the target's
// release, machine and boot.
func (s *Session) greet(ctx context.Context) error {
	out, err := s.send(ctx, "greeting the target's shell (is the command's other end a POSIX shell?)", s.greeting(),
		`uname -r; uname -m; uname -n; cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo -; echo "${SQT:--}"`, GreetEvery, s.opt.Timeout)
	if err != nil {
		return err
	}
	f := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// A terminal that echoes (the greeting's stty says so, or its line
	// came back) gets no blank lines: its echo of one lands in the
	// answer being written. The echo seen is not enough: bash's line
	// editor shows no line while more input waits, and a greeting sent
	// at once is read at once.
	s.nudgeOK = !s.greetEchoed && (len(f) < 5 || f[4] != "tty")
	if len(f) != 5 || f[0] == "" || f[1] == "" {
		return fmt.Errorf("--via %s: greeting the target's shell: expected its release, machine, host name, boot id and whether it reads an echoing terminal, got %q", s.Command, clip(out))
	}
	s.Info = Info{Release: f[0], Machine: f[1], Host: f[2], BootID: f[3]}
	return nil
}

// greeting is the lines that end a partial line, set the markers' halves
// and define the request functions: sent first, and again to a shell
// that lost them (see sync).
func (s *Session) greeting() string {
	var b strings.Builder
	b.WriteString(resync)
	b.WriteString("LC_ALL=C; export LC_ALL; PS1=; PS2=; PS4=; M1=" + s.m1 + "; M2=" + s.m2 + "\n")
	// SQT says whether the shell reads a terminal that echoes (stty of
	// its input, here: R's commands read /dev/null).
	b.WriteString("SQT=-; stty -a 2>/dev/null | tr ' ;' '\\n\\n' | grep -qx echo && SQT=tty\n")
	b.WriteString("D=" + escape(strings.ReplaceAll(requestFunctions, "@REC@", s.record())) + "\n")
	b.WriteString("set -f; eval $D; set +f\n")
	return b.String()
}

// record is the target's file where its shells record the last request
// they started and, once it ended, its status (see requestFunctions):
// every shell of the session writes the same file, so a shell started
// after another (a serial line's, restarted at a disconnect) tells what
// the one before it did with a request whose answer the line lost. It
// is written in the functions' text, not in a variable a cut line could
// leave half set.
func (s *Session) record() string { return "${TMPDIR:-/tmp}/sqh" + s.m2 }

// resync ends whatever partial line a cut session left in a shell that
// outlives it: a line continuation (two newlines), an open single quote
// (the quote in a comment line closes it, else the line is a comment), an
// open double quote (the same), then a newline that runs what is left,
// which the request function rejects (see requestFunctions).
const resync = "\n\n# '\n# \"\n\n"

// requestFunctions is defined in the target's shell at the start of a
// session (@REC@ replaced by Session.record). R SEQ LEN CMD SEQ runs CMD
// (standard input /dev/null, standard error into the answer) between the
// markers "<nonce> SEQ B" and "<nonce> SEQ E STATUS", each on a line of
// its own; it records SEQ in L, and "SEQ B PPID" in the record file (V),
// before, and "SEQ E STATUS PPID" in the record file after, PPID being
// "P" and the shell's process id, which tells --cleanup whether the
// session's shell is gone (a record that
// cannot be written, a read-only /tmp, is left out quietly); a call with
// another number of arguments, with two different SEQs or with a CMD
// whose length is not LEN bytes is a cut line (or a request sent in
// pieces that lost one) and is answered "<nonce> SEQ X". Y SEQ answers
// "<nonce> SEQ Y L RECORD": the last request this shell started, and the
// record file's line ("-" for none; see Session.sync). Q N sets the
// status N; P prints its argument as it is and a newline, with a builtin (mksh's printf is a program: a process
// a line). Only builtins: a request costs the target no process unless
// its command runs one. mksh counts ${#3} in characters in its UTF-8
// mode, which it leaves (set +U). The text travels escaped and is run by
// "eval $D" (split at single spaces, joined again): it has no runs of
// spaces, no tabs and no newlines.
const requestFunctions = `V() { { echo "$* P$$" >"@REC@"; } 2>/dev/null; }; R() { if [ $# = 4 ] && [ "$1" = "$4" ] && [ "${#3}" = "$2" ]; then L=$1; V $1 B; echo; echo "$M1$M2 $1 B"; eval "$3" </dev/null 2>&1; S=$?; V $1 E $S; echo; echo "$M1$M2 $1 E $S"; else echo; echo "$M1$M2 $1 X"; fi; }; Y() { r=; { read -r r <"@REC@"; } 2>/dev/null; echo; echo "$M1$M2 $1 Y ${L:--} ${r:--}"; }; Q() { return $1; }; if [ -n "$KSH_VERSION" ]; then set +U; P() { print -r -- "$1"; }; else P() { printf '%s\n' "$1"; }; fi`

// escape writes s as one shell word without quotes: every byte but
// letters, digits and a few punctuation marks is preceded by a backslash,
// so that a line cut anywhere leaves no quote open; a newline, which a
// backslash would join to the next line, travels as "<newline>"; a control
// byte, which a terminal's line discipline or a shell's line editor would
// act on (^C, ^U, a tab's completion, ^S's flow control), as
// "$(printf \\OOO)".
func escape(s string) string { return strings.Join(escapeTokens(s), "") }

// escapeTokens is escape's text, a token per byte of s.
func escapeTokens(s string) []string {
	out := make([]string, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./:,+@%^", c) >= 0:
			out = append(out, string(c))
		case c == '\n':
			out = append(out, "\"\n\"")
		case c < ' ' || c == 0x7f:
			out = append(out, fmt.Sprintf("\"$(printf \\\\%03o)\"", c))
		default:
			out = append(out, "\\"+string([]byte{c}))
		}
	}
	return out
}

// maxRequestLine bounds a line sent to the target: a terminal in
// canonical mode (adb shell, a login on a serial console) keeps at most
// 4095 bytes of a line, and busybox's line editor (an interactive ash on a
// terminal) 1023. A longer request is sent in pieces, each appended to a
// variable, and the request names the variable.
const maxRequestLine = 900

// requestLines are the lines that send request seq of cmd: its length
// goes with it, so that the target checks the command whole.
func requestLines(seq, cmd string) string {
	toks := escapeTokens(cmd)
	n := strconv.Itoa(len(cmd))
	if len(strings.Join(toks, "")) <= maxRequestLine {
		return "R " + seq + " " + n + " " + strings.Join(toks, "") + " " + seq + "\n"
	}
	var b strings.Builder
	first := true
	for len(toks) > 0 {
		var piece strings.Builder
		for len(toks) > 0 && piece.Len()+len(toks[0]) <= maxRequestLine {
			piece.WriteString(toks[0])
			toks = toks[1:]
		}
		if first {
			b.WriteString("C=" + piece.String() + "\n")
			first = false
		} else {
			b.WriteString("C=${C}" + piece.String() + "\n")
		}
	}
	b.WriteString("R " + seq + " " + n + " \"$C\" " + seq + "\n")
	return b.String()
}

// writeLine sends text to the target.
func (s *Session) writeLine(text string) error {
	s.sent.Add(int64(len(text)))
	_, err := io.WriteString(s.in, text)
	return err
}

// nudging is the blank lines that follow what was sent until the line
// gives anything back (NudgeAfter).
type nudging struct {
	timer *time.Timer
	wait  time.Duration // until the next one
	seq   string        // the request they follow, for the trace
	n     int
}

// sendAndNudge sends a request's text (s.mu held) and has blank lines
// follow it until the line gives something back.
func (s *Session) sendAndNudge(seq, text string) error {
	if err := s.writeLine(text); err != nil {
		return err
	}
	s.stopNudge()
	if NudgeAfter > 0 && s.nudgeOK {
		s.nudge = &nudging{timer: time.NewTimer(NudgeAfter), wait: NudgeAfter, seq: seq}
	}
	return nil
}

func (s *Session) stopNudge() {
	if s.nudge != nil {
		s.nudge.timer.Stop()
		s.nudge = nil
	}
}

// nudgeC is the channel on which the next blank line falls due (nil: none).
func (s *Session) nudgeC() <-chan time.Time {
	if s.nudge == nil {
		return nil
	}
	return s.nudge.timer.C
}

// fireNudge sends the blank line that fell due and doubles the wait for
// the next.
func (s *Session) fireNudge() error {
	g := s.nudge
	if g.n == 0 {
		s.tracef("> %s nothing back after %v: a blank line sent, then again each time twice as long passes", g.seq, g.wait)
	}
	g.n++
	s.nudges.Add(1)
	g.wait *= 2
	g.timer.Reset(g.wait)
	return s.writeLine("\n")
}

// AnswerError is a request the target answered with a non-zero status.
type AnswerError struct {
	Step   string
	Status int
	Output string // what the command printed (its standard error too)
}

func (e *AnswerError) Error() string {
	msg := strings.TrimSpace(e.Output)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", e.Step, e.Status)
	}
	return fmt.Sprintf("%s: %s", e.Step, clip(msg))
}

// Run runs cmd, a shell command, on the target and returns what it
// printed (standard output and error); a non-zero status is an
// *AnswerError. step names the request in errors ("reading error_log").
// A request the line lost is sent again once the target is known not to
// have run it (see do); one it ran whose answer was lost is read back
// when ctx carries a check (WithCheck), else an error, not run twice.
func (s *Session) Run(ctx context.Context, step, cmd string) (string, error) {
	return s.do(ctx, step, cmd, s.opt.Timeout, kind{check: checkOf(ctx)})
}

type checkKey struct{}

// WithCheck is ctx carrying check, a read-back of the command that Run
// or RunFor is given with it (see RunChecked): for a caller that reaches
// the session through a function of Run's form (live.ShellRunner).
func WithCheck(ctx context.Context, check string) context.Context {
	return context.WithValue(ctx, checkKey{}, check)
}

func checkOf(ctx context.Context) string {
	c, _ := ctx.Value(checkKey{}).(string)
	return c
}

// RunFor is Run with its own bound on the answer's time instead of
// Options.Timeout (at least that): for a command that runs for a while
// by design (the awk engine's script, live.RunAwkVia).
func (s *Session) RunFor(ctx context.Context, step, cmd string, timeout time.Duration) (string, error) {
	return s.do(ctx, step, cmd, max(timeout, s.opt.Timeout), kind{check: checkOf(ctx)})
}

// RunChecked is Run for a command that changes something on the target
// and whose output is needed, with check: a command that changes nothing
// and prints "applied" on its first line when cmd's change is there
// (then what cmd would have printed, which RunChecked returns),
// "unapplied" when it is certainly not (cmd is then sent again), anything
// else when it cannot tell. It is run only when the line lost cmd's
// answer and cmd ran, or may have (the target's record, when it keeps
// one, says a request that never started is sent again).
func (s *Session) RunChecked(ctx context.Context, step, cmd, check string) (string, error) {
	return s.do(ctx, step, cmd, s.opt.Timeout, kind{check: check})
}

// request is Run for a command that changes something (a write, a
// mkdir, a poll that consumes a trace_pipe).
func (s *Session) request(ctx context.Context, step, cmd string) (string, error) {
	return s.do(ctx, step, cmd, s.opt.Timeout, kind{})
}

// read is Run for a command that changes nothing (a cat, a listing):
// when the target ran it but its answer was lost, it is sent again.
func (s *Session) read(ctx context.Context, step, cmd string) (string, error) {
	return s.do(ctx, step, cmd, s.opt.Timeout, kind{idempotent: true})
}

// write is Run for a command that changes something and prints nothing
// needed (a tracefs write, a mkdir): when its answer was lost, the
// target's record of its status answers for it; when the record cannot
// tell, check (as RunChecked's; "" for none) reads back what it changes.
// A check of checkResend says the command may run twice (a setting).
func (s *Session) write(ctx context.Context, step, cmd, check string) (string, error) {
	if check == checkResend {
		return s.do(ctx, step, cmd, s.opt.Timeout, kind{quiet: true, idempotent: true})
	}
	return s.do(ctx, step, cmd, s.opt.Timeout, kind{quiet: true, check: check})
}

// kind says what may be done with a request whose answer the line lost.
type kind struct {
	idempotent bool   // it changes nothing: send it again
	quiet      bool   // its output is not needed: its recorded status answers
	check      string // a read-back of its change (RunChecked)
}

// The first words of a check's answer.
const (
	checkApplied   = "applied"
	checkUnapplied = "unapplied"
	checkResend    = "-" // not a check: the write may run twice
)

// ResendAfter is how long a request waits for its answer to begin before
// finding out what became of it (Session.sync). A shell that started
// again (a serial line's, restarted at each disconnect) lost the greeting's
// functions and answers "R: not found" at once, which starts the same.
// Each wait is drawn from 3/4 to 5/4 of it, so that the waits do not fall
// in step with a line that ends its shell on a period. (A wait grown with
// the target's slow answers was tried: in the 6.1 guest under emulation
// on a loaded host, a request the line dropped between two shells then
// waited 6-8 s, and a -r of the JOIN ran past 8 minutes; an early sync
// costs the greeting again, about 1 KB, and finds a slow answer begun.)
var ResendAfter = 2 * time.Second

// NudgeAfter is how long the line may give nothing back after a request
// (or a greeting, or a sync) before a blank line follows it; then another
// each time twice as long has passed, until anything comes back. A line
// may hold a request's last bytes until more come: busybox's cat moves a
// serial port's bytes into a pipe with sendfile, whose splice keeps the
// pipe locked while it waits for the port's next bytes, so that the shell
// reading the pipe (a board's `while true; do cat /dev/ttyS1 | sh >
// /dev/ttyS1; done`) often cannot read the request cat has just given it
// (in Linux 6.1, lines of every length waited for the next one;
// e2e/FINDINGS.md). A blank line is nothing to any shell, at any point of
// its input (R's command reads /dev/null, not the line), and such a line
// answers in milliseconds rather than after ResendAfter and a sync. Not
// on a line that echoes (a terminal: adb shell, a serial login, ssh -t),
// whose echo of a blank line would land in the answer being written, and
// so not before the greeting has shown that the line does not echo: the
// greeting waits for GreetEvery's resend instead.
var NudgeAfter = 150 * time.Millisecond

// StallAfter is how long an answer that began may go without a line
// before the target is asked what became of its request (its end marker
// lost, or its shell gone): the first wait, doubled after the first ask,
// each drawn as ResendAfter's. The ask is a short line, read by
// the shell after the command it is running: a command that runs for a
// while by design costs a few lines.
var StallAfter = 4 * time.Second

// maxRejects bounds the times a request is sent again after the target
// rejected its line as cut: a line that cuts every request is an error.
const maxRejects = 50

// Outcomes of one attempt at a request (await).
const (
	answered = iota // its answer is complete
	rejected        // the target's R rejected the line as cut: it did not run
	unsure          // no answer began: a shell without the functions, or a lost line
	stalled         // its answer began, then nothing came for StallAfter
	resend          // it did not run, or it is idempotent: send it again
)

// errRejected is answer.feed's error for a rejected line.
var errRejected = errors.New("the target's shell rejected a request line as cut; the transport changed or dropped bytes")

// jitter is d, doubled when n > 0, drawn from 3/4 to 5/4 of that.
func jitter(d time.Duration, n int) time.Duration {
	d <<= min(n, 1)
	return d*3/4 + time.Duration(mrand.Int64N(int64(d)/2+1))
}

// bound is a request's deadline (its timer, and the timeout it was set
// to, for errors) and the times it was sent: every attempt, sync and
// check of the request waits within it.
type bound struct {
	timer   *time.Timer
	timeout time.Duration
	sent    int
}

// do makes a request and sees it answered once within timeout. Each
// attempt goes with a sequence number of its own. An attempt whose answer
// does not begin (within ResendAfter, or at once when a shell answers
// "not found"), or stops (StallAfter), is followed by a sync: the
// greeting again and a request that answers the last request its shell
// started and the target's record (see requestFunctions). The line keeps
// order: whatever shell read the attempt ran it (or rejected it) before
// the one that answers the sync read the sync. So an attempt that the
// record shows started in none of them never ran, and is sent again; one
// the record shows ended has its status there (a write's answer, its
// output lost); one started and not ended is running in a shell that
// outlived its input, and is waited for. Without a record (no writable
// /tmp on the target), an attempt whose begin marker has not come by the
// sync's answer never ran unless the sync's shell says it started it.
// A request that ran and whose output was lost is sent again when it is
// idempotent (a read), counted done when its output is not needed and its
// status is known (a write), else read back by its check; anything else
// is an error, never run twice.
func (s *Session) do(ctx context.Context, step, cmd string, timeout time.Duration, k kind) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return "", fmt.Errorf("%s: %w", step, s.broken)
	}
	s.requests.Add(1)
	b := &bound{timer: time.NewTimer(timeout), timeout: timeout}
	defer b.timer.Stop()
	var a *answer
	if s.opt.Trace != nil {
		start := time.Now()
		fmt.Fprintf(s.opt.Trace, "%s > %d %s: %s\n", start.Format("15:04:05.000"), s.seq+1, step, cmd)
		defer func() {
			st, n := -1, 0
			if a != nil {
				st, n = a.status, len(a.out)+a.body.Len()
			}
			fmt.Fprintf(s.opt.Trace, "%s < %d status %d, %d bytes, %v\n", time.Now().Format("15:04:05.000"), s.seq, st, n, time.Since(start).Round(time.Millisecond))
		}()
	}
	a, err := s.doLocked(ctx, step, cmd, b, k)
	if err != nil {
		return "", err
	}
	if a.status != 0 {
		return a.out, &AnswerError{Step: step, Status: a.status, Output: a.out}
	}
	return a.out, nil
}

// doLocked is do's requests, s.mu held, within b.
func (s *Session) doLocked(ctx context.Context, step, cmd string, b *bound, k kind) (*answer, error) {
	rejects := 0
	for {
		s.seq++
		seq := strconv.Itoa(s.seq)
		a := newAnswer(s.mark, seq, s.opt.MaxAnswer)
		if b.sent > 0 {
			s.tracef("> %s %s: sent again as %s", seq, step, seq)
		}
		if err := s.sendAndNudge(seq, requestLines(seq, cmd)); err != nil {
			return nil, s.lostErrLocked(step, err)
		}
		b.sent++
		out, err := s.settle(ctx, step, a, b, k)
		if err != nil {
			return nil, err
		}
		switch out {
		case answered:
			return a, nil
		case rejected:
			if rejects++; rejects >= maxRejects {
				s.broken = errRejected
				return nil, fmt.Errorf("%s: %w (%d times)", step, errRejected, rejects)
			}
			s.tracef("< %s rejected as cut", seq)
		}
	}
}

// settle reads attempt a's answer, finding out what became of it when
// none comes (see do): answered (a holds it), rejected or resend.
func (s *Session) settle(ctx context.Context, step string, a *answer, b *bound, k kind) (int, error) {
	out, err := s.await(ctx, step, a, b, 0)
	for n := 0; ; n++ {
		if err != nil {
			return 0, err
		}
		if out == answered || out == rejected {
			return out, nil
		}
		if out == unsure {
			s.tracef("< %s no answer begun: finding out what the target did", a.seq)
		} else {
			s.tracef("< %s its answer stopped: finding out what the target did", a.seq)
		}
		r, err := s.sync(ctx, step, a, b, out == unsure, n)
		if err != nil {
			return 0, err
		}
		switch {
		case r.answered:
			return answered, nil
		case r.rejected:
			return rejected, nil
		case r.begun:
			// Its answer began meanwhile (a slow target, or a line
			// that held the request's last bytes until the sync's
			// came): read it to its end.
			out, err = s.await(ctx, step, a, b, n+1)
			continue
		}
		ran, ended, status := r.outcome(a)
		switch {
		case !ran:
			return resend, nil
		case !ended:
			s.tracef("< %s started by a shell that is still running it: waiting", a.seq)
			out, err = s.await(ctx, step, a, b, n+1)
			continue
		case k.quiet && status >= 0:
			s.tracef("< %s ran, its answer lost: the target's record says status %d", a.seq, status)
			a.out, a.status = "", status
			if status != 0 {
				a.out = "(its message was lost on the line)"
			}
			return answered, nil
		case k.idempotent:
			s.tracef("< %s ran, its answer lost: sent again (it may run twice)", a.seq)
			return resend, nil
		case k.check != "":
			return s.check(ctx, step, a, b, k.check)
		}
		s.broken = fmt.Errorf("the target ran the request but its answer was lost (transport %s); it is not run twice", s.Command)
		return 0, fmt.Errorf("%s: %w", step, s.broken)
	}
}

// check reads back what attempt a of a request would have changed (its
// kind's check): applied is its answer, unapplied sends it again.
func (s *Session) check(ctx context.Context, step string, a *answer, b *bound, check string) (int, error) {
	s.tracef("< %s ran or not, its answer lost: reading back what it changes", a.seq)
	c, err := s.doLocked(ctx, step+" (reading back what it did)", check, b, kind{idempotent: true})
	if err != nil {
		return 0, err
	}
	first, rest, _ := strings.Cut(c.out, "\n")
	switch {
	case c.status == 0 && first == checkApplied:
		s.tracef("< %s applied", a.seq)
		a.out, a.status = rest, 0
		return answered, nil
	case c.status == 0 && first == checkUnapplied:
		s.tracef("< %s not applied: sent again", a.seq)
		return resend, nil
	}
	s.broken = fmt.Errorf("the target may have run the request, its answer was lost (transport %s) and reading back what it does told nothing (%q); it is not run twice", s.Command, clip(c.out))
	return 0, fmt.Errorf("%s: %w", step, s.broken)
}

// tracef writes a line of the trace, when there is one.
func (s *Session) tracef(format string, args ...any) {
	if s.opt.Trace != nil {
		fmt.Fprintf(s.opt.Trace, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// next is the next line of the transport's output, or the error that
// ends the wait (b's timer: the request's bound; quiet: a wait for an
// answer to begin, nil for none).
func (s *Session) next(ctx context.Context, step string, b *bound, quiet <-chan time.Time) (l []byte, isQuiet bool, err error) {
	for {
		var nudged bool
		l, isQuiet, nudged, err = s.next1(ctx, step, b, quiet)
		if nudged {
			continue
		}
		return l, isQuiet, err
	}
}

// next1 is one wait of next; nudged says that a blank line fell due and
// was sent (nothing else happened).
func (s *Session) next1(ctx context.Context, step string, b *bound, quiet <-chan time.Time) (l []byte, isQuiet, nudged bool, err error) {
	select {
	case <-s.nudgeC():
		if err := s.fireNudge(); err != nil {
			return nil, false, false, s.lostErrLocked(step, err)
		}
		return nil, false, true, nil
	case l = <-s.lines:
		return l, false, false, nil
	case <-s.done:
		// Lines read before the end may still be queued.
		select {
		case l = <-s.lines:
			return l, false, false, nil
		default:
			return nil, false, false, s.lostErrLocked(step, nil)
		}
	case <-quiet:
		return nil, true, false, nil
	case <-b.timer.C:
		times := ""
		if b.sent > 1 {
			times = fmt.Sprintf(", sent %d times", b.sent)
		}
		s.broken = fmt.Errorf("the target did not answer within %v (transport %s%s)", b.timeout, s.Command, times)
		return nil, false, false, fmt.Errorf("%s: %w", step, s.broken)
	case <-ctx.Done():
		s.broken = fmt.Errorf("interrupted while waiting for the target (%v)", context.Cause(ctx))
		return nil, false, false, fmt.Errorf("%s: %w", step, s.broken)
	}
}

// await reads a's answer: answered once it is complete, rejected when
// the target rejected the line, unsure when it has not begun within
// ResendAfter or a shell said "not found" before it began, stalled when
// it began and then nothing came for StallAfter (grown by n, the times
// the target was asked).
func (s *Session) await(ctx context.Context, step string, a *answer, b *bound, n int) (int, error) {
	var quiet <-chan time.Time
	wait := jitter(ResendAfter, 0)
	if a.started {
		wait = jitter(StallAfter, n)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		quiet = t.C
	}
	last := time.Now()
	stall := jitter(StallAfter, n)
	for {
		l, isQuiet, err := s.next(ctx, step, b, quiet)
		if err != nil {
			return 0, err
		}
		if isQuiet {
			if !a.started {
				return unsure, nil
			}
			if time.Since(last) >= stall {
				return stalled, nil
			}
			quiet = time.After(stall - time.Since(last))
			continue
		}
		last = time.Now()
		if !a.started && notFound(l) {
			return unsure, nil
		}
		done, err := a.feed(l)
		if a.started {
			s.stopNudge() // the request came through
		}
		if err == errRejected {
			s.stopNudge()
			return rejected, nil
		}
		if err != nil {
			s.broken = err
			return 0, fmt.Errorf("%s: %w", step, err)
		}
		if done {
			return answered, nil
		}
	}
}

// notFound reports whether a line of the transport's output is a shell's
// "not found" (dash's "sh: 1: R: not found", busybox's "sh: R: not
// found", bash's "command not found", mksh's "inaccessible or not found"):
// a shell without the greeting's functions, or the rest of a cut line.
func notFound(l []byte) bool { return bytes.Contains(l, []byte("not found")) }

// synced is what a sync found.
type synced struct {
	answered, rejected, begun bool   // a's answer came whole, rejected, or began
	last                      string // the last request the answering shell started ("-": none)
	record                    string // the target's record ("SEQ B PPID", "SEQ E STATUS PPID"; "-": none)
}

// outcome says from the sync's answer whether attempt a ran (and
// whether it ended, and its status, -1 when unknown).
func (r synced) outcome(a *answer) (ran, ended bool, status int) {
	f := strings.Fields(r.record)
	if n := len(f); n > 0 && strings.HasPrefix(f[n-1], "P") {
		f = f[:n-1] // the shell that wrote it
	}
	switch {
	case len(f) == 2 && f[0] == a.seq && f[1] == "B":
		return true, false, -1
	case len(f) == 3 && f[0] == a.seq && f[1] == "E":
		st, err := strconv.Atoi(f[2])
		if err != nil || st < 0 || st > 255 {
			st = -1
		}
		return true, true, st
	case len(f) >= 2 && f[0] != a.seq && !a.started:
		// The record works and shows another request: no shell
		// started this one.
		return false, true, -1
	}
	return a.started || r.last == a.seq, true, -1
}

// sync finds out what became of the attempt a, whose answer did not
// begin (greet) or stopped: it sends Y, and the greeting before it when
// greet (a shell started since has none of its functions) or when a
// shell answers "not found", again after a wait (GreetEvery, grown by n
// and by each try, each drawn as ResendAfter's) until it is answered, and
// reads until Y's answer. Lines of a's answer may come first (a slow
// shell): when they begin it (greet) sync returns at once, for do to
// read the rest; a's end returns it answered.
func (s *Session) sync(ctx context.Context, step string, a *answer, b *bound, greet bool, n int) (synced, error) {
	s.seq++
	seq := strconv.Itoa(s.seq)
	y := "Y " + seq + "\n"
	msg := func() string {
		if greet {
			return s.greeting() + y
		}
		return y
	}
	want := s.mark + " " + seq + " Y "
	if err := s.sendAndNudge(seq, msg()); err != nil {
		return synced{}, s.lostErrLocked(step, err)
	}
	t := time.NewTimer(jitter(GreetEvery, n))
	defer t.Stop()
	for try := 1; ; try++ {
		l, isQuiet, err := s.next(ctx, step, b, t.C)
		if err != nil {
			return synced{}, err
		}
		if isQuiet {
			s.tracef("> %s greeting again: no answer yet, sent again", seq)
			if err := s.sendAndNudge(seq, msg()); err != nil {
				return synced{}, s.lostErrLocked(step, err)
			}
			t.Reset(jitter(GreetEvery, n+try))
			continue
		}
		if rest, ok := bytes.CutPrefix(trimEOL(l), []byte(want)); ok {
			s.stopNudge()
			last, rec, _ := strings.Cut(string(rest), " ")
			s.tracef("< %s greeted again; the shell's last request: %s, the target's record: %s", seq, last, rec)
			return synced{last: last, record: rec}, nil
		}
		if !greet && notFound(l) {
			// A shell without the functions (Y's line), or a's output.
			greet = true
			if err := s.sendAndNudge(seq, msg()); err != nil {
				return synced{}, s.lostErrLocked(step, err)
			}
		}
		wasStarted := a.started
		done, err := a.feed(l)
		if a.started || err != nil {
			s.stopNudge()
		}
		if err == errRejected {
			return synced{rejected: true}, nil
		}
		if err != nil {
			s.broken = err
			return synced{}, fmt.Errorf("%s: %w", step, err)
		}
		if done {
			return synced{answered: true}, nil
		}
		if a.started && !wasStarted {
			return synced{begun: true}, nil
		}
	}
}

// send makes a request: prefix (lines the shell runs first) and cmd's
// request lines are written, and when resend is not 0 written again each
// resend until the answer begins or timeout ends: for the greeting
// alone, which is idempotent (a shell that lost it, a line closed while
// it came, gets it whole again; an answer that comes twice is read once,
// the second skipped by the next request as an earlier answer).
func (s *Session) send(ctx context.Context, step, prefix, cmd string, resend, timeout time.Duration) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return "", fmt.Errorf("%s: %w", step, s.broken)
	}
	s.seq++
	s.requests.Add(1)
	seq := strconv.Itoa(s.seq)
	msg := prefix + requestLines(seq, cmd)
	if err := s.sendAndNudge(seq, msg); err != nil {
		return "", s.lostErrLocked(step, err)
	}
	sent, rejects := 1, 0
	var again <-chan time.Time
	var t *time.Timer
	if resend > 0 {
		t = time.NewTimer(jitter(resend, 0))
		defer t.Stop()
		again = t.C
	}
	a := newAnswer(s.mark, seq, s.opt.MaxAnswer)
	if s.opt.Trace != nil {
		start := time.Now()
		fmt.Fprintf(s.opt.Trace, "%s > %s %s: %s\n", start.Format("15:04:05.000"), seq, step, cmd)
		defer func() {
			fmt.Fprintf(s.opt.Trace, "%s < %s status %d, %d bytes, %v\n", time.Now().Format("15:04:05.000"), seq, a.status, len(a.out)+a.body.Len(), time.Since(start).Round(time.Millisecond))
		}()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		var l []byte
		select {
		case <-s.nudgeC():
			if err := s.fireNudge(); err != nil {
				return "", s.lostErrLocked(step, err)
			}
			continue
		case l = <-s.lines:
		case <-s.done:
			// Lines read before the end may still be queued.
			select {
			case l = <-s.lines:
			default:
				return "", s.lostErrLocked(step, nil)
			}
		case <-again:
			if a.started {
				again = nil // it is answering
				continue
			}
			if s.opt.Trace != nil {
				fmt.Fprintf(s.opt.Trace, "%s > %s %s: no answer yet, sent again\n", time.Now().Format("15:04:05.000"), seq, step)
			}
			if err := s.sendAndNudge(seq, msg); err != nil {
				return "", s.lostErrLocked(step, err)
			}
			sent++
			t.Reset(jitter(resend, sent-1))
			continue
		case <-timer.C:
			times := ""
			if sent > 1 {
				times = fmt.Sprintf(", sent %d times", sent)
			}
			s.broken = fmt.Errorf("the target did not answer within %v (transport %s%s)", timeout, s.Command, times)
			return "", fmt.Errorf("%s: %w", step, s.broken)
		case <-ctx.Done():
			s.broken = fmt.Errorf("interrupted while waiting for the target (%v)", context.Cause(ctx))
			return "", fmt.Errorf("%s: %w", step, s.broken)
		}
		done, err := a.feed(l)
		if err == errRejected && resend > 0 && rejects < maxRejects {
			// A shell ran the line cut (a serial line's shell that
			// ended in the middle of it, with the functions of an
			// earlier greeting): it did not run, and the greeting
			// may be sent again.
			rejects++
			s.tracef("< %s rejected as cut: sent again", seq)
			a = newAnswer(s.mark, seq, s.opt.MaxAnswer)
			if err := s.sendAndNudge(seq, msg); err != nil {
				return "", s.lostErrLocked(step, err)
			}
			sent++
			continue
		}
		if err != nil {
			s.broken = err
			return "", fmt.Errorf("%s: %w", step, err)
		}
		if a.started {
			s.stopNudge()
		}
		if done {
			s.greetEchoed = a.echoed
			if a.status != 0 {
				return a.out, &AnswerError{Step: step, Status: a.status, Output: a.out}
			}
			return a.out, nil
		}
	}
}

// answer reads one framed answer from the lines of the transport's
// output: lines before its begin marker are ignored (echo, prompts,
// earlier answers), then its text up to the end marker.
type answer struct {
	seq                string
	begin, end, reject string
	max                int
	head               string // the start of the request's line ("R SEQ "), as an echo shows it
	echoed             bool   // a line before the answer held head: the transport echoes its input
	started            bool
	body               bytes.Buffer
	pending            []byte // the last line: the end marker's own newline may end it
	out                string
	status             int
}

func newAnswer(mark, seq string, max int) *answer {
	return &answer{seq: seq, begin: mark + " " + seq + " B", end: mark + " " + seq + " E ", reject: mark + " " + seq + " X", max: max,
		head: "R " + seq + " "}
}

// feed takes the next line (with its \n, or a piece of a longer line
// without): done when the answer is complete; an error when it cannot be
// one (rejected, malformed, too big).
func (a *answer) feed(l []byte) (done bool, err error) {
	text := trimEOL(l)
	if !a.started {
		if bytes.Contains(text, []byte(a.head)) {
			a.echoed = true // the line echoes what it is sent: a terminal
		}
		switch {
		case string(text) == a.begin:
			a.started = true
		case string(text) == a.reject:
			return false, errRejected
		}
		return false, nil
	}
	if st, ok := bytes.CutPrefix(text, []byte(a.end)); ok && len(l) > 0 && l[len(l)-1] == '\n' {
		status, err := strconv.Atoi(string(st))
		if err != nil || status < 0 || status > 255 {
			return false, fmt.Errorf("the target's answer ends with a malformed status %q", clip(string(st)))
		}
		// The end marker starts with a newline of its own: the line
		// before it is the answer's last, with or without one.
		if a.pending != nil {
			a.body.Write(a.pending[:len(a.pending)-eolLen(a.pending)])
		}
		a.out, a.status = a.body.String(), status
		return true, nil
	}
	if a.pending != nil {
		if bytes.HasSuffix(a.pending, []byte("\r\n")) {
			// A tty's \r\n (onlcr) is a newline.
			a.body.Write(a.pending[:len(a.pending)-2])
			a.body.WriteByte('\n')
		} else {
			a.body.Write(a.pending)
		}
	}
	a.pending = l
	if a.body.Len()+len(a.pending) > a.max {
		return false, fmt.Errorf("the target's answer exceeds %d MiB", a.max>>20)
	}
	return false, nil
}

// trimEOL drops a line's \n or \r\n.
func trimEOL(l []byte) []byte { return l[:len(l)-eolLen(l)] }

func eolLen(l []byte) int {
	switch {
	case bytes.HasSuffix(l, []byte("\r\n")):
		return 2
	case bytes.HasSuffix(l, []byte("\n")):
		return 1
	}
	return 0
}

// lostErr is the error of a request made after the transport ended.
func (s *Session) lostErr(step string, werr error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErrLocked(step, werr)
}

func (s *Session) lostErrLocked(step string, werr error) error {
	if s.broken == nil {
		msg := "the transport command (" + s.Command + ") ended"
		// Once: the command's status, when it exits soon (a write to
		// a transport that ended can come before its exit).
		deadline := time.Now().Add(500 * time.Millisecond)
		select {
		case <-s.exited:
			msg += " with " + s.state.String()
		case <-time.After(time.Until(deadline)):
		}
		// Its last words: a child of the command may hold the pipe
		// open, so only as long as the same deadline.
		select {
		case <-s.errDone:
		case <-time.After(time.Until(deadline)):
		}
		if t := strings.TrimSpace(s.tail.String()); t != "" {
			msg += "; it said: " + clip(t)
		} else if werr != nil {
			msg += ": " + werr.Error()
		}
		s.broken = fmt.Errorf("%w: %s", ErrLost, msg)
	}
	return fmt.Errorf("%s: %w", step, s.broken)
}

// Err is the error that broke the session, or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// Stats are a session's counters.
type Stats struct {
	Sent, Received, Requests int64
	Nudges                   int64 // blank lines sent after requests whose answers had not begun
}

// Stats returns the bytes sent and received, the requests made and the
// blank lines sent after them.
func (s *Session) Stats() Stats {
	return Stats{Sent: s.sent.Load(), Received: s.received.Load(), Requests: s.requests.Load(), Nudges: s.nudges.Load()}
}

// Close ends the session: it closes the command's standard input (the
// end of a shell over ssh, adb or kubectl; a serial console's shell stays)
// and waits a little for the command to end before killing its process
// group.
func (s *Session) Close() error {
	if s.opt.Trace != nil {
		st := s.Stats()
		fmt.Fprintf(s.opt.Trace, "%s totals: %d requests, %d bytes sent, %d bytes received, %v, %d blank lines\n",
			time.Now().Format("15:04:05.000"), st.Requests, st.Sent, st.Received, time.Since(s.started).Round(time.Millisecond), st.Nudges)
	}
	s.mu.Lock()
	fns := s.onClose
	s.onClose = nil
	s.mu.Unlock()
	for _, f := range fns {
		f()
	}
	s.mu.Lock()
	if s.broken == nil {
		// The record goes with the session (a line for the shell to
		// run, not a request: its answer is not waited for).
		s.writeLine("rm -f \"" + s.record() + "\"\n")
	}
	s.mu.Unlock()
	s.in.Close()
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
		killGroup(s.cmd)
		<-s.exited
	}
	s.out.Close() // a child of the command may hold its other end
	s.errOut.Close()
	s.mu.Lock()
	if s.broken == nil {
		s.broken = errors.New("the session is closed")
	}
	s.mu.Unlock()
	return nil
}

// OnClose registers f to run when the session is closed.
func (s *Session) OnClose(f func()) {
	s.mu.Lock()
	s.onClose = append(s.onClose, f)
	s.mu.Unlock()
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// clip shortens s for a message, and shows its odd bytes.
func clip(s string) string {
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r >= ' ' && r != 0x7f && r != 0xfffd {
			return r
		}
		return '?'
	}, s)
}

// DeadRecord is the record file (see Session.record) of a session whose
// shell is gone: a session killed before it could remove it.
type DeadRecord struct {
	Path string // on the target, ${TMPDIR:-/tmp} expanded
	PID  int    // the last shell that wrote it; 0: a record without one (an older sqlhist's, or not a record)
}

// DeadRecords lists the record files on the target whose sessions are
// gone, this session's own aside: the shell that last wrote one does not
// exist (kill -0) and it is older than a minute (a line that restarts its
// shell is between two shells for a moment), or no request has written
// it for ten minutes (a serial line's shell outlives the sessions it
// serves, so its being alive proves nothing; a session's requests write
// its record, and a run through --via sends one every BeatEvery). A
// record whose age the target's find cannot tell stays. A session idle
// for ten minutes that loses its record only loses the record's help
// with a lost answer: its writes are read back instead (see write).
func (s *Session) DeadRecords(ctx context.Context) ([]DeadRecord, error) {
	cmd := `for f in "${TMPDIR:-/tmp}"/sqh????????????????; do [ -f "$f" ] || continue; n=${f##*/sqh}; case $n in *[!0-9a-f]*) continue;; esac; [ "$f" = "` + s.record() + `" ] && continue; r=; read -r r < "$f"; p=${r##* P}; case $p in ''|*[!0-9]*) p=;; esac; o=$(find "$f" -mmin +10 2>/dev/null); if [ -z "$o" ] && [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then o=$(find "$f" -mmin +1 2>/dev/null); fi; [ -n "$o" ] && P "$f ${p:-0}"; done; Q 0`
	out, err := s.read(ctx, "looking for the records of dead sessions", cmd)
	if err != nil {
		return nil, err
	}
	var recs []DeadRecord
	for _, l := range strings.Split(out, "\n") {
		p, pid, ok := strings.Cut(l, " ")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil {
			continue
		}
		recs = append(recs, DeadRecord{Path: p, PID: n})
	}
	return recs, nil
}

// RemoveRecords removes the records DeadRecords listed (rm -f: removing
// one twice is harmless).
func (s *Session) RemoveRecords(ctx context.Context, recs []DeadRecord) error {
	if len(recs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("rm -f")
	for _, r := range recs {
		b.WriteString(" " + escape(r.Path))
	}
	_, err := s.write(ctx, "removing the records of dead sessions", b.String(), checkResend)
	return err
}
