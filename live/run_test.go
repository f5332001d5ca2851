package live_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

func wakeupPlan(t *testing.T, id int) *planner.Plan {
	t.Helper()
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewSource("wakeup.sql", wakeup)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, id))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	return plan
}

// A context that ends stops the collection: the cause is logged, what
// was collected is read, and everything is removed, the instance last.
func TestRunEndsWithTheContext(t *testing.T) {
	f := newFake()
	f.Files["instances/sqlhist_9/events/synthetic/sched_waking_to_sched_switch_9/hist"] = wakeupHist
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("terminated"))
	var log strings.Builder
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, wakeupPlan(t, 9), live.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0].Totals().Hits; got != 6 {
		t.Errorf("hits %d, want 6", got)
	}
	if !strings.Contains(log.String(), "collecting until Ctrl-C in instance sqlhist_9") || !strings.Contains(log.String(), "terminated: reading what was collected") {
		t.Errorf("log: %s", log.String())
	}
	if n := len(f.Writes); n != 10 || f.Writes[0] != "mkdir: instances/sqlhist_9" || f.Writes[n-1] != "rmdir: instances/sqlhist_9" {
		t.Errorf("writes:\n%s", f.String())
	}
}

// When the results cannot be read, Run says so and still removes
// everything.
func TestRunTearsDownWhenTheReadFails(t *testing.T) {
	f := newFake() // no hist file
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, wakeupPlan(t, 9), live.Options{})
	if err == nil || !strings.Contains(err.Error(), "reading the results") || rep == nil || rep.Results != nil {
		t.Fatalf("rep %v, err %v", rep, err)
	}
	if n := len(f.Writes); n != 10 || f.Writes[n-1] != "rmdir: instances/sqlhist_9" {
		t.Errorf("writes:\n%s", f.String())
	}
}

// A refused write during the apply leaves nothing behind and collects
// nothing.
func TestRunApplyRefused(t *testing.T) {
	f := newFake()
	f.Refuse = "onmatch"
	rep, err := live.Run(context.Background(), &live.Target{Root: "/t", FS: f, W: f}, wakeupPlan(t, 9), live.Options{})
	var ae *live.ApplyError
	if rep != nil || !errors.As(err, &ae) || ae.Command.Role != "end" {
		t.Fatalf("rep %v, err %v", rep, err)
	}
	// Every write made is undone, in reverse: the instance goes last.
	w := f.Writes
	if len(w)%2 != 0 || w[0] != "mkdir: instances/sqlhist_9" || w[len(w)-1] != "rmdir: instances/sqlhist_9" {
		t.Errorf("writes:\n%s", f.String())
	}
}

// Every error of a joined error is written, each refused write at its SQL.
func TestWriteErrorJoined(t *testing.T) {
	src := source.NewSource("q.sql", "SELECT a FROM b")
	e1 := &live.ApplyError{Command: emit.Command{What: "start trigger", Pos: source.PosOf(0), End: source.PosOf(6)}, Err: fs.ErrInvalid}
	e2 := &live.ApplyError{Command: emit.Command{What: "end trigger", Pos: source.PosOf(9), End: source.PosOf(13)}, Err: fs.ErrInvalid}
	var b strings.Builder
	live.WriteError(&b, src, errors.Join(e1, errors.New("reading the results: gone"), e2))
	for _, want := range []string{"q.sql:1:1: the kernel refused the start trigger", "sqlhist: reading the results: gone", "q.sql:1:10: the kernel refused the end trigger"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
