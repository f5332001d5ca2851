package compiler

import (
	"slices"
	"sort"
	"strings"

	tidbast "github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlhist/sqlhist/source"
)

// converter turns tidb's AST into the query model, mapping every leaf back
// to its source token through the placeholders.
type converter struct {
	rw    *rewritten
	src   *source.Source
	diags source.Diags
	toks  []*token // tokens of the current statement
}

func (c *converter) errorf(pos, end source.Pos, format string, args ...any) *source.Diag {
	return c.diags.Add(pos, end, format, args...)
}

// keywordTok finds the first keyword token with the given text in the
// current statement, for positions of clauses tidb does not record.
func (c *converter) keywordTok(text string) *token {
	for _, t := range c.toks {
		if t.kind == tKeyword && t.text == text {
			return t
		}
	}
	if len(c.toks) > 0 {
		return c.toks[0]
	}
	return c.rw.toks[len(c.rw.toks)-1]
}

func (c *converter) unsupported(kw, what string) {
	t := c.keywordTok(kw)
	c.errorf(t.pos, t.end, "unsupported: %s", what)
}

func (c *converter) stmt(st tidbast.StmtNode, toks []*token) *Query {
	c.toks = toks
	switch s := st.(type) {
	case *tidbast.SelectStmt:
		return c.selectStmt(s)
	case *tidbast.SetOprStmt:
		return c.unionStmt(s)
	case *tidbast.CreateViewStmt:
		sel, ok := s.Select.(*tidbast.SelectStmt)
		if !ok {
			c.unsupported("SELECT", "CREATE VIEW needs a plain SELECT")
			return nil
		}
		name := c.ident(s.ViewName.Name.O)
		if name == nil {
			return nil
		}
		if len(s.Cols) > 0 {
			c.unsupported("VIEW", "a column list after the view name; name the columns with AS in the SELECT")
		}
		q := c.selectStmt(sel)
		if q != nil {
			q.View = name
			q.Pos = c.keywordTok("CREATE").pos
		}
		return q
	}
	t := c.toks[0]
	c.errorf(t.pos, t.end, "unsupported statement: only SELECT and CREATE VIEW … AS SELECT are understood")
	return nil
}

func (c *converter) selectStmt(s *tidbast.SelectStmt) *Query {
	q := &Query{}
	sel := c.keywordTok("SELECT")
	q.Pos = sel.pos
	last := c.toks[len(c.toks)-1]
	q.End = last.end
	if s.Distinct {
		c.unsupported("DISTINCT", "DISTINCT")
	}
	if s.Having != nil {
		c.unsupported("HAVING", "HAVING")
	}
	if s.From == nil {
		c.errorf(sel.pos, sel.end, "SELECT needs FROM and an event")
		return nil
	}
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			t := c.firstOp("*")
			c.errorf(t.pos, t.end, "SELECT * is not supported: name the fields to select")
			continue
		}
		item := &SelectItem{Expr: c.expr(f.Expr)}
		if f.AsName.O != "" {
			item.Label = c.ident(f.AsName.O)
		}
		q.Select = append(q.Select, item)
	}
	c.from(q, s.From.TableRefs)
	if s.Where != nil {
		q.Where = c.expr(s.Where)
	}
	if s.GroupBy != nil {
		for _, it := range s.GroupBy.Items {
			q.GroupBy = append(q.GroupBy, c.expr(it.Expr))
		}
	}
	if s.OrderBy != nil {
		for _, it := range s.OrderBy.Items {
			q.OrderBy = append(q.OrderBy, &OrderItem{Expr: c.expr(it.Expr), Desc: it.Desc})
		}
	}
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			c.unsupported("LIMIT", "LIMIT with an offset")
		}
		if n, ok := c.expr(s.Limit.Count).(*Number); ok {
			q.Limit = n
		}
	}
	return q
}

func (c *converter) firstOp(text string) *token {
	for _, t := range c.toks {
		if t.kind == tOp && t.text == text {
			return t
		}
	}
	return c.toks[0]
}

func (c *converter) from(q *Query, j *tidbast.Join) {
	if j.Right == nil {
		if inner, ok := j.Left.(*tidbast.Join); ok {
			c.from(q, inner)
			return
		}
		q.From = c.tableSource(j.Left)
		return
	}
	// tidb nests "a JOIN b ON … JOIN c ON …" to the left: collect the
	// joins from the innermost (a JOIN b) outwards.
	var joins []*tidbast.Join
	for x := j; x != nil; {
		joins = append(joins, x)
		left, ok := x.Left.(*tidbast.Join)
		for ok && left.Right == nil {
			left, ok = left.Left.(*tidbast.Join)
		}
		if !ok {
			break
		}
		x = left
	}
	slices.Reverse(joins)
	first := joins[0].Left
	for {
		inner, ok := first.(*tidbast.Join)
		if !ok {
			break
		}
		first = inner.Left
	}
	q.From = c.tableSource(first)
	toks := c.keywordToks("JOIN")
	for i, jn := range joins {
		jt := c.keywordTok("JOIN")
		if i < len(toks) {
			jt = toks[i]
		}
		table := c.tableSource(jn.Right)
		var on []*Match
		if !c.joinKind(jn, jt) {
			return
		}
		c.onClause(&on, jn.On.Expr)
		if i == 0 {
			q.Join, q.JoinPos, q.On = table, jt.pos, on
			continue
		}
		q.More = append(q.More, &JoinStep{Table: table, JoinPos: jt.pos, On: on})
	}
}

// keywordToks returns every keyword token with the given text in the
// current statement, in order.
func (c *converter) keywordToks(text string) []*token {
	var out []*token
	for _, t := range c.toks {
		if t.kind == tKeyword && t.text == text {
			out = append(out, t)
		}
	}
	return out
}

// joinKind refuses the joins the kernel cannot do: it pairs events as an
// inner join on equal keys.
func (c *converter) joinKind(j *tidbast.Join, jt *token) bool {
	switch {
	case j.Tp == tidbast.LeftJoin || j.Tp == tidbast.RightJoin:
		c.errorf(jt.pos, jt.end, "unsupported: outer joins; the kernel pairs events as an inner join")
		return false
	case j.NaturalJoin || j.StraightJoin:
		c.errorf(jt.pos, jt.end, "unsupported: this kind of JOIN; write JOIN … ON a.x = b.y")
		return false
	case len(j.Using) > 0:
		c.unsupported("USING", "JOIN … USING; write ON a.x = b.y")
		return false
	case j.On == nil:
		if jt.text == "JOIN" {
			c.errorf(jt.pos, jt.end, "JOIN needs ON: say which fields of the two events must be equal")
		} else {
			c.errorf(jt.pos, jt.end, "a comma between events is not supported: write JOIN … ON")
		}
		return false
	}
	return true
}

// onClause flattens "a = b AND c = d" into match pairs.
func (c *converter) onClause(on *[]*Match, e tidbast.ExprNode) {
	switch x := e.(type) {
	case *tidbast.BinaryOperationExpr:
		switch x.Op {
		case opcode.LogicAnd:
			c.onClause(on, x.L)
			c.onClause(on, x.R)
			return
		case opcode.EQ:
			l, r := c.expr(x.L), c.expr(x.R)
			lf, lok := Unparen(l).(*Field)
			rf, rok := Unparen(r).(*Field)
			m := &Match{Left: lf, Right: rf}
			_, lend := l.Span()
			rpos, _ := r.Span()
			m.OpPos, _ = c.opBetween(lend, rpos)
			if !lok || !rok {
				bad := l
				if lok {
					bad = r
				}
				p, e := bad.Span()
				c.errorf(p, e, "ON compares fields only: each side of = must be a field of one of the two events")
				return
			}
			*on = append(*on, m)
			return
		}
	case *tidbast.ParenthesesExpr:
		c.onClause(on, x.Expr)
		return
	}
	ex := c.expr(e)
	p, end := ex.Span()
	c.errorf(p, end, "ON takes equalities joined by AND (a.x = b.y AND a.z = b.w)")
}

func (c *converter) tableSource(n tidbast.ResultSetNode) *TableRef {
	ts, ok := n.(*tidbast.TableSource)
	if !ok {
		t := c.keywordTok("FROM")
		c.errorf(t.pos, t.end, "unsupported: a sub-query or parenthesised join; name an event (chain queries with CREATE VIEW)")
		return nil
	}
	tn, ok := ts.Source.(*tidbast.TableName)
	if !ok {
		t := c.keywordTok("FROM")
		c.errorf(t.pos, t.end, "unsupported: a sub-query; name an event (chain queries with CREATE VIEW)")
		return nil
	}
	tok := c.rw.names[tn.Name.O]
	if tok == nil || tok.kind != tName || tn.Schema.O != "" {
		t := c.keywordTok("FROM")
		c.errorf(t.pos, t.end, "sqlhist internal error: lost the event name")
		return nil
	}
	ref := &TableRef{Name: tok.name}
	if tok.probe != nil {
		ref.Probe = parseProbe(tok, &c.diags)
		if ref.Probe == nil {
			return nil
		}
	}
	if ts.AsName.O != "" {
		ref.Alias = c.ident(ts.AsName.O)
	}
	return ref
}

// ident maps a placeholder back to a simple (undotted) name.
func (c *converter) ident(ph string) *Ident {
	t := c.rw.names[ph]
	if t == nil || t.kind != tName {
		return nil
	}
	if len(t.name.Parts) != 1 {
		c.errorf(t.pos, t.end, "%q is not a simple name: a name here cannot contain dots", t.text)
	}
	return &Ident{Name: t.name.String(), Pos: t.pos, End: t.end}
}

// opBetween finds the operator token between two positions.
func (c *converter) opBetween(from, to source.Pos) (source.Pos, source.Pos) {
	toks := c.rw.toks
	// Tokens are in source order: start at the first one at or after from.
	i := sort.Search(len(toks), func(i int) bool { return toks[i].pos >= from })
	for ; i < len(toks) && toks[i].end <= to; i++ {
		if t := toks[i]; (t.kind == tOp || t.kind == tKeyword) && t.text != "(" && t.text != ")" {
			return t.pos, t.end
		}
	}
	return from, to
}

var binOps = map[opcode.Op]Op{
	opcode.Plus: OpAdd, opcode.Minus: OpSub, opcode.Mul: OpMul, opcode.Div: OpDiv,
	opcode.EQ: OpEq, opcode.NE: OpNe, opcode.LT: OpLt, opcode.LE: OpLe, opcode.GT: OpGt,
	opcode.GE: OpGe, opcode.And: OpBitAnd, opcode.LogicAnd: OpAnd, opcode.LogicOr: OpOr,
}

func (c *converter) expr(e tidbast.ExprNode) Expr {
	switch x := e.(type) {
	case *tidbast.ColumnNameExpr:
		t := c.rw.names[x.Name.Name.O]
		if t == nil || t.kind != tName {
			return c.bad(e, "sqlhist internal error: lost a name")
		}
		if t.probe != nil {
			c.errorf(t.pos, t.end, "a probe is an event source: name it in FROM or JOIN")
			return &Number{Pos: t.pos, End: t.end}
		}
		return &Field{Name: t.name}
	case tidbast.ValueExpr:
		return c.value(x)
	case *tidbast.ParenthesesExpr:
		inner := c.expr(x.Expr)
		p, end := inner.Span()
		return &Paren{X: inner, Pos: c.openBefore(p), End: c.closeAfter(end)}
	case *tidbast.BinaryOperationExpr:
		op, ok := binOps[x.Op]
		l, r := c.expr(x.L), c.expr(x.R)
		_, lend := l.Span()
		rpos, _ := r.Span()
		opPos, opEnd := c.opBetween(lend, rpos)
		if !ok {
			c.errorf(opPos, opEnd, "unsupported operator %q", c.srcText(opPos, opEnd))
		}
		// "!a == 1" means "!(a == 1)": the kernel's "!" applies to a
		// predicate, while SQL would bind it to the field.
		if op.IsCompare() {
			if u, ok := l.(*Unary); ok && u.Op == OpNot {
				return NewUnary(OpNot, NewBinary(op, u.X, r, opPos, opEnd), u.Pos)
			}
		}
		return NewBinary(op, l, r, opPos, opEnd)
	case *tidbast.UnaryOperationExpr:
		inner := c.expr(x.V)
		p, _ := inner.Span()
		opPos, opEnd := c.opBefore(p)
		switch x.Op {
		case opcode.Not, opcode.Not2:
			return NewUnary(OpNot, inner, opPos)
		case opcode.Minus:
			if n, ok := inner.(*Number); ok && !n.Neg {
				n.Neg = true
				n.Pos = opPos
				n.Text = "-" + n.Text
				return n
			}
			return NewUnary(OpSub, inner, opPos)
		}
		c.errorf(opPos, opEnd, "unsupported operator %q", c.srcText(opPos, opEnd))
		return inner
	case *tidbast.PatternLikeOrIlikeExpr:
		l, r := c.expr(x.Expr), c.expr(x.Pattern)
		_, lend := l.Span()
		rpos, _ := r.Span()
		opPos, opEnd := c.opBetween(lend, rpos)
		if op := c.srcText(opPos, opEnd); op != "~" && op != "!~" || !x.IsLike {
			c.errorf(opPos, opEnd, "unsupported: LIKE; use ~ with a glob pattern (\"bash*\")")
		}
		op := OpGlob
		if x.Not {
			op = OpNotGlob
		}
		return NewBinary(op, l, r, opPos, opEnd)
	case *tidbast.FuncCallExpr:
		return c.call(x)
	case *tidbast.AggregateFuncExpr:
		return c.aggregate(x)
	}
	return c.bad(e, "unsupported expression")
}

// bad reports an unsupported expression at the best position available.
func (c *converter) bad(e tidbast.ExprNode, msg string) Expr {
	off := e.OriginTextPosition()
	t := c.rw.tokenAt(off)
	c.errorf(t.pos, t.end, "%s", msg)
	return &Number{Pos: t.pos, End: t.end}
}

func (c *converter) srcText(p, e source.Pos) string {
	if !p.IsValid() || !e.IsValid() || e < p {
		return ""
	}
	return c.src.Text[p.Offset():e.Offset()]
}

// tokenIndex returns the index of the first token at or after p.
func (c *converter) tokenIndex(p source.Pos) int {
	toks := c.rw.toks
	return sort.Search(len(toks), func(i int) bool { return toks[i].pos >= p })
}

// openBefore returns the position of the "(" just before p, or p.
func (c *converter) openBefore(p source.Pos) source.Pos {
	if i := c.tokenIndex(p); i > 0 {
		if t := c.rw.toks[i-1]; t.kind == tOp && t.text == "(" {
			return t.pos
		}
	}
	return p
}

// closeAfter returns the end of the ")" just after e, or e.
func (c *converter) closeAfter(e source.Pos) source.Pos {
	if i := c.tokenIndex(e); i < len(c.rw.toks) {
		if t := c.rw.toks[i]; t.kind == tOp && t.text == ")" {
			return t.end
		}
	}
	return e
}

// opBefore finds the operator token just before p.
func (c *converter) opBefore(p source.Pos) (source.Pos, source.Pos) {
	i := c.tokenIndex(p)
	if i == 0 {
		return p, p
	}
	t := c.rw.toks[i-1]
	return t.pos, t.end
}

func (c *converter) value(v tidbast.ValueExpr) Expr {
	val := v.GetValue()
	if u, ok := val.(uint64); ok && u < 1<<63 {
		val = int64(u)
	}
	switch x := val.(type) {
	case int64:
		t := c.rw.nums[x]
		if t == nil {
			break
		}
		if t.numErr != "" {
			c.errorf(t.pos, t.end, "%s", t.numErr)
		}
		return &Number{Value: t.num, Text: t.text, Pos: t.pos, End: t.end}
	case string:
		t := c.rw.strs[x]
		if t == nil {
			break
		}
		return &String{Value: t.str, Pos: t.pos, End: t.end}
	}
	return c.bad(v, "unsupported literal")
}

func (c *converter) call(x *tidbast.FuncCallExpr) Expr {
	t := c.rw.names[x.FnName.O]
	if t == nil {
		return c.bad(x, "unsupported function "+strings.ToUpper(x.FnName.O))
	}
	end := c.closeAfterArgs(t)
	if t.kind == tKeyword && t.text == "CAST" {
		if len(x.Args) != 2 {
			c.errorf(t.pos, end, "CAST takes one field and a type: CAST(x AS HEX)")
			return &Number{Pos: t.pos, End: end}
		}
		arg := c.expr(x.Args[0])
		cast := &Cast{X: arg, Pos: t.pos, End: end}
		col, ok := x.Args[1].(*tidbast.ColumnNameExpr)
		var tt *token
		if ok {
			tt = c.rw.names[col.Name.Name.O]
		}
		if tt == nil || tt.kind != tCastTarget {
			c.errorf(t.pos, end, "CAST needs a type after AS: HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME, LOG2, BUCKETS=N or _COUNTER_")
			return cast
		}
		cast.TargetPos, cast.TargetEnd = tt.pos, tt.end
		target := strings.ToUpper(tt.text)
		if k, v, ok := strings.Cut(target, "="); ok {
			n, err := parseNumber(strings.ToLower(v))
			if err != nil {
				c.errorf(tt.pos, tt.end, "%s in CAST(… AS %s)", err, tt.text)
			}
			cast.Arg, cast.HasArg = n, true
			target = k
		}
		cast.Target = target
		return cast
	}
	c.errorf(t.pos, t.end, "unknown function %q: sqlhist knows CAST, COUNT(*) and SUM", t.text)
	return &Number{Pos: t.pos, End: end}
}

// closeAfterArgs returns the end of the ")" closing the call that starts at t.
func (c *converter) closeAfterArgs(t *token) source.Pos {
	depth := 0
	for _, x := range c.rw.toks[c.tokenIndex(t.end):] {
		if x.kind != tOp {
			continue
		}
		switch x.text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return x.end
			}
		}
	}
	return t.end
}

func (c *converter) aggregate(x *tidbast.AggregateFuncExpr) Expr {
	name := strings.ToUpper(x.F)
	t := c.rw.tokenAt(x.OriginTextPosition())
	for _, k := range c.toks {
		if k.kind == tKeyword && k.text == name && k.pos >= t.pos {
			t = k
			break
		}
	}
	call := &Call{Func: name, Pos: t.pos, End: c.closeAfterArgs(t)}
	if x.Distinct {
		c.errorf(t.pos, call.End, "unsupported: DISTINCT inside %s", name)
	}
	for _, a := range x.Args {
		if v, ok := a.(tidbast.ValueExpr); ok {
			if n, ok := v.GetValue().(int64); ok && c.rw.nums[n] == nil {
				call.Star = true // COUNT(*) arrives as COUNT(1)
				continue
			}
		}
		call.Args = append(call.Args, c.expr(a))
	}
	return call
}
