package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Arithmetic in a join.
//
// The kernel reads a hist expression without parentheses, splitting at the
// rightmost operator of the lowest precedence, and evaluates at most three
// operators in one expression. A variable that reads another variable of
// the same trigger is not usable: on Linux 6.1, 6.12 and 7.2 alike it is
// either refused ("Couldn't find variable") or computed before the variable
// it reads (d=common_timestamp-$ts,us=$d/1000 gives the timestamp, not the
// delta). So grouping cannot go through intermediate variables. Instead
// the expression is regrouped exactly — sums flattened, products
// distributed over sums, constants folded, any part that reads only start
// fields computed in one variable of the start trigger — and printed flat.
// What still needs parentheses, such as (end.x - start.y) / 1000, is
// refused with an explanation.

// maxOps is how many operators the kernel evaluates in one expression.
const maxOps = 3

// maxOperands bounds the operands of one expression that is regrouped.
// Distributing products over sums copies factors: (a+b+…)*c*d*… costs the
// product of the sum's and the product's sizes, so 16,000 operands took
// 22 s before this bound. At 64 the worst shape costs well under a
// millisecond (BenchmarkRegroupWorst), and no expression the kernel can
// evaluate comes near it: after regrouping it has at most maxOps+1
// operands, and only constants fold together.
const maxOperands = 64

// factor is a leaf of a flat expression.
type factor struct {
	x     *Expr // as written on the trigger that evaluates it
	typ   vtype
	side  int  // 0 start, 1 end, -1 constant
	usecs int  // 0 not a timestamp, 1 ns, 2 µs
	ref   *ref // the field, for start leaves still to be saved
}

// term is a signed chain of factors joined by * and /, evaluated left to
// right.
type term struct {
	neg     bool
	factors []factor
	ops     []compiler.Op
}

func (t term) onlyMul() bool {
	for _, o := range t.ops {
		if o != compiler.OpMul {
			return false
		}
	}
	return true
}

func (t term) side() int {
	s := -1
	for _, f := range t.factors {
		switch {
		case f.side == -1:
		case s == -1:
			s = f.side
		case s != f.side:
			return 2
		}
	}
	return s
}

// arithCtx says on which trigger an expression is evaluated.
type arithCtx struct {
	local   int  // the side whose fields are written as fields
	offload bool // parts reading only start fields may become start variables
}

// lower lowers a SELECT item to a trace() parameter.
func (js *joinState) lower(e compiler.Expr) (operand, bool) {
	p := js.p
	e = compiler.Unparen(e)
	if !js.checkUnits(e) {
		return operand{}, false
	}
	switch x := e.(type) {
	case *compiler.Field:
		r := p.r.field(x)
		if r == nil {
			return operand{}, false
		}
		if r.mod == "execname" {
			return js.execname(r)
		}
		if r.name == "common_comm" {
			// Like execname, a common_comm variable is a char[] that only
			// a dynamic string field takes (7.2: "Param type doesn't
			// match" for char[16]).
			cp := *r
			cp.typ = vtype{Kernel: "char[]", Size: 256, Kind: tracefs.KindDynString}
			r = &cp
		}
		if r.mod != "" && r.mod != "usecs" {
			p.diags.Add(r.pos, r.end, "the .%s modifier does not apply to a synthetic event field", r.mod)
			return operand{}, false
		}
		if r.side == 0 && r.mod == "" && js.keyTwin[r.name] != nil {
			// A join key: the matching end event carries the same value in
			// its own key field (one variable less on every start event).
			return operand{x: js.keyTwin[r.name].expr(), typ: r.typ}, true
		}
		if r.side == 0 {
			v := js.saveStart(js.name+"_"+js.label, r.expr())
			return operand{x: varExpr(v), typ: r.typ}, true
		}
		if r.pseudo {
			// Pseudo-fields go through a variable of the end trigger.
			v := js.names.take(js.name + "_" + js.label)
			js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: r.expr()})
			return operand{x: varExpr(v), typ: r.typ}, true
		}
		return operand{x: r.expr(), typ: r.typ}, true
	case *compiler.String:
		p.diags.Add(x.Pos, x.End, "a string constant cannot be a synthetic event field")
		return operand{}, false
	}
	if n := countOperands(e); n > maxOperands {
		pos, end := e.Span()
		x := p.diags.Add(pos, end, "this expression has %d operands; sqlhist regroups at most %d, and the kernel evaluates at most %d operators in one expression", n, maxOperands, maxOps)
		x.Hint = "compute less in one item: the kernel's expressions take a few fields and constants"
		return operand{}, false
	}
	sum, ok := js.sumOf(e, arithCtx{local: 1, offload: true})
	if !ok {
		return operand{}, false
	}
	sum = js.mergeStartTerms(foldTerms(sum))
	x, typ, ok := js.printSum(sum, e, 1)
	if !ok {
		return operand{}, false
	}
	v := js.names.take(js.name + "_" + js.label)
	js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: x})
	return operand{x: varExpr(v), typ: typ}, true
}

// countOperands counts the leaves of e (fields, numbers, strings).
func countOperands(e compiler.Expr) int {
	switch x := e.(type) {
	case *compiler.Paren:
		return countOperands(x.X)
	case *compiler.Unary:
		return countOperands(x.X)
	case *compiler.Binary:
		return countOperands(x.X) + countOperands(x.Y)
	}
	return 1
}

// checkUnits refuses expressions that mix ns and µs timestamps, or µs
// timestamps and other fields: the kernel types every operand of an
// expression by whether it is a µs timestamp and refuses a mix ("Timestamp
// units in expression don't match", Linux 5.10 to 7.2).
func (js *joinState) checkUnits(e compiler.Expr) bool {
	ns, us := false, false
	var other *compiler.Field
	eachField(e, func(f *compiler.Field) {
		r := js.p.quietField(f)
		switch {
		case r != nil && r.mod == "usecs": // a timestamp, or a synthetic field holding one
			us = true
		case r != nil && r.name == "common_timestamp":
			ns = true
		case other == nil:
			other = f
		}
	})
	if us && other != nil {
		pos, end := e.Span()
		x := js.p.diags.Add(pos, end, "TIMESTAMP_USECS (µs) cannot be combined with %s in one expression: the kernel refuses an expression whose operands are not all µs timestamps (\"Timestamp units in expression don't match\")", other.Name.String())
		x.Hint = "select the latency and the other value as separate fields, or use TIMESTAMP (ns)"
		return false
	}
	if ns && us {
		pos, end := e.Span()
		x := js.p.diags.Add(pos, end, "TIMESTAMP (ns) and TIMESTAMP_USECS (µs) cannot be mixed in one expression")
		x.Hint = "use the same unit on both sides"
		return false
	}
	return true
}

// sumOf turns e into a flat sum of terms, or reports why it cannot.
func (js *joinState) sumOf(e compiler.Expr, ctx arithCtx) ([]term, bool) {
	p := js.p
	e = compiler.Unparen(e)
	switch x := e.(type) {
	case *compiler.Field:
		f, ok := js.leaf(x, ctx)
		if !ok {
			return nil, false
		}
		return []term{{factors: []factor{f}}}, true
	case *compiler.Number:
		if !p.feat.Expressions {
			p.diags.Add(x.Pos, x.End, "%s", p.feat.Lacks("a constant in an expression", "expressions"))
			return nil, false
		}
		return []term{{neg: x.Neg, factors: []factor{constFactor(x.Value)}}}, true
	case *compiler.Binary:
		if !x.Op.IsArith() {
			break
		}
		if (x.Op == compiler.OpMul || x.Op == compiler.OpDiv) && !p.feat.Expressions {
			p.diags.Add(x.OpPos, x.OpEnd, "%s", p.feat.Lacks(x.Op.String()+" in an expression", "expressions"))
			return nil, false
		}
		if zeroDivisor(p.diags, x) {
			return nil, false
		}
		if js.info(x).constant {
			v, _, ok := constValue(p.diags, x)
			if !ok {
				return nil, false
			}
			// A value at or above 2^63 is a negative one.
			neg := v >= 1<<63
			if neg {
				v = -v
			}
			return []term{{neg: neg, factors: []factor{constFactor(v)}}}, true
		}
		if ctx.offload && js.startOnly(x) {
			return js.offload(x)
		}
		l, ok1 := js.sumOf(x.X, ctx)
		r, ok2 := js.sumOf(x.Y, ctx)
		if !ok1 || !ok2 {
			return nil, false
		}
		switch x.Op {
		case compiler.OpAdd:
			return append(l, r...), true
		case compiler.OpSub:
			for _, t := range r {
				t.neg = !t.neg
				l = append(l, t)
			}
			return l, true
		case compiler.OpMul:
			if len(r) == 1 && r[0].onlyMul() {
				return distribute(l, r[0]), true
			}
			if len(l) == 1 && l[0].onlyMul() && allOnlyMul(r) {
				return distribute(r, l[0]), true
			}
		case compiler.OpDiv:
			if len(l) == 1 && len(r) == 1 && len(r[0].factors) == 1 {
				t := l[0]
				t.neg = t.neg != r[0].neg
				t.factors = append(append([]factor{}, t.factors...), r[0].factors[0])
				t.ops = append(append([]compiler.Op{}, t.ops...), compiler.OpDiv)
				return []term{t}, true
			}
		}
		js.cannotGroup(x)
		return nil, false
	case *compiler.String:
		p.diags.Add(x.Pos, x.End, "a string cannot be an operand of an expression")
		return nil, false
	}
	pos, end := e.Span()
	p.diags.Add(pos, end, "unsupported in SELECT: use fields, constants and + - * /")
	return nil, false
}

// foldTerms evaluates the terms made of constants only (3*2 after a
// distribution) and adds them up into one constant term.
func foldTerms(sum []term) []term {
	var out []term
	var total uint64
	constants := 0
	for _, t := range sum {
		if t.side() != -1 {
			out = append(out, t)
			continue
		}
		v, ok := evalChain(t)
		if !ok {
			out = append(out, t) // a division by zero stays visible
			continue
		}
		if t.neg {
			v = -v
		}
		total += v
		constants++
	}
	if constants == 0 || total == 0 && len(out) > 0 {
		return out
	}
	c := term{factors: []factor{constFactor(total)}}
	if total >= 1<<63 {
		c = term{neg: true, factors: []factor{constFactor(-total)}}
	}
	return append(out, c)
}

func evalChain(t term) (uint64, bool) {
	v := t.factors[0].x.N
	for i, o := range t.ops {
		x := t.factors[i+1].x.N
		switch o {
		case compiler.OpMul:
			v *= x
		case compiler.OpDiv:
			if x == 0 {
				return 0, false
			}
			v /= x
		}
	}
	return v, true
}

func allOnlyMul(ts []term) bool {
	for _, t := range ts {
		if !t.onlyMul() {
			return false
		}
	}
	return true
}

// distribute multiplies every term of s by the product m.
func distribute(s []term, m term) []term {
	out := make([]term, len(s))
	for i, t := range s {
		t.neg = t.neg != m.neg
		t.factors = append(append([]factor{}, t.factors...), m.factors...)
		t.ops = append(append([]compiler.Op{}, t.ops...), compiler.OpMul)
		t.ops = append(t.ops, m.ops...)
		out[i] = t
	}
	return out
}

func (js *joinState) cannotGroup(x *compiler.Binary) {
	pos, end := x.Span()
	d := js.p.diags.Add(pos, end, "the kernel cannot compute this grouping: its expressions have no parentheses, and a variable that reads another variable of the same trigger is not computed correctly")
	d.Hint = "keep divisions on a single field or on values of the start event (e.g. TIMESTAMP_USECS instead of dividing a TIMESTAMP difference by 1000)"
}

// leaf resolves a field operand.
func (js *joinState) leaf(x *compiler.Field, ctx arithCtx) (factor, bool) {
	p := js.p
	r := p.r.field(x)
	if r == nil {
		return factor{}, false
	}
	if r.mod != "" && r.mod != "usecs" {
		p.diags.Add(r.pos, r.end, "the .%s modifier does not apply in an expression", r.mod)
		return factor{}, false
	}
	if !r.typ.isNumeric() {
		p.diags.Add(r.pos, r.end, "a %s cannot be an operand of an expression", r.typ.Kind)
		return factor{}, false
	}
	f := factor{x: r.expr(), typ: r.typ, side: r.side, ref: r}
	if r.name == "common_timestamp" {
		f.usecs = 1
		if r.mod == "usecs" {
			f.usecs = 2
		}
	}
	return f, true
}

func constFactor(v uint64) factor {
	return factor{x: &Expr{Kind: ExprConst, N: v}, typ: vtype{Kernel: "u64", Size: 8, Kind: tracefs.KindInt}, side: -1}
}

// exprInfo summarizes a subexpression: whether it reads start fields,
// anything else (end fields, strings, non-arithmetic), and whether it is
// made of constants only.
type exprInfo struct{ start, other, constant bool }

// info classifies e once; the result is remembered, so lowering an
// expression stays linear in its size.
func (js *joinState) info(e compiler.Expr) exprInfo {
	if v, ok := js.memo[e]; ok {
		return v
	}
	var r exprInfo
	switch x := e.(type) {
	case *compiler.Paren:
		r = js.info(x.X)
	case *compiler.Binary:
		if !x.Op.IsArith() {
			r.other = true
			break
		}
		a, b := js.info(x.X), js.info(x.Y)
		r = exprInfo{start: a.start || b.start, other: a.other || b.other, constant: a.constant && b.constant}
	case *compiler.Field:
		if f := js.p.quietField(x); f != nil && f.side == 0 {
			r.start = true
		} else {
			r.other = true
		}
	case *compiler.Number:
		r.constant = true
	default:
		r.other = true
	}
	if js.memo == nil {
		js.memo = map[compiler.Expr]exprInfo{}
	}
	js.memo[e] = r
	return r
}

// startOnly reports whether e reads fields of the start event only (and
// at least one), besides constants.
func (js *joinState) startOnly(e compiler.Expr) bool {
	i := js.info(e)
	return i.start && !i.other
}

// offload computes a start-only expression in a variable of the start
// trigger and returns it as one factor.
func (js *joinState) offload(x *compiler.Binary) ([]term, bool) {
	sum, ok := js.sumOf(x, arithCtx{local: 0})
	if !ok {
		return nil, false
	}
	ex, typ, ok := js.printSum(sum, x, 0)
	if !ok {
		return nil, false
	}
	v := js.saveStart(js.name+"_"+js.label+"_start", ex)
	f := factor{x: varExpr(v), typ: typ, side: 1}
	return []term{{factors: []factor{f}}}, true
}

// mergeStartTerms computes, when several terms read only start fields,
// their sum in one start variable.
func (js *joinState) mergeStartTerms(sum []term) []term {
	var starts, rest []term
	for _, t := range sum {
		if t.side() == 0 {
			starts = append(starts, t)
		} else {
			rest = append(rest, t)
		}
	}
	if len(starts) < 2 {
		return sum
	}
	pos := false
	for _, t := range starts {
		pos = pos || !t.neg
	}
	neg := !pos
	if neg {
		for i := range starts {
			starts[i].neg = false
		}
	}
	if countOps(starts) > maxOps {
		return sum // the end expression will say it is too long
	}
	x, typ, ok := js.printTerms(starts, 0)
	if !ok {
		return sum
	}
	v := js.saveStart(js.name+"_"+js.label+"_start", x)
	return append(rest, term{neg: neg, factors: []factor{{x: varExpr(v), typ: typ, side: 1}}})
}

// printSum writes a flat sum for the trigger of side local, checking the
// kernel's operator limit. The type is the first operand's, as the kernel
// types an expression.
func (js *joinState) printSum(sum []term, e compiler.Expr, local int) (*Expr, vtype, bool) {
	if ops := countOps(sum); ops > maxOps {
		pos, end := e.Span()
		x := js.p.diags.Add(pos, end, "this expression needs %d operators; the kernel evaluates at most %d in one expression", ops, maxOps)
		x.Hint = "select the parts as separate fields"
		return nil, vtype{}, false
	}
	x, typ, ok := js.printTerms(sum, local)
	if !ok {
		pos, end := e.Span()
		x := js.p.diags.Add(pos, end, "the kernel cannot write an expression that starts with a minus")
		x.Hint = "reorder it so that it starts with a positive term"
	}
	return x, typ, ok
}

// countOps is how many operators a flat sum prints with.
func countOps(sum []term) int {
	ops := len(sum) - 1
	for _, t := range sum {
		ops += len(t.ops)
	}
	return ops
}

// printTerms writes a flat sum as the kernel reads it: the terms left to
// right, each a chain of factors joined by * and / (the tree the text
// reads as, which ParseExpr gives).
func (js *joinState) printTerms(sum []term, local int) (*Expr, vtype, bool) {
	first := -1
	for i, t := range sum {
		if !t.neg {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, vtype{}, false
	}
	order := append([]term{sum[first]}, append(append([]term{}, sum[:first]...), sum[first+1:]...)...)
	var out *Expr
	var typ vtype
	for i, t := range order {
		neg := false
		if i > 0 {
			// Before Linux 5.16 the kernel evaluates a-b-c as a-(b-c):
			// each operator then applies to everything after it, so a
			// term's sign is the product of the operators before it, and
			// the operator between two terms is '-' when their signs
			// differ (a-b-c is written a-b+c). Later kernels evaluate
			// left to right.
			neg = t.neg
			if !js.p.feat.Expressions {
				neg = t.neg != order[i-1].neg
			}
		}
		var prod *Expr
		for j, f := range t.factors {
			x := f.x
			if f.side == 0 && local != 0 {
				// A start field read on the end trigger: one start
				// variable per use, since reading a variable clears it.
				x = varExpr(js.saveStart(js.name+"_"+f.ref.short(), f.x))
			}
			if i == 0 && j == 0 {
				typ = f.typ
			}
			if j == 0 {
				prod = x
			} else {
				prod = &Expr{Kind: ExprBinary, Op: t.ops[j-1].String()[0], L: prod, R: x}
			}
		}
		switch {
		case i == 0:
			out = prod
		case neg:
			out = &Expr{Kind: ExprBinary, Op: '-', L: out, R: prod}
		default:
			out = &Expr{Kind: ExprBinary, Op: '+', L: out, R: prod}
		}
	}
	return out, typ, true
}

// varExpr is the variable $name.
func varExpr(name string) *Expr { return &Expr{Kind: ExprVar, Name: name} }

// saveStart defines a start variable and returns its name.
func (js *joinState) saveStart(base string, expr *Expr) string {
	v := js.names.take(base)
	js.start.Vars = append(js.start.Vars, Var{Name: v, Expr: expr})
	js.startReads++
	return v
}

// execname lowers common_pid.execname, the task's name, into a string
// variable of the trigger of its side (Linux 5.15 made execname a string
// a variable can hold). The kernel types that variable char[] and passes it
// only to a dynamic string field (a char[16] field is refused with "Param
// type doesn't match": seen on 6.1 and 7.2).
func (js *joinState) execname(r *ref) (operand, bool) {
	p := js.p
	if !p.feat.Buckets {
		p.diags.Add(r.pos, r.end, "%s", p.feat.Lacks("a task name from common_pid.execname in a synthetic event", "execname-variables"))
		return operand{}, false
	}
	typ := vtype{Kernel: "char[]", Size: 256, Kind: tracefs.KindDynString}
	if r.side == 0 {
		v := js.saveStart(js.name+"_"+js.label, r.expr())
		return operand{x: varExpr(v), typ: typ}, true
	}
	v := js.names.take(js.name + "_" + js.label)
	js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: r.expr()})
	return operand{x: varExpr(v), typ: typ}, true
}
