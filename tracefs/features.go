package tracefs

import (
	"fmt"
	"io/fs"
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

	HistTriggers     bool // hist triggers (4.7)
	SyntheticEvents  bool // synthetic events and onmatch (4.17)
	DynamicEvents    bool // the dynamic_events file (5.0): "s:" definitions
	TraceAction      bool // .trace(<synthetic_event>,...) (5.1)
	DynStrings       bool // char name[] synthetic fields (5.10)
	CommonCPU        bool // common_cpu (5.14)
	Buckets          bool // .buckets=N (5.15)
	Expressions      bool // '*', '/' and constants in hist expressions (5.16)
	StacktraceVars   bool // common_stacktrace in variables, unsigned long[] fields (6.3)
	CommonStacktrace bool // the name common_stacktrace (6.4); before, "stacktrace"
	ErrorLog         bool // error_log (5.2)
	Eprobes          bool // e: event probes in dynamic_events (5.15)
	RetprobeArgs     bool // $argN in kernel return probes (6.9)
	// ProbeArgs is $argN in kprobes at all: only architectures with the
	// function-argument access API have it (x86_64 and arm64 do, 32-bit
	// arm does not in 6.1: "Invalid $-valiable specified").
	ProbeArgs bool
	// CommonComm is the task's name as a hist key or variable, common_comm
	// (6.16). The README does not list it: it is read from the kernel
	// release (VERSION of a catalog, or the running kernel's).
	CommonComm bool
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
	f.ErrorLog = c.HasFile("error_log")
	if v, err := fs.ReadFile(c.fsys, "VERSION"); err == nil {
		f.Kernel = strings.TrimSpace(strings.SplitN(string(v), "\n", 2)[0])
	} else if c.release != "" {
		f.Kernel = c.release
	}
	f.CommonComm = f.CommonComm || ReleaseAtLeast(f.Kernel, 6, 16)
	return f
}

func allFeatures() Features {
	return Features{
		HistTriggers: true, SyntheticEvents: true, DynamicEvents: true,
		TraceAction: true, DynStrings: true, CommonCPU: true, Buckets: true,
		Expressions: true, StacktraceVars: true, CommonStacktrace: true,
		ErrorLog: true, Eprobes: true, RetprobeArgs: true, CommonComm: true, ProbeArgs: true,
		ReturnSuffix: true,
	}
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
	f.Eprobes = has("e[:[<group>/][<event>]]")
	f.RetprobeArgs = has("kernel return probes support: $retval, $arg<N>")
	f.ProbeArgs = has("$arg<N>")
	f.CommonComm = has("common_comm")
	f.ReturnSuffix = has("%return")
	f.StacktraceVars = f.CommonStacktrace
	// '*', '/' and constants arrived in 5.16, after .buckets (5.15) and
	// before any README marker of their own; treat kernels that list
	// .buckets and the 5.16-era "hist:keys" text as having them.
	f.Expressions = f.Buckets
	// Dynamic strings in synthetic events (5.10) predate .buckets (5.15).
	f.DynStrings = f.Buckets || f.CommonCPU
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
		return "this target's kernel release is unknown (its tracefs README does not list it)"
	}
	return "this target's kernel is unknown"
}
