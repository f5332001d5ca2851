package live_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
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
	f.Files["instances/sqlhist_9_own/events/synthetic/sched_waking_to_sched_switch_9/hist"] = wakeupHist
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
	w := leased(t, f, "sqlhist_9_own")
	// The instance goes before the synthetic event, whose removal resets
	// the ring buffers (the lease's manifest with them).
	if n := len(w); n != 12 || w[0] != "mkdir: instances/sqlhist_9" || w[n-2] != "rmdir: instances/sqlhist_9" || w[n-1] != "dynamic_events: -:sched_waking_to_sched_switch_9" {
		t.Errorf("writes:\n%s", f.String())
	}
}

// leased checks that the run's lease came first and went last, and
// returns the writes in between that are not the lease's own (its
// buffer size and manifest; the results triggers in its events/ are the
// run's).
func leased(t *testing.T, f *fakeTracefs, lease string) []string {
	t.Helper()
	w := f.Writes
	if len(w) < 2 || w[0] != "mkdir: instances/"+lease || w[len(w)-1] != "rmdir: instances/"+lease {
		t.Errorf("the lease %s is not the first and last write:\n%s", lease, f.String())
		return nil
	}
	var out []string
	for _, x := range w[1 : len(w)-1] {
		if !strings.HasPrefix(x, "instances/"+lease+"/") || strings.HasPrefix(x, "instances/"+lease+"/events/") {
			out = append(out, x)
		}
	}
	return out
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
	if w := leased(t, f, "sqlhist_9_own"); len(w) != 12 || w[len(w)-2] != "rmdir: instances/sqlhist_9" {
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
	w := leased(t, f, "sqlhist_9_own")
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

const aggregateJoin = `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*)
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
GROUP BY comm, lat ORDER BY COUNT(*) DESC`

// An aggregate over a JOIN is read from its histogram, which replaces the
// results histogram: the rows are the histogram's, the synthetic event
// gets no other trigger, and the histogram is written before the JOIN's
// triggers (so it counts every event) and removed after them. Like a
// JOIN's results, it is in the run's lease, an instance without
// timestamp triggers.
func TestRunAggregateOverJoin(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewSource("agg.sql", aggregateJoin)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 7))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	f := newFake()
	f.Files["instances/sqlhist_7_own/events/synthetic/sched_waking_to_sched_switch_7/hist"] = `# event histogram
#
# trigger info: hist:keys=comm,lat.log2:vals=hitcount:sort=hitcount.descending:size=2048 [active]
#

{ comm: kworker/0:1                                       , lat: ~ 2^5        } hitcount:          5
{ comm: sh                                                , lat: ~ 2^3        } hitcount:          2

Totals:
    Hits: 7
    Entries: 2
    Dropped: 0
`
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want the histogram's only", len(rep.Results))
	}
	var out strings.Builder
	if err := results.Write(&out, rep.Results, "csv"); err != nil {
		t.Fatal(err)
	}
	if want := "comm,lat,count\nkworker/0:1,\"(16, 32]\",5\nsh,\"(4, 8]\",2\n"; out.String() != want {
		t.Errorf("rows:\n%s\nwant:\n%s", out.String(), want)
	}
	// In JSON a log2 bucket is its lower bound, not the kernel's exponent.
	var js strings.Builder
	if err := results.Write(&js, rep.Results, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"lat": 32`) || !strings.Contains(js.String(), `"lat": 8`) {
		t.Errorf("JSON:\n%s", js.String())
	}
	var hist, end, histGone, endGone = -1, -1, -1, -1
	for i, w := range f.Writes {
		switch {
		case w == "instances/sqlhist_7_own/events/synthetic/sched_waking_to_sched_switch_7/trigger: hist:keys=comm,lat.log2:sort=hitcount.descending":
			hist = i
		case strings.Contains(w, "synthetic/sched_waking_to_sched_switch_7/trigger: !hist:keys=comm,lat.log2"):
			histGone = i
		case strings.Contains(w, "sched_switch/trigger: hist:"):
			end = i
		case strings.Contains(w, "sched_switch/trigger: !hist:"):
			endGone = i
		}
		if strings.Contains(w, "synthetic/") && strings.Contains(w, "lat,") && !strings.Contains(w, "lat.log2") {
			t.Errorf("a results histogram was written: %s", w)
		}
	}
	// The run stops the synthetic event at its source (the end trigger)
	// before it reads and removes the histogram.
	if hist < 0 || end < 0 || hist > end || endGone < 0 || histGone < endGone {
		t.Errorf("order of writes (histogram %d, end trigger %d; removed %d, %d):\n%s", hist, end, histGone, endGone, f.String())
	}
}

// A share of the count is refused when each interval is printed alone
// (-i: the kernel's share is of the whole run), and run when only the
// totals are read at each tick (--live, --metrics).
func TestRunSharesWithTotals(t *testing.T) {
	fsys, err := tracefs.Embedded("7.2")
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewSource("share.sql", "SELECT CAST(id AS SYSCALL) AS call, CAST(COUNT(*) AS PERCENT) AS share FROM sys_enter")
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 9))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	never := func(time.Duration) (<-chan time.Time, func()) { return make(chan time.Time), func() {} }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := newFakeOf("7.2")
	_, err = live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{Interval: time.Second, Tick: never, OnInterval: func(*results.Interval) {}})
	if err == nil || !strings.Contains(err.Error(), "-i shows what each interval collected") || len(f.Writes) != 0 {
		t.Errorf("-i with a share: %v, writes %q", err, f.Writes)
	}
	f = newFakeOf("7.2")
	f.Files["instances/sqlhist_9/events/raw_syscalls/sys_enter/hist"] = "# event histogram\n#\n# trigger info: hist:keys=id.syscall:vals=hitcount,hitcount.percent:sort=hitcount:size=2048 [active]\n#\n\n" +
		"{ id: sys_read                      [  0] } hitcount:          3 hitcount (%):  75.00\n" +
		"{ id: sys_close                     [  3] } hitcount:          1 hitcount (%):  25.00\n\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n"
	var totals int
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{Interval: time.Second, Tick: never, OnTotal: func([]*results.Result) { totals++ }})
	if err != nil || rep == nil || totals != 1 || rep.Results[0].Totals().Hits != 4 {
		t.Errorf("the totals with a share: %v, %d readings, %+v", err, totals, rep)
	}
}
