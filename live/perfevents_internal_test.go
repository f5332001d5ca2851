package live

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestPerfEvents: which stream runs read perf events (tracepoints, with
// the machine's ids and the run's filters) and which an instance, and
// why.
func TestPerfEvents(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	id := func(sys, name string) int {
		ev, err := cat.Event(sys, name)
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	for _, c := range []struct {
		name, sql string
		want      []perfEvent // nil: an instance
		why       string      // the reason, with want nil
	}{
		{"wakeup JOIN, its filter pushed to the start", `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_comm == "pace"`,
			[]perfEvent{{"sched/sched_waking", id("sched", "sched_waking"), `comm == "pace"`}, {"sched/sched_switch", id("sched", "sched_switch"), `next_comm == "pace"`}}, ""},
		{"system calls", `SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter`,
			[]perfEvent{{"raw_syscalls/sys_enter", id("raw_syscalls", "sys_enter"), ""}}, ""},
		{"stacks", `SELECT STACKTRACE, COUNT(*) FROM sched_switch WHERE prev_state == 1`, nil, "kernel stacks"},
		{"task names", `SELECT CAST(common_pid AS EXECNAME) AS task, COUNT(*) FROM sys_enter`, nil, ".execname"},
		{"a kprobe", `SELECT common_pid, COUNT(*) FROM kprobe(do_sys_openat2)`, nil, "probes"},
	} {
		src := source.NewSource("q.sql", c.sql)
		plan, diags := Compile(src, cat, Prepare(planner.Options{Stream: true}, 7))
		if plan == nil {
			t.Fatalf("%s: %s", c.name, diags.Render(src))
		}
		s, _, err := newStreamRun(&Target{Root: "/t", FS: fsys}, plan, cat, instanceOf(plan), true, false, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := perfEvents(plan, s.m, cat.Event)
		switch {
		case c.want == nil && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s: perf events %v (%v), want an instance because of %s", c.name, got, err, c.why)
		case c.want != nil && err != nil:
			t.Errorf("%s: %v, want perf events", c.name, err)
		case c.want != nil && len(got) != len(c.want):
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		case c.want != nil:
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s: event %d %+v, want %+v", c.name, i, got[i], c.want[i])
				}
			}
		}
	}
}
