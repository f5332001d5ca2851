package planner

import (
	"fmt"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
)

// Message constructors: every diagnostic text the planner produces about
// names lives here, in one voice (lower case, no period, %q names).

// errUnknownEvent reports an event the catalog lacks; elsewhere lists
// the other architectures whose kernels have it (then it is an event of
// theirs, not a typo).
func errUnknownEvent(d *source.Diags, n *compiler.Name, candidates []string, arch string, elsewhere []string) {
	x := d.Add(n.Pos, n.End, "unknown event %q", n.String())
	if len(elsewhere) > 0 {
		x.Msg = fmt.Sprintf("event %q does not exist on %s: it is an event of %s", n.String(), arch, strings.Join(elsewhere, " and "))
		x.Hint = "--arch names the target's architecture; the catalog is of " + arch
		return
	}
	if s := nearest(n.String(), candidates); s != "" {
		x.Msg += fmt.Sprintf("; did you mean %q?", s)
	}
}

func errAmbiguousEvent(d *source.Diags, n *compiler.Name, systems []string) {
	q := make([]string, len(systems))
	for i, s := range systems {
		q[i] = s + "." + n.String()
	}
	x := d.Add(n.Pos, n.End, "event %q is ambiguous: it exists in systems %s", n.String(), strings.Join(systems, ", "))
	x.Hint = "name the system: " + strings.Join(q, " or ")
}

func errUnknownField(d *source.Diags, pos, end source.Pos, field, event string, candidates []string) {
	x := d.Add(pos, end, "unknown field %q in event %s", field, event)
	if s := nearest(field, candidates); s != "" {
		x.Msg += fmt.Sprintf("; did you mean %q?", s)
	}
}

// Suggest returns the candidate closest to name when it is close enough to
// be a plausible typo, else "". Candidates may be "system/event" names: a
// name without a system is then compared with their event part, and the
// suggestion is that part.
func Suggest(name string, candidates []string) string { return nearest(name, candidates) }

// nearest returns the candidate closest to s by edit distance, if it is
// close enough to be a plausible typo.
func nearest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := max(1, len(s)/3) // the largest distance worth suggesting
	if len(s) > 64 {
		return "" // no event or field name is that long
	}
	ls := strings.ToLower(s)
	for _, c := range candidates {
		// Compare bare event names too: "sched_wakeing" vs "sched/sched_waking".
		cmp := strings.ToLower(c)
		if i := strings.LastIndexAny(cmp, "/."); i >= 0 && !strings.ContainsAny(ls, "/.") {
			cmp = cmp[i+1:]
		}
		if diff := len(ls) - len(cmp); diff > limit || -diff > limit {
			continue // the lengths alone put it too far away
		}
		// Of equally near names, the first in sorted order.
		if d := EditDistance(ls, cmp); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	// Differing only in case (distance 0) is worth saying too.
	if bestD > limit {
		return ""
	}
	if i := strings.LastIndexAny(best, "/"); i >= 0 && !strings.ContainsAny(s, "/.") {
		return best[i+1:]
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b, counting a swap
// of two neighbours as one edit (vfs_raed is one from vfs_read): how far
// a misspelt name is from a known one, for the suggestions of
// diagnostics.
func EditDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
