package live

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestTeardownSkippedReadsListings: after an -e killed after its first
// write, only the synthetic event is listed. The kernel accepts the
// removal of a hist trigger that does not exist, so the removals whose
// object the listings did not show are reported as skipped even though
// their writes succeed; the disable is never reported.
func TestTeardownSkippedReadsListings(t *testing.T) {
	fsys := fstest.MapFS{
		"dynamic_events":                    {Data: []byte("s:synthetic/wl\tu64 lat\n")},
		"events/sched/sched_waking/trigger": {Data: []byte("# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n")},
		"events/sched/sched_switch/trigger": {Data: []byte("# Available triggers:\n")},
		"events/synthetic/wl/enable":        {Data: []byte("0\n")},
	}
	cmds := emit.DisableFirst(emit.Teardown([]emit.Command{
		{Kind: emit.KindSynth, File: "dynamic_events", Line: "s:wl u64 lat", Undo: "-:wl", What: "synthetic event wl", Marker: "/wl\t"},
		{Kind: emit.KindTrigger, File: "events/sched/sched_waking/trigger", Line: "hist:keys=pid:wl_ts=common_timestamp.usecs", Undo: "!hist:keys=pid:wl_ts=common_timestamp.usecs", What: "start trigger", Marker: "wl_ts="},
		{Kind: emit.KindTrigger, File: "events/sched/sched_switch/trigger", Line: "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts:onmatch(sched.sched_waking).trace(wl,$wl_lat)", What: "end trigger", Marker: "wl_lat="},
	}), "")
	rec := &tracefs.Recorder{}
	skipped, err := TeardownSkipped(&Target{Root: "/t", FS: fsys, W: rec}, cmds)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range skipped {
		got = append(got, c.What)
	}
	if d := cmp.Diff([]string{"removal of the end trigger", "removal of the start trigger"}, got); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	if len(rec.Writes) != 4 {
		t.Errorf("every removal is still written (4), got %q", rec.Writes)
	}
	// Teardown (-r's, --cleanup's) does not read the listings first.
	if err := Teardown(&Target{Root: "/t", FS: fsys, W: &tracefs.Recorder{}}, cmds); err != nil {
		t.Fatal(err)
	}
}

// countFS counts the files opened in it.
type countFS struct {
	fstest.MapFS
	opened map[string]int
}

func (c countFS) Open(name string) (fs.File, error) {
	c.opened[name]++
	return c.MapFS.Open(name)
}

func (c countFS) ReadFile(name string) ([]byte, error) {
	c.opened[name]++
	return c.MapFS.ReadFile(name)
}

// TestNoWritesNoErrorLog: applying or tearing down nothing reads no
// error_log (a BPF run or a run on perf events writes nothing to tracefs,
// and its stop paid three reads of it), while a refused write still reads
// it for the kernel's reason.
func TestNoWritesNoErrorLog(t *testing.T) {
	fsys := countFS{MapFS: fstest.MapFS{"error_log": {Data: []byte("")}}, opened: map[string]int{}}
	tg := &Target{Root: "/t", FS: fsys, W: &tracefs.Recorder{}}
	if err := Apply(tg, nil); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(tg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := TeardownSkipped(tg, nil); err != nil {
		t.Fatal(err)
	}
	if n := fsys.opened["error_log"]; n != 0 {
		t.Errorf("error_log read %d times for no writes", n)
	}
	rec := &tracefs.Recorder{FailAt: 1}
	tg.W = rec
	err := Apply(tg, []emit.Command{{Kind: emit.KindTrigger, File: "events/sched/sched_waking/trigger", Line: "hist:keys=pid", Undo: "!hist:keys=pid", What: "start trigger"}})
	if err == nil {
		t.Fatal("a refused write applied")
	}
	if n := fsys.opened["error_log"]; n != 2 {
		t.Errorf("error_log read %d times around a refused write, want 2 (before and after)", n)
	}
}
