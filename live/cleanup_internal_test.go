package live

import (
	"io"
	"slices"
	"strings"
	"syscall"
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

// busyWriter records the writes of a cleanup and refuses an instance's
// first rmdirs as busy (an awk that has not yet seen the end marker still
// holds its trace_pipe).
type busyWriter struct {
	log  []string
	busy map[string]int // rmdirs to refuse, by directory
}

func (w *busyWriter) Append(file, line string) error {
	w.log = append(w.log, file+" < "+line)
	return nil
}

func (w *busyWriter) Mkdir(dir string) error { return nil }

func (w *busyWriter) Rmdir(dir string) error {
	if w.busy[dir] > 0 {
		w.busy[dir]--
		w.log = append(w.log, "rmdir "+dir+": busy")
		return syscall.EBUSY
	}
	w.log = append(w.log, "rmdir "+dir)
	return nil
}

// What a killed awk script left: its lease (sqlawk_<name>_own_<pid>) and
// its instance, whose events are turned off and which the end marker
// then empties before the rmdir (tried
// again while busy); a running script's lease and instance are left, and
// so are the awk scripts' probes while one runs. An instance no lease
// names is not removed but named, with what removes it.
func TestAwkLeftovers(t *testing.T) {
	fsys := fstest.MapFS{
		"instances/sqlawk_wl/trace":          {},
		"instances/sqlawk_wl_own_41/trace":   {},
		"instances/sqlawk_exec/trace":        {},
		"instances/sqlawk_exec_own_42/trace": {},
		"instances/sqlawk_exec_own_43/trace": {}, // a second, dead, of the running query
		"instances/sqlawk_old/trace":         {}, // no lease: an older script's
		"instances/sqlhist_7/trace":          {},
		"instances/sqlawk_gone_own_44/trace": {}, // its instance already removed
		"dynamic_events":                     {Data: []byte("p:sqlawk/open do_sys_openat2\n")},
	}
	w := &busyWriter{busy: map[string]int{"instances/sqlawk_wl": 2}}
	tg := &Target{Root: "/sys/kernel/tracing", FS: fsys, W: w}
	alive := func(pid int) bool { return pid == 42 || pid == 7 }
	var out strings.Builder
	n, err := Cleanup(tg, alive, &out, false)
	if err != nil || n != 3 {
		t.Fatalf("Cleanup: %d left, %v", n, err)
	}
	want := []string{ // in the listing's order
		"rmdir instances/sqlawk_exec_own_43",
		"rmdir instances/sqlawk_gone_own_44",
		"instances/sqlawk_wl/events/enable < 0", // nothing after the marker
		"instances/sqlawk_wl/trace_marker < " + AwkMarker,
		"rmdir instances/sqlawk_wl: busy", "rmdir instances/sqlawk_wl: busy", "rmdir instances/sqlawk_wl",
		"rmdir instances/sqlawk_wl_own_41",
	}
	if diff := cmp.Diff(want, w.log); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	for _, s := range []string{"# left by the awk script of process 41 (sqlawk_wl)", "rmdir '/sys/kernel/tracing/instances/sqlawk_wl'"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the printed removals lack %q:\n%s", s, out.String())
		}
	}
	// With no script running, the probes go with the last lease.
	w = &busyWriter{}
	tg.W = w
	if n, err := Cleanup(tg, func(int) bool { return false }, io.Discard, false); err != nil || n != 5 ||
		!slices.Contains(w.log, "dynamic_events < -:sqlawk/open") || !slices.Contains(w.log, "rmdir instances/sqlawk_exec") {
		t.Errorf("nothing running: %d left, %v, writes %q", n, err, w.log)
	}
	note := NothingLeft(&Target{Root: "/sys/kernel/tracing", FS: fstest.MapFS{"instances/sqlawk_old/trace": {}}}, func(int) bool { return false })
	if !strings.Contains(note, "that no lease names") || !strings.Contains(note, "sqlawk_old (if no script of it runs: echo 0 >> '/sys/kernel/tracing/instances/sqlawk_old/events/enable'; echo sqlhist-awk-end >> '/sys/kernel/tracing/instances/sqlawk_old/trace_marker'; rmdir '/sys/kernel/tracing/instances/sqlawk_old')") {
		t.Errorf("NothingLeft: %s", note)
	}
}
