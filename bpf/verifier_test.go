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
		{"stack", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{{Kind: planner.ExprStack, Name: "common_stacktrace", Mod: "stacktrace"}}},
			"common_stacktrace.stacktrace", "stack trace"},
		{"glob", &Trigger{System: "sched", Event: "sched_switch", Keys: []*planner.Expr{field("next_pid")},
			Filter: strPred("next_comm", "~", "ba*")}, `next_comm ~ "ba*"`, "not compiled"},
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
