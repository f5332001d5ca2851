package bpf

import "github.com/sqlhist/sqlhist/planner"

// FromHists converts planner.Hist values into Triggers (the lead's
// stand-in until the engine's own lands).
func FromHists(hs []*planner.Hist) []*Trigger {
	var out []*Trigger
	for _, h := range hs {
		t := &Trigger{System: h.System, Event: h.Event, Keys: h.Keys, Vals: h.Vals, Actions: h.Actions,
			Filter: h.Filter, Size: h.Size, Name: h.Name, Sort: h.Sort, NoHitcount: h.NoHitcount}
		for _, v := range h.Vars {
			t.Vars = append(t.Vars, Var{Name: v.Name, Expr: v.Expr})
		}
		out = append(out, t)
	}
	return out
}
