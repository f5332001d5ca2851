package planner

import (
	"fmt"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Limits from the kernel's tracing_map.h and trace_events_hist.c.
const (
	maxKeys    = 3
	maxVals    = 2 // besides hitcount
	maxVars    = 16
	maxKeySize = 384
)

// joinState is the lowering of one JOIN statement in progress.
type joinState struct {
	p          *planner
	q          *compiler.Query
	name       string
	start, end *Hist
	names      *varNames
	label      string // label of the item being lowered
	memo       map[compiler.Expr]exprInfo
	startReads int // how many start variables the end trigger reads
	// keyTwin maps a start key field to the end field it is joined with,
	// when both have the same type: the end trigger has the same value in
	// its own field, so the start trigger need not save it.
	keyTwin map[string]*ref
}

// operand is a lowered value: what a trace() parameter says ($var or a
// field of the end event) and the type the kernel gives it.
type operand struct {
	x   *Expr
	typ vtype
}

func (p *planner) join(q *compiler.Query, u *Unit, names map[string]bool) {
	if !p.feat.SyntheticEvents {
		x := p.diags.Add(q.JoinPos, q.JoinPos, "%s", p.feat.Lacks("a JOIN creates a synthetic event, which", "synthetic-events")+" (and CONFIG_SYNTH_EVENTS)")
		x.Hint = "a query without JOIN (a histogram) works on this kernel"
		return
	}
	fromSide, joinSide := p.r.sides[0], p.r.sides[1]
	name, npos, nend := p.synthName(q, fromSide.ev, joinSide.ev)
	if !p.checkName("synthetic event name", name, npos, nend) {
		return
	}
	if len(name) < 2 && p.feat.TraceAction {
		// The kernel parses trace(NAME, …)'s NAME as a parameter, and
		// refuses parameters shorter than two characters (e2e/FINDINGS.md).
		x := p.diags.Add(npos, nend, "synthetic event name %q is one character; the kernel refuses it in trace(%s,…) (\"Invalid action param\")", name, name)
		x.Hint = "use a name of two characters or more"
		return
	}
	if names[name] {
		p.diags.Add(npos, nend, "synthetic event %q is defined twice in this script", name)
		return
	}
	names[name] = true
	if _, err := p.cat.Event("synthetic", name); err == nil && !p.opt.Teardown {
		x := p.diags.Add(npos, nend, "a synthetic event named %q already exists", name)
		x.Hint = "pick another name with -n or CREATE VIEW"
		return
	}
	js := &joinState{p: p, q: q, name: name, names: newVarNames(fromSide.ev, joinSide.ev)}
	js.start = &Hist{System: fromSide.ev.System, Event: fromSide.ev.Name, Role: "start", Instance: p.opt.Instance, Pos: q.From.Name.Pos, End: q.From.Name.End}
	js.end = &Hist{System: joinSide.ev.System, Event: joinSide.ev.Name, Role: "end", Instance: p.opt.Instance, Pos: q.Join.Name.Pos, End: q.Join.Name.End}
	synth := &Synth{Name: name, Pos: npos, End: nend}
	u.Synth, u.Start, u.End = synth, js.start, js.end

	js.keys()
	labels := map[string]compiler.Expr{}
	var params []*Expr
	outputs := map[string]bool{}
	for _, it := range q.Select {
		f, param := js.item(it)
		if f == nil {
			continue
		}
		if outputs[f.Name] {
			x := p.diags.Add(f.Pos, f.End, "duplicate output name %q", f.Name)
			x.Hint = "give one of them another name with AS"
		}
		outputs[f.Name] = true
		if strings.HasPrefix(f.Name, "common_") {
			x := p.diags.Add(f.Pos, f.End, "output name %q clashes with the synthetic event's own common fields", f.Name)
			x.Hint = "rename it with AS"
		}
		synth.Fields = append(synth.Fields, f)
		params = append(params, param)
		labels[f.Name] = it.Expr
	}
	if len(synth.Fields) == 0 && len(q.Select) == 0 {
		p.diags.Add(q.Pos, q.End, "the SELECT list is empty: a synthetic event needs at least one field")
		return
	}
	if len(synth.Fields) > 64 {
		p.diags.Add(q.Pos, q.End, "%d fields; a synthetic event has at most 64", len(synth.Fields))
	} else if len(synth.Fields) > 32 && !p.feat.SynthFields64 {
		p.diags.Add(q.Pos, q.End, "%s", p.feat.Lacks(fmt.Sprintf("a synthetic event of %d fields", len(synth.Fields)), "synthetic-64-fields"))
	}
	filters := p.where(q.Where, labels)
	js.start.Filter, js.end.Filter = filters[0], filters[1]
	if pushed := js.startNameTerms(q.Where); len(pushed) > 0 {
		js.start.Filter = andFilters(append([]*Filter{js.start.Filter}, pushed...))
		texts := make([]string, len(pushed))
		for i, t := range pushed {
			texts[i] = t.String()
		}
		p.note("%s: the start trigger keeps only the tasks of the end's name too (%s): fewer events; a task renamed between its start and its end is not counted", name, strings.Join(texts, " && "))
	}
	if js.startReads == 0 {
		js.forceMatch()
	}
	js.actions(synth, params)
	if !p.cur.feeds {
		p.results(q, u)
	}
	for _, h := range []*Hist{js.start, js.end} {
		if len(h.Vars) > maxVars {
			p.diags.Add(h.Pos, h.End, "the trigger on %s/%s needs %d variables; the kernel allows %d", h.System, h.Event, len(h.Vars), maxVars)
		}
	}
}

// keys lowers the ON pairs into the keys of both triggers.
func (js *joinState) keys() {
	p := js.p
	size := 0
	for _, m := range js.q.On {
		l, r := p.r.field(m.Left), p.r.field(m.Right)
		if l == nil || r == nil {
			continue
		}
		if l.side == r.side {
			x := p.diags.Add(m.Left.Name.Pos, m.Right.Name.End, "ON must pair a field of %s with a field of %s; both are from %s", p.sideName(0), p.sideName(1), p.sideName(l.side))
			x.Hint = "each pair is the start event's field = the end event's field"
			continue
		}
		if l.side == 1 {
			l, r = r, l
		}
		if !js.keyCompatible(l, r, m) {
			continue
		}
		for _, k := range []*ref{l, r} {
			if k.mod != "" {
				p.diags.Add(k.pos, k.end, "a join key cannot carry a modifier (.%s)", k.mod)
			}
		}
		js.start.Keys = append(js.start.Keys, l.expr())
		js.end.Keys = append(js.end.Keys, r.expr())
		if l.mod == "" && r.mod == "" && !l.pseudo && !r.pseudo && l.typ == r.typ {
			if js.keyTwin == nil {
				js.keyTwin = map[string]*ref{}
			}
			js.keyTwin[l.name] = r
		}
		size += keySize(l.typ)
	}
	if n := len(js.q.On); n > maxKeys {
		m := js.q.On[maxKeys]
		p.diags.Add(m.Left.Name.Pos, js.q.On[n-1].Right.Name.End, "%d ON pairs; the kernel joins on at most %d keys", n, maxKeys)
	}
	if size > maxKeySize {
		m := js.q.On[0]
		p.diags.Add(m.Left.Name.Pos, js.q.On[len(js.q.On)-1].Right.Name.End, "the join keys take %d bytes; the kernel allows %d (a dynamic string key takes 256)", size, maxKeySize)
	}
}

func keySize(t vtype) int {
	switch t.Kind {
	case tracefs.KindString:
		return (t.Size + 7) / 8 * 8
	case tracefs.KindDynString:
		return 256
	case tracefs.KindDynArray:
		return 128
	}
	return 8
}

// keyCompatible checks that the two key fields are stored alike: numbers of
// any width (the kernel widens them to 64 bits), or strings of the same
// kind and size.
func (js *joinState) keyCompatible(l, r *ref, m *compiler.Match) bool {
	p := js.p
	switch {
	case l.typ.isNumeric() && r.typ.isNumeric():
		if l.typ.Signed != r.typ.Signed && (l.typ.Size < 8 || r.typ.Size < 8) {
			// Widened differently: negative values would not match.
			x := p.diags.Add(m.Left.Name.Pos, m.Right.Name.End, "%s (%s) and %s (%s) differ in signedness; negative values would never match", l.name, l.typ.Kernel, r.name, r.typ.Kernel)
			x.Warning = true
		}
		return true
	case l.typ.isString() && r.typ.isString():
		if keySize(l.typ) == keySize(r.typ) && l.typ.Kind == r.typ.Kind {
			return true
		}
	}
	x := p.diags.Add(m.Left.Name.Pos, m.Right.Name.End, "cannot join %s (%s) with %s (%s): the kernel matches keys of the same kind and size", l.name, l.typ.Kernel, r.name, r.typ.Kernel)
	if l.typ.isString() && r.typ.isString() {
		x.Hint = "a static char[N] string and a dynamic string are stored differently"
	}
	return false
}

// item lowers one SELECT item into a synthetic field and the trace()
// parameter that fills it.
func (js *joinState) item(it *compiler.SelectItem) (*SynthField, *Expr) {
	p := js.p
	cast, e := typeCast(compiler.Unparen(it.Expr))
	pos, end := it.Expr.Span()
	label := ""
	if it.Label != nil {
		label = it.Label.Name
		pos, end = it.Label.Pos, it.Label.End
	}
	// TIMESTAMP_DELTA[_USECS] is end.TIMESTAMP - start.TIMESTAMP.
	if f, ok := e.(*compiler.Field); ok && len(f.Name.Parts) == 1 {
		switch strings.ToUpper(f.Name.Parts[0].Name) {
		case "TIMESTAMP_DELTA", "TIMESTAMP_DELTA_USECS":
			if p.r.sides[0].ev.Field(f.Name.Parts[0].Name) == nil && p.r.sides[1].ev.Field(f.Name.Parts[0].Name) == nil {
				e = js.delta(f)
				if label == "" {
					label = "delta"
					if strings.HasSuffix(strings.ToUpper(f.Name.Parts[0].Name), "USECS") {
						label = "delta_us"
					}
				}
			}
		}
	}
	if f, ok := e.(*compiler.Field); ok && label == "" {
		r := p.r.field(f)
		if r == nil {
			return nil, nil
		}
		label = r.short()
		if r.mod != "" && r.mod != "usecs" && r.mod != "execname" {
			p.diags.Add(r.pos, r.end, "the .%s modifier does not apply to a synthetic event field", r.mod)
			return nil, nil
		}
	}
	if label == "" {
		x := p.diags.Add(pos, end, "this expression needs a name")
		x.Hint = "add AS name: the name becomes the synthetic event's field"
		return nil, nil
	}
	if !p.checkName("field name", label, pos, end) {
		return nil, nil
	}
	js.label = label
	op, ok := js.lower(e)
	if !ok {
		return nil, nil
	}
	f := p.synthField(label, op.typ, pos, end)
	if cast != nil {
		p.castField(f, op.typ, cast)
	}
	f.Unit = js.latencyUnit(e)
	if p.cur.units != nil {
		f.Unit = p.cur.units[label]
	}
	return f, js.signedParam(f, op)
}

// latencyUnit says whether e is a latency, a value computed from the
// timestamps of both events, and in which unit: "us" when a timestamp is
// in microseconds, else "ns"; "" when e is not a latency.
func (js *joinState) latencyUnit(e compiler.Expr) string {
	var sides [2]bool
	unit := "ns"
	eachField(e, func(f *compiler.Field) {
		r := js.p.quietField(f)
		if r == nil || r.name != "common_timestamp" {
			return
		}
		sides[r.side] = true
		if r.mod == "usecs" {
			unit = "us"
		}
	})
	if sides[0] && sides[1] {
		return unit
	}
	return ""
}

// delta builds end.TIMESTAMP - start.TIMESTAMP for TIMESTAMP_DELTA.
func (js *joinState) delta(f *compiler.Field) compiler.Expr {
	n := f.Name
	suffix := "TIMESTAMP"
	if strings.HasSuffix(strings.ToUpper(n.Parts[0].Name), "USECS") {
		suffix = "TIMESTAMP_USECS"
	}
	mk := func(side int) *compiler.Field {
		q := js.p.r.sides[side].quals[0]
		var parts []*compiler.Ident
		for _, s := range q {
			parts = append(parts, &compiler.Ident{Name: s, Pos: n.Pos, End: n.End})
		}
		parts = append(parts, &compiler.Ident{Name: suffix, Pos: n.Pos, End: n.End})
		return &compiler.Field{Name: &compiler.Name{Parts: parts, Pos: n.Pos, End: n.End}}
	}
	return &compiler.Binary{Op: compiler.OpSub, X: mk(1), Y: mk(0), OpPos: n.Pos, OpEnd: n.End}
}

// forceMatch makes the end trigger read a start variable when the SELECT
// needs none: without a reference the kernel fires onmatch for every end
// event, matched or not.
func (js *joinState) forceMatch() {
	if len(js.start.Keys) == 0 {
		return
	}
	sv := js.names.take(js.name + "_matched")
	js.start.Vars = append(js.start.Vars, Var{Name: sv, Expr: js.start.Keys[0]})
	ev := js.names.take(js.name + "_match")
	js.end.Vars = append(js.end.Vars, Var{Name: ev, Expr: &Expr{Kind: ExprVar, Name: sv}})
	js.p.note("%s: the end trigger reads $%s so that only events with a matching start fire", js.name, sv)
}

// actions adds the handler that fires the synthetic event, and the -m/-c
// handlers with their save/snapshot/trace actions.
func (js *joinState) actions(s *Synth, params []*Expr) {
	p := js.p
	o := p.opt
	if p.cur.middle {
		o = Options{} // -m/-c act on the statement's last synthetic event
	}
	// call is the action that fires the synthetic event, under handler h.
	call := func(h *Action) *Action {
		h.Kind, h.Synth, h.OldForm, h.Params = ActTrace, s.Name, !p.feat.TraceAction, params
		return h
	}
	onmatch := func() *Action {
		return &Action{Handler: OnMatch, Match: js.start.System + "." + js.start.Event}
	}
	handler, hvar := "", ""
	switch {
	case o.OnMax != "" && o.OnChange != "":
		p.diags.Add(source.NoPos, source.NoPos, "-m and -c cannot be used together")
		return
	case o.OnMax != "":
		handler, hvar = "onmax", o.OnMax
	case o.OnChange != "":
		handler, hvar = "onchange", o.OnChange
	}
	if handler == "" {
		js.end.Actions = append(js.end.Actions, call(onmatch()))
		return
	}
	idx := -1
	for i, f := range s.Fields {
		if f.Name == hvar {
			idx = i
		}
	}
	if idx < 0 {
		names := make([]string, len(s.Fields))
		for i, f := range s.Fields {
			names[i] = f.Name
		}
		p.diags.Add(source.NoPos, source.NoPos, "-%c %s: the synthetic event has no field %q (its fields: %s)", handler[2], hvar, hvar, strings.Join(names, ", "))
		return
	}
	if !s.Fields[idx].isNumber() {
		p.diags.Add(s.Fields[idx].Pos, s.Fields[idx].End, "%s(%s) needs a number; %s is a %s", handler, hvar, hvar, s.Fields[idx].Decl())
		return
	}
	if !o.Snapshot && !o.Trace && len(o.Save) == 0 {
		warnHandlerAlone(p.diags, handler, hvar)
		js.end.Actions = append(js.end.Actions, call(onmatch()))
		return
	}
	// The handler tracks a variable of the end trigger.
	v := params[idx].Name
	if params[idx].Kind != ExprVar || !js.isEndVar(v) {
		nv := js.names.take(js.name + "_" + hvar + "_v")
		js.end.Vars = append(js.end.Vars, Var{Name: nv, Expr: params[idx]})
		v = nv
		params[idx] = varExpr(nv)
	}
	h := &Action{Handler: OnMax, Track: v}
	if handler == "onchange" {
		h.Handler = OnChange
	}
	js.handlerActions(h, o, call)
}

func (js *joinState) isEndVar(name string) bool {
	for _, v := range js.end.Vars {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (f *SynthField) isNumber() bool { return f.Array == "" }
