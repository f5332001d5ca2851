package live_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
)

// A run through a transport (Target.Beat) killed after any one of its
// writes: while its heartbeat is fresh, --cleanup takes it for alive
// (its process is on another machine, and the shell that carried it may
// outlive it) and removes nothing; once the heartbeat is BeatStale old,
// --cleanup removes everything it left, heartbeat included, and the
// tracefs is as before. A whole run leaves nothing, heartbeat included.
func TestHeartbeatAtEveryKill(t *testing.T) {
	old := live.BeatEvery
	live.BeatEvery = time.Hour // only the first, synchronous beat
	defer func() { live.BeatEvery = old }()
	clock := 100.0
	uptime := func() (float64, error) { return clock, nil }
	dead := func(int) bool { return false } // no process of the target is the run's
	for _, c := range []killCase{
		{name: "join -n", sql: wakeup, opt: planner.Options{Name: "lat"}},
		{name: "kprobe join", sql: killKprobe},
		{name: "join -n --events", sql: wakeup, opt: planner.Options{Name: "lat"}, events: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(f *fakeTracefs) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				opt := live.Options{ID: 12345678, Alive: dead}
				if c.events {
					opt.Events = io.Discard
				}
				tg := &live.Target{Root: "/t", FS: f, W: f, Beat: true, Uptime: uptime,
					OpenPipe: func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("")), nil }}
				_, err := live.Run(ctx, tg, killPlan(t, c, 12345678), opt)
				return err
			}
			clock = 100
			whole := killFake(c)
			before := whole.state()
			if err := run(whole); err != nil && !strings.Contains(err.Error(), "reading the results") {
				t.Fatalf("the whole run: %v\n%s", err, whole.String())
			}
			if got := whole.state(); got != before || !strings.Contains(whole.String(), "sqlhist-beat 100.00") {
				t.Fatalf("the whole run left:\n%s\nwant:\n%s\nits writes:\n%s", got, before, whole.String())
			}
			if w := whole.Writes; w[0] != "mkdir: instances/sqlhist_12345678_beat" || w[len(w)-1] != "rmdir: instances/sqlhist_12345678_beat" {
				t.Errorf("the heartbeat is not the first and last object: %s ... %s", w[0], w[len(w)-1])
			}
			n := len(whole.Writes)
			// Removing a dynamic event resets every ring buffer, the
			// heartbeat's too (the fake does as the kernel): a run killed
			// after the write that removes its probes and synthetic
			// events has no beat left, counts as dead at once, and what
			// it leaves then is its lease and heartbeat alone.
			erased := n
			for i, w := range whole.Writes {
				if strings.HasPrefix(w, "dynamic_events: -:") {
					erased = i + 1
				}
			}
			for k := 1; k < n; k++ {
				clock = 100
				f := killFake(c)
				f.KillAfter = k
				run(f)
				f.KillAfter = 0
				tg := &live.Target{Root: "/t", FS: f, W: f, Uptime: uptime}
				var out strings.Builder
				beaten := k >= 3 && k < erased // mkdir, buffer size, the first beat
				runs, err := live.Cleanup(tg, dead, &out, true)
				if beaten && runs != 0 || !beaten && runs != 1 || err != nil {
					t.Errorf("killed after write %d of %d, heartbeat fresh: --cleanup --dry-run found %d runs (err %v):\n%s", k, n, runs, err, out.String())
				}
				// Nothing removed: --cleanup says which run it took for
				// alive, and when it will count as dead.
				clock += 3
				if msg := live.NothingLeft(tg, dead); beaten && !strings.Contains(msg, "run 12345678 (its heartbeat is 3 s old: it counts as dead once it is 10s old, in 7 s)") {
					t.Errorf("killed after write %d, heartbeat fresh: %q", k, msg)
				}
				clock -= 3
				clock += live.BeatStale.Seconds() + 1
				out.Reset()
				runs, err = live.Cleanup(tg, dead, &out, false)
				if runs != 1 || err != nil {
					t.Errorf("killed after write %d of %d, heartbeat stale: --cleanup found %d runs (err %v):\n%s", k, n, runs, err, out.String())
				}
				if got := f.state(); got != before {
					t.Errorf("killed after write %d (%s) of %d: after --cleanup:\n%s\nwant:\n%s\n--cleanup wrote:\n%s", k, whole.Writes[k-1], n, got, before, out.String())
				}
			}
			if !t.Failed() {
				t.Logf("%s: %d kill points, each alive while its heartbeat was fresh, all recovered once stale", c.name, n-1)
			}
		})
	}
}
