package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The kernel's own hist language under --run (issue 23), on the kernels
// that have all of it (6.12 and 7.2): MAX per group against the sizes a
// workload wrote, a UNION ALL's shared histogram against its two events
// counted apart, an onchange save against the value it tracked, the
// count's percentages, and expressions on one event.

// histRunKernels are the golden keys of the kernels the checks run on.
var histRunKernels = map[string]bool{"6.12": true, "7.2": true}

// histRunScript is the guest part: each run collects while dd makes
// writes and reads of sizes nothing else in the guest makes (1231, 1493
// and 1777 bytes, from /dev/zero to /dev/null).
func histRunScript(kname string) string {
	if !histRunKernels[goldenKey(kname)] {
		return ""
	}
	return `# Issue 23 (run_hist_test.go): MAX, UNION ALL, onchange, percent, expressions.
hrun() { # name, then sqlhist's arguments; dd runs once collection started
	# Without -d the run lasts until the dds are done and it is sent
	# SIGINT: a -d 2 raced them (a starved guest could end it first).
	name=$1; shift
	: > /tmp/h.err
	read u0 idle < /proc/uptime
	/work/sqlhist -r --engine kernel -o json "$@" > /tmp/h.out 2> /tmp/h.err &
	P=$!
	i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/h.err; do sleep 0.05; i=$((i + 1)); done
	[ $i -lt 600 ] || echo "@@timeout $name: waiting 30 s for collecting"
	dd if=/dev/zero of=/dev/null bs=1493 count=2 2>/dev/null
	dd if=/dev/zero of=/dev/null bs=1777 count=1 2>/dev/null
	dd if=/dev/zero of=/dev/null bs=1231 count=3 2>/dev/null
	case " $* " in *" -d "*) ;; *) kill -INT $P ;; esac
	wait $P; echo "@@h-$name-exit $?"
	read u1 idle < /proc/uptime; echo "@@h-$name-took $u0 $u1"
	echo "@@h-$name"; cat /tmp/h.out
	echo "@@h-$name-stderr"; cat /tmp/h.err
}
read up idle < /proc/uptime; echo "@@h-start $up"
hrun max 'SELECT CAST(common_pid AS EXECNAME) AS task, MAX(count) AS biggest, COUNT(*) AS n FROM sys_enter_write WHERE count == 1493 || count == 1777 || count == 1231'
echo 'SELECT fd, COUNT(*) AS n FROM sys_enter_read WHERE count == 1231 UNION ALL SELECT fd, COUNT(*) AS n FROM sys_enter_write WHERE count == 1231;' > /tmp/union.sql
echo 'SELECT fd, COUNT(*) AS n FROM sys_enter_read WHERE count == 1231;' >> /tmp/union.sql
echo 'SELECT fd, COUNT(*) AS n FROM sys_enter_write WHERE count == 1231' >> /tmp/union.sql
hrun union -f /tmp/union.sql
hrun onchange -c count -S fd,count 'SELECT common_pid FROM sys_enter_write WHERE count == 1493 || count == 1777 || count == 1231'
hrun percent -d 1 'SELECT CAST(id AS SYSCALL) AS call, CAST(COUNT(*) AS PERCENT) AS share FROM sys_enter'
echo 'SELECT common_timestamp/1000000000 AS sec, COUNT(*) AS n FROM sched_switch;' > /tmp/expr.sql
echo 'SELECT common_pid, SUM(16-8-4-2) AS two, COUNT(*) AS n FROM sys_enter' >> /tmp/expr.sql
hrun expr -d 2 -f /tmp/expr.sql
# Issue 33: a misspelled kprobe function is refused before anything is
# written, from the kernel's own available_filter_functions.
/work/sqlhist -r --engine kernel -d 1 'SELECT common_pid, COUNT(*) FROM kprobe(vfs_raed)' > /tmp/h.out 2> /tmp/h.err; echo "@@h-typo-exit $?"
echo "@@h-typo-stderr"; cat /tmp/h.err
read up idle < /proc/uptime; echo "@@h-end $up"
`
}

// checkHistRun checks what histRunScript printed.
func checkHistRun(t *testing.T, kname, out string) {
	if !histRunKernels[goldenKey(kname)] {
		return
	}
	sec := sections(out)
	for _, n := range []string{"max", "union", "onchange", "percent", "expr"} {
		if !strings.Contains(out, "@@h-"+n+"-exit 0\n") {
			t.Errorf("%s: sqlhist -r (%s) failed:\n%s", kname, n, sec["h-"+n+"-stderr"])
		}
	}
	var start, end float64
	if m := regexp.MustCompile(`@@h-start (\S+)\n(?s:.*)@@h-end (\S+)\n`).FindStringSubmatch(out); m != nil {
		start, _ = strconv.ParseFloat(m[1], 64)
		end, _ = strconv.ParseFloat(m[2], 64)
	}
	t.Logf("%s: issue 23's runs took %.1f s of guest time", kname, end-start)
	if !strings.Contains(out, "@@h-typo-exit 1\n") || !strings.Contains(sec["h-typo-stderr"], `unknown kernel function "vfs_raed": not in available_filter_functions of tracefs `) ||
		!strings.Contains(sec["h-typo-stderr"], "did you mean vfs_read?") {
		t.Errorf("%s: -r with kprobe(vfs_raed): want exit 1 and the did-you-mean from the kernel's available_filter_functions:\n%s", kname, sec["h-typo-stderr"])
	}
	for _, p := range histRunProblems(sec, out) {
		t.Errorf("%s: %s", kname, p)
	}
}

// histRunProblems checks the JSON of each run; out is the whole output
// (the runs' guest times).
func histRunProblems(sec map[string]string, out string) []string {
	var problems []string
	parse := func(name string, n int) []runResult {
		var r runJSON
		if err := json.Unmarshal([]byte(sec["h-"+name]), &r); err != nil || len(r.Results) != n {
			problems = append(problems, fmt.Sprintf("%s: not %d JSON results (%v):\n%s", name, n, err, sec["h-"+name]))
			return nil
		}
		return r.Results
	}
	num := func(row map[string]any, col string) float64 { v, _ := row[col].(float64); return v }
	// MAX: each dd's largest write, and 1777 the largest of all; the
	// counts are the six writes.
	if r := parse("max", 1); r != nil {
		var top float64
		for _, row := range r[0].Rows {
			b := num(row, "biggest")
			if b != 1493 && b != 1777 && b != 1231 {
				problems = append(problems, fmt.Sprintf("max: a row's MAX is %v, not one of the sizes written: %v", b, row))
			}
			top = math.Max(top, b)
		}
		if top != 1777 || r[0].sum("n") != 6 {
			problems = append(problems, fmt.Sprintf("max: the largest MAX is %v (want 1777), the rows count %d writes (want 6):\n%s", top, r[0].sum("n"), sec["h-max"]))
		}
	}
	// UNION ALL: the shared histogram counts what the two events count
	// apart, 3 reads of fd 0 and 3 writes to fd 1.
	if r := parse("union", 3); r != nil {
		u, rd, wr := r[0].Totals.Hits, r[1].Totals.Hits, r[2].Totals.Hits
		if u != rd+wr || rd != 3 || wr != 3 || r[0].sum("n") != u {
			problems = append(problems, fmt.Sprintf("union: the shared histogram counts %d (rows %d), the reads %d and the writes %d apart:\n%s", u, r[0].sum("n"), rd, wr, sec["h-union"]))
		}
	}
	// onchange: the saved count is the last value tracked, one of the
	// sizes written.
	if r := parse("onchange", 1); r != nil {
		for _, row := range r[0].Rows {
			last, saved := num(row, "last(count)"), num(row, "saved(count)")
			if last != saved || last != 1493 && last != 1777 && last != 1231 {
				problems = append(problems, fmt.Sprintf("onchange: row %v: the last change and the saved count differ, or are not a size written", row))
			}
		}
		if len(r[0].Rows) == 0 {
			problems = append(problems, "onchange: no rows:\n"+sec["h-onchange"])
		}
	}
	// The count's percentages add up to 100, each rounded down to 0.01.
	if r := parse("percent", 1); r != nil {
		var sum float64
		for _, row := range r[0].Rows {
			sum += num(row, "share")
		}
		if n := float64(len(r[0].Rows)); n == 0 || sum > 100.005 || sum < 100-0.01*n-0.005 {
			problems = append(problems, fmt.Sprintf("percent: %v rows' shares add up to %.2f:\n%s", n, sum, sec["h-percent"]))
		}
	}
	// Expressions: a second's key holds that second's switches (as many
	// keys as seconds the run spans), and SUM(16-8-4-2) is 2 per event.
	if r := parse("expr", 2); r != nil {
		// The seconds the run can span: its whole time in the guest
		// (setup and teardown included, longer in a starved guest),
		// and one more for where the seconds' edges fall.
		most := 4
		if m := regexp.MustCompile(`@@h-expr-took (\S+) (\S+)\n`).FindStringSubmatch(out); m != nil {
			u0, _ := strconv.ParseFloat(m[1], 64)
			u1, _ := strconv.ParseFloat(m[2], 64)
			most = max(most, int(math.Ceil(u1-u0))+1)
		}
		if n := len(r[0].Rows); n < 1 || n > most || r[0].sum("n") != r[0].Totals.Hits {
			problems = append(problems, fmt.Sprintf("expr: %d seconds keyed (at most %d), rows count %d of %d hits:\n%s", n, most, r[0].sum("n"), r[0].Totals.Hits, sec["h-expr"]))
		}
		for _, row := range r[1].Rows {
			if num(row, "two") != 2*num(row, "n") {
				problems = append(problems, fmt.Sprintf("expr: SUM(16-8-4-2) is %v for %v events (want 2 each, left to right)", num(row, "two"), num(row, "n")))
				break
			}
		}
	}
	return problems
}
