package compiler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sqlhist/sqlhist/source"
)

// The pre-lexer reads sqlhist's dialect (==, ~, CAST(x AS HEX), \from,
// dotted names such as call_site.sym-offset, double-quoted strings with
// literal backslashes) and hands the tidb parser a text in which every
// name, number and string is a unique placeholder. The parser contributes
// the grammar; each leaf it returns maps back to exactly one token here,
// so every position is exact.

type tokKind int

const (
	tEOF tokKind = iota
	tName
	tKeyword
	tNumber
	tString
	tOp
	tCastTarget
)

// token is one lexical token of the original source.
type token struct {
	kind     tokKind
	text     string // source text (keywords upper-cased)
	pos, end source.Pos
	name     *Name      // tName
	str      string     // tString: the value between the quotes
	num      uint64     // tNumber
	numErr   string     // tNumber: why the literal is not a number we take
	probe    *probeCall // tName: a probe call such as kprobe(…), whole
	sql      string     // what the tidb parser is given for this token
	rw       int        // byte offset of sql in the rewritten text
}

// keywords are the bare words handed to tidb as keywords. Everything else
// is a name. Words here that sqlhist does not support are still passed so
// the parser can place them and the converter can say they are unsupported.
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "AS": true, "JOIN": true, "INNER": true, "ON": true,
	"WHERE": true, "AND": true, "OR": true, "NOT": true, "XOR": true, "CAST": true,
	"CREATE": true, "VIEW": true, "ORDER": true, "GROUP": true, "BY": true, "ASC": true,
	"DESC": true, "LIMIT": true, "HAVING": true, "DISTINCT": true, "UNION": true,
	"ALL": true, "IN": true, "IS": true, "NULL": true, "BETWEEN": true, "LIKE": true,
	"LEFT": true, "RIGHT": true, "OUTER": true, "CROSS": true, "USING": true,
	"EXISTS": true, "TRUE": true, "FALSE": true, "DIV": true, "MOD": true,
	"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true,
	"INSERT": true, "UPDATE": true, "DELETE": true, "DROP": true, "OFFSET": true,
}

// aggregates are keywords that are only keywords when a "(" follows.
var aggregates = map[string]bool{"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true}

type lexer struct {
	src   *source.Source
	s     string
	i     int
	toks  []*token
	diags source.Diags
}

func (lx *lexer) errorf(pos, end int, format string, args ...any) {
	lx.diags.Add(source.PosOf(pos), source.PosOf(end), format, args...)
}

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool {
	return isLetter(c) || isDigit(c)
}

// bpftraceProbe matches a probe written as bpftrace writes it
// (tracepoint:sched:sched_switch, kprobe:vfs_read, uprobe:/bin/sh:main).
var bpftraceProbe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(tracepoint|t|kprobe|k|kretprobe|kr|uprobe|u|uretprobe|ur|rawtracepoint|rt):([A-Za-z0-9_./-]+)(?::([A-Za-z0-9_.]+))?\b`)
})

// bpftraceHints replaces the lexer's errors inside a probe written as
// bpftrace writes it by one that says how sqlhist writes it.
func bpftraceHints(text string, diags source.Diags) source.Diags {
	if len(diags) == 0 {
		return diags
	}
	for _, m := range bpftraceProbe().FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		kept := diags[:0]
		hit := false
		for _, d := range diags {
			if off := d.Pos.Offset(); d.Pos.IsValid() && off >= start && off < end {
				hit = true
				continue
			}
			kept = append(kept, d)
		}
		diags = kept
		if !hit {
			continue
		}
		kind, a := text[m[2]:m[3]], text[m[4]:m[5]]
		b := ""
		if m[6] >= 0 {
			b = text[m[6]:m[7]]
		}
		var want string
		switch kind {
		case "tracepoint", "t", "rawtracepoint", "rt":
			want = a
			if b != "" {
				want = a + "." + b
			}
		case "kprobe", "k":
			want = "kprobe(" + a + ")"
		case "kretprobe", "kr":
			want = "kretprobe(" + a + ")"
		case "uprobe", "u":
			want = "uprobe('" + a + "', " + b + ")"
		case "uretprobe", "ur":
			want = "uretprobe('" + a + "', " + b + ")"
		}
		d := diags.Add(source.PosOf(start), source.PosOf(end), "%q is bpftrace's probe syntax, not sqlhist's", text[start:end])
		d.Hint = "in sqlhist: FROM " + want
	}
	return diags
}

// lex tokenizes the whole source.
func lex(src *source.Source) ([]*token, source.Diags) {
	lx := &lexer{src: src, s: src.Text}
	for lx.next() {
	}
	lx.toks = append(lx.toks, &token{kind: tEOF, pos: source.PosOf(len(lx.s)), end: source.PosOf(len(lx.s))})
	return lx.toks, bpftraceHints(lx.s, lx.diags)
}

func (lx *lexer) emit(t *token) { lx.toks = append(lx.toks, t) }

// next reads one token; it returns false at the end of input.
func (lx *lexer) next() bool {
	lx.skipSpaceAndComments()
	if lx.i >= len(lx.s) {
		return false
	}
	start := lx.i
	c := lx.s[start]
	switch {
	case isLetter(c) || c == '\\' || c == '`':
		lx.word()
	case isDigit(c):
		lx.number()
	case c == '\'' || c == '"':
		lx.str(c)
	default:
		lx.op()
	}
	return true
}

func (lx *lexer) skipSpaceAndComments() {
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			lx.i++
		case c == '#':
			lx.skipLine()
		case c == '-' && strings.HasPrefix(lx.s[lx.i:], "--") &&
			(lx.i+2 == len(lx.s) || strings.ContainsRune(" \t\n\r", rune(lx.s[lx.i+2]))):
			lx.skipLine()
		case c == '/' && strings.HasPrefix(lx.s[lx.i:], "/*"):
			end := strings.Index(lx.s[lx.i+2:], "*/")
			if end < 0 {
				lx.errorf(lx.i, lx.i+2, "comment is not closed")
				lx.i = len(lx.s)
				return
			}
			lx.i += end + 4
		default:
			return
		}
	}
}

func (lx *lexer) skipLine() {
	for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
		lx.i++
	}
}

// identPart reads one part of a name: a plain or backslash-escaped word,
// or a backquoted name. ok is false when no part starts here.
func (lx *lexer) identPart(afterDot bool) (*Ident, bool) {
	start := lx.i
	if lx.i >= len(lx.s) {
		return nil, false
	}
	switch c := lx.s[lx.i]; {
	case c == '`':
		end := strings.IndexByte(lx.s[lx.i+1:], '`')
		if end < 0 {
			lx.errorf(start, len(lx.s), "backquoted name is not closed")
			lx.i = len(lx.s)
			return &Ident{Name: lx.s[start+1:], Pos: source.PosOf(start), End: source.PosOf(len(lx.s))}, true
		}
		lx.i += end + 2
		return &Ident{Name: lx.s[start+1 : lx.i-1], Pos: source.PosOf(start), End: source.PosOf(lx.i)}, true
	case c == '\\':
		lx.i++
		if lx.i >= len(lx.s) || !isLetter(lx.s[lx.i]) {
			lx.errorf(start, start+1, "a backslash must be followed by a name")
			return nil, false
		}
		for lx.i < len(lx.s) && isWordByte(lx.s[lx.i]) {
			lx.i++
		}
		return &Ident{Name: lx.s[start+1 : lx.i], Pos: source.PosOf(start), End: source.PosOf(lx.i)}, true
	case isLetter(c) || afterDot && isDigit(c):
		for lx.i < len(lx.s) && isWordByte(lx.s[lx.i]) {
			lx.i++
		}
		word := lx.s[start:lx.i]
		if afterDot {
			// Modifiers written with the dot syntax: .sym-offset and .buckets=N.
			lw := strings.ToLower(word)
			if lw == "sym" && strings.HasPrefix(strings.ToLower(lx.s[lx.i:]), "-offset") {
				lx.i += len("-offset")
				word = lx.s[start:lx.i]
			} else if (lw == "buckets" || lw == "bucket") && lx.i < len(lx.s) && lx.s[lx.i] == '=' {
				j := lx.i + 1
				for j < len(lx.s) && isWordByte(lx.s[j]) {
					j++
				}
				if j > lx.i+1 {
					lx.i = j
					word = lx.s[start:lx.i]
				}
			}
		}
		return &Ident{Name: word, Pos: source.PosOf(start), End: source.PosOf(lx.i)}, true
	}
	return nil, false
}

// word reads a keyword or a dotted name.
func (lx *lexer) word() {
	start := lx.i
	plain := isLetter(lx.s[start])
	first, ok := lx.identPart(false)
	if !ok {
		return
	}
	parts := []*Ident{first}
	for lx.i < len(lx.s) && lx.s[lx.i] == '.' {
		save := lx.i
		lx.i++
		p, ok := lx.identPart(true)
		if !ok {
			lx.i = save
			break
		}
		parts = append(parts, p)
		plain = false
	}
	end := lx.i
	if kind, ok := probeKinds[strings.ToLower(first.Name)]; ok && plain && len(parts) == 1 && lx.peekByte() == '(' {
		lx.probeCall(start, kind)
		return
	}
	if plain && len(parts) == 1 {
		up := strings.ToUpper(first.Name)
		if keywords[up] && (!aggregates[up] || lx.peekByte() == '(') {
			lx.emit(&token{kind: tKeyword, text: up, pos: source.PosOf(start), end: source.PosOf(end)})
			return
		}
	}
	lx.emit(&token{kind: tName, text: lx.s[start:end], pos: source.PosOf(start), end: source.PosOf(end),
		name: &Name{Parts: parts, Pos: source.PosOf(start), End: source.PosOf(end)}})
}

// peekByte returns the next non-blank byte, or 0.
func (lx *lexer) peekByte() byte {
	for j := lx.i; j < len(lx.s); j++ {
		if c := lx.s[j]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// number reads an integer literal: decimal, 0x hex, 0o octal or 0b binary.
// A leading zero followed by digits is refused: C reads it as octal and SQL
// as decimal, and a tracing config must not depend on which one a reader
// assumes.
func (lx *lexer) number() {
	start := lx.i
	for lx.i < len(lx.s) && (isWordByte(lx.s[lx.i])) {
		lx.i++
	}
	text := lx.s[start:lx.i]
	t := &token{kind: tNumber, text: text, pos: source.PosOf(start), end: source.PosOf(lx.i)}
	v, err := parseNumber(text)
	if err != nil {
		t.numErr = err.Error()
	}
	t.num = v
	lx.emit(t)
}

func parseNumber(text string) (uint64, error) {
	lt := strings.ToLower(text)
	base, digits := 10, lt
	switch {
	case strings.HasPrefix(lt, "0x"):
		base, digits = 16, lt[2:]
	case strings.HasPrefix(lt, "0o"):
		base, digits = 8, lt[2:]
	case strings.HasPrefix(lt, "0b"):
		base, digits = 2, lt[2:]
	case len(lt) > 1 && lt[0] == '0':
		return 0, fmt.Errorf("number %q has a leading zero: write %s for decimal or 0o%s for octal", text, strings.TrimLeft(text, "0"), text[1:])
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("number %q does not fit in 64 bits", text)
		}
		return 0, fmt.Errorf("malformed number %q", text)
	}
	return v, nil
}

// str reads a quoted string. There are no escape sequences: a backslash is
// a backslash, as in kernel filters. A doubled quote stands for one quote.
func (lx *lexer) str(q byte) {
	start := lx.i
	lx.i++
	var b strings.Builder
	for {
		if lx.i >= len(lx.s) {
			lx.errorf(start, len(lx.s), "string is not closed")
			break
		}
		c := lx.s[lx.i]
		if c == q {
			if lx.i+1 < len(lx.s) && lx.s[lx.i+1] == q {
				b.WriteByte(q)
				lx.i += 2
				continue
			}
			lx.i++
			break
		}
		b.WriteByte(c)
		lx.i++
	}
	lx.emit(&token{kind: tString, text: lx.s[start:lx.i], str: b.String(), pos: source.PosOf(start), end: source.PosOf(lx.i)})
}

var operators = []string{"==", "!=", "<>", "<=", ">=", "&&", "||", "!~", "<<", ">>",
	"=", "<", ">", "!", "~", "&", "|", "^", "+", "-", "*", "/", "%", "(", ")", ",", ";", "[", "]"}

func (lx *lexer) op() {
	start := lx.i
	for _, o := range operators {
		if strings.HasPrefix(lx.s[lx.i:], o) {
			lx.i += len(o)
			lx.emit(&token{kind: tOp, text: o, pos: source.PosOf(start), end: source.PosOf(lx.i)})
			return
		}
	}
	// Skip one UTF-8 character (one byte when the text is not UTF-8).
	r, n := utf8.DecodeRuneInString(lx.s[lx.i:])
	if r == utf8.RuneError && n <= 1 {
		lx.errorf(start, start+1, "unexpected byte 0x%02x", lx.s[lx.i])
		lx.i++
		return
	}
	lx.errorf(start, start+n, "unexpected character %q", r)
	lx.i += n
}
