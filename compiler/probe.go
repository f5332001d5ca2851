package compiler

import (
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/source"
)

// ProbeKind is the kind of a dynamic probe named in FROM or JOIN.
type ProbeKind int

// The probe kinds, named as in SQL.
const (
	KProbe    ProbeKind = iota // kprobe(SYMBOL[+OFFS] | MODULE:SYMBOL[%return], …)
	KRetProbe                  // kretprobe(SYMBOL, …)
	UProbe                     // uprobe('/path', SYMBOL | OFFSET, …)
	URetProbe                  // uretprobe('/path', SYMBOL | OFFSET, …)
	EProbe                     // eprobe([SYSTEM.]EVENT, …)
)

var probeKinds = map[string]ProbeKind{"kprobe": KProbe, "kretprobe": KRetProbe,
	"uprobe": UProbe, "uretprobe": URetProbe, "eprobe": EProbe}

// String returns the SQL name of the kind.
func (k ProbeKind) String() string {
	for name, v := range probeKinds {
		if v == k {
			return name
		}
	}
	return "probe"
}

// Probe is a probe call used as an event source: its definition, checked
// for what can be checked without a kernel (the fetch-argument grammar,
// types, names and lengths).
type Probe struct {
	Kind     ProbeKind
	Pos, End source.Pos // the whole call
	// Return is set for kretprobe, uretprobe and SYMBOL%return.
	Return bool
	// Module and Symbol name a kprobe's function; Offset is SYMBOL+OFFS.
	Module, Symbol string
	Offset         uint64
	// Path is a uprobe's binary; Symbol its function, or Address (when
	// HasAddress) its file offset.
	Path       string
	Address    uint64
	HasAddress bool
	// Event is an eprobe's source event as written: EVENT or SYSTEM.EVENT.
	Event *Name
	// TargetPos, TargetEnd span the first argument; SymPos, SymEnd the
	// function (a kprobe's SYMBOL, a uprobe's second argument).
	TargetPos, TargetEnd source.Pos
	SymPos, SymEnd       source.Pos
	Args                 []*ProbeArg
}

// ProbeArg is one NAME=FETCHARG[:TYPE] argument of a probe.
type ProbeArg struct {
	Name     string
	Fetch    string     // the fetch argument as the kernel reads it
	Type     string     // "" when none was given
	Pos, End source.Pos // the whole argument
	// FetchPos is where Fetch starts.
	FetchPos source.Pos
	// Fields are the $FIELD references of an eprobe argument.
	Fields []*Ident
	// Retval is set when the argument reads $retval.
	Retval bool
	// Regs are the registers the argument reads (%NAME, without the %):
	// the planner checks them against the target's architecture.
	Regs []*Ident
	// Loc is Fetch as a value: where the argument reads.
	Loc *Fetch
}

// FetchKind says where a probe's fetch argument reads.
type FetchKind int

// The kinds of [Fetch].
const (
	FetchReg       FetchKind = iota // %Name: a register
	FetchArg                        // $argN: the function's Nth argument
	FetchRetval                     // $retval: the return value
	FetchComm                       // $comm (Name "comm" or "COMM" as written): the task's name
	FetchStack                      // $stack: the stack pointer
	FetchStackN                     // $stackN: the Nth entry of the stack
	FetchField                      // $Name: a field of an eprobe's event
	FetchImm                        // \Text: an immediate value
	FetchImmString                  // \"Name": an immediate string
	FetchAddr                       // @Text: the memory at an address
	FetchSym                        // @Name, @Name+Text, @Name-Text: the memory at a symbol
	FetchFileOff                    // @+Text: the memory at a file offset of a uprobe's binary
	FetchDeref                      // +Text(X), -Text(X), +uText(X): the memory at X plus an offset
)

// Fetch is a probe's fetch argument as a value, with the numbers as
// written (decimal, 0x…) so that String gives the text back.
type Fetch struct {
	Kind FetchKind
	// Name is the register, the variable as written after $ (comm or
	// COMM), the eprobe field, the symbol, or the immediate string.
	Name string
	// N is the number: of $argN and $stackN, the address, the file
	// offset, the symbol's or the dereference's offset, the immediate
	// value (as a 64-bit pattern); Text is it as written.
	N    uint64
	Text string
	// Neg is a negative offset (-8(%sp), @sym-4); User a user-space
	// dereference (+u0(…)).
	Neg, User bool
	X         *Fetch // FetchDeref: what holds the address
}

// String renders the fetch argument as the kernel reads it.
func (f *Fetch) String() string {
	switch f.Kind {
	case FetchReg:
		return "%" + f.Name
	case FetchArg:
		return "$arg" + f.Text
	case FetchRetval:
		return "$retval"
	case FetchComm:
		return "$" + f.Name
	case FetchStack:
		return "$stack"
	case FetchStackN:
		return "$stack" + f.Text
	case FetchField:
		return "$" + f.Name
	case FetchImm:
		return "\\" + f.Text
	case FetchImmString:
		return "\\\"" + f.Name + "\""
	case FetchAddr:
		return "@" + f.Text
	case FetchSym:
		switch {
		case f.Text == "":
			return "@" + f.Name
		case f.Neg:
			return "@" + f.Name + "-" + f.Text
		}
		return "@" + f.Name + "+" + f.Text
	case FetchFileOff:
		return "@+" + f.Text
	case FetchDeref:
		sign := "+"
		if f.Neg {
			sign = "-"
		}
		if f.User {
			sign += "u"
		}
		return sign + f.Text + "(" + f.X.String() + ")"
	}
	return ""
}

// Body returns FETCHARG[:TYPE], the text the kernel limits to
// MaxArgStrLen bytes.
func (a *ProbeArg) Body() string {
	if a.Type == "" {
		return a.Fetch
	}
	return a.Fetch + ":" + a.Type
}

// Text returns NAME=FETCHARG[:TYPE].
func (a *ProbeArg) Text() string { return a.Name + "=" + a.Body() }

// Kernel limits on probe definitions (trace_probe.h).
const (
	MaxArgStrLen  = 63  // MAX_ARGSTR_LEN: one argument's FETCHARG[:TYPE]
	MaxArgNameLen = 32  // MAX_ARG_NAME_LEN
	MaxTraceArgs  = 128 // MAX_TRACE_ARGS
	MaxArrayLen   = 64  // MAX_ARRAY_LEN
)

// rawArg is one comma-separated argument of a probe call as written.
type rawArg struct {
	text     string
	pos, end int // byte offsets in the source
}

// probeCall is what the pre-lexer captured for kprobe(…) and friends.
type probeCall struct {
	kind ProbeKind
	args []rawArg
}

// probeCall reads the parenthesised arguments of a probe call whose name
// ends at lx.i. Commas inside parentheses or quotes do not split.
func (lx *lexer) probeCall(start int, kind ProbeKind) {
	for lx.i < len(lx.s) && lx.s[lx.i] != '(' {
		lx.i++
	}
	open := lx.i
	lx.i++
	depth, argStart := 0, lx.i
	var args []rawArg
	add := func(end int) {
		s, e := argStart, end
		for s < e && isSpace(lx.s[s]) {
			s++
		}
		for e > s && isSpace(lx.s[e-1]) {
			e--
		}
		args = append(args, rawArg{text: lx.s[s:e], pos: s, end: e})
	}
	for {
		if lx.i >= len(lx.s) {
			lx.errorf(start, open+1, "%s( is not closed", kind)
			return
		}
		c := lx.s[lx.i]
		switch {
		case c == '\'' || c == '"':
			q := strings.IndexByte(lx.s[lx.i+1:], c)
			if q < 0 {
				lx.errorf(lx.i, len(lx.s), "string is not closed")
				lx.i = len(lx.s)
				return
			}
			lx.i += q + 2
			continue
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case c == ')':
			add(lx.i)
			lx.i++
			if len(args) == 1 && args[0].text == "" {
				args = nil
			}
			text := lx.s[start:lx.i]
			lx.emit(&token{kind: tName, text: text, pos: source.PosOf(start), end: source.PosOf(lx.i),
				name:  &Name{Parts: []*Ident{{Name: text, Pos: source.PosOf(start), End: source.PosOf(lx.i)}}, Pos: source.PosOf(start), End: source.PosOf(lx.i)},
				probe: &probeCall{kind: kind, args: args}})
			return
		case c == ',' && depth == 0:
			add(lx.i)
			argStart = lx.i + 1
		}
		lx.i++
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// probeParser checks one probe call, reporting into diags.
type probeParser struct {
	diags *source.Diags
	p     *Probe
}

func (pp *probeParser) errorf(pos, end int, format string, args ...any) *source.Diag {
	return pp.diags.Add(source.PosOf(pos), source.PosOf(end), format, args...)
}

// parseProbe turns a captured probe call into a checked Probe.
func parseProbe(t *token, diags *source.Diags) *Probe {
	call := t.probe
	p := &Probe{Kind: call.kind, Pos: t.pos, End: t.end}
	pp := &probeParser{diags: diags, p: p}
	before := len(diags.Errors())
	args := call.args
	need := 1
	if p.Kind == UProbe || p.Kind == URetProbe {
		need = 2
	}
	if len(args) < need {
		what := map[ProbeKind]string{KProbe: "a function: kprobe(do_sys_openat2, …)",
			KRetProbe: "a function: kretprobe(do_sys_openat2, ret=$retval:s64)",
			UProbe:    "a binary and a function: uprobe('/bin/prog', main, …)",
			URetProbe: "a binary and a function: uretprobe('/bin/prog', main, …)",
			EProbe:    "an event: eprobe(sys_enter_openat, name=+0($filename):ustring)"}[p.Kind]
		pp.diags.Add(t.pos, t.end, "%s needs %s", p.Kind, what)
		return nil
	}
	for _, a := range args {
		if a.text == "" {
			pp.errorf(a.pos, a.pos+1, "empty argument in %s(…)", p.Kind)
		}
	}
	if len(diags.Errors()) > before {
		return nil
	}
	p.TargetPos, p.TargetEnd = source.PosOf(args[0].pos), source.PosOf(args[0].end)
	switch p.Kind {
	case KProbe, KRetProbe:
		pp.kernelTarget(args[0])
	case UProbe, URetProbe:
		pp.userTarget(args[0], args[1])
		args = args[1:]
	case EProbe:
		pp.eventTarget(args[0])
	}
	p.Return = p.Return || p.Kind == KRetProbe || p.Kind == URetProbe
	names := map[string]bool{}
	for _, a := range args[1:] {
		if x := pp.arg(a, names); x != nil {
			p.Args = append(p.Args, x)
		}
	}
	if len(p.Args) > MaxTraceArgs {
		pp.diags.Add(t.pos, t.end, "%s has %d arguments; the kernel takes at most %d", p.Kind, len(p.Args), MaxTraceArgs)
	}
	if len(diags.Errors()) > before {
		return nil
	}
	return p
}

// unquote returns a quoted argument's value; ok is false for a bare word.
func unquote(s string) (string, bool) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return strings.ReplaceAll(s[1:len(s)-1], s[:1]+s[:1], s[:1]), true
	}
	return s, false
}

// isSymbol reports whether s can be a kernel or ELF symbol name: C
// identifiers plus the dots of compiler suffixes (foo.isra.0) and Go
// package paths (main.work).
func isSymbol(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
}

// kernelTarget reads [MODULE:]SYMBOL[+OFFS][%return].
func (pp *probeParser) kernelTarget(a rawArg) {
	p := pp.p
	s := a.text
	if v, ok := unquote(s); ok {
		s = v
	}
	if rest, ok := strings.CutSuffix(s, "%return"); ok {
		if p.Kind == KRetProbe {
			pp.errorf(a.pos, a.end, "kretprobe is already a return probe: drop %%return")
		}
		p.Return = true
		s = rest
	}
	if mod, sym, ok := strings.Cut(s, ":"); ok {
		if !tracefsIdent(mod) {
			pp.errorf(a.pos, a.end, "%q is not a module name", mod)
			return
		}
		p.Module, s = mod, sym
	}
	if sym, off, ok := strings.Cut(s, "+"); ok {
		n, err := strconv.ParseUint(off, 0, 64)
		if err != nil {
			pp.errorf(a.pos, a.end, "bad offset %q after %s: write SYMBOL+OFFSET with a decimal or 0x number", off, sym)
			return
		}
		p.Offset, s = n, sym
	}
	if !isSymbol(s) {
		x := pp.errorf(a.pos, a.end, "%q is not a kernel function name", a.text)
		x.Hint = p.Kind.String() + "(do_sys_openat2, …), " + p.Kind.String() + "(ext4:ext4_file_open, …) or kprobe(do_sys_openat2+4, …)"
		return
	}
	if p.Return && p.Offset != 0 {
		pp.errorf(a.pos, a.end, "a return probe must be on the function's entry: drop +%d", p.Offset)
	}
	p.Symbol = s
	p.SymPos, p.SymEnd = source.PosOf(a.pos), source.PosOf(a.end)
}

// userTarget reads a uprobe's 'PATH' and SYMBOL or OFFSET.
func (pp *probeParser) userTarget(path, target rawArg) {
	p := pp.p
	v, ok := unquote(path.text)
	if !ok {
		x := pp.errorf(path.pos, path.end, "%s needs the binary's path as a string", p.Kind)
		x.Hint = p.Kind.String() + "('/usr/bin/prog', main, …)"
		return
	}
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\n:") {
		pp.errorf(path.pos, path.end, "the binary's path must be absolute, without blanks or ':'")
		return
	}
	p.Path = v
	p.SymPos, p.SymEnd = source.PosOf(target.pos), source.PosOf(target.end)
	t := target.text
	if t != "" && isDigit(t[0]) {
		n, err := strconv.ParseUint(t, 0, 64)
		if err != nil {
			pp.errorf(target.pos, target.end, "bad file offset %q", t)
			return
		}
		p.Address, p.HasAddress = n, true
		return
	}
	if s, ok := unquote(t); ok {
		t = s
	}
	if !isSymbol(t) {
		pp.errorf(target.pos, target.end, "%q is neither a symbol nor a file offset", target.text)
		return
	}
	p.Symbol = t
}

// eventTarget reads an eprobe's EVENT or SYSTEM.EVENT.
func (pp *probeParser) eventTarget(a rawArg) {
	parts := strings.Split(a.text, ".")
	if len(parts) > 2 {
		pp.errorf(a.pos, a.end, "%q is not an event name: write EVENT or SYSTEM.EVENT", a.text)
		return
	}
	n := &Name{Pos: source.PosOf(a.pos), End: source.PosOf(a.end)}
	off := a.pos
	for _, part := range parts {
		if !tracefsIdent(part) {
			pp.errorf(a.pos, a.end, "%q is not an event name: write EVENT or SYSTEM.EVENT", a.text)
			return
		}
		n.Parts = append(n.Parts, &Ident{Name: part, Pos: source.PosOf(off), End: source.PosOf(off + len(part))})
		off += len(part) + 1
	}
	pp.p.Event = n
}

// tracefsIdent reports whether s is a C identifier.
func tracefsIdent(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// reservedArgNames are field names every probe event already has.
var reservedArgNames = map[string]bool{"common_type": true, "common_flags": true,
	"common_preempt_count": true, "common_pid": true, "common_tgid": true,
	"__probe_ip": true, "__probe_ret_ip": true, "__probe_func": true}

// arg reads NAME=FETCHARG[:TYPE].
func (pp *probeParser) arg(a rawArg, names map[string]bool) *ProbeArg {
	p := pp.p
	eq := strings.IndexByte(a.text, '=')
	if eq < 0 {
		x := pp.errorf(a.pos, a.end, "probe argument %q has no name: write NAME=FETCHARG[:TYPE]", a.text)
		x.Hint = "filename=+0($arg2):string"
		return nil
	}
	name := strings.TrimSpace(a.text[:eq])
	x := &ProbeArg{Name: name, Pos: source.PosOf(a.pos), End: source.PosOf(a.end)}
	body := strings.TrimLeft(a.text[eq+1:], " \t\r\n")
	bodyOff := a.end - len(body)
	nameEnd := a.pos + len(name)
	switch {
	case name == "":
		pp.errorf(a.pos, a.pos+eq+1, "probe argument has an empty name")
		return nil
	case len(name) > MaxArgNameLen:
		pp.errorf(a.pos, nameEnd, "argument name %q is %d characters; the kernel takes at most %d", name, len(name), MaxArgNameLen)
		return nil
	case !tracefsIdent(name):
		pp.errorf(a.pos, nameEnd, "argument name %q is not a valid name: use letters, digits and _, not starting with a digit", name)
		return nil
	case reservedArgNames[name]:
		pp.errorf(a.pos, nameEnd, "argument name %q is a field every probe event already has", name)
		return nil
	case names[name]:
		pp.errorf(a.pos, nameEnd, "argument name %q is used twice in this %s", name, p.Kind)
		return nil
	}
	names[name] = true
	if body == "" {
		pp.errorf(a.pos, a.end, "probe argument %q has nothing after =", name)
		return nil
	}
	if k := strings.IndexAny(body, " \t\r\n"); k >= 0 && !strings.Contains(body, `\"`) {
		pp.errorf(bodyOff+k, bodyOff+k+1, "a fetch argument cannot hold blanks: the kernel splits its definition at them")
		return nil
	}
	fetch, typ, typeOff := splitType(body)
	x.Fetch, x.Type = fetch, typ
	x.FetchPos = source.PosOf(bodyOff)
	if len(body) > MaxArgStrLen {
		pp.errorf(bodyOff, a.end, "argument %q is %d characters after %s=; the kernel takes at most %d (MAX_ARGSTR_LEN)", name, len(body), name, MaxArgStrLen)
		return nil
	}
	f := &fetchParser{pp: pp, s: fetch, base: bodyOff, arg: x}
	kind := f.parse()
	if kind == fetchBad {
		return nil
	}
	x.Loc = f.last
	if !pp.checkType(x, kind, bodyOff+typeOff, a.end) {
		return nil
	}
	return x
}

// splitType splits FETCHARG:TYPE at the last ':' outside quotes and
// parentheses; typeOff is where TYPE starts in body.
func splitType(body string) (fetch, typ string, typeOff int) {
	depth, quote, last := 0, byte(0), -1
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ':' && depth == 0:
			last = i
		}
	}
	if last < 0 {
		return body, "", len(body)
	}
	return body[:last], body[last+1:], last + 1
}

// fetchKind classifies a parsed fetch argument for the type rules.
type fetchKind int

const (
	fetchBad    fetchKind = iota
	fetchValue            // a register, $argN, $stackN, $retval, a field, an immediate
	fetchMemory           // a dereference or @memory: strings may be read there
	fetchComm             // $comm: a string only
	fetchString           // \"immediate string": a string only
)

// fetchParser parses the kernel's fetch-argument grammar:
//
//	%REG | @ADDR | @SYM[+|-OFFS] | @+FOFFS (uprobes) | $stackN | $stack |
//	$argN | $retval | $comm | $FIELD (eprobes) | +|-[u]OFFS(FETCHARG) |
//	\IMM | \"STRING"
type fetchParser struct {
	pp   *probeParser
	s    string
	base int // source offset of s
	arg  *ProbeArg
	last *Fetch // what the last at() read
}

func (f *fetchParser) errorf(i, j int, format string, args ...any) fetchKind {
	f.pp.errorf(f.base+i, f.base+j, format, args...)
	return fetchBad
}

func (f *fetchParser) parse() fetchKind { return f.at(0, len(f.s)) }

// at parses s[i:j].
func (f *fetchParser) at(i, j int) fetchKind {
	p := f.pp.p
	s := f.s[i:j]
	if s == "" {
		return f.errorf(i, i+1, "empty fetch argument")
	}
	entry := p.Kind == KProbe && !p.Return && p.Offset == 0
	switch s[0] {
	case '%':
		if p.Kind == EProbe {
			return f.errorf(i, j, "an eprobe reads the fields of its event ($field), not registers")
		}
		// Which names exist depends on the target's architecture: the
		// planner checks them against it.
		if !isRegName(s[1:]) {
			return f.errorf(i, j, "bad register %q: write %%NAME (%%di on x86_64, %%x0 on arm64, %%r0 on arm)", s)
		}
		f.arg.Regs = append(f.arg.Regs, &Ident{Name: s[1:], Pos: source.PosOf(f.base + i), End: source.PosOf(f.base + j)})
		f.last = &Fetch{Kind: FetchReg, Name: s[1:]}
		return fetchValue
	case '@':
		return f.memory(i, j)
	case '\\':
		if strings.HasPrefix(s, `\"`) {
			if len(s) < 3 || s[len(s)-1] != '"' {
				return f.errorf(i, j, "immediate string %s is not closed", s)
			}
			f.last = &Fetch{Kind: FetchImmString, Name: s[2 : len(s)-1]}
			return fetchString
		}
		n, err := strconv.ParseInt(s[1:], 0, 64)
		if err != nil {
			u, err := strconv.ParseUint(s[1:], 0, 64)
			if err != nil {
				return f.errorf(i, j, "bad immediate value %q", s)
			}
			n = int64(u)
		}
		f.last = &Fetch{Kind: FetchImm, N: uint64(n), Text: s[1:]}
		return fetchValue
	case '+', '-':
		return f.deref(i, j)
	case '$':
		return f.variable(i, j, entry)
	}
	d := f.pp.errorf(f.base+i, f.base+j, "bad fetch argument %q", s)
	d.Hint = "one of %REG, @ADDR, @SYMBOL, $argN, $stackN, $stack, $retval, $comm, $FIELD (eprobes), +|-OFFS(FETCHARG), \\IMM"
	return fetchBad
}

func (f *fetchParser) memory(i, j int) fetchKind {
	p := f.pp.p
	s := f.s[i+1 : j]
	user := p.Kind == UProbe || p.Kind == URetProbe
	switch {
	case s == "":
		return f.errorf(i, j, "@ needs an address or a symbol")
	case user && s[0] == '+':
		n, err := strconv.ParseUint(s[1:], 0, 64)
		if err != nil {
			return f.errorf(i, j, "bad file offset in %q", "@"+s)
		}
		f.last = &Fetch{Kind: FetchFileOff, N: n, Text: s[1:]}
	case isDigit(s[0]):
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return f.errorf(i, j, "bad address in %q", "@"+s)
		}
		f.last = &Fetch{Kind: FetchAddr, N: n, Text: s}
	case user:
		return f.errorf(i, j, "a uprobe cannot read a symbol (%q): use @ADDR or @+FILE_OFFSET", "@"+s)
	default:
		sym := s
		loc := &Fetch{Kind: FetchSym}
		if k := strings.IndexAny(s, "+-"); k > 0 {
			sym = s[:k]
			n, err := strconv.ParseUint(s[k+1:], 0, 64)
			if err != nil {
				return f.errorf(i, j, "bad offset in %q", "@"+s)
			}
			loc.N, loc.Text, loc.Neg = n, s[k+1:], s[k] == '-'
		}
		if !isSymbol(sym) {
			return f.errorf(i, j, "bad symbol in %q", "@"+s)
		}
		loc.Name = sym
		f.last = loc
	}
	return fetchMemory
}

// deref reads +|-[u]OFFS(FETCHARG).
func (f *fetchParser) deref(i, j int) fetchKind {
	s := f.s[i:j]
	open := strings.IndexByte(s, '(')
	if open < 0 || s[len(s)-1] != ')' {
		return f.errorf(i, j, "a dereference is +|-OFFSET(FETCHARG): %q", s)
	}
	off := s[1:open]
	user := strings.HasPrefix(off, "u") // +u: a user-space dereference (5.3)
	off = strings.TrimPrefix(off, "u")
	n, err := strconv.ParseUint(off, 0, 64)
	if err != nil || off == "" {
		return f.errorf(i, i+open, "bad dereference offset %q", s[:open])
	}
	inner := f.at(i+open+1, j-1)
	switch inner {
	case fetchBad:
		return fetchBad
	case fetchComm, fetchString:
		return f.errorf(i, j, "$comm and immediate strings cannot be dereferenced")
	}
	f.last = &Fetch{Kind: FetchDeref, N: n, Text: off, Neg: s[0] == '-', User: user, X: f.last}
	return fetchMemory
}

// variable reads $argN, $stack[N], $retval, $comm and an eprobe's $FIELD.
func (f *fetchParser) variable(i, j int, entry bool) fetchKind {
	p := f.pp.p
	v := f.s[i+1 : j]
	switch {
	case v == "comm" || v == "COMM":
		f.last = &Fetch{Kind: FetchComm, Name: v}
		return fetchComm
	case p.Kind == EProbe:
		if !tracefsIdent(v) {
			return f.errorf(i, j, "%q is not a field reference: write $FIELD", "$"+v)
		}
		f.arg.Fields = append(f.arg.Fields, &Ident{Name: v, Pos: source.PosOf(f.base + i + 1), End: source.PosOf(f.base + j)})
		f.last = &Fetch{Kind: FetchField, Name: v}
		return fetchValue
	case v == "retval":
		if !p.Return {
			x := f.pp.errorf(f.base+i, f.base+j, "$retval is only available on a return probe")
			x.Hint = "use kretprobe(…) or SYMBOL%return for the return value"
			return fetchBad
		}
		f.arg.Retval = true
		f.last = &Fetch{Kind: FetchRetval}
		return fetchValue
	case v == "stack":
		f.last = &Fetch{Kind: FetchStack}
		return fetchValue
	case strings.HasPrefix(v, "stack"):
		n, err := strconv.ParseUint(v[5:], 10, 32)
		if err != nil {
			return f.errorf(i, j, "bad stack slot %q: write $stackN", "$"+v)
		}
		f.last = &Fetch{Kind: FetchStackN, N: n, Text: v[5:]}
		return fetchValue
	case strings.HasPrefix(v, "arg"):
		n, err := strconv.ParseUint(v[3:], 10, 32)
		if err != nil || n == 0 {
			return f.errorf(i, j, "bad argument number %q: write $arg1, $arg2, …", "$"+v)
		}
		f.last = &Fetch{Kind: FetchArg, N: n, Text: v[3:]}
		if p.Kind == UProbe || p.Kind == URetProbe {
			x := f.pp.errorf(f.base+i, f.base+j, "a uprobe cannot read %q: read the register the calling convention passes it in", "$"+v)
			x.Hint = "the first arguments are in %di %si %dx %cx on x86_64, %x0 %x1 %x2 %x3 on arm64, %r0 %r1 %r2 %r3 on arm"
			return fetchBad
		}
		if !entry && !p.Return {
			return f.errorf(i, j, "$argN needs the function's entry: drop the +%d offset", p.Offset)
		}
		return fetchValue
	}
	return f.errorf(i, j, "unknown variable %q: $argN, $stackN, $stack, $retval or $comm", "$"+v)
}

// probeTypes are the scalar fetch types (trace_probe.c probe_fetch_types).
var probeTypes = map[string]bool{"u8": true, "u16": true, "u32": true, "u64": true,
	"s8": true, "s16": true, "s32": true, "s64": true, "x8": true, "x16": true,
	"x32": true, "x64": true, "string": true, "ustring": true, "symbol": true}

// checkType applies the kernel's rules for :TYPE.
func (pp *probeParser) checkType(x *ProbeArg, kind fetchKind, pos, end int) bool {
	t := x.Type
	base, count := t, 0
	if k := strings.IndexByte(t, '['); k >= 0 {
		if t[len(t)-1] != ']' {
			pp.errorf(pos, end, "array type %q is not closed: write TYPE[N]", t)
			return false
		}
		n, err := strconv.Atoi(t[k+1 : len(t)-1])
		if err != nil || n <= 0 || n > MaxArrayLen {
			pp.errorf(pos, end, "array length in %q must be 1 to %d", t, MaxArrayLen)
			return false
		}
		base, count = t[:k], n
	}
	switch {
	case t == "" && kind == fetchComm, t == "" && kind == fetchString:
		x.Type = "string"
		return true
	case t == "" && x.Retval:
		x := pp.diags.Add(x.FetchPos, x.End, "give $retval a type, such as $retval:s64")
		x.Hint = "without one, kernels with BTF type it as the function's return type and older ones as u64; sqlhist must know which"
		return false
	case t == "":
		return true
	case !probeTypes[base]:
		d := pp.errorf(pos, end, "unknown probe type %q", t)
		d.Hint = "u8 u16 u32 u64, s8 … s64, x8 … x64, string, ustring, symbol, or TYPE[N]"
		return false
	case count > 0 && (base == "string" || base == "ustring"):
		pp.errorf(pos, end, "sqlhist does not take arrays of strings (%q)", t)
		return false
	case count > 0 && kind != fetchMemory:
		pp.errorf(pos, end, "an array (%q) is read from memory: dereference, as +0(%s):%s", t, x.Fetch, t)
		return false
	case (kind == fetchComm || kind == fetchString) && base != "string":
		pp.errorf(pos, end, "$comm and immediate strings are strings: drop :%s", t)
		return false
	case (base == "string" || base == "ustring") && kind == fetchValue:
		d := pp.errorf(pos, end, "type %s reads memory: dereference the pointer, as +0(%s):%s", base, x.Fetch, base)
		d.Hint = "the kernel says \"String accepts only memory argument\""
		return false
	}
	return true
}

// isRegName reports whether s can be a register name: letters, digits and
// underscores (ORIG_r0 on arm, orig_ax on x86_64).
func isRegName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
