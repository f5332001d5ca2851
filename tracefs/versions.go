package tracefs

import (
	"strconv"
	"strings"
)

// Feature is a tracing capability a write may need, with the first
// mainline Linux release that has it. The table below is the one place
// where sqlhist records versions: plans list what each write needs from
// it, and refusals name the version from it.
type Feature struct {
	ID    string // stable identifier used in JSON plans: "hist-variables"
	What  string // for people: "hist variables, $references and common_timestamp"
	Since string // first mainline release: "4.17"
}

// FeatureTable lists the features sqlhist's writes can need, oldest first.
// The versions come from the kernel's history (docs/kernel-ftrace-reference
// §5, the version timeline); stable backports can bring a feature to an
// older kernel, which is why sqlhist reads what a target has from its
// README and formats, and uses these versions to explain.
var FeatureTable = []Feature{
	{"event-filters", "event filters (field == value, && and ||)", "2.6.31"},
	{"kprobe-events", "kprobe and kretprobe events", "2.6.33"},
	{"uprobe-events", "uprobe and uretprobe events", "3.5"},
	{"instances", "tracefs instances", "3.10"},
	{"hist-triggers", "hist triggers (keys, values, sort, size, filters)", "4.7"},
	{"hist-modifiers", "hist key modifiers .execname .syscall .log2 .sym .hex", "4.7"},
	{"hist-keys-3", "three keys in one hist trigger", "4.15"},
	{"hist-variables", "hist variables, $references, common_timestamp and + - expressions", "4.17"},
	{"synthetic-events", "synthetic events", "4.17"},
	{"onmatch", "onmatch() handlers", "4.17"},
	{"onmax", "onmax() handlers and save()", "4.17"},
	{"probe-args", "$arg<N> probe fetch arguments", "4.20"},
	{"dynamic-events", "the dynamic_events file (s: and -: definitions)", "5.0"},
	{"onchange", "onchange() handlers", "5.1"},
	{"snapshot-action", "the snapshot() action", "5.1"},
	{"trace-action", "the trace(<synthetic_event>, …) action", "5.1"},
	{"error-log", "tracing/error_log", "5.2"},
	{"ustring", "the ustring fetch type", "5.3"},
	{"boot-time-tracing", "boot-time tracing from a bootconfig (ftrace.* keys, kprobes, synthetic events)", "5.6"},
	{"dynamic-strings", "variable-length strings (char name[]) in synthetic events", "5.10"},
	{"return-suffix", "the %return suffix of probe locations", "5.10"},
	{"common-cpu", "the common_cpu field (named cpu before)", "5.14"},
	{"buckets", "the .buckets=N modifier", "5.15"},
	{"eprobes", "event probes (e:)", "5.15"},
	{"execname-variables", "common_pid.execname in hist variables", "5.15"},
	{"synthetic-64-fields", "more than 32 fields in a synthetic event", "5.15"},
	{"bootconfig-hist", "hist subkeys in a bootconfig (ftrace.event.G.E.hist { … })", "5.15"},
	{"expressions", "*, / and numeric constants in hist expressions", "5.16"},
	{"value-display", "the .percent and .graph modifiers on summed values", "6.1"},
	{"symstr", "the symstr fetch type", "6.2"},
	{"hist-display", "the .percent and .graph modifiers on the count (hitcount.percent, hitcount.graph)", "6.2"},
	{"nohitcount", "the nohitcount hist attribute", "6.2"},
	{"stacktrace-variables", "stack traces in hist variables and synthetic events", "6.3"},
	{"common-stacktrace", "the common_stacktrace field (named stacktrace before)", "6.4"},
	{"retprobe-args", "$arg<N> in kernel return probes", "6.9"},
	{"common-comm", "the COMM (common_comm) hist key", "6.16"},
}

// FeatureByID returns the feature with the given ID; ok is false for an
// unknown ID.
func FeatureByID(id string) (f Feature, ok bool) {
	for _, f := range FeatureTable {
		if f.ID == id {
			return f, true
		}
	}
	return Feature{}, false
}

// CompareVersions orders two dotted versions ("5.10", "2.6.33", or a
// release such as "6.1.0-56-cloud-amd64", read up to its first character
// that is neither a digit nor a dot): negative when a is older.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionParts(v string) []int {
	end := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end >= 0 {
		v = v[:end]
	}
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// ShortRelease is the major.minor of a kernel release, "6.1" for
// "6.1.0-56-cloud-amd64"; "" when it cannot be read.
func ShortRelease(release string) string {
	p := versionParts(release)
	if len(p) < 2 {
		return ""
	}
	return strconv.Itoa(p[0]) + "." + strconv.Itoa(p[1])
}
