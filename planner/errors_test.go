package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/source"
)

// TestErrorPositions checks that a diagnostic covers exactly the offending
// text.
func TestErrorPositions(t *testing.T) {
	const join = " FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
	const divZero = "division by zero: this divisor is a constant that comes out 0 (in the kernel's integer arithmetic), and the kernel refuses the trigger (\"Division by zero\")"
	tests := []struct {
		name   string
		kernel string
		sql    string
		after  string // where to start looking for at ("": the start)
		at     string // the text the diagnostic must cover
		msg    string
	}{
		{"unknown field", "6.1", "SELECT prev_pidd FROM sched_switch", "", "prev_pidd",
			`unknown field "prev_pidd" in event sched/sched_switch; did you mean "prev_pid"?`},
		{"unknown qualified field", "6.1", "SELECT start.pidd, end.next_pid" + join, "", "pidd",
			`unknown field "pidd" in event sched/sched_waking; did you mean "pid"?`},
		{"unknown event", "6.1", "SELECT pid FROM sched_wakeing", "", "sched_wakeing",
			`unknown event "sched_wakeing"; did you mean "sched_waking"?`},
		{"unknown event far from any", "6.1", "SELECT pid FROM zzzzzzzzzz", "", "zzzzzzzzzz",
			`unknown event "zzzzzzzzzz"`},
		{"ON on one side", "6.1", "SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = start.prio",
			"", "start.pid = start.prio", `ON must pair a field of "start" (sched/sched_waking) with a field of "end" (sched/sched_switch); both are from "start" (sched/sched_waking)`},
		{"OR across events", "6.1", "SELECT start.pid" + join + " WHERE start.prio < 1 OR end.prev_pid > 0", "", "OR",
			`condition mixes fields of "start" (sched/sched_waking) and "end" (sched/sched_switch)`},
		{"field compared with field", "6.1", "SELECT start.pid" + join + " WHERE start.prio < end.prev_prio", "", "start.prio < end.prev_prio",
			"the kernel compares a field with a constant, not with another field"},
		{"unknown CAST", "6.1", "SELECT CAST(prev_pid AS FOO) FROM sched_switch", "", "FOO",
			`unknown CAST type "FOO": use HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME, LOG2, BUCKETS=N or _COUNTER_`},
		{"arithmetic in a histogram that needs parentheses", "6.1", "SELECT prev_pid - (next_pid - 1) AS d FROM sched_switch", "(next_pid ", "-",
			"the kernel reads expressions without parentheses, left to right with * and / first: this grouping cannot be written for it"},
		{"division in a histogram on 5.10", "5.10", "SELECT common_timestamp / 1000 AS ms FROM sched_switch", "", "/",
			"/ in an expression needs Linux 5.16 (*, / and numeric constants in hist expressions); this target is Linux 5.10 (5.10.262-sqlhist)"},
		{"MAX of a signed field", "6.1", "SELECT next_pid, MAX(prev_prio) FROM sched_switch", "", "MAX(prev_prio)",
			"prev_prio is signed (int), and the kernel's onmax() compares values as unsigned 64-bit numbers: a negative value would count as the largest"},
		{"percent on 5.10", "5.10", "SELECT next_pid, CAST(COUNT(*) AS PERCENT) FROM sched_switch", "", "CAST(COUNT(*) AS PERCENT)",
			"CAST(COUNT(*) AS PERCENT) (hitcount.percent) needs Linux 6.2 (the .percent and .graph modifiers on the count (hitcount.percent, hitcount.graph)); this target is Linux 5.10 (5.10.262-sqlhist)"},
		{"stack trace on 6.1", "6.1", "SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS lat FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid",
			"AS ", "stack", "passing a stack trace to a synthetic event needs Linux 6.3 (stack traces in hist variables and synthetic events); this target is Linux 6.1 (6.1.0-57-cloud-amd64)"},
		{"duplicate output name", "6.1", "SELECT start.pid, end.next_pid AS pid" + join, "AS ", "pid",
			`duplicate output name "pid"`},
		{"string compared with a number", "6.1", "SELECT next_pid FROM sched_switch WHERE prev_pid == 0 AND next_comm == 5", "next_comm", "5",
			"next_comm is a string field: compare it with a quoted string"},
		{"negative number for an unsigned field", "6.1", "SELECT call_site FROM kmalloc WHERE bytes_req > -1", "", "-1",
			"-1 does not fit the unsigned field bytes_req"},
		{"ambiguous bare field", "6.1", "SELECT prio FROM sched_waking AS s JOIN sched_wakeup AS w ON s.pid = w.pid", "", "prio",
			`field "prio" is ambiguous: both events have it`},
		{"unnamed expression", "6.1", "SELECT start.prio + end.next_prio" + join, "", "start.prio + end.next_prio",
			"this expression needs a name"},
		{"too many operators", "6.1", "SELECT end.next_prio + end.prev_prio + end.next_pid + end.prev_pid + 1 AS many" + join,
			"", "end.next_prio + end.prev_prio + end.next_pid + end.prev_pid + 1",
			"this expression needs 4 operators; the kernel evaluates at most 3 in one expression"},
		{"grouping the kernel cannot write", "6.1", "SELECT (end.next_prio - start.prio) / 2 AS d" + join,
			"", "(end.next_prio - start.prio) / 2",
			"the kernel cannot compute this grouping: its expressions have no parentheses, and a variable that reads another variable of the same trigger is not computed correctly"},
		{"division by zero", "6.1", "SELECT end.next_prio + 4 / 0 AS d" + join, "/ ", "0", divZero},
		{"division by a constant that folds to zero", "6.1", "SELECT end.next_prio / (2-2) AS d" + join, "/ ", "(2-2)", divZero},
		{"division by an integer quotient of zero", "6.1", "SELECT end.next_prio * 3 / (3/4) AS d" + join, "/ ", "(3/4)", divZero},
		{"division by zero in a constant operand", "6.1", "SELECT end.next_prio + (1/0 + 2) AS d" + join, "/", "0", divZero},
		{"division by zero offloaded to the start event", "6.1", "SELECT start.prio / (1-1) AS d" + join, "/ ", "(1-1)", divZero},
		{"self join without aliases", "6.1", "SELECT prev_pid FROM sched_switch JOIN sched_switch ON prev_pid = next_pid", "JOIN ", "sched_switch",
			"a JOIN of sched/sched_switch with itself needs an alias on both sides"},
		{"modifier on a string", "6.1", "SELECT next_comm.hex FROM sched_switch", "", "hex",
			"next_comm is a string field; hex applies to numbers only"},
		{"string in a synthetic event", "6.1", "SELECT 'x' AS s" + join, "", "'x'",
			"a string constant cannot be a synthetic event field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := strings.Index(tt.sql, tt.after)
			i := strings.Index(tt.sql[max(j, 0):], tt.at)
			if j < 0 || i < 0 {
				t.Fatalf("%q after %q is not in the query", tt.at, tt.after)
			}
			i += j
			_, diags := build(t, embedded(t, tt.kernel), tt.sql, Options{})
			for _, d := range diags {
				if d.Msg != tt.msg {
					continue
				}
				got := [2]source.Pos{d.Pos, d.End}
				want := [2]source.Pos{source.PosOf(i), source.PosOf(i + len(tt.at))}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("position of %q: got %q (-want +got):\n%s", tt.msg, span(tt.sql, d), diff)
				}
				return
			}
			t.Errorf("no diagnostic %q; got:\n%s", tt.msg, dump(tt.sql, diags))
		})
	}
}

func span(src string, d *source.Diag) string {
	if !d.Pos.IsValid() || !d.End.IsValid() || d.End.Offset() > len(src) || d.Pos > d.End {
		return "<invalid>"
	}
	return src[d.Pos.Offset():d.End.Offset()]
}

func dump(src string, diags source.Diags) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString("  " + d.Msg + " at " + span(src, d) + "\n")
	}
	return b.String()
}

// Several errors are reported at once, sorted by position.
func TestAllErrorsReported(t *testing.T) {
	sql := "SELECT start.pidd, end.next_pidd, start.prio + end.next_prio FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
	_, diags := build(t, embedded(t, "6.1"), sql, Options{})
	var got []string
	for _, d := range diags {
		got = append(got, span(sql, d)+": "+d.Msg)
	}
	want := []string{
		`pidd: unknown field "pidd" in event sched/sched_waking; did you mean "pid"?`,
		`next_pidd: unknown field "next_pidd" in event sched/sched_switch; did you mean "next_pid"?`,
		"start.prio + end.next_prio: this expression needs a name",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"prev_pidd", "prev_pid", 1},
		{"sched_wakeing", "sched_waking", 1},
		{"abc", "abc", 0},
		{"abc", "cba", 2},
		{"vfs_raed", "vfs_read", 1},
		{"pdi", "pid", 1},
		{"ab", "ba", 1},
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := EditDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	events := []string{"sched/sched_waking", "sched/sched_switch", "irq/irq_handler_entry"}
	tests := []struct {
		s          string
		candidates []string
		want       string
	}{
		{"prev_pidd", []string{"next_pid", "prev_pid", "prev_comm"}, "prev_pid"},
		{"PREV_PID", []string{"prev_pid"}, "prev_pid"}, // case only
		{"sched_wakeing", events, "sched_waking"},      // bare name against system/event
		{"sched/sched_wakng", events, "sched/sched_waking"},
		{"zzzzzzzz", events, ""},
		{"ab", []string{"ac", "aa"}, "aa"}, // ties go to the first in sorted order
		{"abcdef", []string{"abcxyz"}, ""}, // 3 edits is too far for 6 letters
		{"abcdef", []string{"abcdxy"}, "abcdxy"},
		{"x", nil, ""},
	}
	for _, tt := range tests {
		if got := nearest(tt.s, tt.candidates); got != tt.want {
			t.Errorf("nearest(%q, %q) = %q, want %q", tt.s, tt.candidates, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"sched/sched_switch", "sched/sched_waking", "irq/irq_handler_entry"}
	tests := []struct{ in, want string }{
		{"sched_swich", "sched_switch"},
		{"sched/sched_wakin", "sched/sched_waking"},
		{"SCHED_SWITCH", "sched_switch"},
		{"block_rq_issue", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.in, names); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
