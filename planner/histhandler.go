package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
)

// -m VAR and -c VAR on a histogram query (no JOIN): the kernel's handlers
// on one event, as its selftests and histogram.rst write them
// ("hist:keys=comm:newprio=prio:onchange($newprio).save(comm,prio)",
// "…:onchange($cwnd).save(snd_wnd,srtt,rcv_wnd):onchange($cwnd).snapshot()").
// VAR names a numeric field of the event (or a selected item's label);
// -S saves fields of the event with each new maximum or change, -s
// snapshots the trace buffer then. Alone, -m/-c save VAR itself, so that
// each entry shows its maximum or last value. There is no synthetic event
// to trace: -T is refused.

// histHandler adds the -m/-c handler to a histogram's trigger and the
// columns --run shows: the tracked value, then the saved fields.
func (p *planner) histHandler(q *compiler.Query, h *Hist, labels map[string]compiler.Expr) {
	o := p.opt
	handler, flag, name := "onmax", 'm', o.OnMax
	if o.OnChange != "" {
		handler, flag, name = "onchange", 'c', o.OnChange
	}
	if name == "" {
		return
	}
	if o.Trace {
		x := p.diags.Add(q.Pos, q.End, "-T traces the synthetic event of a JOIN when %s %s; a histogram has none", name, map[string]string{"onmax": "reaches a new maximum", "onchange": "changes"}[handler])
		x.Hint = "use -s to snapshot the trace buffer, or -S F1,F2 to save fields, with each new value"
		return
	}
	if !p.feat.OnChange && (handler == "onchange" || o.Snapshot) {
		what, id := "onchange()", "onchange"
		if handler == "onmax" {
			what, id = "the snapshot() action (-s)", "snapshot-action"
		}
		p.diags.Add(q.Pos, q.End, "%s", p.feat.Lacks(what, id))
		return
	}
	ev := p.r.sides[0].ev
	field := name
	if e, ok := labels[name]; ok {
		if f, isField := compiler.Unparen(e).(*compiler.Field); isField {
			if r := p.quietField(f); r != nil {
				field = r.name
			}
		}
	}
	r := lookupField(ev, field)
	if r == nil || r.pseudo {
		errUnknownField(p.diags, source.NoPos, source.NoPos, name, ev.FullName()+" (-"+string(flag)+")", ev.FieldNames())
		return
	}
	if !r.typ.isNumeric() || r.typ.Signed && handler == "onmax" {
		p.diags.Add(source.NoPos, source.NoPos, "-%c %s: %s() needs a number, and onmax() compares as unsigned 64-bit; %s is %s", flag, name, handler, field, r.typ.Kernel)
		return
	}
	for _, a := range h.Actions {
		if a.Handler == OnMax {
			x := p.diags.Add(source.NoPos, source.NoPos, "-%c %s and MAX() on one histogram: each needs a save(), and the kernel takes one save() per trigger", flag, name)
			x.Hint = "drop MAX() and use -" + string(flag) + " " + name + " alone, which shows each entry's value"
			return
		}
	}
	save := o.Save
	if len(save) == 0 && !o.Snapshot {
		save = []string{field}
	}
	for _, f := range save {
		if ev.Field(f) == nil {
			errUnknownField(p.diags, source.NoPos, source.NoPos, f, ev.FullName()+" (-S)", ev.FieldNames())
			return
		}
	}
	base := "max_"
	if handler == "onchange" {
		base = "last_"
	}
	v := p.histVar(h, base+field)
	h.Vars = append(h.Vars, Var{Name: v, Expr: &Expr{Kind: ExprField, Name: field}})
	hd := OnMax
	if handler == "onchange" {
		hd = OnChange
	}
	kind, label := ColMax, "max("+field+")"
	if handler == "onchange" {
		kind, label = ColChanged, "last("+field+")"
	}
	h.Columns = append(h.Columns, Column{Label: label, Kind: kind})
	if len(save) > 0 {
		a := &Action{Handler: hd, Track: v, Kind: ActSave}
		for _, f := range save {
			a.Params = append(a.Params, &Expr{Kind: ExprField, Name: f})
		}
		h.Actions = append(h.Actions, a)
		for i, f := range save {
			if len(o.Save) > 0 { // alone, the saved field is the tracked value
				h.Columns = append(h.Columns, Column{Label: "saved(" + f + ")", Kind: ColSaved, Index: i})
			}
		}
	}
	if o.Snapshot {
		h.Actions = append(h.Actions, &Action{Handler: hd, Track: v, Kind: ActSnapshot})
	}
}
