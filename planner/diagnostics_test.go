package planner

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

// TestErrorMessages checks the first error of queries the planner refuses.
func TestErrorMessages(t *testing.T) {
	const join = " FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
	tests := []struct {
		name string
		opt  Options
		sql  string
		want string
	}{
		{"join string with number", Options{}, "SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.comm = end.next_pid",
			"cannot join comm (char[16]) with next_pid (pid_t): the kernel matches keys of the same kind and size"},
		{"join static with dynamic string", Options{}, "SELECT start.irq FROM irq_handler_entry AS start JOIN sched_switch AS end ON start.name = end.next_comm",
			"cannot join name (__data_loc char[]) with next_comm (char[16]): the kernel matches keys of the same kind and size"},
		{"join key with a modifier", Options{}, "SELECT start.prio FROM sched_waking AS start JOIN sched_switch AS end ON start.pid.hex = end.next_pid",
			"a join key cannot carry a modifier (.hex)"},
		{"filter string with both quotes", Options{}, `SELECT next_pid FROM sched_switch WHERE next_comm == 'a"b''c'`,
			`a filter string cannot hold both ' and " (the kernel has no escapes)`},
		{"glob on a number", Options{}, `SELECT next_pid FROM sched_switch WHERE next_pid ~ "1*"`,
			"~ matches strings; next_pid is a number field"},
		{"string operator on a string", Options{}, `SELECT next_pid FROM sched_switch WHERE next_comm < "a"`,
			"next_comm is a string field: use ==, != or ~ (glob), not <"},
		{"number compared with a string", Options{}, `SELECT next_pid FROM sched_switch WHERE next_pid == "1"`,
			"next_pid is a number field: compare it with a number"},
		{"timestamp in a filter", Options{}, `SELECT next_pid FROM sched_switch WHERE TIMESTAMP > 5`,
			"common_timestamp is not available to event filters"},
		{"SUM of a string", Options{}, "SELECT next_pid, SUM(next_comm) FROM sched_switch",
			"next_comm is a string; only numbers can be summed"},
		{"COUNT of a field", Options{}, "SELECT next_pid, COUNT(next_pid) FROM sched_switch",
			"only COUNT(*) is supported: the kernel counts events"},
		{"MIN", Options{}, "SELECT next_pid, MIN(prev_prio) FROM sched_switch",
			"MIN is not supported: the kernel tracks a maximum per entry (onmax) and a last value (onchange), but has no onmin"},
		{"no key", Options{}, "SELECT COUNT(*), SUM(prev_prio) FROM sched_switch",
			"a histogram needs at least one key: every item is a count or a sum"},
		{"four keys", Options{}, "SELECT common_pid, call_site, ptr, bytes_req FROM kmalloc",
			"4 keys; the kernel allows at most 3"},
		{"three values", Options{}, "SELECT common_pid, SUM(bytes_req), SUM(bytes_alloc), SUM(gfp_flags) FROM kmalloc",
			"3 summed values; the kernel allows at most 2 besides the count"},
		{"GROUP BY a non-key", Options{}, "SELECT next_pid, COUNT(*) FROM sched_switch GROUP BY next_pid, prev_pid",
			"GROUP BY prev_pid: prev_pid is not selected as a key"},
		{"key missing from GROUP BY", Options{}, "SELECT next_pid, prev_pid FROM sched_switch GROUP BY next_pid",
			"prev_pid is a key but missing from GROUP BY"},
		{"ORDER BY three", Options{}, "SELECT next_pid, prev_pid, next_prio FROM sched_switch ORDER BY next_pid, prev_pid, next_prio",
			"the kernel sorts by at most 2 fields"},
		{"ORDER BY something not selected", Options{}, "SELECT next_pid FROM sched_switch ORDER BY prev_pid",
			"ORDER BY must name a selected item"},
		{"CREATE VIEW on a histogram", Options{}, "CREATE VIEW v AS SELECT next_pid FROM sched_switch",
			"CREATE VIEW names a synthetic event, which only a JOIN creates"},
		{"execname on another field", Options{}, "SELECT next_pid.execname FROM sched_switch",
			`execname only applies to common_pid, not "next_pid"`},
		{"usecs on a field", Options{}, "SELECT next_pid.usecs FROM sched_switch",
			"the usecs modifier only applies to TIMESTAMP (common_timestamp)"},
		{"zero buckets", Options{}, "SELECT next_pid.buckets=0 FROM sched_switch",
			"buckets needs a positive size: buckets=N"},
		{"unknown modifier", Options{}, "SELECT next_pid.oct FROM sched_switch",
			`unknown modifier "oct": use hex, sym, sym-offset, syscall, execname, log2, buckets=N, usecs or stacktrace`},
		{"two modifiers", Options{}, "SELECT CAST(next_pid.hex AS LOG2) FROM sched_switch",
			"next_pid already carries the modifier .hex; the kernel takes one modifier per field"},
		{"GROUP BY of a JOIN on an unselected field", Options{}, "SELECT CAST(start.pid AS HEX) AS p" + join + " GROUP BY p, end.prev_pid",
			"GROUP BY of a JOIN takes selected items: this one is not in the SELECT"},
		{"label of an expression filtered in a join", Options{}, "SELECT end.next_prio + 1 AS e" + join + " WHERE e > 1",
			`"e" is computed by the join and cannot be filtered by either event's trigger`},
		{"-m and -c together", Options{OnMax: "lat", OnChange: "lat"}, "SELECT TIMESTAMP_DELTA AS lat" + join,
			"-m and -c cannot be used together"},
		{"-m on an unknown field", Options{OnMax: "latency"}, "SELECT TIMESTAMP_DELTA AS lat" + join,
			`-m latency: the synthetic event has no field "latency" (its fields: lat)`},
		{"-m on a string", Options{OnMax: "next_comm"}, "SELECT end.next_comm" + join,
			"onmax(next_comm) needs a number; next_comm is a char next_comm[16]"},
		{"-S of an unknown field", Options{OnMax: "lat", Save: []string{"nope"}}, "SELECT TIMESTAMP_DELTA AS lat" + join,
			`unknown field "nope" in event sched/sched_switch (-S)`},
		{"-m on two histograms", Options{OnMax: "lat"}, "SELECT next_pid FROM sched_switch; SELECT prev_pid FROM sched_switch",
			"-m and -c act on the synthetic event of a JOIN, or on the histogram of a single query; the script has 0 JOIN statements"},
		{"-m of an unknown field of a histogram", Options{OnMax: "lat"}, "SELECT next_pid FROM sched_switch",
			`unknown field "lat" in event sched/sched_switch (-m)`},
		{"-T on a histogram", Options{OnChange: "prev_prio", Trace: true}, "SELECT next_pid FROM sched_switch",
			"-T traces the synthetic event of a JOIN when prev_prio changes; a histogram has none"},
		{"UNION ALL of other keys", Options{}, "SELECT next_pid FROM sched_switch UNION ALL SELECT pid FROM sched_waking",
			"UNION ALL shares one histogram: this SELECT gives keys=pid vals=, the first keys=next_pid vals="},
		{"mixed timestamp units", Options{}, "SELECT end.TIMESTAMP - start.TIMESTAMP_USECS AS d" + join,
			"TIMESTAMP (ns) and TIMESTAMP_USECS (µs) cannot be mixed in one expression"},
		{"string in arithmetic", Options{}, "SELECT end.next_prio + end.next_comm AS d" + join,
			"a string cannot be an operand of an expression"},
		{"common_ output name", Options{}, "SELECT start.pid AS common_x" + join,
			`output name "common_x" clashes with the synthetic event's own common fields`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, diags := build(t, embedded(t, "6.1"), tt.sql, tt.opt)
			errs := diags.Errors()
			if len(errs) == 0 {
				t.Fatalf("no error; plan %+v", plan)
			}
			if plan != nil {
				t.Errorf("Build returned a plan with errors")
			}
			if diff := cmp.Diff(tt.want, errs[0].Msg); diff != "" {
				t.Errorf("first error (-want +got):\n%s", diff)
			}
		})
	}
}

// Filters print the way the kernel reads them.
func TestFilters(t *testing.T) {
	tests := []struct{ where, want string }{
		{"0 < prev_pid", "prev_pid > 0"},
		{"5 >= prev_prio", "prev_prio <= 5"},
		{`next_comm !~ "kworker*"`, `!(next_comm ~ "kworker*")`},
		{`next_comm == 'say "hi"'`, `next_comm == 'say "hi"'`},
		{"prev_pid == 1 && (next_pid == 2 || next_pid == 3)", "prev_pid == 1 && (next_pid == 2 || next_pid == 3)"},
		{"prev_pid == 1 || next_pid == 2 && next_pid == 3", "prev_pid == 1 || (next_pid == 2 && next_pid == 3)"},
		{"prev_state == -1", "prev_state == -1"},
		{"prev_state == 0x10", "prev_state == 16"},
		{`COMM ~ "ba*"`, `COMM ~ "ba*"`},
		{"CPU == 0", "CPU == 0"},
		{"common_cpu == 0", "common_cpu == 0"},
		{"prev_pid > 0, next_pid > 0", "prev_pid > 0 && next_pid > 0"},
		{"pid == 1", "next_pid == 1"}, // a label
	}
	for _, tt := range tests {
		sql := "SELECT next_pid AS pid FROM sched_switch WHERE " + tt.where
		plan := buildOK(t, embedded(t, "6.1"), sql, Options{})
		if diff := cmp.Diff(tt.want, plan.Units[0].Start.FilterText()); diff != "" {
			t.Errorf("WHERE %s (-want +got):\n%s", tt.where, diff)
		}
	}
}

// An event name held by two systems needs its system.
func TestAmbiguousEvent(t *testing.T) {
	cat := tracefs.Open(fstest.MapFS{
		"events/one/dup/format": formatFile("dup", "int x 4 1"),
		"events/two/dup/format": formatFile("dup", "int x 4 1"),
	})
	_, diags := build(t, cat, "SELECT x FROM dup", Options{})
	if len(diags) != 1 {
		t.Fatalf("diagnostics %v, want one", dump("SELECT x FROM dup", diags))
	}
	got := []string{diags[0].Msg, diags[0].Hint}
	want := []string{`event "dup" is ambiguous: it exists in systems one, two`, "name the system: one.dup or two.dup"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	plan := buildOK(t, cat, "SELECT x FROM two.dup", Options{})
	if got := plan.Units[0].Start.TriggerFile(); got != "events/two/dup/trigger" {
		t.Errorf("TriggerFile() = %q", got)
	}
}
