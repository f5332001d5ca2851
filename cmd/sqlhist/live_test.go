package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

// liveFake is a fake tracefs for --run: the fake of the -e tests plus the
// files the kernel would fill (hist files) and a controllable clock,
// signal channel and trace_pipe.
type liveFake struct {
	*fakeTracefs
	files map[string]string
	// versions are successive contents of a file: each open reads the
	// next, the last one stays.
	versions map[string][]string
	sigs     chan os.Signal
	pipe     string
	timer    chan time.Time
	lease    []string // the writes to the run's lease
}

func (f *liveFake) Open(name string) (fs.File, error) {
	if v := f.versions[name]; len(v) > 0 {
		data := v[0]
		if len(v) > 1 {
			f.versions[name] = v[1:]
		}
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(data)}}.Open(name)
	}
	if data, ok := f.files[name]; ok {
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(data)}}.Open(name)
	}
	return f.fakeTracefs.Open(name)
}

// leaseDir is the lease instance of the runs of liveEnv (live.LeaseName).
const leaseDir = "instances/sqlhist_4242_own"

// Append keeps the writes to the run's lease apart, in lease (Writes and
// FailAt count the others, the results triggers in the lease's events/
// included), and shows its trace_marker lines in its trace.
func (f *liveFake) Append(file, line string) error {
	if !strings.HasPrefix(file, leaseDir+"/") || strings.HasPrefix(file, leaseDir+"/events/") {
		return f.fakeTracefs.Append(file, line)
	}
	f.lease = append(f.lease, file+": "+line)
	if strings.HasSuffix(file, "/trace_marker") {
		f.files[leaseDir+"/trace"] += "              sh-1       [000] .....   1.000000: tracing_mark_write: " + line + "\n"
	}
	return nil
}

func (f *liveFake) Mkdir(dir string) error {
	if dir == leaseDir {
		f.lease = append(f.lease, "mkdir: "+dir)
		return nil
	}
	return f.fakeTracefs.Mkdir(dir)
}

func (f *liveFake) Rmdir(dir string) error {
	if dir == leaseDir {
		f.lease = append(f.lease, "rmdir: "+dir)
		return nil
	}
	return f.fakeTracefs.Rmdir(dir)
}

func newLiveFake(t *testing.T, failAt int) *liveFake {
	return &liveFake{fakeTracefs: newFake(t, failAt), files: map[string]string{}, sigs: make(chan os.Signal, 1), timer: make(chan time.Time, 1)}
}

func liveEnv(f *liveFake) (env, *strings.Builder, *strings.Builder) {
	var stdout, stderr strings.Builder
	e := env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Dir: func(p string) (fs.FS, error) {
			if p == "/sys/kernel/tracing" {
				return f, nil
			}
			return nil, fs.ErrNotExist
		},
		ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist },
		Writer:   func(string) tracefs.Writer { return f },
		Signals:  func() (<-chan os.Signal, func()) { return f.sigs, func() {} },
		After:    func(time.Duration) <-chan time.Time { return f.timer },
		Pipe: func(p string) (io.ReadCloser, error) {
			if p != "/sys/kernel/tracing/instances/sqlhist_4242/trace_pipe" {
				return nil, fs.ErrNotExist
			}
			return io.NopCloser(strings.NewReader(f.pipe)), nil
		},
		PID: 4242,
	}
	return e, &stdout, &stderr
}

const (
	runInst = "instances/sqlhist_4242/"
	// The results histograms are in the run's lease (planner.Options.ResultsInstance).
	runRes   = leaseDir + "/"
	runSynth = "sched_waking_to_sched_switch_4242"
	// What the kernel shows for the results histogram of wakeupSQL.
	runHistOnly = `# event histogram
#
# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:sched_waking_to_sched_switch_4242_max=lat:sort=hitcount:size=8192:onmax($sched_waking_to_sched_switch_4242_max).save(lat) if lat < 9223372036854775808 [active]
#

{ comm: sh                                                 , lat: ~ 2^4  } hitcount:          3  lat:         36
	max:         12  lat:         12
{ comm: kworker/0:1                                        , lat: ~ 2^3  } hitcount:          2  lat:         10
	max:          5  lat:          5
{ comm: sh                                                 , lat: ~ 2^7  } hitcount:          1  lat:        100
	max:        100  lat:        100
{ comm: rcu_preempt                                        , lat: ~ 2^11 } hitcount:          2  lat:       3000
	max:       1500  lat:       1500

Totals:
    Hits: 8
    Entries: 4
    Dropped: 0
`
)

// runHist is what the kernel shows for the results of wakeupSQL: the
// results histogram and the counter of negative latencies.
var runHist = runHistOnly + negHist(0)

// negHist is the counter of negative latencies of the results, with n
// events counted on CPU 1.
func negHist(n int) string {
	entries, rows := "", 0
	if n > 0 {
		entries, rows = fmt.Sprintf("{ common_cpu:          1 } hitcount:          %d\n", n), 1
	}
	return fmt.Sprintf(`
# event histogram
#
# trigger info: hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808 [active]
#

%s
Totals:
    Hits: %d
    Entries: %d
    Dropped: 0
`, entries, n, rows)
}

// TestRunJoin: --run creates a private instance, applies the query with a
// results histogram on the synthetic event, reads it, removes everything
// in reverse order and prints one row per comm with the latency's count,
// min, average and maximum and the distribution.
func TestRunJoin(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHist
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "2s", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	create := []string{
		"mkdir: instances/sqlhist_4242",
		"dynamic_events: s:" + runSynth + " char comm[16]; u64 lat",
		runRes + "events/synthetic/" + runSynth + "/trigger: hist:keys=comm,lat.log2:vals=lat:" + runSynth + "_max=lat:size=8192:onmax($" + runSynth + "_max).save(lat) if lat < 9223372036854775808",
		runRes + "events/synthetic/" + runSynth + "/trigger: hist:keys=common_cpu if lat >= 9223372036854775808",
		runInst + "events/sched/sched_waking/trigger: hist:keys=pid:" + runSynth + "_ts_us=common_timestamp.usecs",
		runInst + "events/sched/sched_switch/trigger: hist:keys=next_pid:" + runSynth + "_lat=common_timestamp.usecs-$" + runSynth + "_ts_us:onmatch(sched.sched_waking).trace(" + runSynth + ",next_comm,$" + runSynth + "_lat)",
	}
	// The results histogram is there before the triggers that fire the
	// synthetic event; the teardown is the reverse, so the end trigger
	// comes off first and stops the synthetic events before the read.
	// The instance goes before the synthetic event: removing a dynamic
	// event resets every ring buffer, the lease's manifest with them.
	want := append([]string{}, create...)
	var last []string
	for i := len(create) - 1; i >= 0; i-- {
		file, line, _ := strings.Cut(create[i], ": ")
		switch {
		case file == "mkdir":
			want = append(want, "rmdir: "+line)
		case strings.HasPrefix(line, "s:"):
			last = append(last, file+": -:"+runSynth)
		default:
			want = append(want, file+": !"+line)
		}
	}
	want = append(want, last...)
	if diff := cmp.Diff(want, f.Writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	out := stdout.String()
	for _, s := range []string{
		"synthetic/" + runSynth,
		"Totals: hits 8, entries 4, dropped 0",
		"(1K, 2K]", // 1500 us
		"p50    p90    p99",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// sh: 4 events, 12 us three times and 100 us once: p50 in (8, 16],
	// p90 and p99 the last event, the maximum.
	if !rowMatches(out, "sh", "4", "34.0", "~12", "~100", "~100", "100") {
		t.Errorf("no row sh | 4 | 34.0 | ~12 | ~100 | ~100 | 100 in:\n%s", out)
	}
	// Rows by count, most first: sh (4), then kworker/0:1 and rcu_preempt
	// (2 each) by name.
	if i, j, k := strings.Index(out, "\nsh "), strings.Index(out, "kworker/0:1"), strings.Index(out, "rcu_preempt"); !(i < j && j < k) {
		t.Errorf("rows not ordered by count then name:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "collecting for 2s in instance sqlhist_4242") {
		t.Errorf("stderr: %s", stderr)
	}
}

// rowMatches reports whether a table line holds these cells in order.
func rowMatches(table string, cells ...string) bool {
	for _, l := range strings.Split(table, "\n") {
		var got []string
		for _, c := range regexp.MustCompile(`\s{2,}`).Split(l, -1) {
			if c = strings.TrimSpace(c); c != "" {
				got = append(got, c)
			}
		}
		if cmp.Equal(got, cells) {
			return true
		}
	}
	return false
}

// TestRunJSONTotals: the JSON results add up: the counts of the rows are
// the kernel's Hits, the distribution too.
func TestRunJSONTotals(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHist
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-o", "json", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Results []struct {
			Event        string
			Rows         []map[string]any
			Totals       struct{ Hits, Entries, Dropped uint64 }
			Unit         string
			Distribution []struct{ Low, High, Count uint64 }
		}
	}
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(got.Results) != 1 {
		t.Fatalf("%d results", len(got.Results))
	}
	r := got.Results[0]
	var rows, dist uint64
	for _, row := range r.Rows {
		rows += uint64(row["count"].(float64))
	}
	for _, b := range r.Distribution {
		dist += b.Count
	}
	if rows != r.Totals.Hits || dist != r.Totals.Hits || r.Totals.Hits != 8 || r.Unit != "us" {
		t.Errorf("rows %d, distribution %d, hits %d, unit %q", rows, dist, r.Totals.Hits, r.Unit)
	}
	lat := r.Rows[0]["lat"].(map[string]any)
	p50, _ := lat["p50"].(map[string]any)
	if lat["max"] != 100.0 || lat["avg"] != 34.0 || p50["low"] != 8.0 || p50["high"] != 16.0 || p50["value"] != 12.5 {
		t.Errorf("first row latency %v", lat)
	}
}

// TestRunInterrupted: a signal ends the collection early; the results so
// far are printed and everything is removed.
func TestRunInterrupted(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHist
	f.sigs <- os.Interrupt
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "until Ctrl-C") || !strings.Contains(stderr.String(), "interrupt: reading what was collected") {
		t.Errorf("stderr: %s", stderr)
	}
	if !strings.Contains(stdout.String(), "Totals: hits 8") {
		t.Errorf("no results after the signal: %s", stdout)
	}
	if n := len(f.Writes); n != 12 || f.Writes[n-2] != "rmdir: instances/sqlhist_4242" || f.Writes[n-1] != "dynamic_events: -:"+runSynth {
		t.Errorf("not torn down: %q", f.Writes)
	}
}

// TestRunApplyFails: a refused write undoes what was made, instance
// included, and nothing is collected.
func TestRunApplyFails(t *testing.T) {
	for failAt := 1; failAt <= 5; failAt++ {
		f := newLiveFake(t, failAt)
		f.timer <- time.Time{}
		e, stdout, stderr := liveEnv(f)
		if code := run([]string{"-r", "-d", "1", wakeupSQL}, e); code != exitQuery {
			t.Errorf("failAt %d: exit %d", failAt, code)
		}
		n := failAt - 1
		if len(f.Writes) != 2*n {
			t.Errorf("failAt %d: writes %q, want %d creations and their undo", failAt, f.Writes, n)
		}
		if n > 0 && f.Writes[len(f.Writes)-1] != "rmdir: instances/sqlhist_4242" {
			t.Errorf("failAt %d: the instance is not removed last: %q", failAt, f.Writes)
		}
		if stdout.Len() != 0 || strings.Contains(stderr.String(), "collecting") {
			t.Errorf("failAt %d: collected after a failed apply: %s %s", failAt, stdout, stderr)
		}
		// The run's lease was taken first and is given back.
		if l := f.lease; len(l) < 3 || l[0] != "mkdir: "+leaseDir || l[len(l)-1] != "rmdir: "+leaseDir {
			t.Errorf("failAt %d: the lease: %q", failAt, l)
		}
	}
}

// TestRunRefusesForeignSynthetic: -n names a synthetic event that exists
// and this run did not create: nothing is written.
func TestRunRefusesForeignSynthetic(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files["events/synthetic/wl/format"] = "name: wl\nID: 1500\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:u64 lat;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n"
	f.timer <- time.Time{}
	e, _, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-n", "wl", wakeupSQL}, e); code != exitQuery {
		t.Errorf("exit %d", code)
	}
	if len(f.Writes) != 0 || !strings.Contains(stderr.String(), `a synthetic event named "wl" already exists`) {
		t.Errorf("writes %q, stderr %s", f.Writes, stderr)
	}
}

// TestRunHistogramLimit: a histogram query's rows in the kernel's order
// (its sort=), the keys resolved, LIMIT applied on read.
func TestRunHistogramLimit(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runInst+"events/raw_syscalls/sys_enter/hist"] = `# event histogram
#
# trigger info: hist:keys=id.syscall:vals=hitcount:sort=hitcount.descending:size=2048 [active]
#

{ id: sys_newfstatat                [262] } hitcount:        517
{ id: sys_close                     [  3] } hitcount:        216
{ id: sys_dup2                      [ 33] } hitcount:        109

Totals:
    Hits: 842
    Entries: 3
    Dropped: 5
`
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	q := "SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC LIMIT 2"
	if code := run([]string{"-r", "-d", "1", "-o", "csv", q}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(f.String(), runInst+"events/raw_syscalls/sys_enter/trigger: hist:keys=id.syscall:sort=hitcount.descending:pause") {
		t.Errorf("the histogram is not paused before the read: %q", f.Writes)
	}
	if want := "call,n\nsys_newfstatat,517\nsys_close,216\n"; stdout.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", stdout, want)
	}
	if !strings.Contains(stderr.String(), "raw_syscalls/sys_enter: hits 842, entries 3, dropped 5") {
		t.Errorf("no totals on stderr with -o csv: %s", stderr)
	}
	if !strings.Contains(stderr.String(), "the rows are incomplete: 5 of the 847 events found the map of 2048 entries full (call take more); the totals count every event") ||
		!strings.Contains(stderr.String(), "or run again with --size 4096") {
		t.Errorf("no dropped warning: %s", stderr)
	}
}

// TestRunEvents: --events streams the synthetic event's lines (only its
// own) and reports how many against the kernel's count.
func TestRunEvents(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHist
	f.pipe = "          <idle>-0       [001] d..4.    21.022031: " + runSynth + ": comm=sh lat=12\n" +
		"           sleep-434     [000] d..4.    21.026037: sched_switch: prev_comm=sleep\n" +
		"CPU:1 [LOST 3 EVENTS]\n" +
		"           sleep-434     [000] d..4.    21.026040: " + runSynth + ": comm=kworker/0:1 lat=5\n" +
		"         sqlhist-4242    [000] .....    21.100000: tracing_mark_write: sqlhist-end-4242\n" +
		"           sleep-434     [000] d..4.    21.200000: " + runSynth + ": comm=late lat=1\n"
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "--events", "-o", "json", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"fields":{"comm":"kworker/0:1","lat":5}`) {
		t.Errorf("streamed:\n%s", stdout)
	}
	if !strings.Contains(stderr.String(), "2 events streamed; the kernel counted 8") || !strings.Contains(stderr.String(), "lost 3 events") {
		t.Errorf("stderr: %s", stderr)
	}
	if !strings.Contains(f.String(), runInst+"trace_marker: sqlhist-end-4242") {
		t.Errorf("no end marker written: %q", f.Writes)
	}
	if f.Writes[4] != runInst+"events/synthetic/"+runSynth+"/enable: 1" {
		t.Errorf("the synthetic event is not enabled: %q", f.Writes)
	}
}

func TestRunUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-d", "2", wakeupSQL}, "--duration goes with --run"},
		{[]string{"-r", "-e", wakeupSQL}, "drop -e and --teardown"},
		{[]string{"-r", "-d", "soon", wakeupSQL}, "give seconds"},
		{[]string{"-r", "-d", "-1", wakeupSQL}, "must be positive"},
		{[]string{"-r", "-o", "xml", wakeupSQL}, `-o "xml"`},
		{[]string{"-r", "--size", "64", wakeupSQL}, "128 to 131072"},
	} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		if code := run(tt.args, e); code != exitUsage || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%q: exit %d, stderr %s", tt.args, code, stderr)
		}
		if len(f.Writes) != 0 {
			t.Errorf("%q wrote %q", tt.args, f.Writes)
		}
	}
}

// TestRunProbes: a --run of a probe query creates its probes first, in a
// group of its own (two runs at once must not collide), and removes them
// last, with its synthetic event in one write (after its instance: each
// removal of a dynamic event resets every ring buffer).
func TestRunProbes(t *testing.T) {
	f := newLiveFake(t, 0)
	synth := "do_sys_openat2_to_do_sys_openat2__return_4242"
	f.files[runRes+"events/synthetic/"+synth+"/hist"] = "# event histogram\n#\n# trigger info: hist:keys=filename,lat.log2:vals=hitcount,lat:m=lat:sort=hitcount:size=8192:onmax($m).save(lat) if lat < 9223372036854775808 [active]\n#\n\n" +
		"{ filename: /etc/passwd                                        , lat: ~ 2^5  } hitcount:          2  lat:         40\n\tmax:         20  lat:         20\n\nTotals:\n    Hits: 2\n    Entries: 1\n    Dropped: 0\n" + negHist(0)
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	q := `SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start
	      JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid`
	if code := run([]string{"-r", "-d", "1", q}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	w := f.Writes
	if len(w) != 14 || w[1] != "dynamic_events: p:sqlhist_4242/do_sys_openat2 do_sys_openat2 filename=+0($arg2):string" ||
		w[2] != "dynamic_events: r:sqlhist_4242/do_sys_openat2__return do_sys_openat2 ret=$retval:s32" ||
		w[12] != "rmdir: instances/sqlhist_4242" ||
		w[13] != "dynamic_events: -:"+synth+"\n-:sqlhist_4242/do_sys_openat2__return\n-:sqlhist_4242/do_sys_openat2" {
		t.Errorf("writes:\n%s", strings.Join(w, "\n"))
	}
	if !strings.Contains(w[7], "onmatch(sqlhist_4242.do_sys_openat2)") {
		t.Errorf("end trigger %q does not match on the run's probe", w[7])
	}
	if !rowMatches(stdout.String(), "/etc/passwd", "2", "20.0", "~18", "~20", "~20", "20") {
		t.Errorf("output:\n%s", stdout)
	}
}

// A negative latency (the end stamped before the start) wraps around in
// the kernel's u64: the results histogram leaves it out and a counter
// counts it apart; it is reported with a warning, not shown as a latency
// of 584,000 years.
func TestRunNegativeLatency(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHistOnly + negHist(1)
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !rowMatches(stdout.String(), "sh", "4", "34.0", "~12", "~100", "~100", "100") || !strings.Contains(stdout.String(), "Totals: hits 8, entries 4, dropped 0, negative 1") {
		t.Errorf("output:\n%s", stdout)
	}
	if !strings.Contains(stderr.String(), "1 events had a negative lat") {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestCleanupUsage(t *testing.T) {
	for _, args := range [][]string{{"--dry-run"}, {"--cleanup", wakeupSQL}, {"--cleanup", "-r"}} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		if code := run(args, e); code != exitUsage || !strings.Contains(stderr.String(), "--cleanup [--dry-run] takes no SQL") {
			t.Errorf("%q: exit %d, stderr %s", args, code, stderr)
		}
		if len(f.Writes) != 0 {
			t.Errorf("%q wrote %q", args, f.Writes)
		}
	}
}

// With nothing left by killed runs, --cleanup says so and writes nothing.
func TestCleanupNothing(t *testing.T) {
	f := newLiveFake(t, 0)
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"--cleanup"}, e); code != exitOK || stdout.Len() != 0 || !strings.Contains(stderr.String(), "nothing left by killed runs") {
		t.Errorf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if len(f.Writes) != 0 {
		t.Errorf("wrote %q", f.Writes)
	}
}

// TestRunGoldenTables: the whole --run output, byte for byte, of a JOIN
// (percentiles and the distribution) and of a histogram query that names
// no aggregate (its count is shown, most first).
func TestRunGoldenTables(t *testing.T) {
	for _, tt := range []struct {
		name, sql, file, hist, want string
	}{
		{"join", wakeupSQL, runRes + "events/synthetic/" + runSynth + "/hist", runHist, `synthetic/sched_waking_to_sched_switch_4242
comm         count  avg lat (us)  p50    p90    p99    max lat
--------------------------------------------------------------
sh               4          34.0  ~12    ~100   ~100       100
kworker/0:1      2           5.0  ~5     ~5     ~5           5
rcu_preempt      2        1500.0  ~1144  ~1500  ~1500     1500
Totals: hits 8, entries 4, dropped 0
count, avg and max are exact; p50, p90 and p99 are interpolated in their log2 bucket (the true value is within it: up to a factor of 2)

lat (us):
(4, 8]            2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |
(8, 16]           3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
(16, 32]          0 |                                                    |
(32, 64]          0 |                                                    |
(64, 128]         1 |@@@@@@@@@@@@@@@@@                                   |
(128, 256]        0 |                                                    |
(256, 512]        0 |                                                    |
(512, 1K]         0 |                                                    |
(1K, 2K]          2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |
`},
		{"histogram", "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter", runInst + "events/raw_syscalls/sys_enter/hist", `# event histogram
#
# trigger info: hist:keys=id.syscall:vals=hitcount:sort=hitcount.descending:size=2048 [paused]
#

{ id: sys_read                      [  0] } hitcount:        120
{ id: sys_openat                    [257] } hitcount:         31
{ id: sys_close                     [  3] } hitcount:          2

Totals:
    Hits: 153
    Entries: 3
    Dropped: 0
`, `raw_syscalls/sys_enter
call        count
-----------------
sys_read      120
sys_openat     31
sys_close       2
Totals: hits 153, entries 3, dropped 0
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newLiveFake(t, 0)
			f.files[tt.file] = tt.hist
			f.timer <- time.Time{}
			e, stdout, stderr := liveEnv(f)
			if code := run([]string{"-r", "-d", "1", tt.sql}, e); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if diff := cmp.Diff(tt.want, stdout.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s\ngot:\n%s", diff, stdout)
			}
		})
	}
}

// syscallHist is the hist file of a histogram of syscalls with these
// counts of read and close.
func syscallHist(reads, closes int) string {
	return fmt.Sprintf(`# event histogram
#
# trigger info: hist:keys=id.syscall:vals=hitcount:sort=hitcount.descending:size=2048 [active]
#

{ id: sys_read                      [  0] } hitcount: %10d
{ id: sys_close                     [  3] } hitcount: %10d

Totals:
    Hits: %d
    Entries: 2
    Dropped: 0
`, reads, closes, reads+closes)
}

// TestRunIntervals: -i 2 -d 7 prints three whole intervals and a partial
// one, each with only its own events (a row without any is left out),
// then the total, which they add up to.
func TestRunIntervals(t *testing.T) {
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {
		syscallHist(10, 1), syscallHist(25, 1), syscallHist(40, 3), syscallHist(47, 5)}}
	ticks := make(chan time.Time)
	e, stdout, stderr := liveEnv(f)
	e.Tick = func(d time.Duration) (<-chan time.Time, func()) {
		if d != 2*time.Second {
			t.Errorf("ticks every %v, want 2s", d)
		}
		return ticks, func() {}
	}
	go func() {
		for i := 0; i < 3; i++ {
			ticks <- time.Time{}
		}
		f.timer <- time.Time{}
	}()
	if code := run([]string{"-r", "-i", "2", "-d", "7", "-o", "csv", "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `interval,call,count
1,sys_read,10
1,sys_close,1
interval,call,count
2,sys_read,15
interval,call,count
3,sys_read,15
3,sys_close,2
interval,call,count
4,sys_read,7
4,sys_close,2
interval,call,count
total,sys_read,47
total,sys_close,5
`
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	// The table form says which interval is partial; Ctrl-C ends it.
	f = newLiveFake(t, 0)
	f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {syscallHist(10, 1), syscallHist(12, 1)}}
	e, stdout, stderr = liveEnv(f)
	e.Tick = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	// Ctrl-C after the first interval: the partial one, then the total.
	go func() { ticks <- time.Time{}; f.sigs <- os.Interrupt }()
	if code := run([]string{"-r", "-i", "2", "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"=== interval 1: 0.0 s to 2.0 s\n", "=== interval 2: 2.0 s to ", ", partial\n", "=== total\n", "Totals: hits 2, entries 1, dropped 0"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("no %q in:\n%s", s, stdout)
		}
	}
}

// TestRunInstanceLease: with -B NAME the run's lease is still named after
// its id (it was sqlhist_0_own for every -B run, which two runs at once
// shared and --cleanup took for alive), and the results histogram is in
// it, not in NAME.
func TestRunInstanceLease(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[runRes+"events/synthetic/"+runSynth+"/hist"] = runHist
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-B", "mine", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if l := f.lease; len(l) < 3 || l[0] != "mkdir: "+leaseDir || l[len(l)-1] != "rmdir: "+leaseDir {
		t.Errorf("the lease: %q", l)
	}
	var inMine, inLease int
	for _, w := range f.Writes {
		switch {
		case strings.HasPrefix(w, "instances/mine/events/sched/"):
			inMine++
		case strings.HasPrefix(w, runRes+"events/synthetic/"+runSynth+"/trigger: hist:"):
			inLease++
		case strings.Contains(w, "instances/mine/events/synthetic/"):
			t.Errorf("a trigger on the synthetic event in mine: %s", w)
		}
	}
	if inMine != 4 || inLease != 2 {
		t.Errorf("%d writes of the JOIN's triggers in mine (want 4: made, removed), %d results triggers in the lease (want 2):\n%s", inMine, inLease, strings.Join(f.Writes, "\n"))
	}
	if !strings.Contains(stdout.String(), "Totals: hits 8") {
		t.Errorf("results: %s", stdout)
	}
}
