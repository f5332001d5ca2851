package planner

import (
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// maxFilterString is the kernel's limit on a filter string operand.
const maxFilterString = 255

// where splits the WHERE clause into one filter per side. Top-level AND
// terms go to the side they name; a term that names both sides cannot be
// evaluated by either trigger and is an error.
func (p *planner) where(e compiler.Expr, labels map[string]compiler.Expr) []*Filter {
	out := make([]*Filter, len(p.r.sides))
	if e == nil {
		return out
	}
	terms := make([][]*Filter, len(p.r.sides))
	for _, c := range conjuncts(e) {
		sides := map[int]bool{}
		p.sidesOf(c, labels, sides)
		switch len(sides) {
		case 0:
			// Let the filter builder say what is wrong (an unknown field, a
			// bare COMM in a join); if it finds nothing, say it here.
			before := len(p.diags.Errors())
			if _, ok := p.filter(c, labels); ok || len(p.diags.Errors()) == before {
				pos, end := c.Span()
				p.diags.Add(pos, end, "condition names no event field")
			}
			continue
		case 2:
			if b, ok := compiler.Unparen(c).(*compiler.Binary); ok && b.Op.IsCompare() && hasLabel(b, labels) {
				p.predicate(b, labels) // says the label is computed by the join
				continue
			}
			if b, ok := compiler.Unparen(c).(*compiler.Binary); ok && b.Op.IsCompare() && plainFields(b, labels) {
				pos, end := b.Span()
				x := p.diags.Add(pos, end, "the kernel compares a field with a constant, not with another field")
				x.Hint = "to compare values of the two events, select both and filter a histogram of the synthetic event"
				continue
			}
			pos, end := mixPoint(c)
			x := p.diags.Add(pos, end, "condition mixes fields of %s and %s", p.sideName(0), p.sideName(1))
			x.Hint = "each event's trigger sees only its own fields: conditions on the two events can only be combined with AND at the top level of WHERE"
			continue
		}
		var s int
		for k := range sides {
			s = k
		}
		f, ok := p.filter(c, labels)
		if !ok {
			continue
		}
		terms[s] = append(terms[s], f)
	}
	for s, ts := range terms {
		out[s] = andFilters(ts)
	}
	return out
}

// andFilters joins filter terms with &&, leaving out nil ones (nil for
// none). A term that is an || not in parentheses is put in parentheses
// when there are others: the kernel's && binds tighter and would take
// the last operand of the || otherwise.
func andFilters(ts []*Filter) *Filter {
	var keep []*Filter
	for _, t := range ts {
		if t != nil {
			keep = append(keep, t)
		}
	}
	var out *Filter
	for _, t := range keep {
		if len(keep) > 1 && t.Op == FilterOr && !t.Paren {
			c := *t
			c.Paren = true
			t = &c
		}
		out = joinFilters(FilterAnd, out, t)
	}
	return out
}

// joinFilters is "l && r" or "l || r" (op), either nil for none. A chain
// of one operator is kept leaning left, as the kernel (and ParseFilter)
// reads it: l && (r1 && r2) unparenthesised is (l && r1) && r2.
func joinFilters(op FilterOp, l, r *Filter) *Filter {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case r.Op == op && !r.Paren:
		return joinFilters(op, joinFilters(op, l, r.L), r.R)
	}
	return &Filter{Op: op, L: l, R: r}
}

func (p *planner) sideName(i int) string {
	s := p.r.sides[i]
	if s.table.Alias != nil {
		return strconv.Quote(s.table.Alias.Name) + " (" + s.ev.FullName() + ")"
	}
	return s.ev.FullName()
}

// plainFields reports whether both operands of a comparison are fields
// of the events (not constants, not labels of computed items).
func plainFields(b *compiler.Binary, labels map[string]compiler.Expr) bool {
	for _, e := range []compiler.Expr{b.X, b.Y} {
		f, ok := compiler.Unparen(e).(*compiler.Field)
		if !ok {
			return false
		}
		if le, isLabel := labelTarget(f, labels); isLabel {
			if _, plain := compiler.Unparen(le).(*compiler.Field); !plain {
				return false
			}
		}
	}
	return true
}

// hasLabel reports whether an operand of a comparison is a SELECT label.
func hasLabel(b *compiler.Binary, labels map[string]compiler.Expr) bool {
	for _, e := range []compiler.Expr{b.X, b.Y} {
		if f, ok := compiler.Unparen(e).(*compiler.Field); ok {
			if _, isLabel := labelTarget(f, labels); isLabel {
				return true
			}
		}
	}
	return false
}

// conjuncts flattens top-level ANDs.
func conjuncts(e compiler.Expr) []compiler.Expr {
	e = compiler.Unparen(e)
	if b, ok := e.(*compiler.Binary); ok && b.Op == compiler.OpAnd {
		return append(conjuncts(b.X), conjuncts(b.Y)...)
	}
	return []compiler.Expr{e}
}

// mixPoint returns the position of the operator that joins the two events.
func mixPoint(e compiler.Expr) (source.Pos, source.Pos) {
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Binary:
		if x.Op == compiler.OpOr || x.Op == compiler.OpAnd {
			return x.OpPos, x.OpEnd
		}
	case *compiler.Unary:
		return mixPoint(x.X)
	}
	return e.Span()
}

// sidesOf records which sides the fields of e belong to, quietly: errors
// are reported when the filter text is built.
func (p *planner) sidesOf(e compiler.Expr, labels map[string]compiler.Expr, sides map[int]bool) {
	switch x := e.(type) {
	case *compiler.Field:
		if le, ok := labelTarget(x, labels); ok {
			p.sidesOf(le, labels, sides)
			return
		}
		if s, ok := p.quietSide(x); ok {
			sides[s] = true
		}
	case *compiler.Binary:
		p.sidesOf(x.X, labels, sides)
		p.sidesOf(x.Y, labels, sides)
	case *compiler.Unary:
		p.sidesOf(x.X, labels, sides)
	case *compiler.Paren:
		p.sidesOf(x.X, labels, sides)
	case *compiler.Cast:
		p.sidesOf(x.X, labels, sides)
	}
}

// labelTarget returns the SELECT expression a bare name labels, when the
// name is not also a field.
func labelTarget(f *compiler.Field, labels map[string]compiler.Expr) (compiler.Expr, bool) {
	if len(f.Name.Parts) != 1 {
		return nil, false
	}
	e, ok := labels[f.Name.Parts[0].Name]
	return e, ok
}

// quietSide finds the side of a field reference without reporting errors.
func (p *planner) quietSide(f *compiler.Field) (side int, ok bool) {
	p.quietly(func() {
		if r := p.filterField(f); r != nil {
			side, ok = r.side, true
		}
	})
	return side, ok
}

// filterField resolves a field used in a filter, accepting the filter-only
// pseudo-fields COMM and CPU.
func (p *planner) filterField(f *compiler.Field) *ref {
	last := f.Name.Parts[len(f.Name.Parts)-1]
	up := strings.ToUpper(last.Name)
	if up == "COMMON_COMM" {
		up = "COMM" // the filter's own name for it
	}
	if up == "COMM" || up == "CPU" {
		// Qualified or not, find the side and use the kernel's pseudo-field
		// unless the event has a real field of that name.
		side := 0
		if len(f.Name.Parts) > 1 {
			q := &compiler.Field{Name: &compiler.Name{Parts: append(append([]*compiler.Ident{}, f.Name.Parts[:len(f.Name.Parts)-1]...), &compiler.Ident{Name: "common_pid"}), Pos: f.Name.Pos, End: f.Name.End}}
			r := p.r.field(q)
			if r == nil {
				return nil
			}
			side = r.side
		} else if len(p.r.sides) > 1 {
			p.diags.Add(f.Name.Pos, f.Name.End, "%s needs an event: write start.%s", last.Name, last.Name)
			return nil
		}
		ev := p.r.sides[side].ev
		if ev.Field(last.Name) == nil {
			t := vtype{Kernel: "unsigned int", Size: 4, Kind: tracefs.KindInt}
			if up == "COMM" {
				t = vtype{Kernel: "char[16]", Size: 16, Kind: tracefs.KindString}
			}
			return &ref{side: side, ev: ev, name: up, typ: t, pseudo: true, pos: f.Name.Pos, end: f.Name.End}
		}
	}
	return p.r.field(f)
}

// filter lowers e into the kernel filter of the trigger of its side.
func (p *planner) filter(e compiler.Expr, labels map[string]compiler.Expr) (*Filter, bool) {
	switch x := e.(type) {
	case *compiler.Paren:
		return p.filter(x.X, labels)
	case *compiler.Unary:
		if x.Op != compiler.OpNot {
			break
		}
		f, ok := p.filter(x.X, labels)
		return &Filter{Op: FilterNot, L: f}, ok
	case *compiler.Binary:
		switch x.Op {
		case compiler.OpAnd, compiler.OpOr:
			l, ok1 := p.filterOperand(x.X, x.Op, labels)
			r, ok2 := p.filterOperand(x.Y, x.Op, labels)
			if !ok1 || !ok2 {
				return nil, false
			}
			op := FilterAnd
			if x.Op == compiler.OpOr {
				op = FilterOr
			}
			return joinFilters(op, l, r), true
		}
		if x.Op.IsCompare() {
			return p.predicate(x, labels)
		}
	}
	pos, end := e.Span()
	p.diags.Add(pos, end, "a condition must compare a field with a constant (field == 1, comm ~ \"ba*\")")
	return nil, false
}

// filterOperand lowers an operand of AND or OR, parenthesising an AND
// inside an OR and an OR inside an AND, so the printed filter says what
// the kernel will do.
func (p *planner) filterOperand(e compiler.Expr, parent compiler.Op, labels map[string]compiler.Expr) (*Filter, bool) {
	f, ok := p.filter(e, labels)
	if x, isBin := compiler.Unparen(e).(*compiler.Binary); ok && isBin && (x.Op == compiler.OpAnd || x.Op == compiler.OpOr) && x.Op != parent {
		f.Paren = true
	}
	return f, ok
}

var flipped = map[compiler.Op]compiler.Op{
	compiler.OpLt: compiler.OpGt, compiler.OpLe: compiler.OpGe, compiler.OpGt: compiler.OpLt,
	compiler.OpGe: compiler.OpLe, compiler.OpEq: compiler.OpEq, compiler.OpNe: compiler.OpNe,
}

// predicate renders "field OP constant".
func (p *planner) predicate(b *compiler.Binary, labels map[string]compiler.Expr) (*Filter, bool) {
	lhs, rhs, op := compiler.Unparen(b.X), compiler.Unparen(b.Y), b.Op
	if _, isField := lhs.(*compiler.Field); !isField {
		if _, rIsField := rhs.(*compiler.Field); rIsField {
			f, ok := flipped[op]
			if !ok {
				p.diags.Add(b.OpPos, b.OpEnd, "write the field on the left of %s", op)
				return nil, false
			}
			lhs, rhs, op = rhs, lhs, f
		}
	}
	fe, ok := lhs.(*compiler.Field)
	if !ok {
		pos, end := lhs.Span()
		p.diags.Add(pos, end, "a condition must compare a field with a constant")
		return nil, false
	}
	if _, ok := rhs.(*compiler.Field); ok {
		pos, end := b.Span()
		x := p.diags.Add(pos, end, "the kernel compares a field with a constant, not with another field")
		x.Hint = "to compare values of the two events, select both and filter a histogram of the synthetic event"
		return nil, false
	}
	if le, isLabel := labelTarget(fe, labels); isLabel {
		lf, plain := compiler.Unparen(le).(*compiler.Field)
		if !plain {
			x := p.diags.Add(fe.Name.Pos, fe.Name.End, "%q is computed by the join and cannot be filtered by either event's trigger", fe.Name.String())
			x.Hint = "filter it in a histogram of the synthetic event: CREATE VIEW, then SELECT … FROM the view WHERE …"
			return nil, false
		}
		fe = lf
	}
	f := p.filterField(fe)
	if f == nil {
		return nil, false
	}
	if f.mod != "" {
		p.diags.Add(f.pos, f.end, "modifiers such as .%s do not apply in filters", f.mod)
		return nil, false
	}
	if f.name == "common_timestamp" || f.name == "common_stacktrace" || f.name == "stacktrace" {
		p.diags.Add(f.pos, f.end, "%s is not available to event filters", f.name)
		return nil, false
	}
	if f.pseudo && (f.name == "common_cpu" || f.name == "cpu") && !p.feat.CommonCPU {
		f.name = "CPU"
	}
	switch {
	case f.typ.isString():
		return p.stringPredicate(f, op, rhs, b)
	case f.typ.isNumeric():
		return p.numberPredicate(f, op, rhs, b)
	}
	p.diags.Add(f.pos, f.end, "%s is a %s field; filters compare numbers and strings only", f.name, f.typ.Kind)
	return nil, false
}

func (p *planner) stringPredicate(f *ref, op compiler.Op, rhs compiler.Expr, b *compiler.Binary) (*Filter, bool) {
	s, ok := rhs.(*compiler.String)
	if !ok {
		pos, end := rhs.Span()
		p.diags.Add(pos, end, "%s is a string field: compare it with a quoted string", f.name)
		return nil, false
	}
	switch op {
	case compiler.OpEq, compiler.OpNe, compiler.OpGlob, compiler.OpNotGlob:
	default:
		p.diags.Add(b.OpPos, b.OpEnd, "%s is a string field: use ==, != or ~ (glob), not %s", f.name, op)
		return nil, false
	}
	q, ok := p.filterString(s)
	if !ok {
		return nil, false
	}
	if op == compiler.OpNotGlob {
		return &Filter{Op: FilterNot, L: &Filter{Op: FilterPred, Field: f.name, Cmp: "~", Str: s.Value, IsStr: true, Quote: q}}, true
	}
	return &Filter{Op: FilterPred, Field: f.name, Cmp: op.String(), Str: s.Value, IsStr: true, Quote: q}, true
}

// filterString chooses the quote of a string of a kernel filter. The
// kernel has no escapes: a string is quoted with " unless it holds one,
// then with '.
func (p *planner) filterString(s *compiler.String) (byte, bool) {
	if len(s.Value) > maxFilterString {
		p.diags.Add(s.Pos, s.End, "string is %d bytes; the kernel takes at most %d", len(s.Value), maxFilterString)
		return 0, false
	}
	if strings.ContainsAny(s.Value, "\n\x00") {
		p.diags.Add(s.Pos, s.End, "a filter string cannot hold a newline or a NUL byte")
		return 0, false
	}
	switch {
	case !strings.Contains(s.Value, `"`):
		return '"', true
	case !strings.Contains(s.Value, `'`):
		return '\'', true
	}
	p.diags.Add(s.Pos, s.End, "a filter string cannot hold both ' and \" (the kernel has no escapes)")
	return 0, false
}

func (p *planner) numberPredicate(f *ref, op compiler.Op, rhs compiler.Expr, b *compiler.Binary) (*Filter, bool) {
	switch op {
	case compiler.OpGlob, compiler.OpNotGlob:
		p.diags.Add(b.OpPos, b.OpEnd, "~ matches strings; %s is a number field", f.name)
		return nil, false
	}
	n, ok := rhs.(*compiler.Number)
	if !ok {
		pos, end := rhs.Span()
		p.diags.Add(pos, end, "%s is a number field: compare it with a number", f.name)
		return nil, false
	}
	if !numberFits(n, f.typ.Signed) {
		x := p.diags.Add(n.Pos, n.End, "%s does not fit the %s field %s", n.Text, signedness(f.typ.Signed), f.name)
		if n.Neg {
			x.Hint = "the field is unsigned: the kernel would reject a negative value"
		}
		return nil, false
	}
	return &Filter{Op: FilterPred, Field: f.name, Cmp: op.String(), Num: n.Value, Neg: n.Neg}, true
}

func signedness(signed bool) string {
	if signed {
		return "signed"
	}
	return "unsigned"
}

// numberFits reports whether n can be parsed by the kernel for a field of
// the given signedness (kstrtoll or kstrtoull).
func numberFits(n *compiler.Number, signed bool) bool {
	switch {
	case n.Neg && !signed:
		return false
	case n.Neg:
		return n.Value <= 1<<63
	case signed:
		return n.Value < 1<<63
	}
	return true
}
