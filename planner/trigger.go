package planner

import (
	"slices"
	"strconv"
	"strings"
)

// The typed trigger plan: what a hist trigger computes, as Go values the
// planner builds once. Every engine consumes these: emit renders them as
// the kernel's hist-trigger text (String), the stream machine and the awk
// program evaluate them, the BPF engine compiles them. Nothing reads back
// the text the planner made (ParseExpr, ParseFilter, ParseAction and
// ParseHist read text from outside a plan: a results JSON, tests).
// A planned value may be shared (a key and the variable that saves it
// are one Expr): engines read the values and never change them.

// ExprKind says what an [Expr] is.
type ExprKind int

// The kinds of [Expr].
const (
	ExprField     ExprKind = iota // a field of the event: Name
	ExprTimestamp                 // common_timestamp (Mod "usecs" for µs)
	ExprCPU                       // the CPU: Name is "common_cpu", "cpu" or "CPU" as written
	ExprStack                     // the event's stack: Name "common_stacktrace" or "stacktrace"
	ExprVar                       // a hist variable: $Name
	ExprConst                     // the constant N
	ExprHitcount                  // hitcount (a value only)
	ExprBinary                    // L Op R, Op one of + - * /
)

// Expr is a hist operand or expression: a key, a value, a variable's
// definition or an action's parameter.
type Expr struct {
	Kind ExprKind
	// Name is the field's name as written (ExprField, ExprCPU,
	// ExprStack) or the variable's without its $ (ExprVar).
	Name string
	// Mod is the modifier written after the operand: "", "usecs",
	// "log2", "buckets", "execname", "syscall", "sym", "sym-offset",
	// "hex", "percent", "graph" or "stacktrace" (a field of stack type
	// used as a stack key). Buckets is the size of .buckets=N.
	Mod     string
	Buckets uint64
	N       uint64 // ExprConst
	Op      byte   // ExprBinary: '+', '-', '*' or '/'
	L, R    *Expr  // ExprBinary
}

// String renders the expression as the kernel reads it:
// "common_timestamp.usecs-$ts0", "call_site.sym-offset", "bytes.buckets=64".
// An expression is written without parentheses (the kernel reads none):
// the planner builds only trees whose flat reading is the same.
func (e *Expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *Expr) write(b *strings.Builder) {
	switch e.Kind {
	case ExprBinary:
		e.L.write(b)
		b.WriteByte(e.Op)
		e.R.write(b)
		return
	case ExprVar:
		b.WriteString("$" + e.Name)
	case ExprConst:
		b.WriteString(strconv.FormatUint(e.N, 10))
	case ExprHitcount:
		b.WriteString("hitcount")
	case ExprTimestamp:
		b.WriteString("common_timestamp")
	default:
		b.WriteString(e.Name)
	}
	switch {
	case e.Mod == "buckets":
		b.WriteString(".buckets=" + strconv.FormatUint(e.Buckets, 10))
	case e.Mod != "":
		b.WriteString("." + e.Mod)
	}
}

// Equal reports whether two expressions are the same.
func (e *Expr) Equal(o *Expr) bool {
	if e == nil || o == nil {
		return e == o
	}
	return e.Kind == o.Kind && e.Name == o.Name && e.Mod == o.Mod && e.Buckets == o.Buckets &&
		e.N == o.N && e.Op == o.Op && e.L.Equal(o.L) && e.R.Equal(o.R)
}

// ExprsEqual reports whether two lists of expressions are the same.
func ExprsEqual(a, b []*Expr) bool {
	return slices.EqualFunc(a, b, (*Expr).Equal)
}

// Walk calls f on e and every operand under it, depth first.
func (e *Expr) Walk(f func(*Expr)) {
	if e == nil {
		return
	}
	f(e)
	e.L.Walk(f)
	e.R.Walk(f)
}

// Vars lists the variables the expression reads, in order, with repeats.
func (e *Expr) Vars() []string {
	var out []string
	e.Walk(func(x *Expr) {
		if x.Kind == ExprVar {
			out = append(out, x.Name)
		}
	})
	return out
}

// FilterOp says what a [Filter] node is.
type FilterOp int

// The kinds of [Filter] node.
const (
	FilterAnd  FilterOp = iota // L && R
	FilterOr                   // L || R
	FilterNot                  // !(L)
	FilterPred                 // Field Cmp value
)

// Filter is an event filter as the kernel reads the text after "if" of a
// trigger or an event's filter file.
type Filter struct {
	Op   FilterOp
	L, R *Filter // And, Or: both; Not: L
	// Paren says the node is written in parentheses (an AND inside an OR
	// and an OR inside an AND are, so that the text says what the kernel
	// does).
	Paren bool
	// A predicate: Field compared by Cmp ("==", "!=", "<", "<=", ">",
	// ">=", "&", "~") with Num (negative when Neg) or, on a string field
	// or the task name, with Str (Quote is the quote it is written in:
	// '"' unless Str holds one). Field is "COMM" (or "comm" on an event
	// without a comm field) for the task name, "CPU" for the CPU.
	Field string
	Cmp   string
	Num   uint64
	Neg   bool
	Str   string
	IsStr bool
	Quote byte
}

// String renders the filter as the kernel reads it.
func (f *Filter) String() string {
	var b strings.Builder
	f.write(&b)
	return b.String()
}

func (f *Filter) write(b *strings.Builder) {
	if f.Paren {
		b.WriteByte('(')
	}
	switch f.Op {
	case FilterAnd, FilterOr:
		f.L.write(b)
		if f.Op == FilterAnd {
			b.WriteString(" && ")
		} else {
			b.WriteString(" || ")
		}
		f.R.write(b)
	case FilterNot:
		b.WriteString("!(")
		f.L.write(b)
		b.WriteString(")")
	case FilterPred:
		b.WriteString(f.Field + " " + f.Cmp + " ")
		switch {
		case f.IsStr:
			q := f.Quote
			if q == 0 {
				q = '"'
			}
			b.WriteByte(q)
			b.WriteString(f.Str)
			b.WriteByte(q)
		case f.Neg:
			b.WriteString("-" + strconv.FormatUint(f.Num, 10))
		default:
			b.WriteString(strconv.FormatUint(f.Num, 10))
		}
	}
	if f.Paren {
		b.WriteByte(')')
	}
}

// Handler says when an [Action] runs.
type Handler int

// The handlers.
const (
	OnMatch  Handler = iota // onmatch(System.Event): an entry of the matched event's trigger exists
	OnMax                   // onmax($Track): the tracked variable reached a new maximum
	OnChange                // onchange($Track): the tracked variable changed
)

// ActionKind says what an [Action] does.
type ActionKind int

// The actions.
const (
	ActTrace    ActionKind = iota // trace(Synth, Params…): fire a synthetic event
	ActSave                       // save(Params…): keep fields beside the maximum
	ActSnapshot                   // snapshot(): take a snapshot of the buffer
)

// Action is a handler with its action: "onmatch(sched.sched_waking).trace(wakeup_lat,$lat,next_pid)".
type Action struct {
	Handler Handler
	// Match is onmatch's event, "system.event"; Track onmax's or
	// onchange's variable, without its $.
	Match string
	Track string
	Kind  ActionKind
	Synth string // ActTrace: the synthetic event fired
	// OldForm writes a trace as "onmatch(…).Synth(params)", the form
	// kernels before 5.6 read.
	OldForm bool
	Params  []*Expr
}

// String renders the action as the kernel reads it.
func (a *Action) String() string {
	var b strings.Builder
	switch a.Handler {
	case OnMatch:
		b.WriteString("onmatch(" + a.Match + ")")
	case OnMax:
		b.WriteString("onmax($" + a.Track + ")")
	case OnChange:
		b.WriteString("onchange($" + a.Track + ")")
	}
	var params []string
	switch a.Kind {
	case ActTrace:
		if a.OldForm {
			b.WriteString("." + a.Synth + "(")
		} else {
			b.WriteString(".trace(")
			params = append(params, a.Synth)
		}
	case ActSave:
		b.WriteString(".save(")
	case ActSnapshot:
		b.WriteString(".snapshot(")
	}
	for _, p := range a.Params {
		params = append(params, p.String())
	}
	b.WriteString(strings.Join(params, ",") + ")")
	return b.String()
}

// Equal reports whether two filters are the same.
func (f *Filter) Equal(o *Filter) bool {
	if f == nil || o == nil {
		return f == o
	}
	return f.Op == o.Op && f.Paren == o.Paren && f.Field == o.Field && f.Cmp == o.Cmp && f.Num == o.Num &&
		f.Neg == o.Neg && f.Str == o.Str && f.IsStr == o.IsStr && f.quote() == o.quote() && f.L.Equal(o.L) && f.R.Equal(o.R)
}

func (f *Filter) quote() byte {
	if f.IsStr && f.Quote == 0 {
		return '"'
	}
	return f.Quote
}

// Equal reports whether two actions are the same.
func (a *Action) Equal(o *Action) bool {
	if a == nil || o == nil {
		return a == o
	}
	return a.Handler == o.Handler && a.Match == o.Match && a.Track == o.Track && a.Kind == o.Kind &&
		a.Synth == o.Synth && a.OldForm == o.OldForm && ExprsEqual(a.Params, o.Params)
}
