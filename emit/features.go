package emit

import (
	"sort"
	"strings"

	"github.com/sqlhist/sqlhist/tracefs"
)

// Needs returns the IDs of the kernel features (tracefs.FeatureTable) the
// command needs, in the table's order. It reads the text sqlhist wrote, so
// it knows every construct the planner emits.
func Needs(c Command) []string {
	set := map[string]bool{}
	switch c.Kind {
	case KindDir:
		set["instances"] = true
	case KindSynth:
		synthNeeds(c, set)
	case KindProbe:
		probeNeeds(c.Line, set)
	case KindTrigger:
		triggerNeeds(c.Line, set)
	}
	if strings.HasPrefix(c.File, "instances/") {
		set["instances"] = true
	}
	var out []string
	for _, f := range tracefs.FeatureTable {
		if set[f.ID] {
			out = append(out, f.ID)
		}
	}
	return out
}

func synthNeeds(c Command, set map[string]bool) {
	set["synthetic-events"] = true
	def := c.Line
	if c.File == "dynamic_events" {
		set["dynamic-events"] = true
		def = strings.TrimPrefix(def, "s:")
	}
	_, fields, _ := strings.Cut(def, " ")
	n := 0
	for _, f := range strings.Split(fields, ";") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n++
		switch {
		case strings.HasPrefix(f, "unsigned long ") && strings.HasSuffix(f, "[]"):
			set["stacktrace-variables"] = true
		case strings.HasSuffix(f, "[]"):
			set["dynamic-strings"] = true
		}
	}
	if n > 32 {
		set["synthetic-64-fields"] = true
	}
}

func probeNeeds(line string, set map[string]bool) {
	head, rest, _ := strings.Cut(line, " ")
	target, args, _ := strings.Cut(rest, " ")
	switch {
	case strings.HasPrefix(head, "e:"):
		set["eprobes"] = true
	case strings.Contains(target, "/") && strings.Contains(target, ":"):
		set["uprobe-events"] = true
	default:
		set["kprobe-events"] = true
	}
	if strings.Contains(target, "%return") {
		set["return-suffix"] = true
	}
	ret := strings.HasPrefix(head, "r") || strings.Contains(target, "%return")
	if strings.Contains(args, "$arg") {
		set["probe-args"] = true
		if ret {
			set["retprobe-args"] = true
		}
	}
	if strings.Contains(args, ":ustring") || strings.Contains(args, "+u") {
		set["ustring"] = true
	}
	if strings.Contains(args, ":symstr") {
		set["symstr"] = true
	}
}

func triggerNeeds(line string, set map[string]bool) {
	if !strings.HasPrefix(line, "hist:") {
		return
	}
	set["hist-triggers"] = true
	head, filter, hasFilter := strings.Cut(line, " if ")
	if hasFilter && strings.TrimSpace(filter) != "" {
		set["event-filters"] = true
	}
	has := func(s string) bool { return strings.Contains(head, s) }
	for _, m := range []string{".execname", ".syscall", ".log2", ".sym", ".hex"} {
		if has(m) {
			set["hist-modifiers"] = true
		}
	}
	for _, part := range strings.Split(strings.TrimPrefix(head, "hist:"), ":") {
		name, val, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			if part == "nohitcount" || part == "NOHC" {
				set["nohitcount"] = true
			}
			handlerNeeds(part, set)
		case name == "keys":
			if len(strings.Split(val, ",")) > 2 {
				set["hist-keys-3"] = true
			}
			exprNeeds(val, set)
		case name == "vals" || name == "values":
			exprNeeds(val, set)
		case name == "sort" || name == "size" || name == "name":
		default:
			// name=expr: one or more variables (comma-separated).
			set["hist-variables"] = true
			for _, v := range strings.Split(part, ",") {
				_, expr, _ := strings.Cut(v, "=")
				if strings.ContainsAny(expr, "*/") || hasConstant(expr) {
					set["expressions"] = true
				}
				if strings.HasSuffix(expr, ".execname") {
					set["execname-variables"] = true
				}
				if strings.Contains(expr, "stacktrace") {
					set["stacktrace-variables"] = true
				}
			}
		}
	}
	if has("common_timestamp") || has("$") {
		set["hist-variables"] = true
	}
	if has("common_cpu") {
		set["common-cpu"] = true
	}
	if has(".buckets") {
		set["buckets"] = true
	}
	if has("hitcount.percent") || has("hitcount.graph") {
		set["hist-display"] = true
	}
	if strings.Count(head, ".percent") > strings.Count(head, "hitcount.percent") || strings.Count(head, ".graph") > strings.Count(head, "hitcount.graph") {
		set["value-display"] = true
	}
	if has("common_stacktrace") {
		set["common-stacktrace"] = true
	}
	if has("common_comm") || hasWord(head, "COMM") {
		set["common-comm"] = true
	}
}

// exprNeeds records what the keys or values of a trigger need when they
// are expressions: + and - of fields are hist variables' (4.17), * / and
// constants 5.16's expressions.
func exprNeeds(list string, set map[string]bool) {
	for _, f := range strings.Split(list, ",") {
		f = strings.ReplaceAll(f, ".sym-offset", "")
		if strings.ContainsAny(f, "+-*/") {
			set["hist-variables"] = true
		}
		if strings.ContainsAny(f, "*/") || hasConstant(f) {
			set["expressions"] = true
		}
	}
}

func handlerNeeds(part string, set map[string]bool) {
	switch {
	case strings.HasPrefix(part, "onmatch("):
		set["onmatch"] = true
		set["synthetic-events"] = true
	case strings.HasPrefix(part, "onmax("):
		set["onmax"] = true
	case strings.HasPrefix(part, "onchange("):
		set["onchange"] = true
	}
	if strings.Contains(part, ").trace(") {
		set["trace-action"] = true
	}
	if strings.Contains(part, ").snapshot(") {
		set["snapshot-action"] = true
	}
}

// hasConstant reports whether a hist expression holds a numeric operand
// (a word starting with a digit).
func hasConstant(expr string) bool {
	start := true
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if start && c >= '0' && c <= '9' {
			return true
		}
		start = strings.IndexByte("+-*/(", c) >= 0
	}
	return false
}

// hasWord reports whether w occurs in s between non-identifier characters.
func hasWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(w)
		if (a == 0 || !identByte(s[a-1])) && (b == len(s) || !identByte(s[b])) {
			return true
		}
		i = b
	}
}

func identByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MinKernel is the newest first release among the features cmds need: the
// oldest mainline kernel that can take every write.
func MinKernel(cmds []Command) string {
	min := ""
	for _, c := range cmds {
		for _, id := range Needs(c) {
			f, _ := tracefs.FeatureByID(id)
			if min == "" || tracefs.CompareVersions(f.Since, min) > 0 {
				min = f.Since
			}
		}
	}
	return min
}

// sortedIDs returns the union of the commands' needs in table order.
func sortedIDs(cmds []Command) []string {
	set := map[string]bool{}
	for _, c := range cmds {
		for _, id := range Needs(c) {
			set[id] = true
		}
	}
	order := map[string]int{}
	for i, f := range tracefs.FeatureTable {
		order[f.ID] = i
	}
	var out []string
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i]] < order[out[j]] })
	return out
}
