package emit

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestCheckBootconfig: the parser finds what lib/bootconfig.c refuses
// among the rules a concatenation can break, and accepts the rest.
func TestCheckBootconfig(t *testing.T) {
	for _, tt := range []struct{ text, err string }{
		{"a = 1\nb = 2\n", ""},
		{"a = 1\na = 2\n", "line 2: Value is redefined: a"},
		{"ftrace.buffer_size = 1408K\n\nftrace.buffer_size = 1408K\n", "line 3: Value is redefined: ftrace.buffer_size"},
		{"ftrace.buffer_size += 1408K\nftrace.buffer_size += 1408K\n", ""},
		{"a := 1\na := 2\n", ""},
		{"a += 1\na = 2\n", "Value is redefined: a"},
		// tools/bootconfig/samples/bad-samekey.bconf
		{"key {\n\tfoo = value\n\tbar = value2\n}\nkey.foo = value\n", "line 5: Value is redefined: key.foo"},
		{"x { y { z = 1 } }\nx.y { z = 2 }\n", "Value is redefined: x.y.z"},
		{"x { y = 'a = b # c', \"d; }\"\n}\nx.z = 1\n", ""},
		{"a = 1, # comment\n  2\nb = 3\n", ""},
		{"a { b = 1\n", "brace of a is not closed"},
		{"}\n", "unexpected closing brace"},
		{"a + 1\n", "wrong '+' operator"},
		{"a.enable\na.enable\n", ""},
	} {
		err := CheckBootconfig(tt.text)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("CheckBootconfig(%q) = %v, want no error", tt.text, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("CheckBootconfig(%q) = %v, want %q", tt.text, err, tt.err)
		}
	}
}

func wakeupPlan(name, start, end string) *planner.Plan {
	s := &planner.Synth{Name: name, Fields: []*planner.SynthField{{Name: "lat", Type: "u64"}}}
	sys, ev, _ := strings.Cut(start, ".")
	esys, eev, _ := strings.Cut(end, ".")
	st := &planner.Hist{System: sys, Event: ev, Role: "start", Keys: planner.MustExprs("pid"), Vars: []planner.Var{{Name: name + "_ts", Expr: planner.MustExprs("common_timestamp.usecs")[0]}}}
	en := hist(esys, eev, "end", []string{"pid"}, "onmatch("+start+").trace("+name+",$"+name+"_lat)")
	en.Vars = []planner.Var{{Name: name + "_lat", Expr: planner.MustExprs("common_timestamp.usecs-$" + name + "_ts")[0]}}
	return &planner.Plan{Units: []*planner.Unit{{Synth: s, Start: st, End: en}}}
}

type bootOut struct {
	text string
	cmds []Command
	opt  BootOptions
}

func bootText(t *testing.T, p *planner.Plan, release string) bootOut {
	t.Helper()
	opt := BootOptions{Release: release, Features: tracefs.Features{Buckets: true, ReturnSuffix: true}}
	cmds := BootCommands(p, Options{})
	opt.Header = BootHeader(nil, opt, cmds, nil)
	text, diags := Bootconfig(cmds, opt)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	return bootOut{text, cmds, opt}
}

func merge(old string, b bootOut) (string, bool, error) {
	return MergeBootconfig(old, b.text, b.cmds, b.opt)
}

// TestBootconfigsConcatenate: two queries' bootconfigs with triggers on
// the same events, concatenated, parse as the kernel's parser does (each
// has the buffer size, and hist triggers on sched_waking and
// sched_switch), in the hist subkeys form and the actions form (5.10).
func TestBootconfigsConcatenate(t *testing.T) {
	for _, release := range []string{"6.1.0", "5.10.262"} {
		ba := bootText(t, wakeupPlan("wa", "sched.sched_waking", "sched.sched_switch"), release)
		bb := bootText(t, wakeupPlan("wb", "sched.sched_waking", "sched.sched_switch"), release)
		a, b := ba.text, bb.text
		for _, text := range []string{a, b} {
			if err := CheckBootconfig(text); err != nil {
				t.Errorf("%s: %v\n%s", release, err, text)
			}
		}
		if err := CheckBootconfig(a + b); err != nil {
			t.Errorf("%s: two bootconfigs concatenated: %v\n%s", release, err, a+b)
		}
		if !strings.Contains(a, "ftrace.buffer_size += 1408K\n") {
			t.Errorf("%s: no buffer_size += 1408K:\n%s", release, a)
		}
		merged, same, err := merge(a, bb)
		if err != nil || same || merged != a+"\n"+b {
			t.Errorf("%s: MergeBootconfig: same %v, err %v", release, same, err)
		}
		if m, same, err := merge(merged, ba); err != nil || !same || m != merged {
			t.Errorf("%s: merging a bootconfig already there: same %v, err %v", release, same, err)
		}
		if m, same, err := merge(merged, bb); err != nil || !same || m != merged {
			t.Errorf("%s: merging the second bootconfig again: same %v, err %v", release, same, err)
		}
	}
}

// TestMergeBootconfigOrder: a query whose groups an earlier bootconfig
// puts in the other order is refused (the kernel applies a group where it
// first appears), one that fits is added.
func TestMergeBootconfigOrder(t *testing.T) {
	old := bootText(t, wakeupPlan("wa", "g2.a", "g1.b"), "6.1.0").text
	fits := bootText(t, wakeupPlan("wb", "g2.c", "g1.d"), "6.1.0")
	if _, _, err := merge(old, fits); err != nil {
		t.Errorf("a query in the same group order: %v", err)
	}
	// Events of groups old has in the other order, whose order does not
	// matter (a histogram on each): added.
	free := &planner.Plan{Units: []*planner.Unit{{Start: hist("g1", "e", "histogram", []string{"pid"})}, {Start: hist("g2", "f", "histogram", []string{"pid"})}}}
	if _, _, err := merge(old, bootText(t, free, "6.1.0")); err != nil {
		t.Errorf("independent events in the other group order: %v", err)
	}
	// A start on g1 and its end on g2: old has g2 first.
	_, _, err := merge(old, bootText(t, wakeupPlan("wc", "g1.c", "g2.d"), "6.1.0"))
	if err == nil || !strings.Contains(err.Error(), "this query needs ftrace.event.g1.c applied before ftrace.event.g2.d") {
		t.Errorf("a query needing the other group order: %v", err)
	}
	if _, _, err := merge("kernel.console = ttyS0\n", fits); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Errorf("a foreign bootconfig: %v", err)
	}
}
