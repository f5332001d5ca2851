package live

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/sqlhist/sqlhist/tracefs"
)

// KillHookEnv is a variable for tests only (the kernel suite's kill
// phase): when it is set, every tracefs write is logged to stderr as
// "sqlhist: test: write N: FILE", and with a number N > 0 the process
// kills itself with SIGKILL right after its Nth write, as the OOM killer
// or kill -9 would, to prove that --cleanup removes what any moment of a
// run leaves. The BPF engine, which writes nothing to tracefs, counts
// its steps as writes ("sqlhist: test: write N: bpf: STEP": its programs
// loaded, attached, detached, its maps read, everything closed), so that
// a run of it is killed at each.
const KillHookEnv = "SQLHIST_TEST_KILL_AFTER_WRITE"

// KillHook wraps writer as KillHookEnv says (getenv reads it); kill is the
// SIGKILL. Unset, writer is returned as it is.
func KillHook(writer func(string) tracefs.Writer, getenv func(string) string, log io.Writer, kill func()) func(string) tracefs.Writer {
	v, set := getenv(KillHookEnv), getenv(KillHookEnv) != ""
	if !set {
		return writer
	}
	after, _ := strconv.Atoi(v)
	c := &killCounter{after: after, log: log, kill: kill}
	return func(root string) tracefs.Writer { return &killWriter{w: writer(root), c: c} }
}

// SelfKill sends SIGKILL to this process.
func SelfKill() {
	selfKill()
	select {} // the signal is on its way
}

// killCounter counts the writes of all the writers of one process.
type killCounter struct {
	mu    sync.Mutex
	n     int
	after int
	log   io.Writer
	kill  func()
}

func (c *killCounter) wrote(file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	fmt.Fprintf(c.log, "sqlhist: test: write %d: %s\n", c.n, file)
	if c.n == c.after {
		c.kill()
	}
}

// killWriter is a tracefs.Writer that counts its writes in c.
type killWriter struct {
	w tracefs.Writer
	c *killCounter
}

func (k *killWriter) Append(file, line string) error {
	defer k.c.wrote(file)
	return k.w.Append(file, line)
}

func (k *killWriter) Mkdir(dir string) error {
	defer k.c.wrote(dir)
	return k.w.Mkdir(dir)
}

func (k *killWriter) Rmdir(dir string) error {
	defer k.c.wrote(dir)
	return k.w.Rmdir(dir)
}

// Step counts a step of a run that writes nothing there (the BPF
// engine's) as a write.
func (k *killWriter) Step(what string) { k.c.wrote(what) }

// killStep counts step what of a run on t where the kill hook is set.
func killStep(t *Target, what string) {
	if t == nil {
		return
	}
	if s, ok := t.W.(interface{ Step(string) }); ok {
		s.Step(what)
	}
}
