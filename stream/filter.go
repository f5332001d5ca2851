package stream

import (
	"fmt"
	"strconv"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// filter is a compiled event filter, as the kernel reads the text after
// "if" of a trigger or an event's filter file: predicates "field op
// value" joined by && and || (&& binds tighter), ! and parentheses.
type filter struct {
	op    string // "&&", "||", "!", or a predicate's operator
	l, r  *filter
	field *expr  // a predicate's field
	comm  bool   // the COMM pseudo field
	num   uint64 // a numeric predicate's value
	neg   bool   // num was written negative
	str   string // a string predicate's value
	glob  bool
	// code is op as match reads it (filterAnd …); text says the
	// predicate compares text (COMM or a string field), signed that the
	// field's numbers compare signed.
	code         byte
	text, signed bool
}

// filter codes: the operators of op.
const (
	filterAnd byte = iota
	filterOr
	filterNot
	filterEq
	filterNe
	filterLt
	filterLe
	filterGt
	filterGe
	filterGlob
	filterBits
)

// setCode sets code, text and signed from op and the field, for match.
func (f *filter) setCode() *filter {
	f.code = map[string]byte{"&&": filterAnd, "||": filterOr, "!": filterNot, "==": filterEq, "!=": filterNe,
		"<": filterLt, "<=": filterLe, ">": filterGt, ">=": filterGe, "~": filterGlob, "&": filterBits}[f.op]
	f.text = f.comm || f.field != nil && f.field.isString()
	f.signed = f.field != nil && f.field.signed()
	return f
}

// compileFilter compiles a filter of the plan on the event ev.
func compileFilter(f *planner.Filter, ev *tracefs.Event) (*filter, error) {
	switch f.Op {
	case planner.FilterAnd, planner.FilterOr:
		l, err := compileFilter(f.L, ev)
		if err != nil {
			return nil, err
		}
		r, err := compileFilter(f.R, ev)
		if err != nil {
			return nil, err
		}
		op := "&&"
		if f.Op == planner.FilterOr {
			op = "||"
		}
		return (&filter{op: op, l: l, r: r}).setCode(), nil
	case planner.FilterNot:
		l, err := compileFilter(f.L, ev)
		if err != nil {
			return nil, err
		}
		return (&filter{op: "!", l: l}).setCode(), nil
	case planner.FilterPred:
		p, err := compilePred(f, ev)
		if err != nil {
			return nil, err
		}
		return p.setCode(), nil
	}
	return nil, fmt.Errorf("filter %q: unknown node %d", f.String(), f.Op)
}

// compilePred compiles a predicate "field op value". The field is COMM
// (or comm on an event without such a field), the task's name; CPU
// (common_cpu, or cpu on an event without such a field), the CPU; or a
// field of the event.
func compilePred(p *planner.Filter, ev *tracefs.Event) (*filter, error) {
	f := &filter{op: p.Cmp}
	switch p.Cmp {
	case "==", "!=", "<=", ">=", "<", ">", "~", "&":
	default:
		return nil, fmt.Errorf("filter %q: unknown operator %q", p.String(), p.Cmp)
	}
	name := p.Field
	switch {
	case name == "COMM" || name == "comm" && ev.Field("comm") == nil:
		f.comm = true
	case name == "CPU" || name == "common_cpu" || name == "cpu" && ev.Field("cpu") == nil:
		f.field = &expr{kind: opCPU, name: name}
	default:
		x, err := compileExpr(&planner.Expr{Kind: planner.ExprField, Name: name}, ev)
		if err != nil {
			return nil, fmt.Errorf("filter %q: %v", p.String(), err)
		}
		f.field = x
	}
	if f.comm || f.field.isString() {
		if f.op != "==" && f.op != "!=" && f.op != "~" {
			return nil, fmt.Errorf("filter %q: %s on a string", p.String(), f.op)
		}
		f.glob = f.op == "~"
		f.str = p.Str
		if !p.IsStr {
			// A number written unquoted: the kernel reads the digits.
			f.str = strconv.FormatUint(p.Num, 10)
			if p.Neg {
				f.str = "-" + f.str
			}
		}
		return f, nil
	}
	if p.IsStr {
		return nil, fmt.Errorf("filter %q: bad number %q", p.String(), p.Str)
	}
	if f.op == "~" {
		return nil, fmt.Errorf("filter %q: ~ on a number", p.String())
	}
	f.num, f.neg = p.Num, p.Neg
	if p.Neg {
		f.num = -p.Num
	}
	return f, nil
}

// match evaluates the filter on an event; comm gives a task's name for
// the COMM pseudo field.
func (f *filter) match(ev *Event, comm func(pid int) string) bool {
	switch f.code {
	case filterAnd:
		return f.l.match(ev, comm) && f.r.match(ev, comm)
	case filterOr:
		return f.l.match(ev, comm) || f.r.match(ev, comm)
	case filterNot:
		return !f.l.match(ev, comm)
	}
	if f.text {
		var s string
		if f.comm {
			s = comm(ev.PID)
		} else {
			v, _ := f.field.eval(ev, nil)
			s = v.S
		}
		var eq bool
		if f.glob {
			eq = globMatch(f.str, s)
		} else {
			eq = s == f.str
		}
		return eq == (f.code != filterNe)
	}
	a, _ := f.field.num(ev, nil)
	b := f.num
	if f.code == filterBits {
		return a&b != 0
	}
	var cmp int
	if f.signed {
		cmp = compare(int64(a), int64(b))
	} else {
		cmp = compare(a, b)
	}
	switch f.code {
	case filterEq:
		return cmp == 0
	case filterNe:
		return cmp != 0
	case filterLt:
		return cmp < 0
	case filterLe:
		return cmp <= 0
	case filterGt:
		return cmp > 0
	case filterGe:
		return cmp >= 0
	}
	return false
}

func compare[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// globMatch matches s against the kernel's glob pattern: * any run of
// characters ('/' too), ? one character, [...] a class (with ranges and
// a leading ! or ^), and \ quoting the next character.
func globMatch(pat, s string) bool {
	// Backtracking on the last star keeps this linear in practice.
	var starP, starS = -1, 0
	p, i := 0, 0
	for i < len(s) {
		if p < len(pat) {
			switch c := pat[p]; c {
			case '*':
				starP, starS = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if n, ok := classMatch(pat[p:], s[i]); n > 0 {
					if ok {
						p += n
						i++
						continue
					}
				} else if s[i] == '[' {
					p++
					i++
					continue
				}
			case '\\':
				if p+1 < len(pat) && pat[p+1] == s[i] {
					p += 2
					i++
					continue
				}
			default:
				if c == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		p, i = starP+1, starS
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// classMatch matches c against the class at the start of pat ("[a-z]");
// n is the class's length, 0 when pat holds no closed class.
func classMatch(pat string, c byte) (n int, ok bool) {
	i := 1
	inv := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		inv = true
		i++
	}
	first := true
	for i < len(pat) {
		if pat[i] == ']' && !first {
			return i + 1, ok != inv
		}
		first = false
		lo := pat[i]
		hi := lo
		if i+2 < len(pat) && pat[i+1] == '-' && pat[i+2] != ']' {
			hi = pat[i+2]
			i += 2
		}
		if lo <= c && c <= hi {
			ok = true
		}
		i++
	}
	return 0, false
}
