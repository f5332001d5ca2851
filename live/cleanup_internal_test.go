package live

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// The listing of dynamic_events as 6.1 shows it: a kretprobe carries its
// maxactive ("r16:"), which a parser of "x:" lines alone missed (seen in
// the kernel suite: the dead run's kretprobe stayed).
func TestDynamicEvents(t *testing.T) {
	fsys := fstest.MapFS{"dynamic_events": {Data: []byte(
		"p:sqlhist_7/do_sys_openat2 do_sys_openat2 filename=+0(%si):string\n" +
			"r16:sqlhist_7/do_sys_openat2__return do_sys_openat2 ret=$retval:s32\n" +
			"s:synthetic/lat_7\tchar[16] comm; u64 lat\n" +
			"e:eprobes/open syscalls.sys_enter_openat\n")}}
	got := dynamicEvents(&Target{FS: fsys})
	want := []dynEvent{{'p', "sqlhist_7", "do_sys_openat2"}, {'r', "sqlhist_7", "do_sys_openat2__return"}, {'s', "synthetic", "lat_7"}, {'e', "eprobes", "open"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(dynEvent{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFired(t *testing.T) {
	spec := "hist:keys=next_pid:vals=hitcount:lat_7_lat=common_timestamp.usecs-$lat_7_ts:onmatch(sched.sched_waking).trace(lat_7,next_comm,$lat_7_lat):onmax($lat_7_lat).save(prev_pid)"
	if got := fired(spec); !cmp.Equal(got, []string{"lat_7"}) {
		t.Errorf("fired = %q", got)
	}
	if got := fired("hist:keys=pid:onmatch(a.b).old_style(x)"); !cmp.Equal(got, []string{"old_style"}) {
		t.Errorf("fired (old syntax) = %q", got)
	}
}

// Only runs that are no longer running count, each once, and only names
// of the form sqlhist_<pid>.
func TestDeadRuns(t *testing.T) {
	fsys := fstest.MapFS{
		"instances/sqlhist_7/trace": {},
		"instances/sqlhist_8/trace": {},
		"instances/sqlhist_x/trace": {},
		"instances/mine/trace":      {},
		"dynamic_events":            {Data: []byte("p:sqlhist_7/f f\np:sqlhist_9/g g\np:sqlhist/h h\n")},
	}
	got := DeadRuns(&Target{FS: fsys}, func(pid int) bool { return pid == 8 })
	if !cmp.Equal(got, []int{7, 9}) {
		t.Errorf("DeadRuns = %v, want [7 9]", got)
	}
}

// A dead run's trigger keyed by common_cpu, as 7.2 lists it, is removed
// with the field's real name: 7.2 refuses "!" with its own listing.
func TestLeftoverTriggerListedBy72(t *testing.T) {
	trig := "instances/sqlhist_7/events/synthetic/lat_7/trigger"
	fsys := fstest.MapFS{
		"instances/sqlhist_7/trace": {},
		trig: {Data: []byte("# Available triggers:\n" +
			"hist:keys=common_cpucommon_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808 [active]\n")},
		"dynamic_events": {Data: []byte("s:synthetic/lat_7\tu64 lat\n")},
	}
	got := FindLeftovers(&Target{FS: fsys}, func(int) bool { return false })
	if len(got) != 1 {
		t.Fatalf("FindLeftovers = %d runs, want 1", len(got))
	}
	want := "!hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808"
	for _, c := range got[0].Commands {
		if c.File == trig {
			if c.Line != want {
				t.Errorf("removal = %q, want %q", c.Line, want)
			}
			return
		}
	}
	t.Errorf("no removal of the trigger in %+v", got[0].Commands)
}
