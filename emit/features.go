package emit

import (
	"sort"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Needs returns the IDs of the kernel features (tracefs.FeatureTable) the
// command needs, in the table's order. It reads a trigger's values (its
// Hist, or its text read into one) and the text sqlhist wrote for
// probes and synthetic events, so it knows every construct the planner
// emits.
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
		triggerNeeds(c, set)
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

// triggerNeeds records what a hist trigger needs. A command made from a
// plan carries its trigger as values (c.Hist); one read back from a JSON
// plan only as text, which is read into values first.
func triggerNeeds(c Command, set map[string]bool) {
	h := c.Hist
	if h == nil {
		var err error
		if h, err = planner.ParseHist(c.Line); err != nil {
			return
		}
	}
	set["hist-triggers"] = true
	if h.Filter != nil {
		set["event-filters"] = true
	}
	if len(h.Keys) > 2 {
		set["hist-keys-3"] = true
	}
	if h.NoHitcount {
		set["nohitcount"] = true
	}
	// Every expression of the trigger before its filter.
	var all []*planner.Expr
	all = append(append(all, h.Keys...), h.Vals...)
	for _, v := range h.Vars {
		all = append(all, v.Expr)
	}
	for _, a := range h.Actions {
		all = append(all, a.Params...)
		switch a.Handler {
		case planner.OnMatch:
			set["onmatch"] = true
			set["synthetic-events"] = true
		case planner.OnMax:
			set["onmax"] = true
		case planner.OnChange:
			set["onchange"] = true
		}
		if a.Handler != planner.OnMatch {
			set["hist-variables"] = true // the $variable tracked
		}
		switch {
		case a.Kind == planner.ActTrace && !a.OldForm:
			set["trace-action"] = true
		case a.Kind == planner.ActSnapshot:
			set["snapshot-action"] = true
		}
	}
	if len(h.Vars) > 0 {
		set["hist-variables"] = true
	}
	for _, v := range h.Vars {
		if v.Expr.Mod == "execname" {
			set["execname-variables"] = true
		}
		v.Expr.Walk(func(x *planner.Expr) {
			if x.Kind == planner.ExprStack || x.Mod == "stacktrace" || strings.Contains(x.Name, "stacktrace") {
				set["stacktrace-variables"] = true
			}
		})
	}
	for _, x := range all {
		// + and - of fields are hist variables' (4.17), * / and
		// constants 5.16's expressions.
		if x.Kind == planner.ExprBinary {
			set["hist-variables"] = true
		}
		x.Walk(func(o *planner.Expr) {
			if o.Kind == planner.ExprConst || o.Kind == planner.ExprBinary && (o.Op == '*' || o.Op == '/') {
				set["expressions"] = true
			}
			switch o.Mod {
			case "execname", "syscall", "log2", "sym", "sym-offset", "hex":
				set["hist-modifiers"] = true
			case "buckets":
				set["buckets"] = true
			case "percent", "graph":
				if o.Kind == planner.ExprHitcount {
					set["hist-display"] = true
				} else {
					set["value-display"] = true
				}
			}
			switch {
			case o.Kind == planner.ExprTimestamp || o.Kind == planner.ExprVar:
				set["hist-variables"] = true
			case o.Kind == planner.ExprCPU && o.Name == "common_cpu":
				set["common-cpu"] = true
			case o.Kind == planner.ExprStack && o.Name == "common_stacktrace":
				set["common-stacktrace"] = true
			case o.Name == "common_comm" || o.Name == "COMM":
				set["common-comm"] = true
			}
		})
	}
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
