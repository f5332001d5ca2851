package live_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// killCase is a query and the flags of a run killed at each of its
// writes.
type killCase struct {
	name, sql string
	kernel    string // the embedded catalog; "" is 6.1
	opt       planner.Options
	existing  string // an instance that is there before the run (-B)
	events    bool   // --events: the synthetic events are enabled
	stream    bool   // --engine stream (opt.Stream set too)
}

const (
	killChain = `CREATE VIEW sysname AS
  SELECT start.id, end.prev_pid FROM sys_enter AS start
  JOIN sched_switch AS end ON start.common_pid = end.prev_pid
  WHERE end.prev_state == 2;
CREATE VIEW offcpu AS
  SELECT start.id, end.next_comm AS comm, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
  FROM sysname AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid;
SELECT CAST(id AS SYSCALL) AS call, comm, COUNT(*) AS n, SUM(lat) FROM offcpu;`
	killKprobe = `SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start
JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid`
	killUprobe = `SELECT start.n, end.ret, TIMESTAMP_DELTA_USECS AS lat
FROM uprobe('/usr/local/bin/app', 0x1345, n=%di:s64) AS start
JOIN uretprobe('/usr/local/bin/app', 0x1400, ret=%ax:s64) AS end ON start.common_pid = end.common_pid`
	killDeref = `SELECT start.filename, start.flags, end.ret
FROM sys_enter_openat AS start JOIN sys_exit_openat AS end ON start.common_pid = end.common_pid`
	killHist = `SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC`
)

var killCases = []killCase{
	{name: "join", sql: wakeup},
	{name: "join -n", sql: wakeup, opt: planner.Options{Name: "lat"}},
	{name: "join -n --events", sql: wakeup, opt: planner.Options{Name: "lat"}, events: true},
	{name: "join -n -B new", sql: wakeup, opt: planner.Options{Name: "lat", Instance: "mine"}},
	{name: "join -B existing", sql: wakeup, opt: planner.Options{Instance: "mine"}, existing: "mine"},
	{name: "views", sql: killChain},
	{name: "views -B existing", sql: killChain, opt: planner.Options{Instance: "mine"}, existing: "mine"},
	{name: "chain of three -n", sql: `SELECT sw.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS w JOIN sched_wakeup AS wk ON w.pid = wk.pid JOIN sched_switch AS sw ON sw.next_pid = wk.pid`, opt: planner.Options{Name: "c3"}},
	{name: "kprobe join", sql: killKprobe},
	{name: "kprobe join -n", sql: killKprobe, opt: planner.Options{Name: "k1"}},
	{name: "uprobe join -n", sql: killUprobe, opt: planner.Options{Name: "u1"}},
	{name: "--deref -n", sql: killDeref, kernel: "7.2", opt: planner.Options{Name: "myopen", Deref: true}},
	{name: "aggregate -n", sql: aggregateJoin, opt: planner.Options{Name: "agg"}},
	{name: "aggregate -n -B new", sql: aggregateJoin, opt: planner.Options{Name: "agg", Instance: "mine"}},
	{name: "histogram -B existing", sql: killHist, opt: planner.Options{Instance: "mine"}, existing: "mine"},
	// The stream engine: its events in its lease, their records in its
	// snapshot buffer.
	{name: "stream join", sql: wakeup, opt: planner.Options{Stream: true}, stream: true},
	{name: "stream histogram", sql: killHist, opt: planner.Options{Stream: true}, stream: true},
	// In an instance that is there (-B): its enables in that instance,
	// which a killed run leaves there (issue 45).
	{name: "stream histogram -B existing", sql: killHist, opt: planner.Options{Stream: true, Instance: "mine"}, existing: "mine", stream: true},
	{name: "stream join -B existing", sql: wakeup, opt: planner.Options{Stream: true, Instance: "mine"}, existing: "mine", stream: true},
}

// killPlan compiles a case for the run id.
func killPlan(t *testing.T, c killCase, id int) *planner.Plan {
	t.Helper()
	kernel := c.kernel
	if kernel == "" {
		kernel = "6.1"
	}
	fsys, err := tracefs.Embedded(kernel)
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewSource("q.sql", c.sql)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(c.opt, id))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	return plan
}

// killRun runs a case as run id in f, the collection ending at once.
func killRun(t *testing.T, f *fakeTracefs, c killCase, id int, alive func(int) bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opt := live.Options{ID: id, Alive: alive}
	if c.events {
		opt.Events = io.Discard
	}
	tg := &live.Target{Root: "/t", FS: f, W: f, OpenPipe: func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("")), nil }}
	if c.stream {
		opt.Engine = live.EngineStream
		// Reading the ring buffer consumes what its main buffer holds.
		tg.ReadRaw = func(dirs []string, _ int) ([][]byte, error) {
			for _, d := range dirs {
				inst, _, _ := strings.Cut(d, "/per_cpu/")
				delete(f.Files, inst+"/trace")
			}
			return make([][]byte, len(dirs)), nil
		}
	}
	_, err := live.Run(ctx, tg, killPlan(t, c, id), opt)
	return err
}

func killFake(c killCase) *fakeTracefs {
	f := newFake()
	if c.kernel != "" {
		f = newFakeOf(c.kernel)
	}
	if c.stream {
		f.Files["events/header_page"] = headerPage
		f.Files["events/header_event"] = headerEvent
		f.cpus = 2
	}
	if c.existing != "" {
		f.Mkdir("instances/" + c.existing)
		f.Recorder, f.writes = tracefs.Recorder{}, 0
	}
	return f
}

// A run killed after any one of its writes (the lease, its records, the
// apply, the collection, the teardown) leaves what --cleanup removes to
// the last object: the tracefs is then as it was before the run. Without
// --cleanup, the same query is refused before any write, naming
// --cleanup, when the dead run's objects are in its way, and runs when
// they are not; after --cleanup it runs.
func TestKillAtEveryWrite(t *testing.T) {
	dead := func(pid int) bool { return false }
	for _, c := range killCases {
		t.Run(c.name, func(t *testing.T) {
			whole := killFake(c)
			before := whole.state()
			if err := killRun(t, whole, c, 7, dead); err != nil && !strings.Contains(err.Error(), "reading the results") {
				t.Fatalf("the whole run: %v\n%s", err, whole.String())
			}
			if got := whole.state(); got != before {
				t.Fatalf("the whole run left:\n%s\nwant:\n%s", got, before)
			}
			n := len(whole.Writes)
			for k := 1; k < n; k++ {
				f := killFake(c)
				f.KillAfter = k
				killRun(t, f, c, 7, dead)
				f.KillAfter = 0
				left := f.state()
				// The same query again, as another run, before --cleanup.
				w := f.writes
				err := killRun(t, f, c, 8, dead)
				var ce *live.ConflictError
				switch {
				case errors.As(err, &ce):
					if f.writes != w || ce.Running || !strings.Contains(err.Error(), "sqlhist --cleanup removes") {
						t.Errorf("killed after write %d of %d: refused after %d writes: %v", k, n, f.writes-w, err)
					}
				case err != nil && !strings.Contains(err.Error(), "reading the results"):
					t.Errorf("killed after write %d of %d: the run after it: %v\n%s", k, n, err, f.String())
				case f.state() != left:
					t.Errorf("killed after write %d of %d: the run after it left:\n%s\nwant:\n%s", k, n, f.state(), left)
				}
				var out strings.Builder
				runs, err := live.Cleanup(&live.Target{Root: "/t", FS: f, W: f}, dead, &out, false)
				if runs != 1 || err != nil {
					t.Errorf("killed after write %d of %d: --cleanup found %d runs, err %v\n%s", k, n, runs, err, out.String())
				}
				if got := f.state(); got != before {
					t.Errorf("killed after write %d (%s) of %d: after --cleanup:\n%s\nwant:\n%s\n--cleanup wrote:\n%s", k, whole.Writes[k-1], n, got, before, out.String())
				}
				// Killed before its first object, the run left its lease
				// alone, and --cleanup says it removes only that.
				if k <= leaseWrites(whole) && strings.Contains(out.String(), "echo") {
					t.Errorf("killed after write %d of %d: --cleanup wrote:\n%s", k, n, out.String())
				}
				if err := killRun(t, f, c, 9, dead); err != nil && !strings.Contains(err.Error(), "reading the results") {
					t.Errorf("killed after write %d of %d: after --cleanup the query: %v", k, n, err)
				}
			}
			if !t.Failed() {
				t.Logf("%s: %d kill points, all recovered", c.name, n-1)
			}
		})
	}
}

// Two runs at once with the same -n: the second is refused before any
// write, naming the first, which goes on and ends cleanly.
func TestSameNameAtOnce(t *testing.T) {
	c := killCase{sql: wakeup, opt: planner.Options{Name: "lat"}}
	f := newFake()
	before := f.state()
	alive := func(pid int) bool { return pid == 7 || pid == 8 }
	var second error
	var secondWrites int
	ctx, cancel := context.WithCancel(context.Background())
	tg := &live.Target{Root: "/t", FS: f, W: f}
	opt := live.Options{ID: 7, Alive: alive, After: func(time.Duration) <-chan time.Time {
		// The first run collects: the second starts now.
		w := f.writes
		second = killRun(t, f, c, 8, alive)
		secondWrites = f.writes - w
		cancel()
		return nil
	}, Duration: time.Hour}
	_, err := live.Run(ctx, tg, killPlan(t, c, 7), opt)
	if err != nil && !strings.Contains(err.Error(), "reading the results") {
		t.Fatalf("the first run: %v", err)
	}
	var ce *live.ConflictError
	if !errors.As(second, &ce) || !ce.Running || ce.PID != 7 || secondWrites != 0 {
		t.Errorf("the second run: %v after %d writes, want refused before any write", second, secondWrites)
	} else {
		t.Logf("the second run: %v", second)
	}
	if got := f.state(); got != before {
		t.Errorf("left:\n%s\nwant:\n%s", got, before)
	}
}

// Someone removes the run's instance, or one of its triggers, while it
// collects until Ctrl-C: the run says so, ends without waiting for the
// signal, returns an error, and removes what is still its own.
func TestTracefsChangedUnderARun(t *testing.T) {
	for _, tc := range []struct{ name, remove string }{
		{"instance", "instances/sqlhist_7"},
		{"trigger", "instances/sqlhist_7/events/sched/sched_waking/trigger"},
		{"lease", "instances/sqlhist_7_own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			before := f.state()
			var log strings.Builder
			opt := live.Options{ID: 7, Alive: func(int) bool { return false }, Log: &log, Watch: time.Millisecond,
				After: func(time.Duration) <-chan time.Time {
					if strings.HasSuffix(tc.remove, "/trigger") {
						delete(f.Files, tc.remove)
					} else {
						f.removeInstance(tc.remove)
					}
					return nil
				}, Duration: time.Hour}
			done := make(chan error)
			go func() {
				_, err := live.Run(context.Background(), &live.Target{Root: "/t", FS: f, W: f}, killPlan(t, killCase{sql: wakeup}, 7), opt)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the run did not end")
			}
			if err == nil || !strings.Contains(err.Error(), "was removed while the run collected") || !strings.Contains(log.String(), "removing what is still the run's") {
				t.Errorf("err %v; log:\n%s", err, log.String())
			}
			if got := f.state(); got != before {
				t.Errorf("left:\n%s\nwant:\n%s", got, before)
			}
		})
	}
}

// leaseWrites counts the writes a run makes to take its lease, before
// its first object.
func leaseWrites(f *fakeTracefs) int {
	for i, w := range f.Writes {
		// A stream run's lease is its instance too: its objects there
		// come after its records moved into its snapshot buffer.
		if !strings.Contains(w, "_own") || i > 0 && strings.HasSuffix(f.Writes[i-1], "_own/snapshot: 1") {
			return i
		}
	}
	return len(f.Writes)
}

// A run killed while another runs the same query beside it: --cleanup
// removes every object of the dead run, its synthetic event too, and
// none of the live run's (a manifest keeps removals without the line that
// made the object, and once every synthetic event of a live run looked
// like the dead run's: seen on 5.10-hist in the kernel suite).
func TestCleanupBesideALiveRun(t *testing.T) {
	c := killCases[0]
	whole := killFake(c)
	killRun(t, whole, c, 7, func(int) bool { return false })
	// The first write after which run 7's synthetic event exists.
	k := 0
	for i := 1; i < len(whole.Writes) && k == 0; i++ {
		f := killFake(c)
		f.KillAfter = i
		killRun(t, f, c, 7, func(int) bool { return false })
		if data, _ := fs.ReadFile(f, "dynamic_events"); strings.Contains(string(data), "_7\t") {
			k = i
		}
	}
	if k == 0 {
		t.Fatalf("run 7 never made its synthetic event:\n%v", whole.Writes)
	}
	f := killFake(c)
	f.KillAfter = k
	killRun(t, f, c, 7, func(int) bool { return false })
	f.KillAfter = 0
	w := f.writes
	f.KillAfter = w + k // run 8 stops at the same point: it stays, as a live run does
	killRun(t, f, c, 8, func(int) bool { return false })
	f.KillAfter = 0
	alive := func(pid int) bool { return pid == 8 }
	var out strings.Builder
	if runs, err := live.Cleanup(&live.Target{Root: "/t", FS: f, W: f}, alive, &out, false); runs != 1 || err != nil {
		t.Fatalf("--cleanup found %d runs, err %v\n%s", runs, err, out.String())
	}
	data, _ := fs.ReadFile(f, "dynamic_events")
	if strings.Contains(string(data), "_7\t") || !strings.Contains(string(data), "_8\t") {
		t.Errorf("after --cleanup, dynamic_events:\n%s\n--cleanup wrote:\n%s", data, out.String())
	}
}

// triggerReads is a tracefs that counts the trigger files read from it.
type triggerReads struct {
	fs.FS
	n int
}

func (r *triggerReads) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, "/trigger") {
		r.n++
	}
	return r.FS.Open(name)
}

// --cleanup of a run that left its manifest reads only the trigger files
// the manifest names, and of a run killed before its manifest was whole
// none:
// the search by name reads every trigger file of every instance (a
// thousand and more a kernel, seconds of a slow machine's time), which
// only a run without a manifest needs.
func TestCleanupReadsWhatTheManifestNames(t *testing.T) {
	dead := func(pid int) bool { return false }
	for _, c := range killCases {
		t.Run(c.name, func(t *testing.T) {
			whole := killFake(c)
			killRun(t, whole, c, 7, dead)
			n := len(whole.Writes)
			triggers := 0
			for _, w := range whole.Writes {
				if file, _, _ := strings.Cut(w, ": "); strings.HasSuffix(file, "/trigger") {
					triggers++
				}
			}
			for k := 1; k < n; k++ {
				f := killFake(c)
				f.KillAfter = k
				killRun(t, f, c, 7, dead)
				f.KillAfter = 0
				r := &triggerReads{FS: f}
				if _, err := live.Cleanup(&live.Target{Root: "/t", FS: r, W: f}, dead, io.Discard, false); err != nil {
					t.Errorf("killed after write %d of %d: %v", k, n, err)
				}
				want := triggers // the manifest's, each looked for
				if k < leaseWrites(whole) {
					want = 0
				}
				if r.n > want {
					t.Errorf("killed after write %d of %d: --cleanup read %d trigger files, want at most %d", k, n, r.n, want)
				}
			}
		})
	}
}

// --buffer-kb: a stream run sets its instance's buffer_size_kb to it (its
// lease, made that small before its records when it is under the lease's
// own 64 KiB), and leaves the tracefs as it was.
func TestStreamBufferKB(t *testing.T) {
	for _, kb := range []int{0, 16, 8192} {
		c := killCase{sql: killHist, opt: planner.Options{Stream: true}, stream: true}
		f := killFake(c)
		before := f.state()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tg := &live.Target{Root: "/t", FS: f, W: f, ReadRaw: func(dirs []string, _ int) ([][]byte, error) { return make([][]byte, len(dirs)), nil }}
		_, err := live.Run(ctx, tg, killPlan(t, c, 7), live.Options{ID: 7, Alive: func(int) bool { return false }, Engine: live.EngineStream, BufferKB: kb})
		if err != nil && !strings.Contains(err.Error(), "reading the results") {
			t.Fatalf("--buffer-kb %d: %v", kb, err)
		}
		var sizes []string
		for _, w := range f.Writes {
			if strings.HasPrefix(w, "instances/sqlhist_7_own/buffer_size_kb:") {
				sizes = append(sizes, w)
			}
		}
		want := []string{"instances/sqlhist_7_own/buffer_size_kb: 64", "instances/sqlhist_7_own/buffer_size_kb: 4096"}
		switch kb {
		case 16:
			want = []string{"instances/sqlhist_7_own/buffer_size_kb: 16", "instances/sqlhist_7_own/buffer_size_kb: 16"}
		case 8192:
			want[1] = "instances/sqlhist_7_own/buffer_size_kb: 8192"
		}
		if strings.Join(sizes, "\n") != strings.Join(want, "\n") {
			t.Errorf("--buffer-kb %d: the writes of buffer_size_kb:\n%s\nwant\n%s", kb, strings.Join(sizes, "\n"), strings.Join(want, "\n"))
		}
		if got := f.state(); got != before {
			t.Errorf("--buffer-kb %d: left:\n%s", kb, got)
		}
	}
}
