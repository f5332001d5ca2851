package compiler

import (
	"strings"

	"github.com/sqlhist/sqlhist/source"
)

// Script is a parsed input: one or more statements.
type Script struct {
	Stmts []*Query
}

// Query is one statement: a SELECT, optionally named by CREATE VIEW.
//
// With Join set it describes a synthetic event fed by two events (or, with
// More, a chain of them); without it, a histogram on one event.
type Query struct {
	Pos, End source.Pos
	View     *Ident // CREATE VIEW name AS SELECT …: the synthetic event's name
	Select   []*SelectItem
	From     *TableRef
	Join     *TableRef  // nil in histogram mode
	JoinPos  source.Pos // position of the JOIN keyword
	On       []*Match
	// More holds the third and later events of a chain (FROM a JOIN b
	// ON … JOIN c ON …), in order; each step's ON pairs the new event
	// with the events before it.
	More    []*JoinStep
	Where   Expr
	GroupBy []Expr
	OrderBy []*OrderItem
	Limit   *Number
	// Union holds the SELECTs after the first of "SELECT … UNION ALL
	// SELECT …": histograms of other events into one shared map. ORDER
	// BY and LIMIT of the union are on every one of them.
	Union []*Query
}

// JoinStep is one JOIN after the first in a chain.
type JoinStep struct {
	Table   *TableRef
	JoinPos source.Pos // position of its JOIN keyword
	On      []*Match
}

// Ident is a simple name with its position.
type Ident struct {
	Name     string
	Pos, End source.Pos
}

// Name is a possibly dotted name as written: "start.pid",
// "sched.sched_waking", "call_site.sym-offset".
type Name struct {
	Parts    []*Ident
	Pos, End source.Pos
}

// String returns the parts joined by dots.
func (n *Name) String() string {
	s := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		s[i] = p.Name
	}
	return strings.Join(s, ".")
}

// TableRef is an event in FROM or JOIN with its optional alias. For a
// probe call, Probe holds its definition and Name the call as written
// (the planner names the probe's event and resolves it).
type TableRef struct {
	Name  *Name
	Alias *Ident
	Probe *Probe
}

// SelectItem is one item of the SELECT list.
type SelectItem struct {
	Expr  Expr
	Label *Ident // AS label, or nil
}

// Match is one "a = b" pair of the ON clause.
type Match struct {
	Left, Right *Field
	OpPos       source.Pos
}

// OrderItem is one ORDER BY item.
type OrderItem struct {
	Expr Expr
	Desc bool
}

// Expr is an expression node.
type Expr interface {
	Span() (pos, end source.Pos)
}

// Field is a reference to an event field (or a pseudo-field such as
// TIMESTAMP), qualified or not.
type Field struct{ Name *Name }

// Number is an integer literal. Value holds the magnitude; Neg is set for a
// literal written with a leading minus.
type Number struct {
	Value    uint64
	Neg      bool
	Text     string
	Pos, End source.Pos
}

// String is a quoted string literal; Value is the text between the quotes.
type String struct {
	Value    string
	Pos, End source.Pos
}

// Op is an operator.
type Op int

// The operators.
const (
	OpAdd Op = iota
	OpSub
	OpMul
	OpDiv
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpBitAnd // "&" in a filter: (field & value) != 0
	OpGlob   // "~"
	OpNotGlob
	OpAnd
	OpOr
	OpNot
)

var opText = [...]string{"+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "&", "~", "!~", "&&", "||", "!"}

// String returns the operator as the kernel writes it.
func (o Op) String() string { return opText[o] }

// IsCompare reports whether o compares a field with a value.
func (o Op) IsCompare() bool { return o >= OpEq && o <= OpNotGlob }

// IsArith reports whether o is an arithmetic operator.
func (o Op) IsArith() bool { return o <= OpDiv }

// Binary is X Op Y.
type Binary struct {
	Op    Op
	X, Y  Expr
	OpPos source.Pos
	OpEnd source.Pos

	pos, end source.Pos // the span, cached by NewBinary
}

// NewBinary returns X Op Y with its span computed once: spans of long
// operator chains would otherwise cost time proportional to their depth.
func NewBinary(op Op, x, y Expr, opPos, opEnd source.Pos) *Binary {
	b := &Binary{Op: op, X: x, Y: y, OpPos: opPos, OpEnd: opEnd}
	b.pos, _ = x.Span()
	_, b.end = y.Span()
	return b
}

// Unary is Op X, for "!"/NOT and unary minus (Op = OpSub).
type Unary struct {
	Op  Op
	X   Expr
	Pos source.Pos

	end source.Pos // the end of X, cached by NewUnary
}

// NewUnary returns Op X with its span computed once. Computing it on each
// call walked the whole chain, so converting "!!!…!a" cost time quadratic
// in its length (16,000 "-" took half a second, 56,000 stalled the fuzzer).
func NewUnary(op Op, x Expr, pos source.Pos) *Unary {
	u := &Unary{Op: op, X: x, Pos: pos}
	_, u.end = x.Span()
	return u
}

// Paren is an expression in parentheses.
type Paren struct {
	X        Expr
	Pos, End source.Pos
}

// Cast is CAST(X AS Target). Target is upper-cased; Arg holds the N of
// BUCKETS=N.
type Cast struct {
	X                    Expr
	Target               string
	Arg                  uint64
	HasArg               bool
	Pos, End             source.Pos
	TargetPos, TargetEnd source.Pos
}

// Call is an aggregate call: COUNT(*), SUM(x), …
type Call struct {
	Func     string // upper case
	Args     []Expr
	Star     bool
	Pos, End source.Pos
}

// Span implements Expr.
func (f *Field) Span() (source.Pos, source.Pos)  { return f.Name.Pos, f.Name.End }
func (n *Number) Span() (source.Pos, source.Pos) { return n.Pos, n.End }
func (s *String) Span() (source.Pos, source.Pos) { return s.Pos, s.End }
func (b *Binary) Span() (source.Pos, source.Pos) {
	if b.pos.IsValid() {
		return b.pos, b.end
	}
	p, _ := b.X.Span()
	_, e := b.Y.Span()
	return p, e
}
func (u *Unary) Span() (source.Pos, source.Pos) {
	if u.end.IsValid() {
		return u.Pos, u.end
	}
	_, e := u.X.Span()
	return u.Pos, e
}
func (p *Paren) Span() (source.Pos, source.Pos) { return p.Pos, p.End }
func (c *Cast) Span() (source.Pos, source.Pos)  { return c.Pos, c.End }
func (c *Call) Span() (source.Pos, source.Pos)  { return c.Pos, c.End }

// Unparen strips any parentheses around e.
func Unparen(e Expr) Expr {
	for {
		p, ok := e.(*Paren)
		if !ok {
			return e
		}
		e = p.X
	}
}
