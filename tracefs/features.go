package tracefs

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Features lists what the kernel behind a catalog can do, as far as its
// README and top-level files tell. The compiler picks its output forms
// from these and refuses queries the kernel cannot run.
type Features struct {
	// FromREADME is false when the catalog had no README; every feature is
	// then assumed present (a modern kernel).
	FromREADME bool
	// Kernel is the kernel release recorded with an embedded catalog, if any.
	Kernel string

	HistTriggers    bool // hist triggers (4.7)
	SyntheticEvents bool // synthetic events and onmatch (4.17)
	DynamicEvents   bool // the dynamic_events file (5.0): "s:" definitions
	TraceAction     bool // .trace(<synthetic_event>,...) (5.1)
	DynStrings      bool // char name[] synthetic fields (5.10)
	CommonCPU       bool // common_cpu (5.14; "cpu" before, and stable backports)
	Buckets         bool // .buckets=N (5.15)
	// Expressions is '*', '/' and constants in hist expressions, and
	// left-to-right evaluation (5.16). Before, the kernel had only + and -
	// and evaluated a-b-c as a-(b-c).
	Expressions bool
	// SynthFields64 is 64 fields in a synthetic event (5.15); 32 before.
	SynthFields64 bool
	// BrokenSynthStrings is true on the kernels whose hist triggers write
	// a synthetic event's string fields wrongly: Linux 5.10.237 and later
	// 5.10.y took two 6.x patches without their fixes (upstream 9971c3f94448
	// and e1a453a57bc7), so every string field is also stored as a number,
	// shifts the fields after it and writes past the event, and prints as
	// "(efault)". Read from the release: the README does not tell.
	BrokenSynthStrings bool
	StacktraceVars     bool // common_stacktrace in variables, unsigned long[] fields (6.3)
	CommonStacktrace   bool // the name common_stacktrace (6.4); before, "stacktrace"
	ErrorLog           bool // error_log (5.2)
	Eprobes            bool // e: event probes in dynamic_events (5.15)
	RetprobeArgs       bool // $argN in kernel return probes (6.9)
	// ProbeArgs is $argN in kprobes at all: only architectures with the
	// function-argument access API have it (x86_64 and arm64 do, 32-bit
	// arm does not in 6.1: "Invalid $-valiable specified").
	ProbeArgs bool
	// CommonComm is the task's name as a hist key or variable, common_comm
	// (6.16). The README does not list it: it is read from the kernel
	// release (VERSION of a catalog, or the running kernel's).
	CommonComm bool
	// HistDisplay is .percent and .graph on hitcount, and NoHitcount the
	// nohitcount attribute: both 6.2, read from the README's nohitcount.
	// Debian's 6.1 lists .percent and .graph in its README, which 6.1
	// has on summed values only: it refuses hitcount.percent ("Couldn't
	// find field", seen in 6.1.0-56 under qemu).
	HistDisplay bool
	NoHitcount  bool
	// ValueDisplay is .percent and .graph on a summed value (6.1), read
	// from the README's .percent, except where a 6.1 release says
	// otherwise (ValueDisplayNote; see valueDisplay61).
	ValueDisplay bool
	// ValueDisplayNote explains why a kernel whose README lists .percent
	// is taken not to have it on values: the refusal's text.
	ValueDisplayNote string
	// OnChange is the onchange() handler and the snapshot() action (5.1),
	// listed in the README.
	OnChange bool
	// ReturnSuffix is the %return suffix of probe locations (5.10): the
	// only way a bootconfig can make a return probe.
	ReturnSuffix bool
}

// Features reports the kernel features of the catalog, read once.
func (c *Catalog) Features() Features {
	c.featOnce.Do(func() { c.feat = c.readFeatures() })
	return c.feat
}

func (c *Catalog) readFeatures() Features {
	data, err := fs.ReadFile(c.fsys, "README")
	if err != nil {
		f := allFeatures()
		f.DynamicEvents = c.HasFile("dynamic_events") || !c.HasFile("synthetic_events")
		return f
	}
	f := FeaturesFromREADME(string(data))
	f.DynamicEvents = c.HasFile("dynamic_events")
	// Before 5.10 the README does not describe synthetic_events; the
	// file tells (4.17 to 5.9).
	f.SyntheticEvents = f.SyntheticEvents || f.HistTriggers && c.HasFile("synthetic_events")
	f.ErrorLog = c.HasFile("error_log")
	if v, err := fs.ReadFile(c.fsys, "VERSION"); err == nil {
		f.Kernel = strings.TrimSpace(strings.SplitN(string(v), "\n", 2)[0])
	} else if c.release != "" {
		f.Kernel = c.release
	}
	f.CommonComm = f.CommonComm || ReleaseAtLeast(f.Kernel, 6, 16)
	f.SynthFields64 = f.SynthFields64 || ReleaseAtLeast(f.Kernel, 5, 15)
	f.BrokenSynthStrings = BrokenSynthStrings(f.Kernel)
	if f.ValueDisplay {
		f.ValueDisplay, f.ValueDisplayNote = valueDisplay61(f.Kernel)
	}
	return f
}

// valueDisplay61 tells whether a kernel whose README lists .percent and
// .graph takes them on summed values ("hist:keys=common_pid:vals=
// bytes_req.percent"), and when it does not, why. Linux 6.1 has them,
// and so does its README; upstream e0213434fe3e ("tracing: Do not let
// histogram values have some modifiers", a stable fix) made the kernel
// refuse them on values ("Invalid field modifier"), until a later fix
// took them back. The README did not change: only the release tells.
// Seen under qemu (the refusal audit, e2e/audit_test.go): Debian's
// 6.1.0-50 (6.1.176) refuses them; 6.1.0-56 (6.1.192-2) and 6.1.0-57
// (6.1.192-3, x86-64, arm64 and armhf), 6.12 and 7.2 take them. The 6.1 releases between are not known, nor other series
// than 6.1 that took the stable fix.
func valueDisplay61(release string) (bool, string) {
	p := versionParts(release)
	if len(p) < 3 || p[0] != 6 || p[1] != 1 {
		return true, ""
	}
	const seen = "Linux 6.1 stable releases differ: Debian's 6.1.0-50 (6.1.176) refuses .percent and .graph on values (\"Invalid field modifier\") although its README lists them, 6.1.0-56 and 6.1.0-57 (6.1.192) take them"
	upstream, debian := p[2], -1
	if upstream == 0 {
		// Debian names its releases 6.1.0-ABI-flavour.
		if _, rest, ok := strings.Cut(release, "6.1.0-"); ok {
			if n, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0]); err == nil {
				debian = n
			}
		}
	}
	switch {
	case upstream >= 192 || debian >= 56:
		return true, ""
	case upstream > 0 && upstream <= 176 || debian >= 0 && debian <= 50:
		return false, seen
	}
	return false, seen + "; which this release does is not known"
}

// BrokenSynthStrings reports whether a kernel release is one of the 5.10
// stable releases (5.10.237 and later) whose hist triggers corrupt the
// string fields of synthetic events: see Features.BrokenSynthStrings and
// e2e/findings/linux-5.10.md. No 5.10.y release has the fixes yet.
func BrokenSynthStrings(release string) bool {
	p := versionParts(release)
	return len(p) >= 3 && p[0] == 5 && p[1] == 10 && p[2] >= 237
}

func allFeatures() Features {
	return Features{
		HistTriggers: true, SyntheticEvents: true, DynamicEvents: true,
		TraceAction: true, DynStrings: true, CommonCPU: true, Buckets: true,
		Expressions: true, StacktraceVars: true, CommonStacktrace: true,
		ErrorLog: true, Eprobes: true, RetprobeArgs: true, CommonComm: true, ProbeArgs: true,
		ReturnSuffix: true, SynthFields64: true, HistDisplay: true, NoHitcount: true, OnChange: true,
		ValueDisplay: true,
	}
}

// WithStream returns the features of the target when sqlhist's stream
// engine computes the hist triggers and synthetic events from its events:
// every feature of hist triggers, whatever the kernel has, and the
// kernel's own for what it still does (probes, dynamic_events,
// error_log). A task's name is read from the kernel's saved command
// lines, not recorded with each event, so common_comm is left out (COMM
// keys by the pid's name, as .execname does).
func (f Features) WithStream() Features {
	f.HistTriggers, f.SyntheticEvents, f.TraceAction, f.DynStrings = true, true, true, true
	f.CommonCPU, f.Buckets, f.Expressions, f.SynthFields64 = true, true, true, true
	f.StacktraceVars, f.CommonStacktrace = true, true
	f.HistDisplay, f.NoHitcount, f.OnChange, f.ValueDisplay = true, true, true, true
	f.ValueDisplayNote = ""
	f.CommonComm, f.BrokenSynthStrings = false, false
	return f
}

// FeaturesFromREADME derives features from the text of a tracefs README.
// File-based features (dynamic_events, error_log) are left false.
func FeaturesFromREADME(readme string) Features {
	has := func(s string) bool { return strings.Contains(readme, s) }
	f := Features{FromREADME: true}
	f.HistTriggers = has("hist:keys=") || has("hist trigger")
	f.SyntheticEvents = has("synthetic_events") || has("onmatch(")
	f.TraceAction = has("trace(<synthetic_event>,param list)")
	f.CommonCPU = has("common_cpu")
	f.Buckets = has(".buckets")
	f.CommonStacktrace = has("common_stacktrace")
	f.Eprobes = has("e[:[<group>/]") // 5.15: e[:[<group>/]<event>], later e[:[<group>/][<event>]]
	f.RetprobeArgs = has("kernel return probes support: $retval, $arg<N>")
	f.ProbeArgs = has("$arg<N>")
	f.CommonComm = has("common_comm")
	f.ReturnSuffix = has("%return")
	f.NoHitcount = has("nohitcount")
	f.HistDisplay = f.NoHitcount
	f.ValueDisplay = has(".percent")
	f.OnChange = has("onchange(var)")
	f.StacktraceVars = f.CommonStacktrace
	// '*', '/', constants and left-to-right evaluation came together in
	// 5.16 with this README text (5.15 has .buckets but not these).
	f.Expressions = has("multiplication(*) and division(/)")
	// Dynamic strings in synthetic events (5.10) came with this example in
	// the README; common_cpu is no marker (5.4.y and 5.10.y backported it).
	f.DynStrings = has("char name[]")
	// 64 synthetic fields came in 5.15, before any README marker; a kernel
	// with 5.16's expressions has them (the release tells otherwise).
	f.SynthFields64 = f.Expressions
	return f
}

// ReleaseAtLeast reports whether a kernel release ("6.16.3-arch1",
// "7.2.13+deb14-cloud-amd64") is major.minor or later; false when it
// cannot be read.
func ReleaseAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(release, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Release returns the kernel's version, "6.1", from the release of the
// catalog ("" when unknown).
func (f Features) Release() string {
	var ma, mi int
	if n, _ := fmt.Sscanf(f.Kernel, "%d.%d", &ma, &mi); n != 2 {
		return ""
	}
	return fmt.Sprintf("%d.%d", ma, mi)
}

// Target describes the kernel for refusals: "this target is Linux 6.1
// (6.1.0-56-cloud-amd64)", or what is known of it.
func (f Features) Target() string {
	switch {
	case f.Release() != "":
		return "this target is Linux " + f.Release() + " (" + f.Kernel + ")"
	case f.FromREADME:
		if span := f.readmeSpan(); span != "" {
			return "this target's kernel release is unknown; its tracefs README is that of " + span
		}
		return "this target's kernel release is unknown (its tracefs README does not list it)"
	}
	return "this target's kernel is unknown"
}

// readmeSpan dates a README by the features it lists: "Linux 5.10 or
// later, before 5.15". Backports can move a kernel's README forward, so
// this explains a refusal; it decides nothing.
func (f Features) readmeSpan() string {
	marks := []struct {
		has bool
		id  string
	}{
		{f.HistTriggers, "hist-triggers"}, {f.SyntheticEvents, "synthetic-events"},
		{f.DynamicEvents, "dynamic-events"}, {f.TraceAction, "trace-action"}, {f.ErrorLog, "error-log"},
		{f.DynStrings, "dynamic-strings"}, {f.ReturnSuffix, "return-suffix"}, {f.Buckets, "buckets"},
		{f.Eprobes, "eprobes"}, {f.Expressions, "expressions"}, {f.CommonStacktrace, "common-stacktrace"},
		{f.RetprobeArgs, "retprobe-args"},
	}
	lo, hi := "", ""
	for _, m := range marks {
		feat, _ := FeatureByID(m.id)
		if m.has && (lo == "" || CompareVersions(feat.Since, lo) > 0) {
			lo = feat.Since
		}
	}
	for _, m := range marks {
		feat, _ := FeatureByID(m.id)
		if !m.has && (lo == "" || CompareVersions(feat.Since, lo) > 0) && (hi == "" || CompareVersions(feat.Since, hi) < 0) {
			hi = feat.Since
		}
	}
	switch {
	case lo != "" && hi != "":
		return "Linux " + lo + " or later, before " + hi
	case lo != "":
		return "Linux " + lo + " or later"
	case hi != "":
		return "a kernel before Linux " + hi
	}
	return ""
}

// Lacks is the refusal of something the target does not have: "SUBJECT
// needs Linux 5.15 (the .buckets=N modifier); this target is Linux 5.10
// (5.10.262-sqlhist)". The version and the description come from
// FeatureTable, by the feature's ID.
func (f Features) Lacks(subject, id string) string {
	feat, ok := FeatureByID(id)
	if !ok {
		return subject + " is not supported by this kernel; " + f.Target()
	}
	return subject + " needs Linux " + feat.Since + " (" + feat.What + "); " + f.Target()
}
