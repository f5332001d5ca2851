package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// Uptime reads the target's /proc/uptime: seconds since it booted.
func (s *Session) Uptime() (float64, error) {
	out, err := s.read(context.Background(), "reading /proc/uptime", "read -r u r < /proc/uptime && P \"$u\"")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return 0, fmt.Errorf("reading /proc/uptime: the target answered %q", clip(out))
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("reading /proc/uptime: the target answered %q", clip(out))
	}
	return v, nil
}

// Mounts reads the target's /proc/mounts.
func (s *Session) Mounts() ([]byte, error) {
	out, err := s.read(context.Background(), "reading /proc/mounts", "cat /proc/mounts")
	return []byte(out), err
}

// Writable reports whether the target's shell may write the file p.
func (s *Session) Writable(p string) error {
	q := emit.Quote(p)
	_, err := s.read(context.Background(), "checking that "+p+" is writable",
		"if [ ! -e "+q+" ]; then Q 2; elif [ -w "+q+" ]; then :; else Q 13; fi")
	var ae *AnswerError
	if errors.As(err, &ae) {
		switch ae.Status {
		case statusNotExist:
			return &fs.PathError{Op: "access", Path: p, Err: fs.ErrNotExist}
		case 13:
			return fmt.Errorf("%s: permission denied on the target (the shell there is not root)", p)
		}
	}
	return err
}

// PollEvery is how often a trace_pipe opened with OpenPipe is read.
var PollEvery = 300 * time.Millisecond

// pollLines bounds the lines one poll reads, so that a backlog does not
// hold the session past its timeout.
const pollLines = 2000

// OpenPipe reads the trace_pipe at p (an absolute path, in an instance
// whose trace_marker is beside it) as it fills. The target's shell cannot
// wait on a pipe with a bound, so each poll writes a token to
// trace_marker and reads trace_pipe one line at a time (the shell's read
// takes a byte per system call: nothing past the token is consumed) until
// the token, or pollLines lines, and prints them at once (a line at a time,
// each write to a serial console would wake tasks up, which the events of
// a scheduler query would count); tokens are not passed on.
func (s *Session) OpenPipe(p string) (io.ReadCloser, error) {
	dir := emit.Quote(path.Dir(p))
	// busybox's read builtin polls its file before each byte, and
	// trace_pipe's poll reports data only once the buffer is
	// buffer_percent full: the read would wait for events that may never
	// come. The instance's "block" option makes its poll always report
	// data (the read itself still waits). It is set for the stream and
	// put back when the stream is closed.
	block := emit.Quote(path.Dir(p) + "/options/block")
	out, err := s.request(context.Background(), "opening "+p,
		"[ -e "+emit.Quote(p)+" ] || Q 2; if [ -e "+block+" ]; then read -r b < "+block+"; if [ \"$b\" = 0 ]; then echo 1 > "+block+" && echo set; fi; fi")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p, err)
	}
	pr, pw := io.Pipe()
	rp := &pipe{r: pr, stop: make(chan struct{})}
	if strings.TrimSpace(out) == "set" {
		rp.restore = func() {
			s.request(context.Background(), "putting back "+path.Dir(p)+"/options/block",
				"if [ -e "+block+" ]; then echo 0 > "+block+"; fi")
		}
	}
	go func() {
		defer close(rp.done())
		for n := 1; ; n++ {
			token := "sqlhist-poll-" + s.m2[:8] + "-" + strconv.Itoa(n)
			out, err := s.request(context.Background(), "reading "+p,
				"read -r t < "+dir+"/tracing_on; if [ \"$t\" = 1 ]; then echo "+token+" >> "+dir+"/trace_marker && n=0 && o= && while [ $n -lt "+strconv.Itoa(pollLines)+" ] && IFS= read -r l; do o=\"$o$l\n\"; n=$((n+1)); case $l in *"+token+"*) break;; esac; done < "+emit.Quote(p)+" && printf %s \"$o\"; else Q 3; fi")
			var ae *AnswerError
			if err != nil && !(errors.As(err, &ae) && ae.Status == 3) {
				pw.CloseWithError(err)
				return
			}
			for _, l := range strings.SplitAfter(out, "\n") {
				if l == "" || strings.Contains(l, "sqlhist-poll-"+s.m2[:8]+"-") {
					continue
				}
				if _, err := io.WriteString(pw, l); err != nil {
					return // closed
				}
			}
			select {
			case <-rp.stop:
				pw.Close()
				return
			case <-time.After(PollEvery):
			}
		}
	}()
	return rp, nil
}

type pipe struct {
	restore  func() // puts the instance's block option back
	r        *io.PipeReader
	stop     chan struct{}
	once     sync.Once
	doneOnce sync.Once
	doneCh   chan struct{}
}

func (p *pipe) done() chan struct{} {
	p.doneOnce.Do(func() { p.doneCh = make(chan struct{}) })
	return p.doneCh
}

func (p *pipe) Read(b []byte) (int, error) { return p.r.Read(b) }

// Close stops the polls (a poll in progress ends first) and puts the
// instance's block option back.
func (p *pipe) Close() error {
	p.once.Do(func() {
		close(p.stop)
		p.r.Close()
		if p.restore != nil {
			<-p.done()
			p.restore()
		}
	})
	return nil
}

// Alive reports whether process pid exists on the target (kill -0).
func (s *Session) Alive(pid int) bool {
	_, err := s.read(context.Background(), "looking for process "+strconv.Itoa(pid), "kill -0 "+strconv.Itoa(pid)+" 2>/dev/null")
	var ae *AnswerError
	return err == nil || !errors.As(err, &ae) // unknown: alive
}
