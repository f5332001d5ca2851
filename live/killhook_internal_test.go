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
	if _, ok := KillHook(plain, func(string) string { return "" }, &log, nil)("/t").(*tracefs.Recorder); !ok {
		t.Error("unset, the writer is wrapped")
	}
}
