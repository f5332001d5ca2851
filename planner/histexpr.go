package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Arithmetic in a histogram: a key computed from one event's fields and
// constants ("hist:keys=common_timestamp/1000000"), or a SUM() of
// constants (vals=16-8-4-2, which the kernel folds to 2 and prints without
// a name). A SUM() of fields is refused: the kernel computes it but its
// hist file never shows a value that is an expression. The kernel reads an expression without
// parentheses, left to right with * and / before + and - (5.16; + and -
// of fields since 4.17), and takes at most three operators; keys cannot
// read variables, so an expression is printed flat or refused.

// exprItem lowers arithmetic on the histogram's event into a key (or,
// with value, a summed value).
func (p *planner) exprItem(x *compiler.Binary, value bool, pos, end source.Pos) *histItem {
	e := &flatExpr{p: p}
	ex, ok := e.print(x, 0, false)
	if !ok {
		return nil
	}
	if e.ops > maxOps {
		p.diags.Add(x.OpPos, x.OpEnd, "%d operators in one expression; the kernel evaluates at most %d", e.ops, maxOps)
		return nil
	}
	if e.usecs && e.other {
		p.diags.Add(pos, end, "this expression mixes a µs timestamp with other values, which the kernel refuses (\"Timestamp units in expression don't match\")")
		return nil
	}
	if e.field && value {
		// Seen on 6.12: vals=bytes_alloc-bytes_req is accepted and summed,
		// but the hist file hides values that are expressions.
		x := p.diags.Add(pos, end, "the kernel sums an expression of fields but never shows it: the hist file leaves out values that are expressions")
		x.Hint = "SUM each field, or key by the expression"
		return nil
	}
	if !e.field && !value {
		// SUM(16-8-4-2) is the kernel's own test of its evaluation
		// order (2 per event, left to right); a constant key is not.
		x := p.diags.Add(pos, end, "this expression reads no field: as a key it is the same for every event")
		x.Hint = "a histogram key reads a field of the event; SUM(constant) adds it up per event"
		return nil
	}
	text := ex.String()
	return &histItem{x: ex, sort: text, value: value, typ: vtype{Kernel: "u64", Size: 8, Kind: tracefs.KindInt}, field: text, pos: pos, end: end}
}

// flatExpr prints an expression as the kernel reads it.
type flatExpr struct {
	p                   *planner
	ops                 int
	field, usecs, other bool
}

func opPrec(op compiler.Op) int {
	if op == compiler.OpMul || op == compiler.OpDiv {
		return 2
	}
	return 1
}

// print returns e as the kernel reads it when the kernel's reading of it without
// parentheses computes the same: a left operand may be of the same
// precedence as its operator (left to right), a right operand only of a
// higher one.
func (f *flatExpr) print(e compiler.Expr, parent int, right bool) (*Expr, bool) {
	p := f.p
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Field:
		r := p.r.field(x)
		if r == nil {
			return nil, false
		}
		if !r.typ.isNumeric() || r.pseudo && r.name != "common_timestamp" && r.name != "common_cpu" {
			p.diags.Add(r.pos, r.end, "%s cannot be computed with: arithmetic takes numeric fields", r.name)
			return nil, false
		}
		if r.mod != "" && r.mod != "usecs" {
			p.diags.Add(r.pos, r.end, "%s.%s: a field in an expression takes no display modifier", r.name, r.mod)
			return nil, false
		}
		f.field = true
		if r.mod == "usecs" {
			f.usecs = true
		} else {
			f.other = true
		}
		return r.expr(), true
	case *compiler.Number:
		if x.Neg {
			p.diags.Add(x.Pos, x.End, "the kernel reads no negative constant in an expression")
			return nil, false
		}
		if !p.feat.Expressions {
			p.diags.Add(x.Pos, x.End, "%s", p.feat.Lacks("a constant in an expression", "expressions"))
			return nil, false
		}
		f.other = true
		return &Expr{Kind: ExprConst, N: x.Value}, true
	case *compiler.Binary:
		if !x.Op.IsArith() {
			break
		}
		prec := opPrec(x.Op)
		if prec < parent || right && prec == parent {
			d := p.diags.Add(x.OpPos, x.OpEnd, "the kernel reads expressions without parentheses, left to right with * and / first: this grouping cannot be written for it")
			d.Hint = "write the expression so that it needs no parentheses"
			return nil, false
		}
		if prec == 2 && !p.feat.Expressions {
			p.diags.Add(x.OpPos, x.OpEnd, "%s", p.feat.Lacks(x.Op.String()+" in an expression", "expressions"))
			return nil, false
		}
		if n, isNum := compiler.Unparen(x.Y).(*compiler.Number); isNum && x.Op == compiler.OpDiv && n.Value == 0 {
			p.diags.Add(n.Pos, n.End, "division by zero: the kernel refuses it")
			return nil, false
		}
		f.ops++
		l, ok1 := f.print(x.X, prec, false)
		r, ok2 := f.print(x.Y, prec, true)
		return &Expr{Kind: ExprBinary, Op: x.Op.String()[0], L: l, R: r}, ok1 && ok2
	}
	pos, end := e.Span()
	p.diags.Add(pos, end, "unsupported in a histogram expression: use fields, constants and + - * /")
	return nil, false
}
