package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/tracefs"
)

// SELECT … FROM a UNION ALL SELECT … FROM b: one histogram map that the
// hist triggers of both events write to, shared through name=. The kernel
// shares a named map only between triggers whose keys and values match in
// name, size and signedness ("Named hist trigger doesn't match existing
// named trigger"); each event keeps its own filter. Each SELECT is a unit
// of its own (so printing, -e, teardown and bootconfig need nothing
// special); --run reads the first, whose hist file shows the shared map.

// unionSteps returns a step per SELECT of a UNION ALL, all sharing one
// histogram name; nil after a diagnostic.
func (p *planner) unionSteps(q *compiler.Query) []*step {
	all := append([]*compiler.Query{q}, q.Union...)
	ok := true
	for _, b := range all {
		if b.Join != nil {
			x := p.diags.Add(b.JoinPos, b.JoinPos, "UNION ALL combines histograms of single events: a SELECT of it cannot JOIN")
			x.Hint = "CREATE VIEW the JOIN, then SELECT … FROM the view UNION ALL SELECT …"
			ok = false
		}
	}
	if !ok {
		return nil
	}
	name := p.unionName(q)
	var steps []*step
	for i, b := range all {
		steps = append(steps, &step{q: b, first: true, feeds: i > 0, shared: name})
	}
	return steps
}

// unionName names the shared histogram after the first event: unique in
// the script, suffixed as derived names are in a run (named maps are
// global to the kernel, not per instance).
func (p *planner) unionName(q *compiler.Query) string {
	base := q.From.Name.Parts[len(q.From.Name.Parts)-1].Name + "_union"
	if p.shared == nil {
		p.shared = map[string]*Hist{}
	}
	name := p.suffixed(base)
	for i := 2; ; i++ {
		if _, taken := p.shared[name]; !taken {
			break
		}
		name = p.suffixed(fmt.Sprintf("%s%d", base, i))
	}
	p.shared[name] = nil
	return name
}

// share names a UNION ALL branch's histogram and checks it against the
// first branch's: the same keys and values, of the same sizes and
// signedness, so that the kernel lets them share one map.
func (p *planner) share(u *Unit, name string) {
	h := u.Start
	if h == nil {
		return
	}
	h.Name = name
	first := p.shared[name]
	if first == nil {
		p.shared[name] = h
		return
	}
	h.Columns = first.Columns
	if !ExprsEqual(h.Keys, first.Keys) || !ExprsEqual(h.Vals, first.Vals) || !slices.Equal(h.Sort, first.Sort) {
		x := p.diags.Add(h.Pos, h.End, "UNION ALL shares one histogram: this SELECT gives keys=%s vals=%s, the first keys=%s vals=%s",
			strings.Join(ExprStrings(h.Keys), ","), strings.Join(ExprStrings(h.Vals), ","), strings.Join(ExprStrings(first.Keys), ","), strings.Join(ExprStrings(first.Vals), ","))
		x.Hint = "select the same fields, with the same modifiers, in the same order in every SELECT (the events must have fields of those names)"
		return
	}
	a, aerr := p.cat.Event(first.System, first.Event)
	b, berr := p.cat.Event(h.System, h.Event)
	if aerr != nil || berr != nil {
		return
	}
	for _, f := range append(append([]*Expr{}, h.Keys...), h.Vals...) {
		if f.Kind != ExprField {
			continue // common_* and other pseudo-fields are alike everywhere
		}
		name := f.Name
		fa, fb := a.Field(name), b.Field(name)
		if fa == nil || fb == nil {
			continue // common_* and other pseudo-fields are alike everywhere
		}
		if fa.Size != fb.Size || fa.Signed != fb.Signed || fa.Kind != fb.Kind {
			x := p.diags.Add(h.Pos, h.End, "UNION ALL shares one histogram: %s is %s in %s but %s in %s, and the kernel shares a map only between fields of one size and signedness",
				name, fieldDesc(fb), b.FullName(), fieldDesc(fa), a.FullName())
			x.Hint = "select fields of the same type from every event"
			return
		}
	}
}

func fieldDesc(f *tracefs.Field) string {
	sign := "unsigned"
	if f.Signed {
		sign = "signed"
	}
	return fmt.Sprintf("%s (%d bytes, %s)", f.Decl, f.Size, sign)
}
