package stream

import (
	"fmt"
	"math/bits"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// operand kinds of a hist expression.
const (
	opField     = iota // a field of the event
	opTimestamp        // common_timestamp
	opCPU              // common_cpu, cpu
	opStack            // common_stacktrace, stacktrace
	opVar              // $name: a variable of this or another trigger
	opConst            // a number
	opHitcount         // hitcount (a value only)
	opBinary           // left op right
)

// expr is a compiled hist operand or expression.
type expr struct {
	kind  int
	field int // opField: index in the event's Fields
	def   *tracefs.Field
	usecs bool   // .usecs on common_timestamp: ns / 1000
	name  string // opVar: the variable; opField: the field
	// stack says that an opVar's variable holds a stack trace
	// (common_stacktrace assigned to it): its value is the stack, kept
	// beside the numbers (resolveVars).
	stack bool
	// ref and own locate an opVar's variable for the trigger that
	// evaluates it (see Machine.New): its index among the other
	// triggers' variables it reads, else among its own; -1 for none.
	ref, own int
	n        uint64 // opConst
	op       byte   // opBinary: + - * /
	l, r     *expr
	// mod is the modifier written after the operand ("log2", "buckets",
	// "execname", "syscall", "sym", "sym-offset", "hex", "percent",
	// "graph", "stacktrace"), and bucket the size of .buckets=N.
	mod    string
	bucket uint64
	// log2 and buckets say that mod is "log2" or "buckets" (read for
	// every key).
	log2, buckets bool
	text          string // as written, for printing
	// number says that a key yields a number (isNumber), read without
	// making a Value.
	number bool
	// fast says how hit reads a key that is a field of the event with
	// no work beyond its modifier (setFastKey); mask keeps the bytes
	// the kernel keys its number by.
	fast byte
	mask uint64
}

// Keys hit reads at once (expr.fast).
const (
	fastNone = iota
	fastNum  // a number field: its value within its size
	fastLog2 // a number field's .log2
	fastText // a string field
)

// setFastKey sets fast and mask for a key: a field of the event, a
// number (plain or .log2) or a string, read as keyNumber(keyNum(…)) and
// appendKey would read it.
func (x *expr) setFastKey() {
	if x.kind != opField || x.def == nil || x.field < 0 {
		return
	}
	switch {
	case x.isString() && x.mod == "":
		x.fast = fastText
		return
	case !x.number || x.buckets || x.mod != "" && !x.log2:
		return
	}
	x.mask = ^uint64(0)
	if sz := x.size(); sz < 8 {
		x.mask = 1<<(uint(sz)*8) - 1
	}
	x.fast = fastNum
	if x.log2 {
		// keyNum's log2Bucket of the number as read.
		x.fast = fastLog2
	}
}

// isString says whether the expression yields a string.
func (x *expr) isString() bool {
	return x.kind == opField && x.def != nil && x.def.IsString()
}

// isNumber says whether the expression yields a number on every event:
// not a string, and not a stack or another array.
func (x *expr) isNumber() bool {
	switch x.kind {
	case opStack:
		return false
	case opField:
		return x.def != nil && !x.def.IsString() && x.def.Kind != tracefs.KindArray && x.def.Kind != tracefs.KindDynArray
	}
	return true
}

// hasStack says whether the expression reads a stack anywhere (a stack
// operand, or a variable holding one, as resolveVars marked it).
func (x *expr) hasStack() bool {
	found := false
	x.walk(func(o *expr) {
		found = found || o.kind == opStack || o.kind == opVar && o.stack
	})
	return found
}

// size is the bytes the kernel keys the value by.
func (x *expr) size() int {
	switch {
	case x.kind == opField && x.def != nil && x.def.Size > 0 && x.def.Size <= 8 && !x.def.IsString():
		return x.def.Size
	}
	return 8
}

// signed says whether the value is of a signed type.
func (x *expr) signed() bool { return x.kind == opField && x.def != nil && x.def.Signed }

// compileExpr compiles a hist expression of the plan on the event ev.
func compileExpr(x *planner.Expr, ev *tracefs.Event) (*expr, error) {
	if x == nil {
		return nil, fmt.Errorf("no expression")
	}
	out, err := compileNode(x, ev)
	if err != nil {
		return nil, err
	}
	out.text = x.String()
	return out, nil
}

func compileNode(x *planner.Expr, ev *tracefs.Event) (*expr, error) {
	out := &expr{name: x.Name, mod: x.Mod, bucket: x.Buckets, log2: x.Mod == "log2", buckets: x.Mod == "buckets"}
	if x.Mod == "usecs" {
		out.usecs, out.mod = true, ""
	}
	if x.Mod == "buckets" && x.Buckets == 0 {
		return nil, fmt.Errorf("bad bucket size 0")
	}
	switch x.Kind {
	case planner.ExprBinary:
		l, err := compileNode(x.L, ev)
		if err != nil {
			return nil, err
		}
		r, err := compileNode(x.R, ev)
		if err != nil {
			return nil, err
		}
		return &expr{kind: opBinary, op: x.Op, l: l, r: r}, nil
	case planner.ExprVar:
		out.kind, out.ref, out.own = opVar, -1, -1
	case planner.ExprConst:
		out.kind, out.n = opConst, x.N
	case planner.ExprTimestamp:
		out.kind, out.name = opTimestamp, "common_timestamp"
	case planner.ExprCPU:
		out.kind = opCPU
	case planner.ExprStack:
		out.kind, out.mod = opStack, "stacktrace"
	case planner.ExprHitcount:
		out.kind, out.name = opHitcount, "hitcount"
	case planner.ExprField:
		out.kind, out.field = opField, -1
		for i, f := range ev.Fields {
			if f.Name == x.Name {
				out.field, out.def = i, f
			}
		}
		if out.field < 0 {
			return nil, fmt.Errorf("no field %q in %s", x.Name, ev.FullName())
		}
		if out.mod == "stacktrace" {
			out.kind = opStack
		}
	default:
		return nil, fmt.Errorf("unknown operand kind %d", x.Kind)
	}
	return out, nil
}

// varLookup resolves a variable reference (an opVar) for an event: its
// value, and whether it was set.
type varLookup func(x *expr) (Value, bool)

// eval computes the expression on an event. ok is false when a variable
// it reads is not set (the kernel then leaves the whole trigger's
// variables and actions out for that event).
func (x *expr) eval(ev *Event, vars varLookup) (v Value, ok bool) {
	switch x.kind {
	case opField:
		v = ev.field(x.field)
		return v, true
	case opTimestamp:
		if x.usecs {
			// ns2usecs: rounded to the nearest µs.
			return Num((ev.TS + 500) / 1000), true
		}
		return Num(ev.TS), true
	case opCPU:
		return Num(uint64(ev.CPU)), true
	case opStack:
		if x.name != "" && x.name != "common_stacktrace" && x.name != "stacktrace" {
			// A stack field of the event (a synthetic event's
			// unsigned long[]).
			return ev.field(x.field), true
		}
		return Value{Stack: ev.Stack}, true
	case opConst:
		return Num(x.n), true
	case opVar:
		return vars(x)
	case opBinary:
		l, ok := x.l.eval(ev, vars)
		if !ok {
			return Value{}, false
		}
		r, ok := x.r.eval(ev, vars)
		if !ok {
			return Value{}, false
		}
		switch x.op {
		case '+':
			return Num(l.N + r.N), true
		case '-':
			return Num(l.N - r.N), true
		case '*':
			return Num(l.N * r.N), true
		case '/':
			if r.N == 0 {
				// The kernel's division by zero yields -1.
				return Num(^uint64(0)), true
			}
			return Num(l.N / r.N), true
		}
	}
	return Value{}, true
}

// num is eval of an expression that is no stack trace (its value's
// number), without making a Value: variables read through t.
func (x *expr) num(ev *Event, t *trigger) (uint64, bool) {
	switch x.kind {
	case opField:
		if x.field >= 0 && x.field < len(ev.Fields) {
			return ev.Fields[x.field].N, true
		}
		return 0, true
	case opTimestamp:
		if x.usecs {
			return (ev.TS + 500) / 1000, true
		}
		return ev.TS, true
	case opCPU:
		return uint64(ev.CPU), true
	case opConst:
		return x.n, true
	case opVar:
		return t.varNum(x)
	case opBinary:
		l, ok := x.l.num(ev, t)
		if !ok {
			return 0, false
		}
		r, ok := x.r.num(ev, t)
		if !ok {
			return 0, false
		}
		switch x.op {
		case '+':
			return l + r, true
		case '-':
			return l - r, true
		case '*':
			return l * r, true
		case '/':
			if r == 0 {
				return ^uint64(0), true
			}
			return l / r, true
		}
		return 0, true
	}
	var lookup varLookup
	if t != nil {
		lookup = t.lookup
	}
	v, ok := x.eval(ev, lookup)
	return v.N, ok
}

// readOnce lists the variables read as a direct operand of an operator:
// the kernel reads those references once (a read clears the variable).
func (x *expr) readOnce(out []string) []string {
	if x.kind != opBinary {
		return out
	}
	for _, o := range []*expr{x.l, x.r} {
		if o.kind == opVar {
			out = append(out, o.name)
		}
	}
	return x.r.readOnce(x.l.readOnce(out))
}

// walk calls f on the expression and each of its operands.
func (x *expr) walk(f func(*expr)) {
	f(x)
	if x.kind == opBinary {
		x.l.walk(f)
		x.r.walk(f)
	}
}

// vars lists the variables an expression reads.
func (x *expr) vars(out []string) []string {
	switch x.kind {
	case opVar:
		return append(out, x.name)
	case opBinary:
		return x.r.vars(x.l.vars(out))
	}
	return out
}

// log2Bucket is the kernel's .log2 key: ilog2(roundup_pow_of_two(v)),
// 0 for 0 and 1.
func log2Bucket(v uint64) uint64 {
	if v <= 1 {
		return 0
	}
	// The least n with 2^n >= v: the bits of v-1.
	return uint64(bits.Len64(v - 1))
}
