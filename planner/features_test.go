package planner

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

// The stack trace's name follows the kernel: common_stacktrace from 6.4,
// stacktrace before.
func TestStacktraceHistogramName(t *testing.T) {
	tests := []struct{ kernel, want string }{
		{"6.1", "hist:keys=common_cpu,stacktrace"},
		{"6.12", "hist:keys=common_cpu,common_stacktrace"},
		{"7.2", "hist:keys=common_cpu,common_stacktrace"},
	}
	for _, tt := range tests {
		t.Run(tt.kernel, func(t *testing.T) {
			plan := buildOK(t, embedded(t, tt.kernel), `SELECT common_cpu, STACKTRACE, COUNT(*) FROM sched_switch`, Options{})
			if diff := cmp.Diff(tt.want, plan.Units[0].Start.Spec()); diff != "" {
				t.Errorf("Spec (-want +got):\n%s", diff)
			}
		})
	}
}

// Stack traces pass to synthetic events from Linux 6.3 only.
func TestStacktraceInJoin(t *testing.T) {
	sql := `SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS lat
	        FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid`

	plan := buildOK(t, embedded(t, "6.12"), sql, Options{Name: "st"})
	got := joinOf(plan.Units[0])
	want := joinOut{
		Def:       "st unsigned long stack[]; u64 lat",
		Start:     "hist:keys=prev_pid:st_stack=common_stacktrace,st_ts_us=common_timestamp.usecs",
		End:       "hist:keys=next_pid:st_lat=common_timestamp.usecs-$st_ts_us:onmatch(sched.sched_switch).trace(st,$st_stack,$st_lat)",
		StartFile: "events/sched/sched_switch/trigger", EndFile: "events/sched/sched_switch/trigger",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("6.12 (-want +got):\n%s", diff)
	}

	plan, diags := build(t, embedded(t, "6.1"), sql, Options{Name: "st"})
	if plan != nil {
		t.Fatalf("6.1: got a plan, want an error")
	}
	var msgs []string
	for _, d := range diags.Errors() {
		msgs = append(msgs, d.Msg)
	}
	wantMsgs := []string{"passing a stack trace to a synthetic event needs Linux 6.3 (stack traces in hist variables and synthetic events); this target is Linux 6.1 (6.1.0-57-cloud-amd64)"}
	if diff := cmp.Diff(wantMsgs, msgs); diff != "" {
		t.Errorf("6.1 errors (-want +got):\n%s", diff)
	}
}

// Linux 5.10 has no hist triggers: every query is refused, once.
func TestNoHistTriggers(t *testing.T) {
	for _, sql := range []string{
		`SELECT prev_pid FROM sched_switch`,
		`SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
	} {
		plan, diags := build(t, debian510(t), sql, Options{})
		if plan != nil {
			t.Errorf("%s: got a plan", sql)
		}
		if len(diags) != 1 || !strings.Contains(diags[0].Msg, "no hist triggers") || diags[0].Pos.IsValid() {
			t.Errorf("%s: diagnostics %v, want one unpositioned message about hist triggers", sql, diags)
		}
	}
}

const (
	readmeOld  = "hist:keys=<field1[,field2,...]>\n onmatch(matching.event).<synthetic_event_name>(param list)\n"
	readmeFull = readmeOld + " trace(<synthetic_event>,param list)\n common_cpu\n .buckets\n" +
		" multiplication(*) and division(/) operators\n example: echo 'myevent u64 lat; char name[]' >> synthetic_events\n"
	// The README's era, as refusals name it when the release is unknown.
	oldEra = "this target's kernel release is unknown; its tracefs README is that of Linux 4.17 or later, before 5.0"
)

func featureCatalog(readme string) *tracefs.Catalog {
	return tracefs.Open(fstest.MapFS{
		"README":                    {Data: []byte(readme)},
		"FILES":                     {Data: []byte("README\nevents\nsynthetic_events\n")},
		"events/test/begin/format":  formatFile("begin", "int pid 4 1", "__data_loc char[] label 4 1"),
		"events/test/finish/format": formatFile("finish", "int next_pid 4 1"),
	})
}

// Output forms follow the features the README advertises.
func TestFeaturesShapeOutput(t *testing.T) {
	tests := []struct {
		name, sql string
		wantOld   string // the trigger, or the error, on an old kernel
		wantFull  string // the trigger on a kernel with every feature
	}{
		{"action without trace()",
			`SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
			"hist:keys=next_pid:lat_match=$lat_matched:onmatch(test.begin).lat(next_pid)",
			"hist:keys=next_pid:lat_match=$lat_matched:onmatch(test.begin).trace(lat,next_pid)"},
		{"common_cpu in a filter",
			`SELECT pid FROM begin WHERE common_cpu == 1`,
			"hist:keys=pid:sort=hitcount.descending if CPU == 1",
			"hist:keys=pid:sort=hitcount.descending if common_cpu == 1"},
		{"buckets",
			`SELECT pid.buckets=10 FROM begin`,
			"error: the modifier .buckets=10 needs Linux 5.15 (the .buckets=N modifier); " + oldEra,
			"hist:keys=pid.buckets=10:sort=hitcount.descending"},
		{"multiplication",
			`SELECT f.next_pid * b.pid AS m FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
			"error: * in an expression needs Linux 5.16 (*, / and numeric constants in hist expressions); " + oldEra,
			"hist:keys=next_pid:lat_m=next_pid*$lat_pid:onmatch(test.begin).trace(lat,$lat_m)"},
		{"constants",
			`SELECT f.next_pid + 1 AS m FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
			"error: a constant in an expression needs Linux 5.16 (*, / and numeric constants in hist expressions); " + oldEra,
			"hist:keys=next_pid:lat_m=next_pid+1,lat_match=$lat_matched:onmatch(test.begin).trace(lat,$lat_m)"},
		{"dynamic string in a synthetic event",
			`SELECT b.label FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
			"error: label is a dynamic string: passing it to a synthetic event needs Linux 5.10 (variable-length strings (char name[]) in synthetic events); " + oldEra,
			"hist:keys=next_pid:onmatch(test.begin).trace(lat,$lat_label)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct{ readme, want string }{{readmeOld, tt.wantOld}, {readmeFull, tt.wantFull}} {
				var opt Options
				if strings.Contains(tt.sql, "JOIN") {
					opt.Name = "lat"
				}
				plan, diags := build(t, featureCatalog(c.readme), tt.sql, opt)
				var got string
				switch {
				case diags.Err() != nil:
					got = "error: " + diags.Errors()[0].Msg
				case plan.Units[0].End != nil:
					got = plan.Units[0].End.Spec()
				default:
					got = plan.Units[0].Start.Spec()
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("README %q (-want +got):\n%s", c.readme, diff)
				}
			}
		})
	}
}

// A kernel with hist triggers but no synthetic events takes histograms
// and refuses a JOIN, at the JOIN.
func TestNoSyntheticEvents(t *testing.T) {
	cat := tracefs.Open(fstest.MapFS{
		"README":                    {Data: []byte("hist:keys=<field1[,field2,...]>\n")},
		"FILES":                     {Data: []byte("README\nevents\n")},
		"events/test/begin/format":  formatFile("begin", "int pid 4 1"),
		"events/test/finish/format": formatFile("finish", "int next_pid 4 1"),
	})
	if _, diags := build(t, cat, `SELECT pid FROM begin`, Options{}); diags.Err() != nil {
		t.Errorf("histogram refused: %v", diags)
	}
	sql := `SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`
	plan, diags := build(t, cat, sql, Options{Name: "lat"})
	if plan != nil || len(diags) != 1 || !strings.Contains(diags[0].Msg, "needs Linux 4.17 (synthetic events)") || diags[0].Pos.Offset() != strings.Index(sql, "JOIN") {
		t.Errorf("JOIN: plan %v, diagnostics %v", plan != nil, diags)
	}
}

// Linux 5.10.237 and later corrupt a synthetic event's string fields: a
// JOIN with a string column is refused at the column, for --run too (a
// refused field once left the results histogram untyped: a panic).
func TestBrokenSynthStrings510(t *testing.T) {
	sql := `SELECT end.next_comm AS comm, end.next_pid AS pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	for _, run := range []bool{false, true} {
		plan, diags := build(t, embedded(t, "5.10"), sql, Options{Run: run})
		errs := diags.Errors()
		if plan != nil || len(errs) != 1 || errs[0].Pos.Offset() != strings.Index(sql, "AS comm")+3 ||
			!strings.Contains(errs[0].Msg, "Linux 5.10.237 and later") {
			t.Errorf("run=%v: plan %v, diagnostics %v", run, plan != nil, diags)
		}
	}
	// Without the string the JOIN is planned, on 5.10 as on 6.1.
	sql = `SELECT end.next_pid AS pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	buildOK(t, embedded(t, "5.10"), sql, Options{Run: true})
}
