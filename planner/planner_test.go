package planner

import (
	"archive/zip"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// embedded opens the embedded catalog of a kernel.
func embedded(t *testing.T, kernel string) *tracefs.Catalog {
	t.Helper()
	fsys, err := tracefs.Embedded(kernel)
	if err != nil {
		t.Fatal(err)
	}
	return tracefs.Open(fsys)
}

// debian510 is the catalog of Debian's 5.10 (bullseye), built without
// hist triggers: kept as test data since --kernel 5.10 means a 5.10 with
// them.
func debian510(t *testing.T) *tracefs.Catalog {
	t.Helper()
	r, err := zip.OpenReader("../tracefs/testdata/linux-5.10-nohist.zip")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return tracefs.Open(r)
}

// build parses sql and plans it against cat. A parse error fails the test.
func build(t *testing.T, cat *tracefs.Catalog, sql string, opt Options) (*Plan, source.Diags) {
	t.Helper()
	script, err := compiler.Parse(source.NewSource("q.sql", sql))
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	return Build(script, cat, opt)
}

// buildOK plans sql and fails the test on any error diagnostic.
func buildOK(t *testing.T, cat *tracefs.Catalog, sql string, opt Options) *Plan {
	t.Helper()
	plan, diags := build(t, cat, sql, opt)
	if err := diags.Err(); err != nil || plan == nil {
		t.Fatalf("Build(%q): %v", sql, err)
	}
	return plan
}

// joinOut is what a JOIN statement lowers to, as the kernel reads it.
type joinOut struct {
	Def, Start, End string
	StartFile       string
	EndFile         string
}

func joinOf(u *Unit) joinOut {
	return joinOut{
		Def: u.Synth.Name + " " + u.Synth.Definition(), Start: u.Start.Spec(), End: u.End.Spec(),
		StartFile: u.Start.TriggerFile(), EndFile: u.End.TriggerFile(),
	}
}

func TestJoin(t *testing.T) {
	const sw = "events/sched/sched_switch/trigger"
	const wk = "events/sched/sched_waking/trigger"
	tests := []struct {
		name string
		opt  Options
		sql  string
		want joinOut
	}{{
		name: "wakeup latency: end string passed as a field",
		opt:  Options{Name: "wakeup_lat"},
		sql: `SELECT end.next_comm AS name, start.pid, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS latency
		      FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		want: joinOut{
			Def:       "wakeup_lat char name[16]; pid_t pid; u64 latency",
			Start:     "hist:keys=pid:wakeup_lat_ts_us=common_timestamp.usecs",
			End:       "hist:keys=next_pid:wakeup_lat_latency=common_timestamp.usecs-$wakeup_lat_ts_us:onmatch(sched.sched_waking).trace(wakeup_lat,next_comm,next_pid,$wakeup_lat_latency)",
			StartFile: wk, EndFile: sw,
		},
	}, {
		name: "self join: start string through a variable, ns delta",
		opt:  Options{Name: "sw"},
		sql: `SELECT start.prev_comm AS comm, end.next_comm, start.prev_prio, TIMESTAMP_DELTA AS d
		      FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid`,
		want: joinOut{
			Def:       "sw char comm[16]; char next_comm[16]; int prev_prio; u64 d",
			Start:     "hist:keys=prev_pid:sw_comm=prev_comm,sw_prev_prio=prev_prio,sw_ts=common_timestamp",
			End:       "hist:keys=next_pid:sw_d=common_timestamp-$sw_ts:onmatch(sched.sched_switch).trace(sw,$sw_comm,next_comm,$sw_prev_prio,$sw_d)",
			StartFile: sw, EndFile: sw,
		},
	}, {
		name: "dynamic string from the start event",
		opt:  Options{Name: "irqn"},
		sql:  `SELECT end.ret, start.name FROM irq_handler_entry AS start JOIN irq_handler_exit AS end ON start.irq = end.irq`,
		want: joinOut{
			Def:       "irqn int ret; char name[]",
			Start:     "hist:keys=irq:irqn_name=name",
			End:       "hist:keys=irq:onmatch(irq.irq_handler_entry).trace(irqn,ret,$irqn_name)",
			StartFile: "events/irq/irq_handler_entry/trigger", EndFile: "events/irq/irq_handler_exit/trigger",
		},
	}, {
		name: "two keys, filters split per side",
		opt:  Options{Name: "sirq"},
		sql: `SELECT start.vec, end.TIMESTAMP - start.TIMESTAMP AS lat
		      FROM irq.softirq_entry AS start JOIN irq.softirq_exit AS end
		      ON start.vec = end.vec AND start.common_cpu = end.common_cpu
		      WHERE start.vec < 10 AND end.vec != 3 AND start.common_pid == 0`,
		want: joinOut{
			Def:       "sirq unsigned int vec; u64 lat",
			Start:     "hist:keys=vec,common_cpu:sirq_ts=common_timestamp if vec < 10 && common_pid == 0",
			End:       "hist:keys=vec,common_cpu:sirq_lat=common_timestamp-$sirq_ts:onmatch(irq.softirq_entry).trace(sirq,vec,$sirq_lat) if vec != 3",
			StartFile: "events/irq/softirq_entry/trigger", EndFile: "events/irq/softirq_exit/trigger",
		},
	}, {
		name: "string filters and OR groups stay on their side",
		opt:  Options{Name: "fo"},
		sql: `SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
		      WHERE (start.comm ~ "ba*" OR start.prio > 100) AND end.prev_comm != 'swapper/0' AND NOT end.next_prio < 0`,
		want: joinOut{
			Def:       "fo pid_t pid",
			Start:     `hist:keys=pid:fo_matched=pid if comm ~ "ba*" || prio > 100`,
			End:       `hist:keys=next_pid:fo_match=$fo_matched:onmatch(sched.sched_waking).trace(fo,next_pid) if prev_comm != "swapper/0" && !(next_prio < 0)`,
			StartFile: wk, EndFile: sw,
		},
	}, {
		name: "arithmetic regrouped exactly",
		opt:  Options{Name: "ar"},
		sql: `SELECT end.next_prio - (start.prio - 1) AS nested,
		             end.next_prio * (start.prio + 1) AS product,
		             2 - (end.next_prio - 1) AS folded,
		             start.prio - end.next_prio AS reordered,
		             end.next_prio - start.prio - start.target_cpu AS merged
		      FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		want: joinOut{
			Def:       "ar int nested; int product; u64 folded; int reordered; int merged",
			Start:     "hist:keys=pid:ar_nested_start=prio-1,ar_product_start=prio+1,ar_prio=prio,ar_merged_start=prio+target_cpu",
			End:       "hist:keys=next_pid:ar_nested=next_prio-$ar_nested_start,ar_product=next_prio*$ar_product_start,ar_folded=3-next_prio,ar_reordered=$ar_prio-next_prio,ar_merged=next_prio-$ar_merged_start:onmatch(sched.sched_waking).trace(ar,$ar_nested,$ar_product,$ar_folded,$ar_reordered,$ar_merged)",
			StartFile: wk, EndFile: sw,
		},
	}, {
		name: "only end values: the end trigger reads a start variable",
		opt:  Options{Name: "fm"},
		sql:  `SELECT end.next_comm, end.TIMESTAMP_USECS AS ts FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		want: joinOut{
			Def:       "fm char next_comm[16]; u64 ts",
			Start:     "hist:keys=pid:fm_matched=pid",
			End:       "hist:keys=next_pid:fm_ts=common_timestamp.usecs,fm_match=$fm_matched:onmatch(sched.sched_waking).trace(fm,next_comm,$fm_ts)",
			StartFile: wk, EndFile: sw,
		},
	}, {
		name: "size_t and pointers become fixed-width types",
		opt:  Options{Name: "read_lat"},
		sql:  `SELECT start.count, start.buf, start.fd, end.ret FROM sys_enter_read AS start JOIN sys_exit_read AS end ON start.common_pid = end.common_pid`,
		want: joinOut{
			Def:       "read_lat u64 count; u64 buf; unsigned int fd; long ret",
			Start:     "hist:keys=common_pid:read_lat_count=count,read_lat_buf=buf,read_lat_fd=fd",
			End:       "hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(read_lat,$read_lat_count,$read_lat_buf,$read_lat_fd,ret)",
			StartFile: "events/syscalls/sys_enter_read/trigger", EndFile: "events/syscalls/sys_exit_read/trigger",
		},
	}, {
		name: "default name, onmax with trace (and snapshot, as libtracefs's -T)",
		opt:  Options{OnMax: "lat", Trace: true},
		sql:  `SELECT start.pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		want: joinOut{
			Def:       "sched_waking_to_sched_switch pid_t pid; u64 lat",
			Start:     "hist:keys=pid:sched_waking_to_sched_switch_ts_us=common_timestamp.usecs",
			End:       "hist:keys=next_pid:sched_waking_to_sched_switch_lat=common_timestamp.usecs-$sched_waking_to_sched_switch_ts_us:onmax($sched_waking_to_sched_switch_lat).trace(sched_waking_to_sched_switch,next_pid,$sched_waking_to_sched_switch_lat):onmax($sched_waking_to_sched_switch_lat).snapshot()",
			StartFile: wk, EndFile: sw,
		},
	}, {
		name: "onchange with save and snapshot, in an instance: no onmatch",
		opt:  Options{Name: "mx", OnChange: "prio", Snapshot: true, Save: []string{"prev_comm"}, Instance: "inst"},
		sql:  `SELECT start.pid, end.next_prio AS prio FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
		want: joinOut{
			Def:       "mx pid_t pid; int prio",
			Start:     "hist:keys=pid:mx_matched=pid",
			End:       "hist:keys=next_pid:mx_match=$mx_matched,mx_prio_v=next_prio:onchange($mx_prio_v).save(prev_comm):onchange($mx_prio_v).snapshot()",
			StartFile: "instances/inst/" + wk, EndFile: "instances/inst/" + sw,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := buildOK(t, embedded(t, "6.1"), tt.sql, tt.opt)
			if len(plan.Units) != 1 {
				t.Fatalf("%d units, want 1", len(plan.Units))
			}
			if diff := cmp.Diff(tt.want, joinOf(plan.Units[0])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistogram(t *testing.T) {
	tests := []struct {
		name, sql, want string
		wantFile        string
	}{
		{"modifiers", `SELECT call_site.hex, bytes_req.log2, common_pid.execname FROM kmalloc`,
			"hist:keys=call_site.hex,bytes_req.log2,common_pid.execname:sort=hitcount.descending", "events/kmem/kmalloc/trigger"},
		{"CAST modifiers, SUM, ORDER BY COUNT(*)",
			`SELECT CAST(call_site AS SYM-OFFSET), bytes_req.buckets=64, SUM(bytes_alloc), COUNT(*) FROM kmalloc WHERE gfp_flags & 1 ORDER BY COUNT(*) DESC`,
			"hist:keys=call_site.sym-offset,bytes_req.buckets=64:vals=bytes_alloc:sort=hitcount.descending if gfp_flags & 1", "events/kmem/kmalloc/trigger"},
		{"GROUP BY a label, ORDER BY a SUM label",
			`SELECT common_pid.execname AS task, SUM(bytes_alloc) AS total, SUM(bytes_req) FROM kmalloc AS k WHERE k.bytes_alloc > 4096 GROUP BY task ORDER BY total DESC, COUNT(*)`,
			"hist:keys=common_pid.execname:vals=bytes_alloc,bytes_req:sort=bytes_alloc.descending,hitcount if bytes_alloc > 4096", "events/kmem/kmalloc/trigger"},
		{"GROUP BY a field with a modifier, system-qualified event",
			`SELECT id.syscall, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY id`,
			"hist:keys=id.syscall", "events/raw_syscalls/sys_enter/trigger"},
		{"string key, counter value, OR filter",
			`SELECT next_comm, CAST(prev_state AS HEX), CAST(prev_prio AS _COUNTER_) FROM sched_switch WHERE next_comm ~ "kworker*" || next_pid == 0`,
			`hist:keys=next_comm,prev_state.hex:vals=prev_prio if next_comm ~ "kworker*" || next_pid == 0`, "events/sched/sched_switch/trigger"},
		{"ORDER BY a key ascending, CPU and execname cast",
			`SELECT CAST(common_pid AS COMM), common_cpu FROM sched_switch ORDER BY common_cpu`,
			"hist:keys=common_pid.execname,common_cpu:sort=common_cpu", "events/sched/sched_switch/trigger"},
		{"dynamic string key", `SELECT name, COUNT(*) FROM irq_handler_entry WHERE name != "timer"`,
			`hist:keys=name if name != "timer"`, "events/irq/irq_handler_entry/trigger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := buildOK(t, embedded(t, "6.1"), tt.sql, Options{})
			if len(plan.Units) != 1 {
				t.Fatalf("%d units, want 1", len(plan.Units))
			}
			u := plan.Units[0]
			if u.Synth != nil || u.End != nil || u.Start.Role != "histogram" {
				t.Errorf("unit is not a histogram: synth %v end %v role %q", u.Synth, u.End, u.Start.Role)
			}
			if diff := cmp.Diff(tt.want, u.Start.Spec()); diff != "" {
				t.Errorf("Spec (-want +got):\n%s", diff)
			}
			if got := u.Start.TriggerFile(); got != tt.wantFile {
				t.Errorf("TriggerFile() = %q, want %q", got, tt.wantFile)
			}
		})
	}
}

// A CREATE VIEW defines a synthetic event that a later statement reads.
func TestViewChain(t *testing.T) {
	sql := `CREATE VIEW wl AS SELECT start.pid, TIMESTAMP_DELTA_USECS AS lat
	          FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid;
	        SELECT pid, lat.log2, COUNT(*) FROM wl WHERE lat > 100`
	plan := buildOK(t, embedded(t, "6.1"), sql, Options{})
	if len(plan.Units) != 2 {
		t.Fatalf("%d units, want 2", len(plan.Units))
	}
	h := plan.Units[1].Start
	got := []string{h.TriggerFile(), h.Spec()}
	want := []string{"events/synthetic/wl/trigger", "hist:keys=pid,lat.log2 if lat > 100"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Planning the same script twice gives the same triggers.
func TestDeterministic(t *testing.T) {
	sql := `CREATE VIEW va AS SELECT start.pid, start.prio + end.next_prio AS s, TIMESTAMP_DELTA AS d
	          FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid;
	        CREATE VIEW vb AS SELECT start.pid, start.prio + end.next_prio AS s, TIMESTAMP_DELTA AS d
	          FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	dump := func() []string {
		var out []string
		for _, u := range buildOK(t, embedded(t, "6.1"), sql, Options{}).Units {
			j := joinOf(u)
			out = append(out, j.Def, j.Start, j.End)
		}
		return out
	}
	first := dump()
	if diff := cmp.Diff(first, dump()); diff != "" {
		t.Errorf("second build differs (-first +second):\n%s", diff)
	}
	// Each view's variables carry its own name, so both coexist on one event.
	want := []string{
		"va pid_t pid; int s; u64 d",
		"hist:keys=pid:va_prio=prio,va_ts=common_timestamp",
		"hist:keys=next_pid:va_s=$va_prio+next_prio,va_d=common_timestamp-$va_ts:onmatch(sched.sched_waking).trace(va,next_pid,$va_s,$va_d)",
		"vb pid_t pid; int s; u64 d",
		"hist:keys=pid:vb_prio=prio,vb_ts=common_timestamp",
		"hist:keys=next_pid:vb_s=$vb_prio+next_prio,vb_d=common_timestamp-$vb_ts:onmatch(sched.sched_waking).trace(vb,next_pid,$vb_s,$vb_d)",
	}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A probe definition longer than a page is refused before it is written.
func TestProbeDefinitionTooLong(t *testing.T) {
	var args []string
	for i := 0; i < 100; i++ {
		args = append(args, fmt.Sprintf("a%02d=+1000(+1000(+1000(+1000(+1000($arg1))))):x64", i))
	}
	sql := "SELECT a00, COUNT(*) FROM kprobe(do_sys_openat2, " + strings.Join(args, ", ") + ")"
	plan, diags := build(t, embedded(t, "6.12"), sql, Options{})
	if plan != nil || len(diags.Errors()) != 1 || !strings.Contains(diags.Errors()[0].Msg, "the kprobe definition is") {
		t.Errorf("plan %v, diagnostics %v", plan != nil, diags)
	}
}
