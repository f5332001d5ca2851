package e2e

// No refusal without the kernel's word (issue 36): the audit phase. For
// each version gate of sqlhist (tracefs.FeatureTable, the planner's and
// emit's refusals worded "needs Linux X" or "since Linux X") and each
// refusal that states a rule of the kernel, the guest writes the raw
// tracefs lines the rule is about, in a scratch instance, records the
// kernel's verdict (accepted, or refused with its error_log line),
// removes them, and runs sqlhist on SQL that needs the same thing. The
// phase fails where they disagree: sqlhist refusing what the kernel
// accepts, or printing what it refuses. A write that corrupts a kernel
// (an expression over 255 bytes, which only 6.12 refuses) is made only
// where the kernel is known to refuse it.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// auditStep is one raw write: line appended to file, a path in the scratch
// instance (events/kmem/kmalloc/trigger) or, for the files only the top
// level has (auditTopFiles), in the tracefs root.
type auditStep struct{ file, line string }

// auditTopFiles are the files a step writes at the tracefs root.
var auditTopFiles = map[string]bool{"dynamic_events": true, "synthetic_events": true, "kprobe_events": true}

// auditShows is what the kernel must show after its steps for it to count
// as having the feature: with some work done, a line of file matching re
// (a hist file that shows a value; a synthetic event's trace line whose
// fields are right).
type auditShows struct{ file, re string }

// auditGate is one rule of sqlhist checked against a kernel.
type auditGate struct {
	id string
	// rule is sqlhist's rule as its code states it, and where.
	rule string
	// steps are the raw writes, in order; the kernel accepts the gate when
	// it accepts every one (and shows, if given). A step after a refused
	// one is not written. Each accepted step is undone after, in reverse.
	steps []auditStep
	shows *auditShows
	// args and sql are sqlhist's command line (run in the guest against
	// its tracefs, printing only).
	args []string
	sql  string
	// form is text sqlhist's script holds when it writes what the steps
	// write ("" for a rule sqlhist only refuses): a script without it
	// is another form (common_cpu's old name cpu, say).
	form string
	// refusal is text of sqlhist's refusal for this rule ("" for any): a
	// refusal for another reason is noted but is no verdict on this rule.
	refusal string
	// only, when set, is the one release the steps are written in
	// ("6.12"): elsewhere they would do harm (write past a kernel buffer),
	// and only sqlhist's verdict is recorded.
	only string
}

func st(file, line string) auditStep { return auditStep{file, line} }

// auditLinks are links to the guest's sqlhist that the script makes for
// the uprobes of the probe name gates: a uprobe on FILE at an offset is
// named FILE_0xOFFSET, 63 and 64 characters here.
var auditLinks = []string{"/tmp/" + strings.Repeat("l", 56), "/tmp/" + strings.Repeat("l", 57)}

// auditJoin is the wakeup JOIN most synthetic-event gates build on.
const auditJoin = " FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"

// auditFields returns n SELECT items "expr AS f0, …" and n synthetic
// field declarations "typ f0; …".
func auditFields(n int, expr, typ string) (items, decls string) {
	var it, de []string
	for i := 0; i < n; i++ {
		it = append(it, fmt.Sprintf("%s AS f%d", expr, i))
		de = append(de, fmt.Sprintf("%s f%d", typ, i))
	}
	return strings.Join(it, ", "), strings.Join(de, "; ")
}

// auditVars returns n hist variable definitions "aud_v0=field:…", one
// assignment each: in one assignment ("a=x,b=y") the kernel reads 16
// and drops the rest without a word (parse_var_defs).
func auditVars(n int, field string) string {
	var v []string
	for i := 0; i < n; i++ {
		v = append(v, fmt.Sprintf("aud_v%d=%s", i, field))
	}
	return strings.Join(v, ":")
}

// auditJoinSteps are the writes of the wakeup JOIN's latency into the
// synthetic event name (one u64 field, field), as sqlhist lowers it:
// the event, the start's timestamp, the end's latency and trace().
func auditJoinSteps(name, field string) []auditStep {
	return []auditStep{st("dynamic_events", "s:"+name+" u64 "+field),
		st("events/sched/sched_waking/trigger", "hist:keys=pid:"+name+"_ts_us=common_timestamp.usecs"),
		st("events/sched/sched_switch/trigger", "hist:keys=next_pid:"+name+"_lat=common_timestamp.usecs-$"+name+"_ts_us:onmatch(sched.sched_waking).trace("+name+",$"+name+"_lat)")}
}

// auditGates is the audit's table: every version gate and kernel rule of
// sqlhist that a write can show, with the raw lines and the SQL.
var auditGates = func() []auditGate {
	const (
		kmalloc = "events/kmem/kmalloc/trigger"
		waking  = "events/sched/sched_waking/trigger"
		switch_ = "events/sched/sched_switch/trigger"
		dyn     = "dynamic_events"
	)
	wide, wideDecl := auditFields(33, "end.next_pid", "u64")
	many, _ := auditFields(17, "start.prio", "int")
	long := strings.Repeat("a", 256)
	name64 := "aud_" + strings.Repeat("x", 60)
	name256 := "aud_" + strings.Repeat("x", 252)
	name230 := "aud_" + strings.Repeat("x", 226)
	field64 := "f" + strings.Repeat("x", 63)
	return []auditGate{
		// Version gates (tracefs.FeatureTable and Features).
		{id: "hist-triggers", rule: "FeatureTable hist-triggers (4.7); planner.go: no hist triggers, no query",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid")},
			sql:   "SELECT common_pid, COUNT(*) FROM kmalloc", form: "hist:keys=common_pid"},
		{id: "hist-modifiers", rule: "FeatureTable hist-modifiers (4.7), hist-keys-3 (4.15)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid.execname,bytes_req.log2,call_site.sym")},
			sql:   "SELECT CAST(common_pid AS EXECNAME), CAST(bytes_req AS LOG2), CAST(call_site AS SYM), COUNT(*) FROM kmalloc", form: "bytes_req.log2,call_site.sym"},
		{id: "syscall-modifier", rule: "FeatureTable hist-modifiers (4.7): .syscall",
			steps: []auditStep{st("events/raw_syscalls/sys_enter/trigger", "hist:keys=id.syscall")},
			sql:   "SELECT CAST(id AS SYSCALL), COUNT(*) FROM sys_enter", form: "id.syscall"},
		{id: "join", rule: "FeatureTable hist-variables, synthetic-events, onmatch (4.17), dynamic-events (5.0), trace-action (5.1)",
			steps: []auditStep{st(dyn, "s:aud_j u64 lat"), st(waking, "hist:keys=pid:aud_ts=common_timestamp.usecs"),
				st(switch_, "hist:keys=next_pid:aud_lat=common_timestamp.usecs-$aud_ts:onmatch(sched.sched_waking).trace(aud_j,$aud_lat)")},
			sql: "SELECT TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: ".trace("},
		{id: "onmax", rule: "FeatureTable onmax (4.17): MAX(x)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:aud_m=bytes_req:onmax($aud_m).save(bytes_req)")},
			sql:   "SELECT common_pid, MAX(bytes_req) FROM kmalloc", form: "onmax("},
		{id: "onchange", rule: "FeatureTable onchange (5.1); histhandler.go: -c",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:aud_c=bytes_req:onchange($aud_c).save(bytes_req)")},
			args:  []string{"-c", "bytes_req"}, sql: "SELECT common_pid, COUNT(*) FROM kmalloc", form: "onchange(", refusal: "onchange() needs"},
		{id: "snapshot-action", rule: "FeatureTable snapshot-action (5.1); histhandler.go: -s",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:aud_m=bytes_req:onmax($aud_m).snapshot()")},
			args:  []string{"-m", "bytes_req", "-s"}, sql: "SELECT common_pid, COUNT(*) FROM kmalloc", form: ".snapshot()", refusal: "snapshot() action (-s) needs"},
		{id: "probe-args", rule: "FeatureTable probe-args (4.20); probe.go: $argN in a kprobe (and the architecture's argument access)",
			steps: []auditStep{st(dyn, "p:aud/pa do_sys_openat2 dfd=$arg1:s32")},
			sql:   "SELECT dfd, COUNT(*) FROM kprobe(do_sys_openat2, dfd=$arg1:s32)", form: "dfd=$arg1"},
		{id: "retprobe-args", rule: "FeatureTable retprobe-args (6.9); probe.go: $argN in a return probe",
			steps: []auditStep{st(dyn, "r:aud/ra do_sys_openat2 dfd=$arg1:s32")},
			sql:   "SELECT dfd, COUNT(*) FROM kretprobe(do_sys_openat2, dfd=$arg1:s32)", form: "dfd=$arg1", refusal: "in a return probe"},
		{id: "ustring", rule: "FeatureTable ustring (5.3)",
			steps: []auditStep{st(dyn, "p:aud/us do_sys_openat2 f=+0($arg2):ustring")},
			sql:   "SELECT f, COUNT(*) FROM kprobe(do_sys_openat2, f=+0($arg2):ustring)", form: ":ustring"},
		{id: "return-suffix", rule: "FeatureTable return-suffix (5.10); emit/bootconfig.go: a bootconfig's return probe",
			steps: []auditStep{st(dyn, "p:aud/rs do_sys_openat2%return ret=$retval:s32")},
			args:  []string{"-o", "bootconfig"}, sql: "SELECT ret, COUNT(*) FROM kretprobe(do_sys_openat2, ret=$retval:s32)", form: "%return"},
		{id: "dynamic-strings", rule: "FeatureTable dynamic-strings (5.10); casttype.go, types.go: char[] synthetic fields",
			steps: []auditStep{st(dyn, "s:aud_ds char c[]; u64 lat")},
			sql:   "SELECT CAST(start.comm AS char[]) AS c, TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: "char c[]", refusal: "variable-length strings"},
		{id: "broken-synth-strings", rule: "features.go BrokenSynthStrings, types.go: 5.10.237 and later corrupt string fields of synthetic events",
			steps: []auditStep{st(dyn, "s:aud_bs char comm[16]; u64 lat"), st(waking, "hist:keys=pid:aud_ts=common_timestamp.usecs"),
				st(switch_, "hist:keys=next_pid:aud_lat=common_timestamp.usecs-$aud_ts:onmatch(sched.sched_waking).trace(aud_bs,next_comm,$aud_lat)"),
				st("events/synthetic/aud_bs/enable", "1")},
			shows: &auditShows{"trace", `aud_bs: comm=[^( ]+ lat=[0-9]{1,9}$`},
			sql:   "SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: "char comm[16]", refusal: "corrupt the string fields"},
		{id: "common-cpu", rule: "FeatureTable common-cpu (5.14); resolve.go, filter.go, results.go: cpu before",
			steps: []auditStep{st(switch_, "hist:keys=common_cpu")},
			sql:   "SELECT common_cpu, COUNT(*) FROM sched_switch", form: "hist:keys=common_cpu"},
		{id: "buckets", rule: "FeatureTable buckets (5.15); resolve.go: .buckets=N",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req.buckets=64")},
			sql:   "SELECT CAST(bytes_req AS BUCKETS=64), COUNT(*) FROM kmalloc", form: ".buckets=64"},
		{id: "eprobes", rule: "FeatureTable eprobes (5.15); probe.go, deref.go",
			steps: []auditStep{st(dyn, "e:aud/ep sched.sched_switch p=$prev_pid")},
			sql:   "SELECT p, COUNT(*) FROM eprobe(sched.sched_switch, p=$prev_pid)", form: "e:"},
		{id: "execname-variables", rule: "FeatureTable execname-variables (5.15); arith.go: common_pid.execname in a synthetic event",
			steps: []auditStep{st(dyn, "s:aud_ex char c[]"), st(waking, "hist:keys=pid:aud_c=common_pid.execname"),
				st(switch_, "hist:keys=next_pid:onmatch(sched.sched_waking).trace(aud_ex,$aud_c)")},
			sql: "SELECT start.common_pid.execname AS c, TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: "=common_pid.execname", refusal: "common_pid.execname in a synthetic event"},
		{id: "synthetic-64-fields", rule: "FeatureTable synthetic-64-fields (5.15); join.go: more than 32 fields",
			steps: []auditStep{st(dyn, "s:aud_w "+wideDecl)},
			sql:   "SELECT " + wide + auditJoin, form: " f32"},
		{id: "expressions-mul", rule: "FeatureTable expressions (5.16); histexpr.go, arith.go: * and /",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req*bytes_alloc")},
			sql:   "SELECT bytes_req*bytes_alloc, COUNT(*) FROM kmalloc", form: "bytes_req*bytes_alloc"},
		{id: "expressions-const", rule: "FeatureTable expressions (5.16); histexpr.go, arith.go: constants",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req+8")},
			sql:   "SELECT bytes_req+8, COUNT(*) FROM kmalloc", form: "bytes_req+8"},
		{id: "percent-count", rule: "FeatureTable hist-display (6.2); histmax.go: CAST(COUNT(*) AS PERCENT)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=hitcount.percent")},
			shows: &auditShows{"events/kmem/kmalloc/hist", `hitcount \(%\):`},
			sql:   "SELECT common_pid, COUNT(*), CAST(COUNT(*) AS PERCENT) FROM kmalloc", form: "hitcount.percent"},
		{id: "graph-count", rule: "FeatureTable hist-display (6.2); histmax.go: CAST(COUNT(*) AS GRAPH)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=hitcount.graph")},
			sql:   "SELECT common_pid, COUNT(*), CAST(COUNT(*) AS GRAPH) FROM kmalloc", form: "hitcount.graph"},
		{id: "nohitcount", rule: "FeatureTable nohitcount (6.2); histmax.go: the count shown only as a share",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=hitcount.percent:nohitcount")},
			sql:   "SELECT common_pid, CAST(COUNT(*) AS PERCENT) FROM kmalloc", form: ":nohitcount"},
		{id: "percent-values", rule: "histmax.go: CAST(x AS PERCENT|GRAPH) of a summed value",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_req.percent,bytes_alloc.graph")},
			shows: &auditShows{"events/kmem/kmalloc/hist", `bytes_req \(%\):`},
			sql:   "SELECT common_pid, CAST(bytes_req AS PERCENT), CAST(bytes_alloc AS GRAPH) FROM kmalloc", form: "bytes_req.percent"},
		{id: "percent-values-nohitcount", rule: "histmax.go: shares of sums alone hide the count (nohitcount, 6.2)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_req.percent,bytes_alloc.graph:nohitcount")},
			shows: &auditShows{"events/kmem/kmalloc/hist", `^\{ common_pid: +[0-9]+ \}  bytes_req \(%\):`},
			sql:   "SELECT common_pid, CAST(bytes_req AS PERCENT), CAST(SUM(bytes_alloc) AS GRAPH) FROM kmalloc", form: ":nohitcount"},
		{id: "sum-and-graph", rule: "histmax.go: a field's sum and its bar in one trigger",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_req,bytes_req.graph")},
			sql:   "SELECT common_pid, SUM(bytes_req), CAST(bytes_req AS GRAPH) FROM kmalloc", form: "bytes_req,bytes_req.graph"},
		{id: "stacktrace-variables", rule: "FeatureTable stacktrace-variables (6.3); types.go: a stack trace into a synthetic event",
			steps: []auditStep{st(dyn, "s:aud_st unsigned long stack[]"), st(waking, "hist:keys=pid:aud_s=common_stacktrace"),
				st(switch_, "hist:keys=next_pid:onmatch(sched.sched_waking).trace(aud_st,$aud_s)")},
			sql: "SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: "unsigned long stack[]"},
		{id: "stack-key", rule: "FeatureTable stacktrace-variables (6.3); hist.go: a synthetic event keyed by its stack",
			steps: []auditStep{st(dyn, "s:aud_sk unsigned long stack[]"), st("events/synthetic/aud_sk/trigger", "hist:keys=stack.stacktrace")},
			sql:   "SELECT start.STACKTRACE AS stack, COUNT(*)" + auditJoin + " GROUP BY stack", form: "stack.stacktrace"},
		{id: "common-stacktrace", rule: "FeatureTable common-stacktrace (6.4); resolve.go: stacktrace before",
			steps: []auditStep{st(switch_, "hist:keys=common_stacktrace")},
			sql:   "SELECT STACKTRACE, COUNT(*) FROM sched_switch", form: "common_stacktrace"},
		{id: "common-comm", rule: "FeatureTable common-comm (6.16); resolve.go: COMM",
			steps: []auditStep{st(switch_, "hist:keys=common_comm")},
			sql:   "SELECT COMM, COUNT(*) FROM sched_switch", form: "common_comm"},

		// The kernel's limits and rules that sqlhist's refusals state.
		{id: "keys-max", rule: "hist.go: at most 3 keys",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid,bytes_req,bytes_alloc,call_site")},
			sql:   "SELECT common_pid, bytes_req, bytes_alloc, call_site, COUNT(*) FROM kmalloc"},
		{id: "vals-max", rule: "hist.go: at most 2 summed values besides the count",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_req,bytes_alloc,call_site")},
			sql:   "SELECT common_pid, SUM(bytes_req), SUM(bytes_alloc), SUM(call_site) FROM kmalloc"},
		{id: "sort-max", rule: "hist.go: sorts by at most 2 fields",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_req,bytes_alloc:sort=bytes_req,bytes_alloc,common_pid")},
			sql:   "SELECT common_pid, SUM(bytes_req) AS r, SUM(bytes_alloc) AS a FROM kmalloc ORDER BY r, a, common_pid"},
		{id: "vars-max", rule: "join.go: at most 16 variables in a trigger (each its own assignment)",
			steps: []auditStep{st(waking, "hist:keys=pid:"+auditVars(17, "prio"))},
			sql:   "SELECT " + many + auditJoin},
		{id: "ops-max", rule: "histexpr.go, arith.go: at most 3 operators in an expression",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req+bytes_alloc+bytes_req+bytes_alloc+bytes_req")},
			sql:   "SELECT bytes_req+bytes_alloc+bytes_req+bytes_alloc+bytes_req, COUNT(*) FROM kmalloc"},
		{id: "field-compare", rule: "filter.go: a field compares with a constant, not another field",
			steps: []auditStep{st(switch_, "hist:keys=prev_pid if prev_pid == next_pid")},
			sql:   "SELECT prev_pid, COUNT(*) FROM sched_switch WHERE prev_pid == next_pid"},
		{id: "filter-string-max", rule: "filter.go: a filter string of at most 255 bytes",
			steps: []auditStep{st(switch_, `hist:keys=prev_pid if prev_comm == "`+long+`"`)},
			sql:   "SELECT prev_pid, COUNT(*) FROM sched_switch WHERE prev_comm == '" + long + "'"},
		{id: "one-save", rule: "histmax.go, histhandler.go: one save() per trigger",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:aud_m=bytes_req,aud_n=bytes_alloc:onmax($aud_m).save(bytes_req):onmax($aud_n).save(bytes_alloc)")},
			sql:   "SELECT common_pid, MAX(bytes_req), MAX(bytes_alloc) FROM kmalloc"},
		{id: "trigger-exists", rule: "duplicates.go: the same trigger twice (EEXIST)",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid"), st(kmalloc, "hist:keys=common_pid")},
			sql:   "SELECT common_pid, COUNT(*) FROM kmalloc; SELECT common_pid, COUNT(*) FROM kmalloc"},
		{id: "one-modifier", rule: "resolve.go, hist.go, chain.go: one modifier per field",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid.execname.hex")},
			sql:   "SELECT CAST(common_pid.execname AS HEX), COUNT(*) FROM kmalloc"},
		{id: "timestamp-units", rule: "histexpr.go, arith.go: a µs timestamp mixed with other values",
			steps: []auditStep{st(kmalloc, "hist:keys=common_timestamp.usecs+bytes_req")},
			sql:   "SELECT TIMESTAMP_USECS+bytes_req, COUNT(*) FROM kmalloc"},
		{id: "division-by-zero", rule: "histexpr.go: division by zero",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req/0")},
			sql:   "SELECT bytes_req/0, COUNT(*) FROM kmalloc"},
		{id: "negative-constant", rule: "histexpr.go: no negative constant",
			steps: []auditStep{st(kmalloc, "hist:keys=bytes_req*-2")},
			sql:   "SELECT bytes_req*-2, COUNT(*) FROM kmalloc"},
		{id: "sum-expression", rule: "histexpr.go: a summed expression is never shown",
			steps: []auditStep{st(kmalloc, "hist:keys=common_pid:vals=bytes_alloc-bytes_req")},
			shows: &auditShows{"events/kmem/kmalloc/hist", `hitcount: +[0-9]+ +[^ ]+: +[0-9]`},
			sql:   "SELECT common_pid, SUM(bytes_alloc-bytes_req) FROM kmalloc"},
		{id: "synth-name-1", rule: "join.go: a one-character synthetic event name in trace()",
			steps: []auditStep{st(dyn, "s:q u64 lat"), st(waking, "hist:keys=pid:aud_ts=common_timestamp.usecs"),
				st(switch_, "hist:keys=next_pid:aud_lat=common_timestamp.usecs-$aud_ts:onmatch(sched.sched_waking).trace(q,$aud_lat)")},
			args: []string{"-n", "q"}, sql: "SELECT TIMESTAMP_DELTA_USECS AS lat" + auditJoin},
		{id: "name-64", rule: "planner.go: a synthetic event name of 64 characters (sqlhist refused more than 63)",
			steps: auditJoinSteps(name64, "lat"),
			args:  []string{"-n", name64}, sql: "SELECT TIMESTAMP_DELTA_USECS AS lat" + auditJoin, form: "s:" + name64},
		{id: "field-name-64", rule: "planner.go: a synthetic field name of 64 characters (sqlhist refused more than 63)",
			steps: auditJoinSteps("aud_fl", field64),
			sql:   "SELECT TIMESTAMP_DELTA_USECS AS " + field64 + auditJoin, form: "u64 " + field64},
		{id: "name-max", rule: "planner.go: before 6.12, synthetic event names of at most 255 bytes (NAME_MAX of its directory)",
			steps: []auditStep{st(dyn, "s:"+name256+" pid_t p"), st("events/synthetic/"+name256+"/enable", "1")},
			args:  []string{"-n", name256}, sql: "SELECT start.pid AS p" + auditJoin, form: "s:" + name256, refusal: "no events/synthetic directory"},
		{id: "expression-max", rule: "planner.go: an expression's text of at most 255 bytes (the kernel's MAX_FILTER_STR_VAL buffer: only 6.12 refuses a longer one; 5.10, 6.1 and 7.2 write past it)",
			steps: auditJoinSteps(name230, "lat"), only: "6.12",
			args: []string{"-n", name230}, sql: "SELECT TIMESTAMP_DELTA_USECS AS lat" + auditJoin},
		{id: "probe-name-63", rule: "probe.go: a probe event name of 63 characters",
			steps: []auditStep{st(dyn, "p:aud/"+auditLinks[0][5:]+"_0x1000 "+auditLinks[0]+":0x1000")},
			sql:   "SELECT common_pid, COUNT(*) FROM uprobe('" + auditLinks[0] + "', 0x1000)", form: auditLinks[0][5:] + "_0x1000"},
		{id: "probe-name-max", rule: "probe.go: probe event names of at most 63 characters (MAX_EVENT_NAME_LEN, 64, holds the NUL)",
			steps: []auditStep{st(dyn, "p:aud/"+auditLinks[1][5:]+"_0x1000 "+auditLinks[1]+":0x1000")},
			sql:   "SELECT common_pid, COUNT(*) FROM uprobe('" + auditLinks[1] + "', 0x1000)", form: auditLinks[1][5:] + "_0x1000"},
		{id: "synth-type", rule: "casttype.go: the synthetic field types",
			steps: []auditStep{st(dyn, "s:aud_ty float v")},
			sql:   "SELECT CAST(start.prio AS float) AS v" + auditJoin},
		{id: "param-type", rule: "casttype.go: a value passes to a field of its type, or of its size and signedness",
			steps: []auditStep{st(dyn, "s:aud_pt u16 v"), st(waking, "hist:keys=pid:aud_p=prio"),
				st(switch_, "hist:keys=next_pid:onmatch(sched.sched_waking).trace(aud_pt,$aud_p)")},
			sql: "SELECT CAST(start.prio AS u16) AS v" + auditJoin},
	}
}()

// auditUndo is the write that removes what a step wrote.
func auditUndo(s auditStep) string {
	switch {
	case strings.HasSuffix(s.file, "/trigger"):
		return "!" + s.line
	case strings.HasSuffix(s.file, "/enable"), strings.HasSuffix(s.file, "/filter"):
		return "0"
	case auditTopFiles[s.file]:
		head, _, _ := strings.Cut(s.line, " ")
		_, name, _ := strings.Cut(head, ":")
		return "-:" + name
	}
	return ""
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// auditScript is the guest's script: the gates one after another, each
// line of its output a marker the host reads (checkAudit).
func auditScript(gates []auditGate) string {
	var b strings.Builder
	b.WriteString("LINKS='" + strings.Join(auditLinks, " ") + "'\n")
	b.WriteString(`T=/sys/kernel/tracing
I=$T/instances/audit
snap() { cat $T/dynamic_events; ls $T/instances; grep -H '^[^#]' $T/events/*/*/trigger 2>/dev/null; }
snap > /tmp/aud-before
mkdir $I || echo "@@audit-noinstance"
for l in $LINKS; do ln -sf /work/sqlhist $l; done
echo "@@audit-start $(cut -d' ' -f1 /proc/uptime)"
# release MAJOR.MINOR: the running kernel is that release.
release() { case $(uname -r) in "$1".*|"$1"-*|"$1"+*) return 0;; esac; return 1; }
path() { case $1 in dynamic_events|synthetic_events|kprobe_events) echo $T/$1;; *) echo $I/$1;; esac; }
# w N FILE LINE: the kernel's verdict on one write; n counts the accepted.
w() {
	f=$(path $2)
	: > $T/error_log; : > $I/error_log
	if printf '%s\n' "$3" >> $f 2>/dev/null; then echo "@@A $g $1 ok"; n=$1; return 0; fi
	echo "@@A $g $1 refused"
	cat $I/error_log $T/error_log 2>/dev/null | grep -m1 'error:' | sed "s/^/@@L $g /"
	return 1
}
# u FILE LINE: undo a write.
u() { printf '%s\n' "$2" >> $(path $1) 2>/dev/null || echo "@@U $g $1 $2"; }
# s FILE RE: after some work, does FILE show a line matching RE?
s() {
	i=0
	while [ $i -lt 4 ]; do ls -R /proc/self > /dev/null 2>&1; cat /proc/cpuinfo > /dev/null; sleep 0.05; i=$((i+1)); done
	if l=$(grep -E -m1 -- "$2" $(path $1)); then echo "@@S $g shown $l"; else echo "@@S $g absent"; grep -v '^#' $(path $1) | head -3 | sed "s/^/@@H $g /"; fi
}
# q FORM ARGS...: sqlhist's verdict, printing only.
q() {
	form=$1; shift
	/work/sqlhist "$@" > /tmp/aud-out 2> /tmp/aud-err; rc=$?
	has=-; [ -n "$form" ] && grep -qF -- "$form" /tmp/aud-out && has=form
	echo "@@Q $g $rc $has"
	[ $rc -ne 0 ] && grep -v '^ \|^hint' /tmp/aud-err | head -1 | sed "s/^/@@E $g /"
}
`)
	for _, g := range gates {
		fmt.Fprintf(&b, "g=%s; n=0\n", g.id)
		var ws []string
		for i, s := range g.steps {
			ws = append(ws, fmt.Sprintf("w %d %s %s", i+1, s.file, shq(s.line)))
		}
		if g.shows != nil {
			ws = append(ws, fmt.Sprintf("s %s %s", g.shows.file, shq(g.shows.re)))
		}
		if g.only != "" {
			fmt.Fprintf(&b, "if release %s; then\n", g.only)
		}
		b.WriteString(strings.Join(ws, " &&\n  ") + "\n")
		if g.only != "" {
			b.WriteString("else echo \"@@A $g 0 unwritten\"; fi\n")
		}
		for i := len(g.steps) - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "[ $n -ge %d ] && u %s %s\n", i+1, g.steps[i].file, shq(auditUndo(g.steps[i])))
		}
		q := []string{shq(g.form)}
		for _, a := range g.args {
			q = append(q, shq(a))
		}
		fmt.Fprintf(&b, "q %s %s\n", strings.Join(q, " "), shq(g.sql))
	}
	b.WriteString(`echo "@@audit-stop $(cut -d' ' -f1 /proc/uptime)"
rmdir $I || echo "@@audit-left instance"
snap > /tmp/aud-after
echo "@@audit-diff"; diff /tmp/aud-before /tmp/aud-after | sed "s/^/ /"
echo "@@audit-end"
`)
	return b.String()
}

// auditResult is what the guest said about one gate.
type auditResult struct {
	steps []string // each step's verdict, "ok" or "refused"
	// unwritten is set when the kernel is not the gate's only release.
	unwritten bool
	log       string   // the error_log line of a refused step
	shown     string   // "shown", "absent" or "" (no shows)
	hist      []string // the file's first lines when the line was absent
	rc        int      // sqlhist's exit code (-1: it did not run)
	form      bool     // its script holds the gate's form
	message   string   // its refusal's first line
	undo      []string // undo writes that failed
}

// kernelOK reports whether the kernel took every step (and showed what
// the gate looks for).
func (r *auditResult) kernelOK(g auditGate) bool {
	if len(r.steps) != len(g.steps) {
		return false
	}
	for _, s := range r.steps {
		if s != "ok" {
			return false
		}
	}
	return g.shows == nil || r.shown == "shown"
}

// kernelVerdict is the kernel's verdict as the table shows it.
func (r *auditResult) kernelVerdict(g auditGate) string {
	switch {
	case r.unwritten:
		return "not written but on Linux " + g.only
	case r.kernelOK(g):
		return "accepted"
	case len(r.steps) > 0 && r.steps[len(r.steps)-1] == "refused":
		v := "refused"
		if len(g.steps) > 1 {
			v += fmt.Sprintf(" (step %d)", len(r.steps))
		}
		if r.log != "" {
			v += ": " + r.log
		}
		return v
	case r.shown == "absent":
		return "accepted, not shown"
	}
	return "no verdict"
}

// sqlhistVerdict is sqlhist's verdict: "prints", "prints another form",
// "refuses: …" or "refuses for another reason: …".
func (r *auditResult) sqlhistVerdict(g auditGate) string {
	switch {
	case r.rc == 0 && (g.form == "" || r.form):
		return "prints"
	case r.rc == 0:
		return "prints another form"
	case r.rc < 0:
		return "did not run"
	case g.refusal != "" && !strings.Contains(r.message, g.refusal):
		return "refuses for another reason: " + r.message
	}
	return "refuses: " + r.message
}

var auditLineRE = regexp.MustCompile(`^@@([ALSHQEU]) (\S+) ?(.*)$`)

// parseAudit reads the guest's markers into results by gate.
func parseAudit(out string) map[string]*auditResult {
	res := map[string]*auditResult{}
	get := func(id string) *auditResult {
		r := res[id]
		if r == nil {
			r = &auditResult{rc: -1}
			res[id] = r
		}
		return r
	}
	for _, l := range strings.Split(out, "\n") {
		m := auditLineRE.FindStringSubmatch(strings.TrimRight(l, "\r"))
		if m == nil {
			continue
		}
		r, rest := get(m[2]), m[3]
		switch m[1] {
		case "A":
			_, v, _ := strings.Cut(rest, " ")
			if v == "unwritten" {
				r.unwritten = true
				continue
			}
			r.steps = append(r.steps, v)
		case "L":
			r.log = strings.TrimSpace(rest)
			if _, after, ok := strings.Cut(r.log, "] "); ok && strings.HasPrefix(r.log, "[") {
				r.log = after // the timestamp
			}
		case "S":
			r.shown, _, _ = strings.Cut(rest, " ")
		case "H":
			r.hist = append(r.hist, rest)
		case "Q":
			w := strings.Fields(rest)
			if len(w) == 2 {
				r.rc, _ = strconv.Atoi(w[0])
				r.form = w[1] == "form"
			}
		case "E":
			r.message = rest
			if i := strings.Index(r.message, ": "); i >= 0 && strings.HasPrefix(r.message, "<args>:") {
				r.message = r.message[i+2:]
			}
		case "U":
			r.undo = append(r.undo, rest)
		}
	}
	return res
}

// auditProblem is the disagreement of sqlhist with the kernel on a gate,
// "" when they agree.
func auditProblem(g auditGate, r *auditResult) string {
	k, s := r.kernelOK(g), r.sqlhistVerdict(g)
	switch {
	case r.rc < 0 || len(r.steps) == 0 && !r.unwritten:
		return "no verdict: the guest did not run this gate"
	case r.unwritten:
		return ""
	case k && strings.HasPrefix(s, "refuses: "):
		return "sqlhist refuses what the kernel accepts"
	case k && s == "prints another form":
		return "sqlhist writes another form where the kernel takes this one"
	case !k && s == "prints":
		return "sqlhist prints what the kernel refuses"
	case len(r.undo) > 0:
		return "the audit could not undo " + strings.Join(r.undo, "; ")
	}
	return ""
}

// auditTable renders the gates' verdicts on one kernel and returns the
// problems.
func auditTable(gates []auditGate, res map[string]*auditResult) (string, []string) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "gate\tkernel\tsqlhist\t")
	var problems []string
	for _, g := range gates {
		r := res[g.id]
		if r == nil {
			r = &auditResult{rc: -1}
		}
		p := auditProblem(g, r)
		mark := ""
		if p != "" {
			mark = "  <-- " + p
			problems = append(problems, fmt.Sprintf("%s (%s): %s; kernel: %s; sqlhist: %s%s", g.id, g.rule, p, r.kernelVerdict(g), r.sqlhistVerdict(g), histLines(r.hist)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", g.id, clip(r.kernelVerdict(g), 90), clip(r.sqlhistVerdict(g), 100), mark)
	}
	w.Flush()
	return b.String(), problems
}

func histLines(h []string) string {
	if len(h) == 0 {
		return ""
	}
	return "; the file showed: " + strings.Join(h, " | ")
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// checkAudit checks what auditScript printed on kname.
func checkAudit(t checker, kname, out string) string {
	if !strings.Contains(out, "@@audit-end") {
		t.Errorf("the audit did not finish:\n%s", lastLines(out, 30))
	}
	if strings.Contains(out, "@@audit-noinstance") || strings.Contains(out, "@@audit-left") {
		t.Errorf("the scratch instance could not be made or removed:\n%s", lastLines(out, 30))
	}
	if d := sections(out)["audit-diff"]; d != "" {
		t.Errorf("the audit left the tracefs changed:\n%s", d)
	}
	table, problems := auditTable(auditGates, parseAudit(out))
	took := ""
	if m := regexp.MustCompile(`@@audit-start (\S+)[\s\S]*@@audit-stop (\S+)`).FindStringSubmatch(out); m != nil {
		a, _ := strconv.ParseFloat(m[1], 64)
		z, _ := strconv.ParseFloat(m[2], 64)
		took = fmt.Sprintf(" in %.1f s of guest time", z-a)
	}
	t.Logf("%s: %d gates%s, the kernel's verdict and sqlhist's:\n%s", kname, len(auditGates), took, table)
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	return fmt.Sprintf("%d gates, %d disagree", len(auditGates), len(problems))
}

// auditPhase is the audit phase of kname's boot.
func auditPhase(t *testing.T, kname string) phase {
	return phase{name: "audit", script: auditScript(auditGates), timeout: 4 * time.Minute,
		files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, kernelArch(t, kname))}},
		check: func(t *testing.T, out string) string { return checkAudit(t, kname, out) }}
}

// TestAuditGuest boots the kernels of SQLHIST_KERNELS (default 6.12) with
// the audit phase alone.
func TestAuditGuest(t *testing.T) {
	needKernels(t)
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "6.12"), ",") {
		t.Run(kname, func(t *testing.T) {
			p := auditPhase(t, kname)
			files := append(mergeFiles([]phase{p}), vm.File{Path: "/work/phases/" + p.name + ".sh", Data: []byte(p.script)})
			res := boot(t, kname, vm.Guest{Script: phaseScript([]phase{p}), Files: files, CombinedOutput: true, Timeout: p.timeout})
			o := splitPhases(res.Stdout)[p.name]
			if o == nil || !o.done {
				t.Fatalf("the phase did not finish:\n%s", lastLines(res.Stdout, 40))
			}
			t.Logf("%s (%s)", kname, res.Kernel.Release)
			p.check(t, o.out)
		})
	}
}

// TestAuditGates checks the table without a kernel: ids are unique, each
// form is in the raw lines (the kernel is asked about what sqlhist
// writes), the script quotes every line, and sqlhist, run here on the
// embedded catalog of 7.2, prints each gate's form or refuses its SQL
// (an SQL that does not parse would be no verdict at all).
func TestAuditGates(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range auditGates {
		if seen[g.id] || g.id == "" || strings.ContainsAny(g.id, " \t'") {
			t.Errorf("gate id %q: empty, repeated or not a word", g.id)
		}
		seen[g.id] = true
		if len(g.steps) == 0 || g.rule == "" || g.sql == "" {
			t.Errorf("%s: want steps, a rule and SQL", g.id)
		}
		inLines := false
		for _, s := range g.steps {
			inLines = inLines || strings.Contains(s.line, g.form)
			if auditUndo(s) == "" {
				t.Errorf("%s: no undo for a write to %s", g.id, s.file)
			}
		}
		if g.form != "" && !inLines {
			t.Errorf("%s: the form %q is in none of the raw lines", g.id, g.form)
		}
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("runs the amd64 sqlhist")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sqlhist")
	if err := os.WriteFile(bin, buildStatic(t, "amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range auditLinks {
		if err := os.Symlink(bin, l); err == nil {
			t.Cleanup(func() { os.Remove(l) })
		}
	}
	for _, g := range auditGates {
		out, err := exec.Command(bin, append(append([]string{"--kernel", "7.2"}, g.args...), g.sql)...).CombinedOutput()
		switch {
		case err == nil && !strings.Contains(string(out), g.form):
			t.Errorf("%s: sqlhist printed a script without %q:\n%s", g.id, g.form, out)
		case err != nil && (strings.Contains(string(out), "syntax error") || strings.HasPrefix(string(out), "sqlhist: ")):
			t.Errorf("%s: not a refusal of a rule: %s", g.id, out)
		}
	}
}

// TestCheckAudit reads a guest's output: the verdicts, the table, and
// the disagreements it fails on.
func TestCheckAudit(t *testing.T) {
	gates := []auditGate{
		{id: "a", steps: []auditStep{st("x/trigger", "hist:keys=a.percent")}, sql: "q", form: "a.percent"},
		{id: "b", steps: []auditStep{st("x/trigger", "hist:keys=b")}, sql: "q"},
		{id: "c", steps: []auditStep{st("x/trigger", "hist:keys=c"), st("x/trigger", "hist:keys=c")}, sql: "q"},
		{id: "d", steps: []auditStep{st("x/trigger", "hist:keys=d")}, sql: "q", only: "6.12"},
		{id: "e", steps: []auditStep{st("x/trigger", "hist:keys=e")}, sql: "q", form: "e", refusal: "needs"},
	}
	out := `@@A a 1 ok
@@Q a 1 -
@@E a <args>:1:20: CAST(… AS PERCENT) applies to COUNT(*)
@@A b 1 refused
@@L b [   12.5] hist:kmem:kmalloc: error: Too many sort fields (Max = 2)
@@Q b 0 -
@@A c 1 ok
@@A c 2 refused
@@L c [    3.1] hist:kmem:kmalloc: error: Hist trigger already exists
@@Q c 1 -
@@E c <args>:1:1: the same trigger twice
@@A d 0 unwritten
@@Q d 1 -
@@E d <args>:1:1: too long
@@A e 1 ok
@@Q e 1 -
@@E e <args>:1:1: corrupts strings
`
	table, problems := auditTable(gates, parseAudit(out))
	want := []string{
		"a (): sqlhist refuses what the kernel accepts; kernel: accepted; sqlhist: refuses: CAST(… AS PERCENT) applies to COUNT(*)",
		"b (): sqlhist prints what the kernel refuses; kernel: refused: hist:kmem:kmalloc: error: Too many sort fields (Max = 2); sqlhist: prints",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{"refused (step 2): hist:kmem:kmalloc: error: Hist trigger already exists", "not written but on Linux 6.12", "refuses for another reason: corrupts strings"} {
		if !strings.Contains(table, s) {
			t.Errorf("the table lacks %q:\n%s", s, table)
		}
	}
}
