package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The aggregates a histogram computes besides COUNT(*) and SUM: MAX(x),
// which the kernel keeps per entry through an onmax() handler on a
// variable holding x, and the count shown as a percentage or a bar
// (CAST(COUNT(*) AS PERCENT|GRAPH), hitcount.percent and hitcount.graph).

// maxItem lowers MAX(field): a variable per entry and onmax($v).save(field),
// whose "max:" line under each entry is the largest value seen. MIN has no
// kernel counterpart.
func (p *planner) maxItem(c *compiler.Call) *histItem {
	if c.Func == "MIN" {
		x := p.diags.Add(c.Pos, c.End, "MIN is not supported: the kernel tracks a maximum per entry (onmax) and a last value (onchange), but has no onmin")
		x.Hint = "MAX(field) gives the largest value; to find small ones, key by CAST(field AS LOG2) and read the lowest bucket"
		return nil
	}
	if len(c.Args) != 1 || c.Star {
		p.diags.Add(c.Pos, c.End, "MAX takes one field")
		return nil
	}
	f, ok := compiler.Unparen(c.Args[0]).(*compiler.Field)
	if !ok {
		pos, end := c.Args[0].Span()
		p.diags.Add(pos, end, "MAX takes a field")
		return nil
	}
	r := p.r.field(f)
	if r == nil {
		return nil
	}
	switch {
	case r.pseudo:
		p.diags.Add(c.Pos, c.End, "MAX takes an event field; %s is computed by the kernel and cannot be saved with the maximum", r.name)
		return nil
	case !r.typ.isNumeric():
		p.diags.Add(c.Pos, c.End, "%s is a %s; MAX needs a number", r.name, r.typ.Kind)
		return nil
	case r.typ.Signed:
		x := p.diags.Add(c.Pos, c.End, "%s is signed (%s), and the kernel's onmax() compares values as unsigned 64-bit numbers: a negative value would count as the largest", r.name, r.typ.Kernel)
		x.Hint = "MAX works on unsigned fields"
		return nil
	case r.mod != "":
		p.diags.Add(c.Pos, c.End, "MAX takes a field without a modifier (.%s)", r.mod)
		return nil
	}
	return &histItem{x: &Expr{Kind: ExprField, Name: r.name}, sort: r.name, max: true, typ: r.typ, field: r.name, pos: c.Pos, end: c.End}
}

// addMax puts MAX(field) on the histogram: a variable holding the field
// and onmax($var).save(field). The kernel takes one save() per trigger,
// so one MAX (or -S) per histogram.
func (p *planner) addMax(h *Hist, it *histItem) {
	for _, a := range h.Actions {
		if a.Handler == OnMax {
			p.diags.Add(it.pos, it.end, "one MAX per histogram: each needs an onmax().save(), and the kernel takes one save() per trigger")
			return
		}
	}
	v := p.histVar(h, "max_"+it.field)
	h.Vars = append(h.Vars, Var{Name: v, Expr: &Expr{Kind: ExprField, Name: it.field}})
	h.Actions = append(h.Actions, &Action{Handler: OnMax, Track: v, Kind: ActSave, Params: []*Expr{{Kind: ExprField, Name: it.field}}})
}

// histVar names a variable of a histogram trigger: distinct from the
// event's fields, hist keywords and the variables other triggers of this
// script define on the same event (the kernel refuses a name defined twice
// on one event).
func (p *planner) histVar(h *Hist, base string) string {
	key := h.Instance + "/" + h.System + "/" + h.Event
	if p.evVars == nil {
		p.evVars = map[string]*varNames{}
	}
	v := p.evVars[key]
	if v == nil {
		var evs []*tracefs.Event
		if ev, err := p.cat.Event(h.System, h.Event); err == nil {
			evs = append(evs, ev)
		}
		v = newVarNames(evs...)
		p.evVars[key] = v
	}
	return v.take(base)
}

// displayItem lowers CAST(COUNT(*) AS PERCENT|GRAPH), the count of each
// entry as its share of all hits or as a bar scaled to the largest
// (hitcount.percent and hitcount.graph, 6.2), and CAST(SUM(x) AS
// PERCENT|GRAPH) (or CAST(x AS …)), the entry's sum of x as its share of
// x's total or as a bar (x.percent and x.graph: 6.1, from its README's
// .percent; seen in 6.1, 6.12 and 7.2 on x86-64).
func (p *planner) displayItem(x *compiler.Cast) (*histItem, bool) {
	if x.Target != "PERCENT" && x.Target != "GRAPH" {
		return nil, false
	}
	mod := "percent"
	if x.Target == "GRAPH" {
		mod = "graph"
	}
	if x.HasArg {
		p.diags.Add(x.TargetPos, x.TargetEnd, "%s takes no argument", x.Target)
		return nil, true
	}
	arg := compiler.Unparen(x.X)
	if c, ok := arg.(*compiler.Call); ok && c.Func == "COUNT" && c.Star {
		if !p.feat.HistDisplay {
			p.diags.Add(x.Pos, x.End, "%s", p.feat.Lacks("CAST(COUNT(*) AS "+x.Target+") (hitcount."+mod+")", "hist-display"))
			return nil, true
		}
		return &histItem{x: &Expr{Kind: ExprHitcount, Mod: mod}, sort: "hitcount", value: true, display: mod, field: "hitcount", pos: x.Pos, end: x.End}, true
	}
	if c, ok := arg.(*compiler.Call); ok && c.Func == "SUM" && len(c.Args) == 1 {
		arg = compiler.Unparen(c.Args[0])
	}
	f, ok := arg.(*compiler.Field)
	if !ok {
		xd := p.diags.Add(x.Pos, x.End, "CAST(… AS %s) applies to COUNT(*) or to the sum of a field: the kernel shows .%s on the count and on a summed field, not on an expression", x.Target, mod)
		xd.Hint = "write CAST(COUNT(*) AS " + x.Target + ") or CAST(SUM(field) AS " + x.Target + ")"
		return nil, true
	}
	r := p.r.field(f)
	if r == nil {
		return nil, true
	}
	switch {
	case r.pseudo:
		p.diags.Add(x.Pos, x.End, "CAST(… AS %s) takes COUNT(*) or the sum of an event's field; %s is computed by the kernel", x.Target, r.name)
		return nil, true
	case !r.typ.isNumeric():
		p.diags.Add(x.Pos, x.End, "CAST(… AS %s): %s is %s; only numbers are summed", x.Target, r.name, r.typ.Kernel)
		return nil, true
	case r.mod != "":
		p.diags.Add(x.Pos, x.End, "%s already carries the modifier .%s; the kernel takes one modifier per field", r.name, r.mod)
		return nil, true
	case !p.feat.ValueDisplay:
		what := "CAST(SUM(" + r.name + ") AS " + x.Target + ") (" + r.name + "." + mod + ")"
		msg := p.feat.Lacks(what, "value-display")
		if p.feat.ValueDisplayNote != "" {
			msg = what + ": " + p.feat.ValueDisplayNote + "; " + p.feat.Target()
		}
		xd := p.diags.Add(x.Pos, x.End, "%s", msg)
		xd.Hint = "select SUM(" + r.name + ") (each entry's sum), or run the query with -r --engine stream, which computes the share itself"
		return nil, true
	}
	return &histItem{x: &Expr{Kind: ExprField, Name: r.name, Mod: mod}, sort: r.name, value: true, display: mod, typ: r.typ, field: r.name, pos: x.Pos, end: x.End}, true
}

// noHitcount hides the raw count when the SELECT shows the count only as
// a percentage or a bar (nohitcount, 6.2, the release of hitcount.percent
// and hitcount.graph).
func (p *planner) noHitcount(h *Hist, items []*histItem) {
	display, count := false, false
	for _, it := range items {
		display = display || it.display != ""
		count = count || it.count
	}
	if display && !count && p.feat.NoHitcount {
		h.NoHitcount = true
	}
}
