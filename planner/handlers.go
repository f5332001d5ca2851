package planner

import (
	"github.com/sqlhist/sqlhist/source"
)

// handlerActions adds to the end trigger what -S, -T and -s ask of the
// handler h ("onmax($v)."), as libtracefs 1.8.1's sqlhist prints them:
// one handler clause per action, in the order save, trace, snapshot
// (-T is trace and snapshot, so that the snapshot holds the event the
// trace fired). Any of them replaces the onmatch that otherwise fires the
// synthetic event on every match: with -s or -S alone it never fires.
func (js *joinState) handlerActions(h *Action, o Options, call func(*Action) *Action) {
	// each is a copy of the handler h for one action.
	each := func() *Action {
		c := *h
		return &c
	}
	if len(o.Save) > 0 {
		end := js.p.r.sides[1].ev
		for _, f := range o.Save {
			if end.Field(f) == nil {
				errUnknownField(js.p.diags, source.NoPos, source.NoPos, f, end.FullName()+" (-S)", end.FieldNames())
			}
		}
		a := each()
		a.Kind = ActSave
		for _, f := range o.Save {
			a.Params = append(a.Params, &Expr{Kind: ExprField, Name: f})
		}
		js.end.Actions = append(js.end.Actions, a)
	}
	if o.Trace {
		js.end.Actions = append(js.end.Actions, call(each()))
	}
	if o.Trace || o.Snapshot {
		a := each()
		a.Kind = ActSnapshot
		js.end.Actions = append(js.end.Actions, a)
	}
	if o.Run && !o.Trace {
		x := js.p.diags.Add(source.NoPos, source.NoPos, "with -s or -S and no -T, nothing fires the synthetic event %s: --run will show no rows", js.name)
		x.Hint = "add -T to fire it on each new value (with a snapshot), or leave out -m/-c"
		x.Warning = true
	}
}

// warnHandlerAlone says that -m/-c without -s, -S or -T adds nothing:
// libtracefs's sqlhist prints the plain onmatch then, and so does
// sqlhist, so that its scripts run unchanged.
func warnHandlerAlone(d *source.Diags, handler, hvar string) {
	x := d.Add(source.NoPos, source.NoPos, "-%c %s does nothing without -s, -S or -T: the synthetic event fires on every match, as with libtracefs's sqlhist", handler[2], hvar)
	when := map[string]string{"onmax": " reaches a new maximum", "onchange": " changes"}[handler]
	x.Hint = "-T fires it only when " + hvar + when + " (and snapshots the trace buffer), -s only snapshots then, -S F1,F2 only saves end fields then"
	x.Warning = true
}
