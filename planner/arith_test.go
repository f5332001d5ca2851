package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

func TestFixedWidth(t *testing.T) {
	tests := []struct {
		size   int
		signed bool
		want   string
	}{
		{1, false, "u8"}, {1, true, "s8"},
		{2, false, "u16"}, {2, true, "s16"},
		{4, false, "u32"}, {4, true, "s32"},
		{8, false, "u64"}, {8, true, "s64"},
		{0, false, ""}, {3, true, ""}, {16, false, ""},
	}
	for _, tt := range tests {
		if got := fixedWidth(tt.size, tt.signed); got != tt.want {
			t.Errorf("fixedWidth(%d, %v) = %q, want %q", tt.size, tt.signed, got, tt.want)
		}
	}
}

func TestNumberFits(t *testing.T) {
	tests := []struct {
		value  uint64
		neg    bool
		signed bool
		want   bool
	}{
		{0, false, false, true},
		{1<<64 - 1, false, false, true}, // kstrtoull takes any u64
		{1, true, false, false},         // -1 for an unsigned field
		{1<<63 - 1, false, true, true},
		{1 << 63, false, true, false}, // one past s64 max
		{1 << 63, true, true, true},   // s64 min
		{1<<63 + 1, true, true, false},
		{5, true, true, true},
	}
	for _, tt := range tests {
		n := &compiler.Number{Value: tt.value, Neg: tt.neg}
		if got := numberFits(n, tt.signed); got != tt.want {
			t.Errorf("numberFits(value %d neg %v, signed %v) = %v, want %v", tt.value, tt.neg, tt.signed, got, tt.want)
		}
	}
}

// field makes a factor of a field on a side.
func field(name string, side int) factor {
	return factor{x: &Expr{Kind: ExprField, Name: name}, typ: vtype{Kernel: "int", Size: 4, Signed: true}, side: side}
}

// chain makes a term of factors joined by ops.
func chain(neg bool, fs []factor, ops ...compiler.Op) term {
	return term{neg: neg, factors: fs, ops: ops}
}

func c(v uint64) factor { return constFactor(v) }

func TestEvalChain(t *testing.T) {
	tests := []struct {
		name   string
		t      term
		want   uint64
		wantOK bool
	}{
		{"one constant", chain(false, []factor{c(7)}), 7, true},
		{"left to right", chain(false, []factor{c(7), c(2), c(3)}, compiler.OpDiv, compiler.OpMul), 9, true},
		{"multiply then divide", chain(false, []factor{c(7), c(3), c(2)}, compiler.OpMul, compiler.OpDiv), 10, true},
		{"wraps like the kernel", chain(false, []factor{c(1 << 63), c(2)}, compiler.OpMul), 0, true},
		{"division by zero", chain(false, []factor{c(7), c(0)}, compiler.OpDiv), 0, false},
	}
	for _, tt := range tests {
		v, ok := evalChain(tt.t)
		if v != tt.want || ok != tt.wantOK {
			t.Errorf("%s: evalChain = %d, %v; want %d, %v", tt.name, v, ok, tt.want, tt.wantOK)
		}
	}
}

// show prints terms as a signed sum, for comparison.
func show(ts []term) []string {
	var out []string
	for _, t := range ts {
		s := "+"
		if t.neg {
			s = "-"
		}
		for i, f := range t.factors {
			if i > 0 {
				s += t.ops[i-1].String()
			}
			s += f.x.String()
		}
		out = append(out, s)
	}
	return out
}

func TestFoldTerms(t *testing.T) {
	x := field("x", 1)
	y := field("y", 0)
	tests := []struct {
		name string
		in   []term
		want []string
	}{
		{"fields untouched", []term{chain(false, []factor{x}), chain(true, []factor{y})}, []string{"+x", "-y"}},
		{"constants added at the end", []term{chain(false, []factor{c(3)}), chain(false, []factor{x}), chain(false, []factor{c(4)})}, []string{"+x", "+7"}},
		{"products of constants evaluated", []term{chain(false, []factor{x, c(2)}, compiler.OpMul), chain(false, []factor{c(3), c(2)}, compiler.OpMul)}, []string{"+x*2", "+6"}},
		{"negative total", []term{chain(false, []factor{x}), chain(true, []factor{c(5)}), chain(false, []factor{c(2)})}, []string{"+x", "-3"}},
		{"zero dropped next to a field", []term{chain(false, []factor{x}), chain(false, []factor{c(1)}), chain(true, []factor{c(1)})}, []string{"+x"}},
		{"zero kept alone", []term{chain(false, []factor{c(1)}), chain(true, []factor{c(1)})}, []string{"+0"}},
		{"division by zero stays", []term{chain(false, []factor{x}), chain(false, []factor{c(1), c(0)}, compiler.OpDiv)}, []string{"+x", "+1/0"}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, show(foldTerms(tt.in))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestDistribute(t *testing.T) {
	x, y := field("x", 1), field("y", 1)
	sum := []term{chain(false, []factor{x}), chain(true, []factor{y, c(3)}, compiler.OpDiv)}
	got := show(distribute(sum, chain(true, []factor{c(2), c(5)}, compiler.OpMul)))
	want := []string{"-x*2*5", "+y/3*2*5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The input is not modified.
	if diff := cmp.Diff([]string{"+x", "-y/3"}, show(sum)); diff != "" {
		t.Errorf("distribute changed its input (-want +got):\n%s", diff)
	}
}

func TestTermSide(t *testing.T) {
	tests := []struct {
		t    term
		want int
	}{
		{chain(false, []factor{c(1)}), -1},
		{chain(false, []factor{field("a", 0), c(2)}, compiler.OpMul), 0},
		{chain(false, []factor{c(2), field("b", 1)}, compiler.OpMul), 1},
		{chain(false, []factor{field("a", 0), field("b", 1)}, compiler.OpMul), 2},
	}
	for _, tt := range tests {
		if got := tt.t.side(); got != tt.want {
			t.Errorf("side of %v = %d, want %d", show([]term{tt.t}), got, tt.want)
		}
	}
}

// synthEvent describes a synthetic event so later statements can read it.
func TestSynthEvent(t *testing.T) {
	s := &Synth{Name: "lat", Fields: []*SynthField{
		{Name: "comm", Type: "char", Array: "[16]"},
		{Name: "name", Type: "char", Array: "[]"},
		{Name: "stack", Type: "unsigned long", Array: "[]"},
		{Name: "pid", Type: "pid_t"},
		{Name: "delta", Type: "u64"},
		{Name: "flags", Type: "gfp_t"},
	}}
	if got, want := s.Definition(), "char comm[16]; char name[]; unsigned long stack[]; pid_t pid; u64 delta; gfp_t flags"; got != want {
		t.Errorf("Definition() = %q, want %q", got, want)
	}
	ev := synthEvent(s, defaultCommonFields(), 8)
	type kind struct {
		Decl   string
		Len    int
		Size   int
		Signed bool
		Kind   tracefs.Kind
	}
	var got []kind
	for _, f := range ev.Fields[4:] {
		got = append(got, kind{f.Decl, f.Len, f.Size, f.Signed, f.Kind})
	}
	want := []kind{
		{"char[16]", 16, 16, false, tracefs.KindString},
		{"__data_loc char[]", 0, 8, false, tracefs.KindDynString},
		{"unsigned long[]", 0, 8, false, tracefs.KindDynArray},
		{"pid_t", 0, 4, true, tracefs.KindInt},
		{"u64", 0, 8, false, tracefs.KindInt},
		{"gfp_t", 0, 4, false, tracefs.KindInt},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	// unsigned long and long are the target's word: 4 bytes on 32-bit arm.
	w := &Synth{Name: "w", Fields: []*SynthField{{Name: "a", Type: "unsigned long"}, {Name: "b", Type: "long"}}}
	for word, want := range map[int]int{8: 8, 4: 4} {
		for _, f := range synthEvent(w, nil, word).Fields {
			if f.Size != want {
				t.Errorf("word %d: %s %s has size %d, want %d", word, f.Decl, f.Name, f.Size, want)
			}
		}
	}
	if diff := cmp.Diff([]string{"common_type", "common_flags", "common_preempt_count", "common_pid", "comm", "name", "stack", "pid", "delta", "flags"}, ev.FieldNames()); diff != "" {
		t.Errorf("FieldNames (-want +got):\n%s", diff)
	}
	if ev.FullName() != "synthetic/lat" {
		t.Errorf("FullName() = %q", ev.FullName())
	}
}

func TestKeySize(t *testing.T) {
	tests := []struct {
		typ  vtype
		want int
	}{
		{vtype{Kind: tracefs.KindString, Size: 16}, 16},
		{vtype{Kind: tracefs.KindString, Size: 20}, 24},
		{vtype{Kind: tracefs.KindDynString, Size: 4}, 256},
		{vtype{Kind: tracefs.KindDynArray, Size: 4}, 128},
		{vtype{Kind: tracefs.KindInt, Size: 4}, 8},
		{vtype{Kind: tracefs.KindPointer, Size: 8}, 8},
	}
	for _, tt := range tests {
		if got := keySize(tt.typ); got != tt.want {
			t.Errorf("keySize(%+v) = %d, want %d", tt.typ, got, tt.want)
		}
	}
}

// regroupWorst is the costliest shape of n operands for regrouping: a sum
// of n/2 fields multiplied by n/2 constants, one at a time, so each
// product is distributed over the whole sum.
func regroupWorst(n int) string {
	sum := strings.Repeat("end.next_pid + ", n/2-1) + "end.prev_pid"
	return "SELECT start.pid, ((" + sum + ")" + strings.Repeat(" * 2", n-n/2) + ") AS x " +
		"FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
}

// At the bound, the worst shape is regrouped and then refused for the
// kernel's operator limit; one operand past it, it is refused before any
// regrouping, at the expression.
func TestRegroupBound(t *testing.T) {
	cat := embedded(t, "6.1")
	_, diags := build(t, cat, regroupWorst(maxOperands), Options{Name: "worst"})
	if len(diags) != 1 || !strings.Contains(diags[0].Msg, "operators; the kernel evaluates at most 3") {
		t.Fatalf("%d operands: %v, want the operator limit", maxOperands, diags)
	}
	sql := regroupWorst(maxOperands + 1)
	_, diags = build(t, cat, sql, Options{Name: "worst"})
	want := fmt.Sprintf("this expression has %d operands; sqlhist regroups at most %d", maxOperands+1, maxOperands)
	if len(diags) != 1 || !strings.Contains(diags[0].Msg, want) {
		t.Fatalf("%d operands: %v, want %q", maxOperands+1, diags, want)
	}
	if got := diags[0].Pos.Offset(); got != strings.Index(sql, "((")+1 {
		t.Errorf("error at offset %d, want the expression's '(' at %d", got, strings.Index(sql, "((")+1)
	}
}

// BenchmarkRegroupWorst plans the worst shape at the bound.
func BenchmarkRegroupWorst(b *testing.B) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		b.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	script, err := compiler.Parse(source.NewSource("q.sql", regroupWorst(maxOperands)))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		Build(script, cat, Options{Name: "worst"})
	}
}
