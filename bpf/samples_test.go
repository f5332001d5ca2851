package bpf

import (
	"github.com/sqlhist/sqlhist/planner"
)

// Typed plan pieces for the tests.

func field(name string) *planner.Expr { return &planner.Expr{Kind: planner.ExprField, Name: name} }

func fieldMod(name, mod string) *planner.Expr {
	return &planner.Expr{Kind: planner.ExprField, Name: name, Mod: mod}
}

func tsUsecs() *planner.Expr { return &planner.Expr{Kind: planner.ExprTimestamp, Mod: "usecs"} }

func ref(name string) *planner.Expr { return &planner.Expr{Kind: planner.ExprVar, Name: name} }

func bin(l *planner.Expr, op byte, r *planner.Expr) *planner.Expr {
	return &planner.Expr{Kind: planner.ExprBinary, Op: op, L: l, R: r}
}

func hitcount() *planner.Expr { return &planner.Expr{Kind: planner.ExprHitcount} }

func pred(field, cmp string, n uint64) *planner.Filter {
	return &planner.Filter{Op: planner.FilterPred, Field: field, Cmp: cmp, Num: n}
}

func strPred(field, cmp, s string) *planner.Filter {
	return &planner.Filter{Op: planner.FilterPred, Field: field, Cmp: cmp, Str: s, IsStr: true}
}

// wakeupJoin is the wakeup JOIN as -r plans it: SELECT start.pid,
// TIMESTAMP_DELTA_USECS AS lat FROM start AS start JOIN sched_switch AS
// end ON start.pid = end.next_pid, with its results and negatives
// histograms on the synthetic event. filter, when set, is the results'
// extra filter (on the synthetic event's pid).
func wakeupJoin(start string, pidFilter *planner.Filter) ([]*Trigger, []*planner.Synth) {
	synth := &planner.Synth{Name: "wl", Fields: []*planner.SynthField{
		{Name: "pid", Type: "pid_t"}, {Name: "lat", Type: "u64", Unit: "us"}}}
	results := &planner.Filter{Op: planner.FilterPred, Field: "lat", Cmp: "<", Num: 1 << 63}
	if pidFilter != nil {
		results = &planner.Filter{Op: planner.FilterAnd, L: results, R: pidFilter}
	}
	ts := []*Trigger{
		{System: "sched", Event: start, Keys: []*planner.Expr{field("pid")},
			Vars: []Var{{Name: "ts0", Expr: tsUsecs()}}},
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vars: []Var{{Name: "lat0", Expr: bin(tsUsecs(), '-', ref("ts0"))}},
			Actions: []*planner.Action{{Handler: planner.OnMatch, Match: "sched." + start, Kind: planner.ActTrace,
				Synth: "wl", Params: []*planner.Expr{field("next_pid"), ref("lat0")}}}},
		{System: "synthetic", Event: "wl", Keys: []*planner.Expr{field("pid"), fieldMod("lat", "log2")},
			Vals: []*planner.Expr{field("lat")}, Vars: []Var{{Name: "wl_max", Expr: field("lat")}},
			Actions: []*planner.Action{{Handler: planner.OnMax, Track: "wl_max", Kind: planner.ActSave,
				Params: []*planner.Expr{field("lat")}}},
			Filter: results, Size: 8192},
		{System: "synthetic", Event: "wl", Keys: []*planner.Expr{{Kind: planner.ExprCPU, Name: "common_cpu"}},
			Filter: &planner.Filter{Op: planner.FilterPred, Field: "lat", Cmp: ">=", Num: 1 << 63}},
	}
	return ts, []*planner.Synth{synth}
}

// commJoin is a JOIN that carries the start's comm in a string variable
// and the end's next_comm, both into char[16] fields (one written
// char[], as CAST(… AS char[]) does): SELECT start.comm, end.next_comm
// AS comm2, start.pid, TIMESTAMP_DELTA_USECS AS lat.
func commJoin(filter *planner.Filter) ([]*Trigger, []*planner.Synth) {
	synth := &planner.Synth{Name: "wlc", Fields: []*planner.SynthField{
		{Name: "comm", Type: "char", Array: "[16]"}, {Name: "comm2", Type: "char", Array: "[]"},
		{Name: "pid", Type: "pid_t"}, {Name: "lat", Type: "u64", Unit: "us"}}}
	return []*Trigger{
		{System: "sched", Event: "sched_waking", Keys: []*planner.Expr{field("pid")},
			Vars: []Var{{Name: "c_ts", Expr: tsUsecs()}, {Name: "c_comm", Expr: field("comm")}}},
		{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vars: []Var{{Name: "c_lat", Expr: bin(tsUsecs(), '-', ref("c_ts"))}},
			Actions: []*planner.Action{{Handler: planner.OnMatch, Match: "sched.sched_waking", Kind: planner.ActTrace,
				Synth: "wlc", Params: []*planner.Expr{ref("c_comm"), field("next_comm"), field("next_pid"), ref("c_lat")}}}},
		{System: "synthetic", Event: "wlc", Keys: []*planner.Expr{field("comm"), field("comm2"), field("pid")},
			Vals: []*planner.Expr{field("lat")}, Filter: filter},
	}, []*planner.Synth{synth}
}

// syscount counts system calls by number: SELECT id, COUNT(*) FROM
// raw_syscalls.sys_enter.
func syscount() []*Trigger {
	return []*Trigger{{System: "raw_syscalls", Event: "sys_enter", Keys: []*planner.Expr{fieldMod("id", "syscall")},
		Vals: []*planner.Expr{hitcount()}, Sort: []string{"hitcount.descending"}}}
}

// samples are the queries the verifier must take.
func samples() map[string]func() ([]*Trigger, []*planner.Synth) {
	return map[string]func() ([]*Trigger, []*planner.Synth){
		"wakeup-join-waking": func() ([]*Trigger, []*planner.Synth) { return wakeupJoin("sched_waking", nil) },
		"wakeup-join-wakeup": func() ([]*Trigger, []*planner.Synth) { return wakeupJoin("sched_wakeup", nil) },
		"syscount":           func() ([]*Trigger, []*planner.Synth) { return syscount(), nil },
		"comm-join":          func() ([]*Trigger, []*planner.Synth) { return commJoin(nil) },
		"comm-keys": func() ([]*Trigger, []*planner.Synth) {
			// SELECT prev_comm, next_comm, COUNT(*) FROM sched_switch
			// WHERE prev_comm != "swapper/0" AND prev_prio >= -5
			return []*Trigger{{System: "sched", Event: "sched_switch",
				Keys: []*planner.Expr{field("prev_comm"), field("next_comm")}, Vals: []*planner.Expr{hitcount()},
				Filter: &planner.Filter{Op: planner.FilterAnd, L: strPred("prev_comm", "!=", "swapper/0"),
					R: &planner.Filter{Op: planner.FilterPred, Field: "prev_prio", Cmp: ">=", Num: 5, Neg: true}}}}, nil
		},
		"log2-sums": func() ([]*Trigger, []*planner.Synth) {
			// SELECT common_pid.execname, bytes_alloc.log2, SUM(bytes_req),
			// COUNT(*) FROM kmem.kmalloc WHERE COMM == "bash" OR CPU == 1
			return []*Trigger{{System: "kmem", Event: "kmalloc",
				Keys:   []*planner.Expr{fieldMod("common_pid", "execname"), fieldMod("bytes_alloc", "log2")},
				Vals:   []*planner.Expr{hitcount(), field("bytes_req")},
				Filter: &planner.Filter{Op: planner.FilterOr, L: strPred("COMM", "==", "bash"), R: pred("CPU", "==", 1)}}}, nil
		},
		"onchange-save": func() ([]*Trigger, []*planner.Synth) {
			// The prio a task is switched in at, tracked per pid with
			// the task it followed: onchange and onmax, with save.
			return []*Trigger{{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
				Vars: []Var{{Name: "p", Expr: field("next_prio")}, {Name: "q", Expr: field("prev_prio")}},
				Actions: []*planner.Action{
					{Handler: planner.OnChange, Track: "p", Kind: planner.ActSave, Params: []*planner.Expr{field("prev_pid")}},
					{Handler: planner.OnMax, Track: "q", Kind: planner.ActSave, Params: []*planner.Expr{field("prev_pid"), field("next_prio")}}}}}, nil
		},
		"dynstring-buckets": func() ([]*Trigger, []*planner.Synth) {
			// SELECT filename, COUNT(*) FROM sched_process_exec (a
			// __data_loc string key), and buckets of a pid.
			return []*Trigger{
				{System: "sched", Event: "sched_process_exec", Keys: []*planner.Expr{field("filename")}, Size: 100},
				{System: "sched", Event: "sched_process_exec",
					Keys:   []*planner.Expr{{Kind: planner.ExprField, Name: "pid", Mod: "buckets", Buckets: 100}},
					Vals:   []*planner.Expr{bin(field("pid"), '/', field("old_pid"))},
					Filter: strPred("filename", "==", "/bin/true")},
			}, nil
		},
	}
}
