package planner

import (
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
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
	tmp        int    // counter for intermediate variables of the item
	startReads int    // how many start variables the end trigger reads
}

// operand is a lowered value on the end trigger: kernel expression text
// and the type the kernel will give it.
type operand struct {
	text  string
	typ   vtype
	prec  int  // 3 for a leaf, 2 for * /, 1 for + -
	ops   int  // binary operators in text
	field bool // a plain field of the end event
	usecs int  // 0: no timestamp, 1: ns, 2: µs
}

func (p *planner) join(q *compiler.Query, u *Unit, names map[string]bool) {
	fromSide, joinSide := p.r.sides[0], p.r.sides[1]
	name, npos, nend := p.synthName(q, fromSide.ev, joinSide.ev)
	if !p.checkName("synthetic event name", name, npos, nend) {
		return
	}
	if names[name] {
		p.diags.Add(npos, nend, "synthetic event %q is defined twice in this script", name)
		return
	}
	names[name] = true
	if _, err := p.cat.Event("synthetic", name); err == nil {
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
	var params []string
	for _, it := range q.Select {
		f, param := js.item(it)
		if f == nil {
			continue
		}
		for _, prev := range synth.Fields {
			if prev.Name == f.Name {
				x := p.diags.Add(f.Pos, f.End, "duplicate output name %q", f.Name)
				x.Hint = "give one of them another name with AS"
			}
		}
		if f.Name == "common_pid" || strings.HasPrefix(f.Name, "common_") {
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
	}
	filters := p.where(q.Where, labels)
	js.start.Filter, js.end.Filter = filters[0], filters[1]
	if js.startReads == 0 {
		js.forceMatch()
	}
	js.actions(synth, params)
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
		js.start.Keys = append(js.start.Keys, l.text())
		js.end.Keys = append(js.end.Keys, r.text())
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
func (js *joinState) item(it *compiler.SelectItem) (*SynthField, string) {
	p := js.p
	e := compiler.Unparen(it.Expr)
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
	if c, ok := e.(*compiler.Cast); ok {
		x := p.diags.Add(c.TargetPos, c.TargetEnd, "CAST(… AS %s) does not apply to a synthetic event field", c.Target)
		x.Hint = "modifiers shape histogram keys: define the join with CREATE VIEW and aggregate it with a histogram query"
		return nil, ""
	}
	if f, ok := e.(*compiler.Field); ok && label == "" {
		r := p.r.field(f)
		if r == nil {
			return nil, ""
		}
		label = r.short()
		if r.mod != "" && r.mod != "usecs" {
			p.diags.Add(r.pos, r.end, "the .%s modifier does not apply to a synthetic event field", r.mod)
			return nil, ""
		}
	}
	if label == "" {
		x := p.diags.Add(pos, end, "this expression needs a name")
		x.Hint = "add AS name: the name becomes the synthetic event's field"
		return nil, ""
	}
	if !p.checkName("field name", label, pos, end) {
		return nil, ""
	}
	js.label, js.tmp = label, 0
	op, ok := js.value(e, true)
	if !ok {
		return nil, ""
	}
	param := op.text
	if op.ops > 0 {
		v := js.names.take(js.name + "_" + label)
		js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: op.text})
		param = "$" + v
	}
	return p.synthField(label, op.typ, pos, end), param
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

// value lowers an expression to end-trigger text. Start-side fields are
// saved in start variables and read as $var; grouping the kernel cannot
// express without parentheses goes through intermediate variables.
func (js *joinState) value(e compiler.Expr, top bool) (operand, bool) {
	p := js.p
	switch x := e.(type) {
	case *compiler.Paren:
		return js.value(x.X, top)
	case *compiler.Field:
		r := p.r.field(x)
		if r == nil {
			return operand{}, false
		}
		if r.mod != "" && r.mod != "usecs" {
			p.diags.Add(r.pos, r.end, "the .%s modifier does not apply here", r.mod)
			return operand{}, false
		}
		us := 0
		if r.name == "common_timestamp" {
			us = 1
			if r.mod == "usecs" {
				us = 2
			}
		}
		if r.side == 0 {
			base := js.name + "_" + r.short()
			if top {
				base = js.name + "_" + js.label
			}
			v := js.names.take(base)
			js.start.Vars = append(js.start.Vars, Var{Name: v, Expr: r.text()})
			js.startReads++
			return operand{text: "$" + v, typ: r.typ, prec: 3, usecs: us}, true
		}
		if r.pseudo && top {
			// Pass pseudo-fields through a variable rather than as a bare param.
			v := js.names.take(js.name + "_" + js.label)
			js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: r.text()})
			return operand{text: "$" + v, typ: r.typ, prec: 3, usecs: us}, true
		}
		return operand{text: r.text(), typ: r.typ, prec: 3, field: true, usecs: us}, true
	case *compiler.Number:
		if !p.feat.Expressions {
			p.diags.Add(x.Pos, x.End, "constants in expressions need Linux 5.16 or later")
			return operand{}, false
		}
		if x.Neg {
			p.diags.Add(x.Pos, x.End, "the kernel cannot write negative constants in expressions")
			return operand{}, false
		}
		return operand{text: strconv.FormatUint(x.Value, 10), typ: vtype{Kernel: "u64", Size: 8, Kind: tracefs.KindInt}, prec: 3}, true
	case *compiler.Binary:
		if !x.Op.IsArith() {
			break
		}
		return js.arith(x)
	case *compiler.String:
		p.diags.Add(x.Pos, x.End, "a string constant cannot be a synthetic event field")
		return operand{}, false
	}
	pos, end := e.Span()
	p.diags.Add(pos, end, "unsupported in SELECT: use fields, constants and + - * /")
	return operand{}, false
}

func (js *joinState) arith(x *compiler.Binary) (operand, bool) {
	p := js.p
	if (x.Op == compiler.OpMul || x.Op == compiler.OpDiv) && !p.feat.Expressions {
		p.diags.Add(x.OpPos, x.OpEnd, "%s in expressions needs Linux 5.16 or later", x.Op)
		return operand{}, false
	}
	l, ok1 := js.value(x.X, false)
	r, ok2 := js.value(x.Y, false)
	if !ok1 || !ok2 {
		return operand{}, false
	}
	for _, o := range []struct {
		op operand
		e  compiler.Expr
	}{{l, x.X}, {r, x.Y}} {
		if !o.op.typ.isNumeric() {
			pos, end := o.e.Span()
			p.diags.Add(pos, end, "a %s cannot be an operand of %s", o.op.typ.Kind, x.Op)
			return operand{}, false
		}
	}
	if l.usecs != 0 && r.usecs != 0 && l.usecs != r.usecs {
		x := p.diags.Add(x.OpPos, x.OpEnd, "TIMESTAMP (ns) and TIMESTAMP_USECS (µs) cannot be mixed in one expression")
		x.Hint = "use the same unit on both sides"
		return operand{}, false
	}
	if n, ok := compiler.Unparen(x.Y).(*compiler.Number); ok && x.Op == compiler.OpDiv && n.Value == 0 {
		p.diags.Add(n.Pos, n.End, "division by zero")
		return operand{}, false
	}
	prec := 1
	if x.Op == compiler.OpMul || x.Op == compiler.OpDiv {
		prec = 2
	}
	// The kernel splits at the rightmost operator of the lowest precedence
	// and knows no parentheses: a left operand of lower precedence, or a
	// right operand that is not of strictly higher precedence, must be
	// computed first in a variable of its own.
	if l.prec < prec || l.ops >= 2 {
		l = js.spill(l)
	}
	if r.prec <= prec || r.ops >= 2 {
		r = js.spill(r)
	}
	us := max(l.usecs, r.usecs)
	return operand{text: l.text + x.Op.String() + r.text, typ: l.typ, prec: prec, ops: l.ops + r.ops + 1, usecs: us}, true
}

// spill stores a compound operand in an intermediate end variable.
func (js *joinState) spill(o operand) operand {
	if o.ops == 0 {
		return o
	}
	js.tmp++
	v := js.names.take(js.name + "_" + js.label + "_" + strconv.Itoa(js.tmp))
	js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: o.text})
	return operand{text: "$" + v, typ: o.typ, prec: 3, usecs: o.usecs}
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
	js.end.Vars = append(js.end.Vars, Var{Name: ev, Expr: "$" + sv})
	js.p.note("%s: the end trigger reads $%s so that only events with a matching start fire", js.name, sv)
}

// actions adds the handler that fires the synthetic event, and the -m/-c
// handlers with their save/snapshot/trace actions.
func (js *joinState) actions(s *Synth, params []string) {
	p := js.p
	o := p.opt
	call := func() string {
		if p.feat.TraceAction {
			return "trace(" + s.Name + "," + strings.Join(params, ",") + ")"
		}
		return s.Name + "(" + strings.Join(params, ",") + ")"
	}
	onmatch := "onmatch(" + js.start.System + "." + js.start.Event + ")."
	handler, hvar := "", ""
	switch {
	case o.OnMax != "" && o.OnChange != "":
		p.diags.Add(compiler.NoPos, compiler.NoPos, "-m and -c cannot be used together")
		return
	case o.OnMax != "":
		handler, hvar = "onmax", o.OnMax
	case o.OnChange != "":
		handler, hvar = "onchange", o.OnChange
	}
	if handler == "" {
		js.end.Actions = append(js.end.Actions, onmatch+call())
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
		p.diags.Add(compiler.NoPos, compiler.NoPos, "-%c %s: the synthetic event has no field %q (its fields: %s)", handler[2], hvar, hvar, strings.Join(names, ", "))
		return
	}
	if !s.Fields[idx].isNumber() {
		p.diags.Add(s.Fields[idx].Pos, s.Fields[idx].End, "%s(%s) needs a number; %s is a %s", handler, hvar, hvar, s.Fields[idx].Decl())
		return
	}
	// The handler tracks a variable of the end trigger.
	v := strings.TrimPrefix(params[idx], "$")
	if !strings.HasPrefix(params[idx], "$") || !js.isEndVar(v) {
		nv := js.names.take(js.name + "_" + hvar + "_v")
		js.end.Vars = append(js.end.Vars, Var{Name: nv, Expr: params[idx]})
		v = nv
		params[idx] = "$" + nv
	}
	h := handler + "($" + v + ")."
	trace := o.Trace || !o.Snapshot && len(o.Save) == 0
	if trace {
		js.end.Actions = append(js.end.Actions, h+call())
	} else {
		js.end.Actions = append(js.end.Actions, onmatch+call())
	}
	if len(o.Save) > 0 {
		end := p.r.sides[1].ev
		for _, f := range o.Save {
			if end.Field(f) == nil {
				errUnknownField(p.diags, compiler.NoPos, compiler.NoPos, f, end.FullName()+" (-S)", end.FieldNames())
			}
		}
		js.end.Actions = append(js.end.Actions, h+"save("+strings.Join(o.Save, ",")+")")
	}
	if o.Snapshot {
		js.end.Actions = append(js.end.Actions, h+"snapshot()")
	}
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
