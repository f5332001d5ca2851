package bpf

import (
	"errors"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// catalog opens an embedded catalog.
func catalog(t *testing.T, version string) *tracefs.Catalog {
	t.Helper()
	fsys, err := tracefs.Embedded(version)
	if err != nil {
		t.Fatal(err)
	}
	return tracefs.Open(fsys)
}

// canLoad says why this process cannot load BPF programs, or "".
func canLoad() string {
	if os.Geteuid() != 0 {
		return "not root: loading BPF programs needs CAP_BPF and CAP_PERFMON"
	}
	// As Load does: kernels before 5.11 charge BPF memory to the user's
	// RLIMIT_MEMLOCK (a child's maps, still being freed, count).
	liftMemlock()
	spec := &ebpf.ProgramSpec{Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		return "the kernel refuses a trivial tracepoint program: " + err.Error()
	}
	p.Close()
	return ""
}

// TestVerifier compiles each sample query against the embedded catalogs
// and loads its programs into this host's verifier.
func TestVerifier(t *testing.T) {
	why := canLoad()
	names := make([]string, 0, len(samples()))
	for n := range samples() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, version := range []string{"5.10", "6.1", "6.12", "7.2"} {
		cat := catalog(t, version)
		for _, name := range names {
			t.Run(version+"/"+name, func(t *testing.T) {
				ts, synths := samples()[name]()
				e, err := New(ts, synths, cat.Event, Options{})
				if err != nil {
					t.Fatalf("compile: %v", err)
				}
				if len(e.Events()) == 0 {
					t.Fatal("no programs")
				}
				if why != "" {
					t.Skip("compiled; not loaded: " + why)
				}
				if err := e.Load(); err != nil {
					t.Fatalf("load: %v", err)
				}
				if _, err := e.Stop(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestRefusals checks that what the engine cannot compile is refused,
// naming the expression.
func TestRefusals(t *testing.T) {
	cat := catalog(t, "6.1")
	cases := []struct {
		name string
		tr   *Trigger
		what string
		want string
	}{
		{"flags", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("common_flags")}},
			"common_flags", "first 8 bytes"},
		{"var-key", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{ref("x")},
			Vars: []Var{{Name: "x", Expr: field("prev_prio")}}}, "$x", "variable in a key"},
		{"glob", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Filter: strPred("next_comm", "~", "*ba")}, `next_comm ~ "*ba"`, "not compiled"},
		{"snapshot", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vars:    []Var{{Name: "p", Expr: field("prev_prio")}},
			Actions: []*planner.Action{{Handler: planner.OnMax, Track: "p", Kind: planner.ActSnapshot}}},
			"onmax($p).snapshot()", "snapshot"},
		{"undefined", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vars: []Var{{Name: "l", Expr: bin(tsUsecs(), '-', ref("nope"))}}}, "$nope", "defined by no trigger"},
		{"string-value", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Vals: []*planner.Expr{field("next_comm")}}, "next_comm", "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New([]*Trigger{c.tr}, nil, cat.Event, Options{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if e.What != c.what || !strings.Contains(e.Reason, c.want) {
				t.Errorf("got what %q reason %q; want %q and %q", e.What, e.Reason, c.what, c.want)
			}
		})
	}
}

// TestVerifierRefusal loads a program the verifier refuses (a field the
// format puts beyond the bytes a tracepoint's record may have (PERF_MAX_TRACE_SIZE, 8192)) and
// checks that the refusal names the trigger and the expression, with the
// verifier's own lines.
func TestVerifierRefusal(t *testing.T) {
	if why := canLoad(); why != "" {
		t.Skip("cannot load BPF programs here: " + why)
	}
	ev, err := tracefs.ParseFormat("test", `name: far
ID: 1
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;
	field:int near;	offset:8;	size:4;	signed:1;
	field:u64 far;	offset:16384;	size:8;	signed:0;

print fmt: "%d", REC->near
`)
	if err != nil {
		t.Fatal(err)
	}
	format := func(system, event string) (*tracefs.Event, error) { return ev, nil }
	ts := []*Trigger{
		{System: "test", Event: "far", Keys: []*planner.Expr{field("near")}},
		{System: "test", Event: "far", Keys: []*planner.Expr{field("near")}, Vals: []*planner.Expr{field("far")}},
	}
	e, err := New(ts, nil, format, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Load()
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want the verifier's refusal as an *Error", err)
	}
	if be.Trigger != 1 || be.What != "far" || be.Event != "test/far" || len(be.Log) == 0 {
		t.Errorf("refusal names trigger %d, %q on %s, log %q; want trigger 1, \"far\" on test/far and the log", be.Trigger, be.What, be.Event, be.Log)
	}
	t.Logf("%v", err)
}
