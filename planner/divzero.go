package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
)

// zeroDivisor reports a division whose divisor is a constant that comes
// out zero: 0, (2-2), (4/8) in the kernel's integer arithmetic. The
// kernel refuses such a trigger ("Division by zero"); so does sqlhist,
// at the divisor. A division by zero inside the divisor is reported
// there instead.
func zeroDivisor(d *source.Diags, x *compiler.Binary) bool {
	if x.Op != compiler.OpDiv {
		return false
	}
	v, isConst, ok := constValue(d, x.Y)
	if !isConst {
		return false
	}
	if ok && v == 0 {
		pos, end := x.Y.Span()
		errDivisionByZero(d, pos, end)
	}
	return !ok || v == 0
}

// constValue evaluates e when it is made of numbers only, with the
// kernel's wrapping 64-bit arithmetic: the one constant folding of a
// JOIN's arithmetic (sumOf folds constant parts with it; zeroDivisor
// checks divisors with it). ok is false after a division by zero inside
// e, which it reports (errDivisionByZero, the one diagnostic of it).
func constValue(d *source.Diags, e compiler.Expr) (v uint64, isConst, ok bool) {
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Number:
		if x.Neg {
			return -x.Value, true, true
		}
		return x.Value, true, true
	case *compiler.Binary:
		if !x.Op.IsArith() {
			return 0, false, true
		}
		a, c1, ok1 := constValue(d, x.X)
		if !c1 {
			return 0, false, true
		}
		b, c2, ok2 := constValue(d, x.Y)
		if !c2 {
			return 0, false, true
		}
		if !ok1 || !ok2 {
			return 0, true, false
		}
		switch x.Op {
		case compiler.OpAdd:
			return a + b, true, true
		case compiler.OpSub:
			return a - b, true, true
		case compiler.OpMul:
			return a * b, true, true
		case compiler.OpDiv:
			if b == 0 {
				pos, end := x.Y.Span()
				errDivisionByZero(d, pos, end)
				return 0, true, false
			}
			return a / b, true, true
		}
	}
	return 0, false, true
}

func errDivisionByZero(d *source.Diags, pos, end source.Pos) {
	x := d.Add(pos, end, "division by zero: this divisor is a constant that comes out 0 (in the kernel's integer arithmetic), and the kernel refuses the trigger (\"Division by zero\")")
	x.Hint = "divide by a constant other than 0"
}
