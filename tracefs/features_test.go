package tracefs

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestFeaturesEmbedded(t *testing.T) {
	tests := []struct {
		kernel string
		want   Features
	}{
		{"5.10-nohist", Features{
			FromREADME: true, Kernel: "5.10.0-46-cloud-amd64",
			DynamicEvents: true, ErrorLog: true, ProbeArgs: true, ReturnSuffix: true,
		}},
		// 5.10.262 built with hist triggers: common_cpu is a stable
		// backport, and its synthetic string fields are broken.
		{"5.10", Features{
			FromREADME: true, Kernel: "5.10.262-sqlhist",
			HistTriggers: true, SyntheticEvents: true, DynamicEvents: true, TraceAction: true,
			DynStrings: true, CommonCPU: true, ErrorLog: true, ProbeArgs: true, ReturnSuffix: true,
			BrokenSynthStrings: true, OnChange: true,
		}},
		{"6.1", Features{
			FromREADME: true, Kernel: "6.1.0-57-cloud-amd64",
			HistTriggers: true, SyntheticEvents: true, DynamicEvents: true, TraceAction: true,
			DynStrings: true, CommonCPU: true, Buckets: true, Expressions: true, ErrorLog: true,
			Eprobes: true, ProbeArgs: true, ReturnSuffix: true, SynthFields64: true,
			OnChange: true,
			// .percent and .graph are in 6.1's README, on summed values;
			// not on the count: no nohitcount.
			ValueDisplay: true,
		}},
		{"6.12", Features{
			FromREADME: true, Kernel: "6.12.118+deb13-cloud-amd64",
			HistTriggers: true, SyntheticEvents: true, DynamicEvents: true, TraceAction: true,
			DynStrings: true, CommonCPU: true, Buckets: true, Expressions: true,
			StacktraceVars: true, CommonStacktrace: true, ErrorLog: true,
			Eprobes: true, RetprobeArgs: true, ProbeArgs: true, ReturnSuffix: true, SynthFields64: true,
			HistDisplay: true, NoHitcount: true, OnChange: true, ValueDisplay: true,
		}},
		{"7.2", Features{
			FromREADME: true, Kernel: "7.2.13+deb14-cloud-amd64",
			HistTriggers: true, SyntheticEvents: true, DynamicEvents: true, TraceAction: true,
			DynStrings: true, CommonCPU: true, Buckets: true, Expressions: true,
			StacktraceVars: true, CommonStacktrace: true, ErrorLog: true,
			Eprobes: true, RetprobeArgs: true, ProbeArgs: true, CommonComm: true, // from its release: the README does not say
			ReturnSuffix: true, SynthFields64: true, HistDisplay: true, NoHitcount: true, OnChange: true,
			ValueDisplay: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kernel, func(t *testing.T) {
			got := Open(embeddedFS(t, tt.kernel)).Features()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Features (-want +got):\n%s", diff)
			}
		})
	}
}

// Features reads the README once.
func TestFeaturesReadOnce(t *testing.T) {
	cat, cfs := openCounted(t, "6.1")
	first := cat.Features()
	if cfs.opens["README"] != 1 {
		t.Errorf("first Features opened README %d times, want 1", cfs.opens["README"])
	}
	cfs.reset()
	if second := cat.Features(); second != first {
		t.Errorf("second Features = %+v, want %+v", second, first)
	}
	if n := cfs.total(); n != 0 {
		t.Errorf("second Features touched the file system: opens %v stats %v", cfs.opens, cfs.stats)
	}
}

func TestFeaturesWithoutREADME(t *testing.T) {
	all := Features{
		HistTriggers: true, SyntheticEvents: true, DynamicEvents: true,
		TraceAction: true, DynStrings: true, CommonCPU: true, Buckets: true,
		Expressions: true, StacktraceVars: true, CommonStacktrace: true,
		ErrorLog: true, Eprobes: true, RetprobeArgs: true, CommonComm: true, ProbeArgs: true,
		ReturnSuffix: true, SynthFields64: true, HistDisplay: true, NoHitcount: true, OnChange: true,
		ValueDisplay: true,
	}
	noDynamic := all
	noDynamic.DynamicEvents = false
	event := &fstest.MapFile{Data: []byte("name: e\nID: 1\n")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want Features
	}{
		{"only events", fstest.MapFS{"events/s/e/format": event}, all},
		{"dynamic_events file", fstest.MapFS{"events/s/e/format": event, "dynamic_events": {}}, all},
		{"synthetic_events only", fstest.MapFS{"events/s/e/format": event, "synthetic_events": {}}, noDynamic},
		{"FILES lists synthetic_events only", fstest.MapFS{
			"events/s/e/format": event,
			"FILES":             {Data: []byte("events\nsynthetic_events\n")},
			"dynamic_events":    {}, // FILES is the authority
		}, noDynamic},
		// Without a README there is no kernel version either.
		{"VERSION without README", fstest.MapFS{"events/s/e/format": event, "VERSION": {Data: []byte("6.1.0\n")}}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Open(tt.fsys).Features()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Features (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFeaturesFromCatalogFiles(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want Features
	}{
		{"README without markers, no files", fstest.MapFS{"README": {Data: []byte("tracing mini-HOWTO\n")}},
			Features{FromREADME: true}},
		{"error_log and VERSION", fstest.MapFS{
			"README":    {Data: []byte("hist:keys=\n")},
			"error_log": {},
			"VERSION":   {Data: []byte("  6.6.0-test \nsecond line\n")},
		}, Features{FromREADME: true, HistTriggers: true, ErrorLog: true, Kernel: "6.6.0-test", SynthFields64: true}},
		{"VERSION without newline", fstest.MapFS{
			"README":  {Data: []byte("")},
			"VERSION": {Data: []byte("5.4.0")},
		}, Features{FromREADME: true, Kernel: "5.4.0"}},
		{"FILES decides dynamic_events", fstest.MapFS{
			"README":         {Data: []byte("")},
			"FILES":          {Data: []byte("dynamic_events\n")},
			"error_log":      {}, // not in FILES
			"dynamic_events": {},
		}, Features{FromREADME: true, DynamicEvents: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Open(tt.fsys).Features()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Features (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFeaturesFromREADME(t *testing.T) {
	tests := []struct {
		name, readme string
		want         Features
	}{
		{"empty", "", Features{FromREADME: true}},
		{"hist:keys", "  hist:keys=<field1[,field2,...]>", Features{FromREADME: true, HistTriggers: true}},
		{"hist trigger", "events/<system>/<event>/hist trigger", Features{FromREADME: true, HistTriggers: true}},
		{"synthetic_events file", "synthetic_events\t\t- Create/append/remove/show synthetic events", Features{FromREADME: true, SyntheticEvents: true}},
		{"onmatch", "onmatch(matching.event)", Features{FromREADME: true, SyntheticEvents: true}},
		{"trace action", "trace(<synthetic_event>,param list)", Features{FromREADME: true, TraceAction: true}},
		// common_cpu and .buckets are no markers of what came with them.
		{"common_cpu", "common_cpu", Features{FromREADME: true, CommonCPU: true}},
		{"buckets", ".buckets=size", Features{FromREADME: true, Buckets: true}},
		{"expressions", "    multiplication(*) and division(/) operators. An operand can be either a",
			Features{FromREADME: true, Expressions: true, SynthFields64: true}},
		{"dynamic strings", "     example: echo 'myevent u64 lat; char name[]' >> synthetic_events",
			Features{FromREADME: true, SyntheticEvents: true, DynStrings: true}},
		{"common_stacktrace", "common_stacktrace", Features{FromREADME: true, CommonStacktrace: true, StacktraceVars: true}},
		{"plain stacktrace is not common_stacktrace", "stacktrace", Features{FromREADME: true}},
		{"files are not read from the text", "dynamic_events error_log", Features{FromREADME: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FeaturesFromREADME(tt.readme)); diff != "" {
				t.Errorf("FeaturesFromREADME(%q) (-want +got):\n%s", tt.readme, diff)
			}
		})
	}
}

func TestReleaseAtLeast(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{"6.16.0", true}, {"6.16", true}, {"6.15.9-arch1", false}, {"7.2.13+deb14-cloud-amd64", true},
		{"6.1.0-56-cloud-amd64", false}, {"5.10.262", false}, {"10.0", true}, {"", false}, {"six", false},
	} {
		if got := ReleaseAtLeast(tt.rel, 6, 16); got != tt.want {
			t.Errorf("ReleaseAtLeast(%q, 6, 16) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func TestSetReleaseGivesCommonComm(t *testing.T) {
	readme := &fstest.MapFile{Data: []byte("hist:keys=\ncommon_cpu\n.buckets\n")}
	for rel, want := range map[string]bool{"6.16.1\n": true, "6.15.0": false, "": false} {
		c := Open(fstest.MapFS{"events/s/e/format": {Data: []byte("name: e\nID: 1\n")}, "README": readme})
		c.SetRelease(rel)
		if got := c.Features().CommonComm; got != want {
			t.Errorf("release %q: CommonComm = %v, want %v", rel, got, want)
		}
	}
}

func TestBrokenSynthStrings(t *testing.T) {
	for rel, want := range map[string]bool{
		"5.10.262-sqlhist": true, "5.10.237": true, "5.10.236": false, "5.10.0-46-cloud-amd64": false,
		"5.15.180": false, "6.1.0-56-cloud-amd64": false, "5.4.290": false, "": false,
	} {
		if got := BrokenSynthStrings(rel); got != want {
			t.Errorf("BrokenSynthStrings(%q) = %v, want %v", rel, got, want)
		}
	}
}

// Refusals take the version and the description from FeatureTable, and
// say what the target is: its release, or the era of its README.
func TestLacks(t *testing.T) {
	const buckets = ".buckets=8 needs Linux 5.15 (the .buckets=N modifier); "
	tests := []struct {
		f    Features
		want string
	}{
		{Features{FromREADME: true, Kernel: "5.10.262-sqlhist"}, buckets + "this target is Linux 5.10 (5.10.262-sqlhist)"},
		{FeaturesFromREADME("hist:keys=\n onmatch(\n example: echo 'myevent u64 lat; char name[]' >> synthetic_events\n"),
			buckets + "this target's kernel release is unknown; its tracefs README is that of Linux 5.10 or later, before 5.15"},
		{Features{FromREADME: true, HistTriggers: true, SyntheticEvents: true, DynamicEvents: true, TraceAction: true, ErrorLog: true},
			buckets + "this target's kernel release is unknown; its tracefs README is that of Linux 5.2 or later, before 5.10"},
		{Features{FromREADME: true}, buckets + "this target's kernel release is unknown; its tracefs README is that of a kernel before Linux 4.7"},
		{Features{}, buckets + "this target's kernel is unknown"},
	}
	for _, tt := range tests {
		if got := tt.f.Lacks(".buckets=8", "buckets"); got != tt.want {
			t.Errorf("Lacks = %q\nwant    %q", got, tt.want)
		}
	}
	if got := (Features{}).Lacks("x", "no-such-feature"); !strings.Contains(got, "not supported") {
		t.Errorf("unknown feature: %q", got)
	}
}
