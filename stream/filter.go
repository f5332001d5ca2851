package stream

import (
	"fmt"
	"strconv"
	"strings"

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
}

// compileFilter parses a filter on the event ev.
func compileFilter(s string, ev *tracefs.Event) (*filter, error) {
	p := &filterParser{s: s, ev: ev}
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
	s  string
	i  int
	ev *tracefs.Event
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

func (p *filterParser) or() (*filter, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.eat("||") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &filter{op: "||", l: l, r: r}
	}
	return l, nil
}

func (p *filterParser) and() (*filter, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.eat("&&") {
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &filter{op: "&&", l: l, r: r}
	}
	return l, nil
}

func (p *filterParser) unary() (*filter, error) {
	if p.eat("!") && !strings.HasPrefix(p.s[p.i:], "=") {
		f, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &filter{op: "!", l: f}, nil
	}
	if p.eat("(") {
		f, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, fmt.Errorf("filter %q: missing )", p.s)
		}
		return f, nil
	}
	return p.pred()
}

var filterOps = []string{"==", "!=", "<=", ">=", "<", ">", "~", "&"}

func (p *filterParser) pred() (*filter, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && (tracefs.IsIdent(p.s[p.i:p.i+1]) || p.s[p.i] == '.' || (p.s[p.i] >= '0' && p.s[p.i] <= '9')) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return nil, fmt.Errorf("filter %q: expected a field at %d", p.s, start)
	}
	f := &filter{}
	for _, op := range filterOps {
		if p.eat(op) {
			f.op = op
			break
		}
	}
	if f.op == "" {
		return nil, fmt.Errorf("filter %q: expected an operator after %s", p.s, name)
	}
	if name == "COMM" || name == "comm" && p.ev.Field("comm") == nil {
		f.comm = true
	} else {
		x, err := compileOperand(name, p.ev)
		if err != nil {
			return nil, fmt.Errorf("filter %q: %v", p.s, err)
		}
		f.field = x
	}
	p.space()
	if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '\'') {
		q := p.s[p.i]
		end := strings.IndexByte(p.s[p.i+1:], q)
		if end < 0 {
			return nil, fmt.Errorf("filter %q: unclosed string", p.s)
		}
		f.str = p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
	} else {
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(" \t)&|", rune(p.s[p.i])) {
			p.i++
		}
		f.str = p.s[start:p.i]
	}
	if f.comm || f.field.isString() {
		if f.op != "==" && f.op != "!=" && f.op != "~" {
			return nil, fmt.Errorf("filter %q: %s on a string", p.s, f.op)
		}
		f.glob = f.op == "~"
		return f, nil
	}
	s := f.str
	if strings.HasPrefix(s, "-") {
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("filter %q: bad number %q", p.s, s)
		}
		f.num, f.neg = uint64(n), true
	} else {
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("filter %q: bad number %q", p.s, s)
		}
		f.num = n
	}
	if f.op == "~" {
		return nil, fmt.Errorf("filter %q: ~ on a number", p.s)
	}
	return f, nil
}

// match evaluates the filter on an event; comm gives a task's name for
// the COMM pseudo field.
func (f *filter) match(ev *Event, comm func(pid int) string) bool {
	switch f.op {
	case "&&":
		return f.l.match(ev, comm) && f.r.match(ev, comm)
	case "||":
		return f.l.match(ev, comm) || f.r.match(ev, comm)
	case "!":
		return !f.l.match(ev, comm)
	}
	if f.comm || f.field.isString() {
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
		return eq == (f.op != "!=")
	}
	v, _ := f.field.eval(ev, nil)
	a, b := v.N, f.num
	if f.op == "&" {
		return a&b != 0
	}
	var cmp int
	if f.field.signed() {
		sa, sb := int64(a), int64(b)
		cmp = compare(sa, sb)
	} else {
		cmp = compare(a, b)
	}
	switch f.op {
	case "==":
		return cmp == 0
	case "!=":
		return cmp != 0
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
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
