package planner

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestExprText: expressions render as the kernel reads them, and read
// back to the same values.
func TestExprText(t *testing.T) {
	ts := &Expr{Kind: ExprTimestamp, Mod: "usecs"}
	for _, c := range []struct {
		x    *Expr
		want string
	}{
		{&Expr{Kind: ExprField, Name: "call_site", Mod: "sym-offset"}, "call_site.sym-offset"},
		{&Expr{Kind: ExprField, Name: "bytes", Mod: "buckets", Buckets: 64}, "bytes.buckets=64"},
		{&Expr{Kind: ExprBinary, Op: '-', L: ts, R: &Expr{Kind: ExprVar, Name: "ts0"}}, "common_timestamp.usecs-$ts0"},
		{&Expr{Kind: ExprHitcount, Mod: "percent"}, "hitcount.percent"},
		{&Expr{Kind: ExprStack, Name: "common_stacktrace"}, "common_stacktrace"},
		{&Expr{Kind: ExprField, Name: "stack", Mod: "stacktrace"}, "stack.stacktrace"},
		{&Expr{Kind: ExprCPU, Name: "cpu"}, "cpu"},
		{&Expr{Kind: ExprField, Name: "common_pid", Mod: "execname"}, "common_pid.execname"},
		// a-b*c+d/2: * and / bind tighter, each level left to right.
		{&Expr{Kind: ExprBinary, Op: '+',
			L: &Expr{Kind: ExprBinary, Op: '-', L: &Expr{Kind: ExprField, Name: "a"},
				R: &Expr{Kind: ExprBinary, Op: '*', L: &Expr{Kind: ExprField, Name: "b"}, R: &Expr{Kind: ExprField, Name: "c"}}},
			R: &Expr{Kind: ExprBinary, Op: '/', L: &Expr{Kind: ExprField, Name: "d"}, R: &Expr{Kind: ExprConst, N: 2}}}, "a-b*c+d/2"},
		// x-y-z is (x-y)-z.
		{&Expr{Kind: ExprBinary, Op: '-',
			L: &Expr{Kind: ExprBinary, Op: '-', L: &Expr{Kind: ExprField, Name: "x"}, R: &Expr{Kind: ExprField, Name: "y"}},
			R: &Expr{Kind: ExprField, Name: "z"}}, "x-y-z"},
		{&Expr{Kind: ExprBinary, Op: '-', L: &Expr{Kind: ExprField, Name: "ip", Mod: "sym-offset"}, R: &Expr{Kind: ExprConst, N: 1}}, "ip.sym-offset-1"},
	} {
		if got := c.x.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
		back, err := ParseExpr(c.want)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", c.want, err)
			continue
		}
		if !back.Equal(c.x) {
			t.Errorf("ParseExpr(%q) = %#v, want %#v", c.want, back, c.x)
		}
	}
	if vs := MustExprs("$a+$b*c-$a")[0].Vars(); strings.Join(vs, ",") != "a,b,a" {
		t.Errorf("Vars() = %q, want a,b,a", vs)
	}
}

// TestFilterText: filters render with the parentheses that keep their
// meaning, and read back to the same values.
func TestFilterText(t *testing.T) {
	pred := func(field, cmp string, n uint64) *Filter {
		return &Filter{Op: FilterPred, Field: field, Cmp: cmp, Num: n}
	}
	for _, c := range []struct {
		f    *Filter
		want string
	}{
		{pred("pid", "==", 1), "pid == 1"},
		{&Filter{Op: FilterPred, Field: "prev_state", Cmp: "==", Num: 1, Neg: true}, "prev_state == -1"},
		{&Filter{Op: FilterPred, Field: "COMM", Cmp: "~", Str: "ba*", IsStr: true, Quote: '"'}, `COMM ~ "ba*"`},
		{&Filter{Op: FilterPred, Field: "comm", Cmp: "==", Str: `a"b`, IsStr: true, Quote: '\''}, `comm == 'a"b'`},
		{&Filter{Op: FilterAnd, L: pred("a", "==", 1), R: &Filter{Op: FilterOr, Paren: true, L: pred("b", "==", 2), R: pred("c", "<", 3)}},
			"a == 1 && (b == 2 || c < 3)"},
		{&Filter{Op: FilterNot, L: &Filter{Op: FilterAnd, L: pred("a", "==", 1), R: pred("b", "&", 4)}}, "!(a == 1 && b & 4)"},
		{&Filter{Op: FilterOr, L: &Filter{Op: FilterOr, L: pred("p", "==", 1), R: pred("p", "==", 2)}, R: pred("p", "==", 3)}, "p == 1 || p == 2 || p == 3"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
		back, err := ParseFilter(c.want)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", c.want, err)
			continue
		}
		if !back.Equal(c.f) {
			t.Errorf("ParseFilter(%q) = %#v, want %#v", c.want, back, c.f)
		}
	}
}

// TestActionText: actions render in both forms of trace, and read back
// to the same values.
func TestActionText(t *testing.T) {
	lat := []*Expr{{Kind: ExprField, Name: "next_pid"}, {Kind: ExprVar, Name: "lat"}}
	for _, c := range []struct {
		a    *Action
		want string
	}{
		{&Action{Handler: OnMatch, Match: "sched.sched_waking", Kind: ActTrace, Synth: "wl", Params: lat}, "onmatch(sched.sched_waking).trace(wl,next_pid,$lat)"},
		{&Action{Handler: OnMatch, Match: "sched.sched_waking", Kind: ActTrace, Synth: "wl", OldForm: true, Params: lat}, "onmatch(sched.sched_waking).wl(next_pid,$lat)"},
		{&Action{Handler: OnMax, Track: "m", Kind: ActSave, Params: []*Expr{{Kind: ExprField, Name: "comm"}, {Kind: ExprField, Name: "prio"}}}, "onmax($m).save(comm,prio)"},
		{&Action{Handler: OnChange, Track: "c", Kind: ActSnapshot}, "onchange($c).snapshot()"},
		{&Action{Handler: OnChange, Track: "c", Kind: ActTrace, Synth: "s2"}, "onchange($c).trace(s2)"},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
		back, err := ParseAction(c.want)
		if err != nil {
			t.Errorf("ParseAction(%q): %v", c.want, err)
			continue
		}
		if !back.Equal(c.a) {
			t.Errorf("ParseAction(%q) = %#v, want %#v", c.want, back, c.a)
		}
	}
}

// TestParseErrors: bad text is an error, never a panic.
func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "a+", "$", "x.nosuch", "x.buckets=0", "x.buckets=q", "1z", "a.hex=3"} {
		if x, err := ParseExpr(s); err == nil {
			t.Errorf("ParseExpr(%q) = %v, want an error", s, x)
		}
	}
	for _, s := range []string{"", "a ==", "(a == 1", "a == 1 &&", "== 1", "a 1", `comm == "x`, "a == 1)", "!= 1"} {
		if f, err := ParseFilter(s); err == nil {
			t.Errorf("ParseFilter(%q) = %v, want an error", s, f)
		}
	}
	for _, s := range []string{"", "onmatch", "onmax(v).save(x)", "onmatch(a.b)", "onfoo(a).trace(x)", "onmatch(a.b).trace()", "onmatch(a.b).(x)", "onmax($v).save(a+)"} {
		if a, err := ParseAction(s); err == nil {
			t.Errorf("ParseAction(%q) = %v, want an error", s, a)
		}
	}
}

// TestGoldenPlansReadBack: every probe the golden queries plan renders
// its text from its values, and every trigger they plan (on the
// embedded 6.1 and 5.10 catalogs, as scripts, for --run and for the
// stream engine) holds values that its text reads back to exactly: the
// planner builds the trees the kernel reads from the text, so an engine
// that compiles the values computes what the kernel computes from the
// text.
func TestGoldenPlansReadBack(t *testing.T) {
	paths, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden queries: %v", err)
	}
	cats := map[string]*tracefs.Catalog{}
	for _, k := range []string{"6.1", "5.10"} {
		cats[k] = embedded(t, k)
	}
	hists, probes := 0, 0
	for _, path := range paths {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var sql string
		for _, f := range a.Files {
			if f.Name == "query.sql" {
				sql = string(f.Data)
			}
		}
		if _, err := compiler.Parse(source.NewSource("query.sql", sql)); sql == "" || err != nil {
			continue // a query that fails to parse on purpose
		}
		for k, cat := range cats {
			for _, opt := range []Options{{}, {Run: true}, {Run: true, Stream: true}, {Tasks: []int{7, 8}, TaskFlag: "-p"}} {
				// Planning rewrites the query: each plan gets its own.
				script, _ := compiler.Parse(source.NewSource("query.sql", sql))
				plan, diags := Build(script, cat, opt)
				if diags.Err() != nil || plan == nil {
					continue // a query for other kernels or flags, or one that fails on purpose
				}
				for _, u := range plan.Units {
					for _, pr := range u.Probes {
						probes++
						// Line is written from the values (the golden
						// scripts check its bytes); each argument has
						// its place as a value.
						if got := pr.Definition(); got != pr.Line {
							t.Errorf("%s on %s: probe %s renders from its values as %s", filepath.Base(path), k, pr.Line, got)
						}
						for _, a := range pr.Args {
							if a.Fetch == nil || a.Name == "" {
								t.Errorf("%s on %s: probe %s: argument %+v", filepath.Base(path), k, pr.Line, a)
							}
						}
					}
					for _, h := range []*Hist{u.Start, u.End, u.Results, u.Negatives} {
						if h == nil {
							continue
						}
						hists++
						checkReadBack(t, filepath.Base(path)+" on "+k, h)
					}
				}
			}
		}
	}
	// The golden queries plan some 350 triggers this way: a count far
	// below says the test stopped checking.
	if hists < 250 {
		t.Errorf("only %d triggers checked", hists)
	}
	if probes < 20 {
		t.Errorf("only %d probes checked", probes)
	}
	t.Logf("%d triggers read back, %d probes rendered", hists, probes)
}

func checkReadBack(t *testing.T, name string, h *Hist) {
	t.Helper()
	exprs := append(append([]*Expr{}, h.Keys...), h.Vals...)
	for _, v := range h.Vars {
		exprs = append(exprs, v.Expr)
	}
	for _, a := range h.Actions {
		back, err := ParseAction(a.String())
		if err != nil || !back.Equal(a) {
			t.Errorf("%s: action %s reads back as %#v (%v)", name, a, back, err)
		}
		exprs = append(exprs, a.Params...)
	}
	for _, x := range exprs {
		back, err := ParseExpr(x.String())
		if err != nil || !back.Equal(x) {
			t.Errorf("%s: %s reads back as %s (%v)", name, x, back, err)
		}
	}
	if h.Filter != nil {
		back, err := ParseFilter(h.Filter.String())
		if err != nil || !back.Equal(h.Filter) {
			t.Errorf("%s: filter %s reads back otherwise (%v)", name, h.Filter, err)
		}
	}
	back, err := ParseHist(h.Spec())
	switch {
	case err != nil:
		t.Errorf("%s: ParseHist(%s): %v", name, h.Spec(), err)
	case back.Spec() != h.Spec() || !ExprsEqual(back.Keys, h.Keys) || !ExprsEqual(back.Vals, h.Vals) || !back.Filter.Equal(h.Filter) ||
		len(back.Vars) != len(h.Vars) || len(back.Actions) != len(h.Actions):
		t.Errorf("%s: %s reads back as %s", name, h.Spec(), back.Spec())
	}
}

// TestHistSpec: a trigger's text puts its parts in the kernel's order,
// and the pause attribute before the filter.
func TestHistSpec(t *testing.T) {
	h := &Hist{Keys: MustExprs("pid"), Vals: MustExprs("bytes"), Vars: []Var{{Name: "ts0", Expr: MustExprs("common_timestamp.usecs")[0]}},
		Sort: []string{"bytes.descending"}, Size: 4096, Name: "u", NoHitcount: true,
		Actions: []*Action{{Handler: OnMax, Track: "ts0", Kind: ActSave, Params: MustExprs("comm")}}}
	want := "hist:keys=pid:vals=bytes:ts0=common_timestamp.usecs:sort=bytes.descending:size=4096:name=u:nohitcount:onmax($ts0).save(comm)"
	if got := h.Spec(); got != want {
		t.Errorf("Spec() = %q, want %q", got, want)
	}
	if got := h.PauseSpec(); got != want+":pause" {
		t.Errorf("PauseSpec() = %q", got)
	}
	h.Filter = &Filter{Op: FilterPred, Field: "pid", Cmp: ">", Num: 1}
	if got := h.PauseSpec(); got != want+":pause if pid > 1" {
		t.Errorf("PauseSpec() with a filter = %q", got)
	}
	if got := h.FilterText(); got != "pid > 1" {
		t.Errorf("FilterText() = %q", got)
	}
}

// TestParseHistErrors: text that is no trigger sqlhist writes is an error.
func TestParseHistErrors(t *testing.T) {
	for _, s := range []string{"", "keys=pid", "hist:keys=pid:size=x", "hist:keys=pid:bogus", "hist:keys=pid.nosuch",
		"hist:keys=pid:onmax(v).save(x)", "hist:keys=pid if pid ==", "hist:keys=pid:=x"} {
		if h, err := ParseHist(s); err == nil {
			t.Errorf("ParseHist(%q) = %s, want an error", s, h.Spec())
		}
	}
}
