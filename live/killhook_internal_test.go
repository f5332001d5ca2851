package live

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// SQLHIST_TEST_KILL_AFTER_WRITE=2 kills after the second write of any
// writer of the process, and not before; each write is logged; unset,
// the writer is the plain one.
func TestKillHook(t *testing.T) {
	rec := &tracefs.Recorder{}
	plain := func(string) tracefs.Writer { return rec }
	var log strings.Builder
	killed := 0
	env := map[string]string{KillHookEnv: "2"}
	w := KillHook(plain, func(k string) string { return env[k] }, &log, func() { killed++ })
	w("/t").Mkdir("instances/a")
	if killed != 0 {
		t.Fatal("killed after the first write")
	}
	w("/t").Append("dynamic_events", "s:x u64 y")
	if killed != 1 || len(rec.Writes) != 2 {
		t.Errorf("killed %d times after %d writes, want once after 2", killed, len(rec.Writes))
	}
	if want := "sqlhist: test: write 1: instances/a\nsqlhist: test: write 2: dynamic_events\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	// A step of the BPF engine counts as a write, on the same counter.
	env[KillHookEnv] = "3"
	log.Reset()
	killed = 0
	w = KillHook(plain, func(k string) string { return env[k] }, &log, func() { killed++ })
	tg := &Target{W: w("/t")}
	killStep(tg, "bpf: loaded")
	w("/t").Append("trigger", "x")
	killStep(tg, "bpf: attached")
	if killed != 1 {
		t.Errorf("killed %d times after two steps and a write, want once", killed)
	}
	if want := "sqlhist: test: write 1: bpf: loaded\nsqlhist: test: write 2: trigger\nsqlhist: test: write 3: bpf: attached\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	unhooked := KillHook(plain, func(string) string { return "" }, &log, nil)("/t")
	if _, ok := unhooked.(*tracefs.Recorder); !ok {
		t.Error("unset, the writer is wrapped")
	}
	killStep(&Target{W: unhooked}, "bpf: loaded") // no hook: nothing
	killStep(nil, "bpf: loaded")
}
