package planner

import (
	"fmt"
	"strconv"
	"strings"
)

// Reading hist-trigger text back into the typed trigger plan. The planner
// builds [Expr], [Filter] and [Action] values and never reads its own
// text: these parsers are for text that comes from outside a plan in
// hand, a results JSON's "keys" read back for a merge (live's
// ReadJSONReport), and literals in tests. They read what the renderers
// write: ParseExpr(e.String()) is e again, and so on.

// ParseExpr reads a hist expression: operands joined by + - * /, * and /
// binding tighter and each level left to right, as the kernel reads them
// ("common_timestamp.usecs-$ts0", "bytes.buckets=64", "call_site.sym-offset").
func ParseExpr(s string) (*Expr, error) {
	operands, ops := splitExpr(s)
	leaves := make([]*Expr, len(operands))
	for i, o := range operands {
		x, err := parseOperand(o)
		if err != nil {
			return nil, fmt.Errorf("expression %q: %v", s, err)
		}
		leaves[i] = x
	}
	return buildExpr(leaves, ops), nil
}

// MustExprs reads hist expressions that are known to be good (literals):
// it panics on a bad one.
func MustExprs(texts ...string) []*Expr {
	out := make([]*Expr, len(texts))
	for i, t := range texts {
		x, err := ParseExpr(t)
		if err != nil {
			panic(err)
		}
		out[i] = x
	}
	return out
}

// ExprStrings renders each expression.
func ExprStrings(xs []*Expr) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// splitExpr splits a hist expression into operands and operators,
// "common_timestamp.usecs-$ts" → [common_timestamp.usecs $ts], [-]. A
// '-' is an operator except inside the modifier sym-offset.
func splitExpr(s string) (operands []string, ops []byte) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '+' && c != '-' && c != '*' && c != '/' {
			continue
		}
		if c == '-' && strings.HasSuffix(s[start:i], ".sym") && strings.HasPrefix(s[i:], "-offset") {
			continue
		}
		operands = append(operands, s[start:i])
		ops = append(ops, c)
		start = i + 1
	}
	return append(operands, s[start:]), ops
}

// buildExpr joins leaves by ops with the usual precedence, left to right:
// the rightmost + or - splits first, else the rightmost * or /.
func buildExpr(leaves []*Expr, ops []byte) *Expr {
	if len(ops) == 0 {
		return leaves[0]
	}
	split := -1
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i] == '+' || ops[i] == '-' {
			split = i
			break
		}
	}
	if split < 0 {
		split = len(ops) - 1
	}
	return &Expr{Kind: ExprBinary, Op: ops[split],
		L: buildExpr(leaves[:split+1], ops[:split]),
		R: buildExpr(leaves[split+1:], ops[split+1:])}
}

// exprMods are the modifiers an operand may carry.
var exprMods = map[string]bool{"": true, "usecs": true, "log2": true, "buckets": true, "execname": true,
	"syscall": true, "sym": true, "sym-offset": true, "hex": true, "percent": true, "graph": true, "stacktrace": true}

// parseOperand reads one operand with its modifier.
func parseOperand(s string) (*Expr, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty operand")
	}
	if s[0] >= '0' && s[0] <= '9' {
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", s)
		}
		return &Expr{Kind: ExprConst, N: n}, nil
	}
	name, mod, _ := strings.Cut(s, ".")
	x := &Expr{Name: name}
	if m, n, ok := strings.Cut(mod, "="); ok {
		if m != "buckets" {
			return nil, fmt.Errorf("unknown modifier %q", mod)
		}
		b, err := strconv.ParseUint(n, 0, 64)
		if err != nil || b == 0 {
			return nil, fmt.Errorf("bad bucket size %q", n)
		}
		mod, x.Buckets = m, b
	}
	if !exprMods[mod] {
		return nil, fmt.Errorf("unknown modifier %q", mod)
	}
	x.Mod = mod
	switch {
	case name[0] == '$':
		x.Kind, x.Name = ExprVar, name[1:]
		if x.Name == "" {
			return nil, fmt.Errorf("a variable without a name")
		}
	case name == "common_timestamp":
		x.Kind, x.Name = ExprTimestamp, ""
	case name == "common_cpu" || name == "cpu" || name == "CPU":
		x.Kind = ExprCPU
	case name == "common_stacktrace" || name == "stacktrace":
		x.Kind = ExprStack
	case name == "hitcount":
		x.Kind, x.Name = ExprHitcount, ""
	default:
		x.Kind = ExprField
	}
	return x, nil
}

// ParseFilter reads an event filter: predicates "field op value" joined
// by && and || (&& binding tighter), !(…) and parentheses.
func ParseFilter(s string) (*Filter, error) {
	p := &filterParser{s: s}
	f, err := p.or()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("filter %q: unexpected %q", s, p.s[p.i:])
	}
	return f, nil
}

type filterParser struct {
	s string
	i int
}

func (p *filterParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *filterParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *filterParser) or() (*Filter, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.eat("||") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &Filter{Op: FilterOr, L: l, R: r}
	}
	return l, nil
}

func (p *filterParser) and() (*Filter, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.eat("&&") {
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &Filter{Op: FilterAnd, L: l, R: r}
	}
	return l, nil
}

func (p *filterParser) unary() (*Filter, error) {
	if p.eat("!") {
		if strings.HasPrefix(p.s[p.i:], "=") {
			return nil, fmt.Errorf("filter %q: expected a field at %d", p.s, p.i-1)
		}
		var f *Filter
		var err error
		if p.eat("(") {
			// !(…) is written with its parentheses.
			f, err = p.group()
		} else {
			f, err = p.unary()
		}
		if err != nil {
			return nil, err
		}
		return &Filter{Op: FilterNot, L: f}, nil
	}
	if p.eat("(") {
		f, err := p.group()
		if err != nil {
			return nil, err
		}
		f.Paren = true
		return f, nil
	}
	return p.pred()
}

// group reads what follows "(" up to its ")".
func (p *filterParser) group() (*Filter, error) {
	f, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.eat(")") {
		return nil, fmt.Errorf("filter %q: missing )", p.s)
	}
	return f, nil
}

var filterCmps = []string{"==", "!=", "<=", ">=", "<", ">", "~", "&"}

func isFieldByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *filterParser) pred() (*Filter, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && isFieldByte(p.s[p.i]) {
		p.i++
	}
	f := &Filter{Op: FilterPred, Field: p.s[start:p.i]}
	if f.Field == "" {
		return nil, fmt.Errorf("filter %q: expected a field at %d", p.s, start)
	}
	for _, op := range filterCmps {
		if p.eat(op) {
			f.Cmp = op
			break
		}
	}
	if f.Cmp == "" {
		return nil, fmt.Errorf("filter %q: expected an operator after %s", p.s, f.Field)
	}
	p.space()
	if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '\'') {
		q := p.s[p.i]
		end := strings.IndexByte(p.s[p.i+1:], q)
		if end < 0 {
			return nil, fmt.Errorf("filter %q: unclosed string", p.s)
		}
		f.Str, f.IsStr, f.Quote = p.s[p.i+1:p.i+1+end], true, q
		p.i += end + 2
		return f, nil
	}
	start = p.i
	for p.i < len(p.s) && !strings.ContainsRune(" \t)&|", rune(p.s[p.i])) {
		p.i++
	}
	v := p.s[start:p.i]
	if v == "" {
		return nil, fmt.Errorf("filter %q: expected a value after %s %s", p.s, f.Field, f.Cmp)
	}
	digits := strings.TrimPrefix(v, "-")
	if n, err := strconv.ParseUint(digits, 0, 64); err == nil && f.Cmp != "~" {
		f.Num, f.Neg = n, digits != v
		if f.Neg && n > 1<<63 {
			return nil, fmt.Errorf("filter %q: bad number %q", p.s, v)
		}
		return f, nil
	}
	// A bare word: a string the kernel reads unquoted.
	f.Str, f.IsStr = v, true
	return f, nil
}

// ParseAction reads a handler with its action:
// "onmatch(sys.event).trace(synth,a,b)", "onmatch(sys.event).synth(a,b)",
// "onmax($v).save(f,g)", "onmax($v).snapshot()", "onchange($v).trace(synth,…)".
func ParseAction(s string) (*Action, error) {
	open := strings.IndexByte(s, '(')
	close := strings.IndexByte(s, ')')
	if open < 0 || close < open || close+1 >= len(s) || s[close+1] != '.' {
		return nil, fmt.Errorf("bad action %q", s)
	}
	a := &Action{}
	arg := s[open+1 : close]
	switch s[:open] {
	case "onmatch":
		a.Handler, a.Match = OnMatch, arg
	case "onmax", "onchange":
		a.Handler = OnMax
		if s[:open] == "onchange" {
			a.Handler = OnChange
		}
		if !strings.HasPrefix(arg, "$") || len(arg) < 2 {
			return nil, fmt.Errorf("bad action %q: %s needs a variable", s, s[:open])
		}
		a.Track = arg[1:]
	default:
		return nil, fmt.Errorf("unknown handler in %q", s)
	}
	rest := s[close+2:]
	po := strings.IndexByte(rest, '(')
	if po <= 0 || !strings.HasSuffix(rest, ")") {
		return nil, fmt.Errorf("bad action %q", s)
	}
	name, argText := rest[:po], rest[po+1:len(rest)-1]
	var args []string
	if argText != "" {
		args = strings.Split(argText, ",")
	}
	switch name {
	case "trace":
		if len(args) == 0 {
			return nil, fmt.Errorf("bad action %q: trace needs a synthetic event", s)
		}
		a.Kind, a.Synth, args = ActTrace, strings.TrimSpace(args[0]), args[1:]
	case "save":
		a.Kind = ActSave
	case "snapshot":
		a.Kind = ActSnapshot
	default:
		// The older form: onmatch(…).<synthetic event>(params).
		a.Kind, a.Synth, a.OldForm = ActTrace, name, true
	}
	for _, p := range args {
		x, err := ParseExpr(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("action %q: %v", s, err)
		}
		a.Params = append(a.Params, x)
	}
	return a, nil
}

// ParseHist reads a hist trigger's text ("hist:keys=…[:vals=…][:vars]
// [:sort=…][:size=N][:name=…][:nohitcount][:actions][ if filter]"), as
// Spec writes it, into a Hist without System, Event, Role or Columns.
func ParseHist(s string) (*Hist, error) {
	head, filter, hasFilter := strings.Cut(s, " if ")
	rest, ok := strings.CutPrefix(head, "hist:")
	if !ok {
		return nil, fmt.Errorf("%q is not a hist trigger", s)
	}
	h := &Hist{}
	if hasFilter {
		f, err := ParseFilter(filter)
		if err != nil {
			return nil, err
		}
		h.Filter = f
	}
	for _, part := range strings.Split(rest, ":") {
		name, val, isAttr := strings.Cut(part, "=")
		var err error
		switch {
		case strings.ContainsRune(part, '('):
			var a *Action
			if a, err = ParseAction(part); err == nil {
				h.Actions = append(h.Actions, a)
			}
		case part == "nohitcount" || part == "NOHC":
			h.NoHitcount = true
		case part == "pause" || part == "paused" || part == "cont" || part == "continue" || part == "clear":
		case !isAttr:
			err = fmt.Errorf("unknown attribute %q", part)
		case name == "keys" || name == "key":
			h.Keys, err = parseExprList(val)
		case name == "vals" || name == "values" || name == "val":
			h.Vals, err = parseExprList(val)
		case name == "sort":
			h.Sort = strings.Split(val, ",")
		case name == "size":
			h.Size, err = strconv.Atoi(val)
		case name == "name":
			h.Name = val
		case name == "clock":
		default:
			for _, def := range strings.Split(part, ",") {
				vn, ve, _ := strings.Cut(def, "=")
				x, perr := ParseExpr(ve)
				if perr != nil || vn == "" {
					err = fmt.Errorf("bad variable %q: %v", def, perr)
					break
				}
				h.Vars = append(h.Vars, Var{Name: vn, Expr: x})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("trigger %q: %v", s, err)
		}
	}
	return h, nil
}

func parseExprList(s string) ([]*Expr, error) {
	var out []*Expr
	for _, t := range strings.Split(s, ",") {
		x, err := ParseExpr(t)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
