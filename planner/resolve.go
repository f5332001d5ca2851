package planner

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// vtype is a value's type as the kernel sees it in a hist trigger.
type vtype struct {
	Kernel string // the kernel's type text: "pid_t", "u64", "char[16]", "__data_loc char[]"
	Size   int
	Signed bool
	Kind   tracefs.Kind
}

func (t vtype) isString() bool {
	return t.Kind == tracefs.KindString || t.Kind == tracefs.KindDynString
}
func (t vtype) isNumeric() bool {
	return t.Kind == tracefs.KindInt || t.Kind == tracefs.KindPointer
}

// ref is a resolved field reference.
type ref struct {
	side     int // 0: FROM (start), 1: JOIN (end)
	ev       *tracefs.Event
	name     string // the kernel's field name: "next_pid", "common_timestamp"
	mod      string // modifier: "usecs", "hex", "buckets=10", …
	typ      vtype
	pseudo   bool
	pos, end source.Pos
}

// text returns the field as written in a hist trigger: "common_timestamp.usecs".
func (r *ref) text() string {
	if r.mod == "" {
		return r.name
	}
	return r.name + "." + r.mod
}

// expr returns the field as an operand of a hist trigger.
func (r *ref) expr() *Expr {
	x := &Expr{Kind: ExprField, Name: r.name, Mod: r.mod}
	if m, n, ok := strings.Cut(r.mod, "="); ok {
		x.Mod = m
		x.Buckets, _ = strconv.ParseUint(n, 10, 64)
	}
	if r.pseudo {
		switch r.name {
		case "common_timestamp":
			x.Kind, x.Name = ExprTimestamp, ""
		case "common_cpu", "cpu", "CPU":
			x.Kind = ExprCPU
		case "common_stacktrace", "stacktrace":
			x.Kind = ExprStack
		}
	}
	return x
}

// short returns a name fit for derived identifiers: "ts" for timestamps.
func (r *ref) short() string {
	switch {
	case r.name == "common_timestamp" && r.mod == "usecs":
		return "ts_us"
	case r.name == "common_timestamp":
		return "ts"
	case r.name == "common_stacktrace" || r.name == "stacktrace":
		return "stack"
	case r.name == "common_cpu":
		return "cpu"
	case r.mod == "execname":
		return "comm"
	}
	return r.name
}

// side is one event of a query with the qualifiers that name it.
type side struct {
	ev    *tracefs.Event
	table *compiler.TableRef
	quals [][]string
}

type resolver struct {
	cat   *tracefs.Catalog
	feat  tracefs.Features
	diags *source.Diags
	sides []*side
	quiet bool // errors are thrown away: skip the work of suggestions
	// usecs holds the fields ("system/event/field") that carry a timestamp
	// in microseconds from an earlier step of a chain: they take the usecs
	// modifier, which gives them the kernel's µs unit (see splitter).
	usecs map[string]bool
	// failedViews are the CREATE VIEW names of statements that failed:
	// a later FROM of one is not an unknown event but a consequence.
	failedViews map[string]bool
}

// event resolves a FROM or JOIN name to an event.
func (r *resolver) event(n *compiler.Name) *tracefs.Event {
	parts := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		parts[i] = p.Name
	}
	var system, name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		system, name = parts[0], parts[1]
	default:
		r.diags.Add(n.Pos, n.End, "%q is not an event name: write event or system.event", n.String())
		return nil
	}
	ev, err := r.cat.Lookup(system, name)
	var amb *tracefs.AmbiguousError
	switch {
	case err == nil:
		return ev
	case errors.Is(err, fs.ErrNotExist) && (system == "" || system == "synthetic") && r.failedViews[name]:
		r.diags.Add(n.Pos, n.End, "view %q was not created: its CREATE VIEW above has errors", name)
	case errors.Is(err, fs.ErrNotExist):
		all, _ := r.cat.Names()
		arch, _ := r.cat.Arch()
		errUnknownEvent(r.diags, n, all, arch.Name, tracefs.ArchesWithEvent(system, name, arch))
	case errors.As(err, &amb):
		errAmbiguousEvent(r.diags, n, amb.Systems)
	default:
		r.diags.Add(n.Pos, n.End, "cannot read event %s: %v", n.String(), err)
	}
	return nil
}

// addSide registers an event and the qualifiers that name it.
func (r *resolver) addSide(ev *tracefs.Event, t *compiler.TableRef) *side {
	s := &side{ev: ev, table: t}
	if t.Alias != nil {
		s.quals = [][]string{{t.Alias.Name}}
	} else {
		s.quals = [][]string{{ev.Name}, {ev.System, ev.Name}}
	}
	r.sides = append(r.sides, s)
	return s
}

// field resolves a field reference. Bare names bind to the only event in
// histogram mode, or to the one event of a join that has such a field.
func (r *resolver) field(f *compiler.Field) *ref {
	n := f.Name
	parts := n.Parts
	best, bestLen := -1, 0
	for i, s := range r.sides {
		for _, q := range s.quals {
			if len(q) < len(parts) && len(q) > bestLen && prefixEqual(parts, q) {
				best, bestLen = i, len(q)
			}
		}
	}
	if best < 0 {
		return r.bareField(f)
	}
	rest := parts[bestLen:]
	return r.fieldIn(best, rest, n)
}

func prefixEqual(parts []*compiler.Ident, q []string) bool {
	for i, s := range q {
		if parts[i].Name != s {
			return false
		}
	}
	return true
}

func (r *resolver) bareField(f *compiler.Field) *ref {
	n := f.Name
	if len(r.sides) == 1 {
		return r.fieldIn(0, n.Parts, n)
	}
	var found []int
	for i, s := range r.sides {
		if lookupField(s.ev, n.Parts[0].Name) != nil {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 1:
		return r.fieldIn(found[0], n.Parts, n)
	case 0:
		x := r.diags.Add(n.Pos, n.End, "%q does not name a field of either event", n.String())
		x.Hint = "qualify fields with an alias or the event name: " + r.qualExample(n.Parts[0].Name)
	default:
		x := r.diags.Add(n.Pos, n.End, "field %q is ambiguous: both events have it", n.String())
		x.Hint = "qualify it: " + r.qualExample(n.Parts[0].Name)
	}
	return nil
}

func (r *resolver) qualExample(field string) string {
	var ex []string
	for _, s := range r.sides {
		ex = append(ex, strings.Join(s.quals[0], ".")+"."+field)
	}
	return strings.Join(ex, " or ")
}

// fieldIn resolves "field" or "field.modifier" in side i.
func (r *resolver) fieldIn(i int, rest []*compiler.Ident, n *compiler.Name) *ref {
	s := r.sides[i]
	if len(rest) == 0 || len(rest) > 2 {
		r.diags.Add(n.Pos, n.End, "%q is not a field: write [event.]field[.modifier]", n.String())
		return nil
	}
	fname := rest[0]
	out := lookupField(s.ev, fname.Name)
	if out == nil {
		var cands []string
		if !r.quiet {
			cands = append(s.ev.FieldNames(), "TIMESTAMP", "TIMESTAMP_USECS", "STACKTRACE", "common_cpu")
		}
		errUnknownField(r.diags, fname.Pos, fname.End, fname.Name, s.ev.FullName(), cands)
		return nil
	}
	out.side = i
	out.pos, out.end = n.Pos, n.End
	if len(rest) == 2 {
		m := rest[1]
		if out.mod != "" {
			r.diags.Add(m.Pos, m.End, "%q already carries the modifier %q; the kernel takes one modifier per field", fname.Name, out.mod)
			return nil
		}
		if !r.setModifier(out, m.Name, m.Pos, m.End) {
			return nil
		}
	}
	if out.name == "common_cpu" && out.pseudo && !r.feat.CommonCPU {
		out.name = "cpu" // its name before Linux 5.14
	}
	if out.name == "common_stacktrace" && !r.feat.CommonStacktrace {
		out.name = "stacktrace"
	}
	if out.name == "common_comm" && !r.feat.CommonComm {
		x := r.diags.Add(n.Pos, n.End, "%s", r.feat.Lacks(fname.Name+" (the task's name, common_comm) in a hist trigger", "common-comm"))
		x.Hint = "CAST(common_pid AS EXECNAME) keys by the task's name on any kernel"
		return nil
	}
	return out
}

// lookupField finds a real field, then a pseudo-field. The special names
// (TIMESTAMP, STACKTRACE, CPU …) match in any case, but a real field of
// the same name wins.
func lookupField(ev *tracefs.Event, name string) *ref {
	if f := ev.Field(name); f != nil {
		return &ref{ev: ev, name: f.Name, typ: vtype{Kernel: f.Decl, Size: f.Size, Signed: f.Signed, Kind: f.Kind}}
	}
	ts := vtype{Kernel: "u64", Size: 8, Kind: tracefs.KindInt}
	switch strings.ToUpper(name) {
	case "TIMESTAMP", "COMMON_TIMESTAMP":
		return &ref{ev: ev, name: "common_timestamp", typ: ts, pseudo: true}
	case "TIMESTAMP_USECS":
		return &ref{ev: ev, name: "common_timestamp", mod: "usecs", typ: ts, pseudo: true}
	case "STACKTRACE", "COMMON_STACKTRACE":
		return &ref{ev: ev, name: "common_stacktrace", typ: vtype{Kernel: "unsigned long[]", Size: 8, Kind: tracefs.KindDynArray}, pseudo: true}
	case "CPU", "COMMON_CPU":
		return &ref{ev: ev, name: "common_cpu", typ: vtype{Kernel: "unsigned int", Size: 4, Kind: tracefs.KindInt}, pseudo: true}
	case "COMM", "COMMON_COMM":
		return &ref{ev: ev, name: "common_comm", typ: vtype{Kernel: "char[16]", Size: 16, Kind: tracefs.KindString}, pseudo: true}
	}
	return nil
}

var modifiers = map[string]bool{
	"hex": true, "sym": true, "sym-offset": true, "syscall": true, "execname": true,
	"log2": true, "usecs": true, "buckets": true, "stacktrace": true,
}

// isStack reports whether a field holds a stack trace: STACKTRACE itself,
// or a synthetic event's unsigned long[] field that carries one.
func (r *ref) isStack() bool {
	return r.pseudo && (r.name == "common_stacktrace" || r.name == "stacktrace") || r.typ.Kernel == "unsigned long[]"
}

// setModifier checks and sets a modifier written as field.mod or by CAST.
func (r *resolver) setModifier(f *ref, mod string, pos, end source.Pos) bool {
	m := strings.ToLower(mod)
	arg := ""
	if k, v, ok := strings.Cut(m, "="); ok {
		m, arg = k, v
	}
	if m == "bucket" {
		m = "buckets"
	}
	if m == "log" {
		m = "log2"
	}
	if !modifiers[m] {
		r.diags.Add(pos, end, "unknown modifier %q: use hex, sym, sym-offset, syscall, execname, log2, buckets=N, usecs or stacktrace", mod)
		return false
	}
	switch {
	case m == "stacktrace" && !f.isStack():
		r.diags.Add(pos, end, "the stacktrace modifier applies to stack trace fields (unsigned long[]), not to %s (%s)", f.name, f.typ.Kernel)
		return false
	case m == "stacktrace" && f.pseudo:
		return true // STACKTRACE is a stack trace key as it is
	case m == "usecs" && f.name != "common_timestamp" && !r.usecs[f.ev.System+"/"+f.ev.Name+"/"+f.name]:
		r.diags.Add(pos, end, "the usecs modifier only applies to TIMESTAMP (common_timestamp)")
		return false
	case m == "execname" && f.name != "common_pid":
		r.diags.Add(pos, end, "execname only applies to common_pid, not %q", f.name)
		return false
	case m != "usecs" && m != "execname" && !f.typ.isNumeric():
		r.diags.Add(pos, end, "%s is a %s field; %s applies to numbers only", f.name, f.typ.Kind, m)
		return false
	case m == "buckets":
		n, err := strconv.ParseUint(arg, 0, 64)
		if arg == "" || err != nil || n == 0 {
			r.diags.Add(pos, end, "buckets needs a positive size: buckets=N")
			return false
		}
		if !r.feat.Buckets {
			r.diags.Add(pos, end, "%s", r.feat.Lacks("the modifier ."+m+"="+arg, "buckets"))
			return false
		}
		m = "buckets=" + strconv.FormatUint(n, 10)
	}
	f.mod = m
	return true
}

// castModifier maps a CAST target to a modifier; counter is set for
// _COUNTER_ (a histogram value instead of a key).
func castModifier(c *compiler.Cast) (mod string, counter bool, ok bool) {
	switch c.Target {
	case "HEX", "SYM", "SYSCALL", "EXECNAME", "LOG2", "LOG", "USECS", "STACKTRACE":
		if c.HasArg {
			return "", false, false
		}
		return strings.ToLower(c.Target), false, true
	case "SYM-OFFSET":
		return "sym-offset", false, !c.HasArg
	case "COMM":
		return "execname", false, !c.HasArg
	case "BUCKETS", "BUCKET":
		if !c.HasArg {
			return "", false, false
		}
		return "buckets=" + strconv.FormatUint(c.Arg, 10), false, true
	case "_COUNTER_", "__COUNTER__":
		return "", true, !c.HasArg
	}
	return "", false, false
}

// quietly runs fn with diagnostics discarded: for probing a name whose
// errors are reported where it is lowered.
func (p *planner) quietly(fn func()) {
	var d source.Diags
	saved := p.diags
	p.diags, p.r.diags = &d, &d
	quiet := p.r.quiet
	p.r.quiet = true
	defer func() { p.diags, p.r.diags, p.r.quiet = saved, saved, quiet }()
	fn()
}

// quietField resolves a field without reporting errors.
func (p *planner) quietField(f *compiler.Field) (r *ref) {
	p.quietly(func() { r = p.r.field(f) })
	return r
}

// eachField calls fn for every field reference under e.
func eachField(e compiler.Expr, fn func(*compiler.Field)) {
	switch x := e.(type) {
	case *compiler.Field:
		fn(x)
	case *compiler.Paren:
		eachField(x.X, fn)
	case *compiler.Binary:
		eachField(x.X, fn)
		eachField(x.Y, fn)
	case *compiler.Unary:
		eachField(x.X, fn)
	case *compiler.Cast:
		eachField(x.X, fn)
	case *compiler.Call:
		for _, a := range x.Args {
			eachField(a, fn)
		}
	}
}
