package emit

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// jsonPaths lists the field paths of a JSON document of type t:
// "writes[].sql.start.line".
func jsonPaths(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		jsonPaths(t.Elem(), prefix+"[]", out)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			out[p] = true
			jsonPaths(f.Type, p, out)
		}
	}
}

// TestPlanSchema checks that docs/plan.md describes exactly the fields
// of the JSON plan: each one in a list item of the page.
func TestPlanSchema(t *testing.T) {
	page, err := os.ReadFile("../docs/plan.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(page)
	documented := map[string]bool{}
	item := regexp.MustCompile("(?m)^- ((?:`[^`]+`(?:, )?)+):")
	name := regexp.MustCompile("`([^`]+)`")
	for _, m := range item.FindAllStringSubmatch(sec, -1) {
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			documented[n[1]] = true
		}
	}
	actual := map[string]bool{}
	jsonPaths(reflect.TypeOf(PlanDoc{}), "", actual)
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if diff := cmp.Diff(keys(actual), keys(documented)); diff != "" {
		t.Errorf("JSON plan fields (-code +README):\n%s", diff)
	}
	if !strings.Contains(sec, PlanSchema) {
		t.Errorf("README does not name the schema %q", PlanSchema)
	}
}

func TestNeeds(t *testing.T) {
	tests := []struct {
		c    Command
		want []string
	}{
		{Command{Kind: KindSynth, File: "dynamic_events", Line: "s:x char name[]; u64 lat"},
			[]string{"synthetic-events", "dynamic-events", "dynamic-strings"}},
		{Command{Kind: KindSynth, File: "synthetic_events", Line: "x unsigned long st[]; u64 lat"},
			[]string{"synthetic-events", "stacktrace-variables"}},
		{Command{Kind: KindProbe, File: "dynamic_events", Line: "r:g/x vfs_read%return ret=$retval $arg1"},
			[]string{"kprobe-events", "probe-args", "return-suffix", "retprobe-args"}},
		{Command{Kind: KindProbe, File: "dynamic_events", Line: "p:g/u /bin/app:0x10 n=%di:s64"},
			[]string{"uprobe-events"}},
		{Command{Kind: KindProbe, File: "dynamic_events", Line: "e:g/o syscalls.sys_enter_openat f=+0($filename):ustring"},
			[]string{"ustring", "eprobes"}},
		{Command{Kind: KindTrigger, File: "events/sched/sched_switch/trigger",
			Line: "hist:keys=next_pid:lat=common_timestamp.usecs-$ts:onmatch(sched.sched_waking).trace(x,$lat) if prev_state == 1"},
			[]string{"event-filters", "hist-triggers", "hist-variables", "synthetic-events", "onmatch", "trace-action"}},
		{Command{Kind: KindTrigger, File: "instances/i/events/a/b/trigger",
			Line: "hist:keys=common_cpu,lat.buckets=10,common_pid.execname:vals=hitcount:sort=hitcount:w=lat*2/3:onmax($w).snapshot()"},
			[]string{"instances", "hist-triggers", "hist-modifiers", "hist-keys-3", "hist-variables", "onmax",
				"snapshot-action", "common-cpu", "buckets", "expressions"}},
		{Command{Kind: KindTrigger, File: "events/a/b/trigger", Line: "hist:keys=COMM,common_stacktrace:vals=x.percent"},
			[]string{"hist-triggers", "value-display", "common-stacktrace", "common-comm"}},
		{Command{Kind: KindTrigger, File: "events/a/b/trigger", Line: "hist:keys=a:vals=hitcount.percent,hitcount.graph:nohitcount"},
			[]string{"hist-triggers", "hist-display", "nohitcount"}},
		{Command{Kind: KindTrigger, File: "events/a/b/trigger", Line: "hist:keys=a:vals=hitcount.percent,b.graph"},
			[]string{"hist-triggers", "value-display", "hist-display"}},
	}
	order := map[string]int{}
	for i, f := range tracefs.FeatureTable {
		order[f.ID] = i
	}
	for _, tt := range tests {
		want := append([]string{}, tt.want...)
		sort.Slice(want, func(i, j int) bool { return order[want[i]] < order[want[j]] })
		if diff := cmp.Diff(want, Needs(tt.c)); diff != "" {
			t.Errorf("Needs(%s) (-want +got):\n%s", tt.c.Line, diff)
		}
		if tt.c.Kind != KindTrigger {
			continue
		}
		// A plan's command carries the trigger as values, and needs
		// the same as its text says.
		h, err := planner.ParseHist(tt.c.Line)
		if err != nil {
			t.Fatal(err)
		}
		typed := tt.c
		typed.Line, typed.Hist = "", h
		if diff := cmp.Diff(want, Needs(typed)); diff != "" {
			t.Errorf("Needs of the values of %s (-want +got):\n%s", tt.c.Line, diff)
		}
	}
	if got := MinKernel([]Command{tests[0].c, tests[5].c}); got != "5.10" {
		t.Errorf("MinKernel = %s, want 5.10", got)
	}
}

func TestFeatureTableVersions(t *testing.T) {
	seen := map[string]bool{}
	for i, f := range tracefs.FeatureTable {
		if seen[f.ID] || f.What == "" {
			t.Errorf("%q: duplicate or undescribed", f.ID)
		}
		seen[f.ID] = true
		if i > 0 && tracefs.CompareVersions(tracefs.FeatureTable[i-1].Since, f.Since) > 0 {
			t.Errorf("%s (%s) listed after %s (%s): keep the table oldest first", f.ID, f.Since, tracefs.FeatureTable[i-1].ID, tracefs.FeatureTable[i-1].Since)
		}
	}
}

// TestPlanCommandsMarkers: the commands replayed from a JSON plan carry
// the markers of the commands it was made from, so that --plan
// --teardown -e can tell what is not there (after a --plan -e killed
// part way, the removal of an end trigger whose start trigger was never
// made fails with EINVAL).
func TestPlanCommandsMarkers(t *testing.T) {
	p := wakeupPlan("wl", "sched.sched_waking", "sched.sched_switch")
	p.Units[0].Probes = []*planner.Probe{
		{Group: "sqlhist", Name: "do_sys_openat2", Line: "p:sqlhist/do_sys_openat2 do_sys_openat2 dfd=$arg1:s32"},
		{Group: "sqlhist", Name: "do_sys_openat2__return", Line: "r16:sqlhist/do_sys_openat2__return do_sys_openat2 ret=$retval:s64"},
	}
	p.Units = append(p.Units, &planner.Unit{Start: hist("sched", "sched_switch", "histogram", []string{"prev_pid"})})
	for _, opt := range []Options{{}, {SyntheticEventsFile: true}} {
		cmds := Commands(p, opt)
		var b strings.Builder
		if err := WritePlan(&b, BuildPlan(cmds, PlanOptions{Root: "/sys/kernel/tracing"})); err != nil {
			t.Fatal(err)
		}
		doc, err := ReadPlan([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		markers := func(cs []Command) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.Marker)
			}
			return out
		}
		want := markers(cmds)
		if want[0] == "" || want[2] == "" || want[3] == "" {
			t.Fatalf("the test's commands lack markers: %q", want)
		}
		if d := cmp.Diff(want, markers(doc.Commands(false))); d != "" {
			t.Errorf("writes' markers (-want +got):\n%s", d)
		}
		td := doc.Commands(true)
		if d := cmp.Diff(markers(Teardown(cmds)), markers(td)); d != "" {
			t.Errorf("teardown's markers (-want +got):\n%s", d)
		}
		if want := "removal of the histogram trigger on sched/sched_switch (write 6)"; td[0].What != want {
			t.Errorf("the first removal is %q, want %q", td[0].What, want)
		}
	}
}

// The marker of a replayed trigger is its first variable: no attribute
// of the planner's one keyword list (val= and hitcount among them) is
// taken for one.
func TestMarkerOfTrigger(t *testing.T) {
	for line, want := range map[string]string{
		"hist:keys=pid:ts0=common_timestamp.usecs":                   "ts0=",
		"hist:keys=pid:val=bytes:vals=hitcount:lat=$ts0 if pid > 1":  "lat=",
		"hist:key=pid:values=bytes:sort=bytes:size=8:name=u:clock=x": "",
		"hist:keys=pid:onmax($m).save(a=b)":                          "",
	} {
		if got := markerOf(KindTrigger, line); got != want {
			t.Errorf("markerOf(%q) = %q, want %q", line, got, want)
		}
	}
}
