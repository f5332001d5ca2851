package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// isCharPointer reports whether a field holds a pointer to a C string
// ("const char *", or "char *" outside system calls), which a hist
// trigger can only copy as a number. A system call's "char *" argument
// is a buffer the kernel fills (read's buf, getcwd's buf), not a string
// yet when the call enters.
func isCharPointer(ev *tracefs.Event, f *tracefs.Field) bool {
	d := strings.Join(strings.Fields(f.Decl), " ")
	return f.Kind == tracefs.KindPointer && (d == "const char *" || d == "char *" && ev.System != "syscalls")
}

// derefRewrite handles a query that selects a char * field of an event:
// with Options.Deref the event is replaced by an eprobe that reads the
// string (and copies the other fields the query uses); without, a warning
// suggests --deref.
func (p *planner) derefRewrite(q *compiler.Query) {
	tables := []*compiler.TableRef{q.From, q.Join}
	r := &resolver{cat: p.cat, feat: p.feat, diags: &source.Diags{}, quiet: true}
	evs := make([]*tracefs.Event, 2)
	for i, t := range tables {
		if t == nil {
			continue
		}
		if t.Probe != nil {
			r.addSide(&tracefs.Event{System: p.probeGroup()}, t) // keeps the side numbers
			continue
		}
		evs[i] = r.event(t.Name)
		if evs[i] == nil {
			return // reported where the query is planned
		}
		r.addSide(evs[i], t)
	}
	used := [2][]*tracefs.Field{}
	type selField struct {
		f  *compiler.Field
		fl *tracefs.Field
	}
	selected := [2][]selField{}
	visit := func(f *compiler.Field, sel bool) {
		x := r.field(f)
		if x == nil || x.pseudo || evs[x.side] == nil {
			return
		}
		fl := evs[x.side].Field(x.name)
		if fl == nil || fl.IsCommon() {
			return
		}
		if !slices.Contains(used[x.side], fl) {
			used[x.side] = append(used[x.side], fl)
		}
		if sel && isCharPointer(evs[x.side], fl) {
			selected[x.side] = append(selected[x.side], selField{f, fl})
		}
	}
	for _, it := range q.Select {
		eachField(it.Expr, func(f *compiler.Field) { visit(f, true) })
	}
	for _, e := range append(append([]compiler.Expr{q.Where}, q.GroupBy...), orderExprs(q)...) {
		eachField(e, func(f *compiler.Field) { visit(f, false) })
	}
	for _, m := range q.On {
		visit(m.Left, false)
		visit(m.Right, false)
	}
	for i, t := range tables {
		if len(selected[i]) == 0 {
			continue
		}
		ev := evs[i]
		f, fl := selected[i][0].f, selected[i][0].fl
		if p.opt.Deref && !p.feat.Eprobes {
			// Asked for the string, not its address: do not print less.
			x := p.diags.Add(f.Name.Pos, f.Name.End, "%s", p.feat.Lacks(fmt.Sprintf("--deref reads %s (%s) through an event probe, which", f.Name, fl.Decl), "eprobes"))
			x.Hint = "without --deref the trace shows the pointer's value; a kprobe on the function that takes the string can read it (+0($argN):string)"
			continue
		}
		if !p.opt.Deref {
			x := p.diags.Add(f.Name.Pos, f.Name.End, "%s is a pointer (%s): the trace will show its address, not the string", f.Name, fl.Decl)
			x.Warning = true
			if p.feat.Eprobes {
				x.Hint = "--deref reads it through an eprobe that dereferences the pointer; or write eprobe(" + ev.System + "." + ev.Name + ", name=+0($field):ustring) yourself"
			}
			continue
		}
		pr, ok := derefProbe(ev, used[i], t.Name.Pos, t.Name.End)
		if !ok {
			x := p.diags.Add(t.Name.Pos, t.Name.End, "--deref cannot rewrite %s: the query uses a field an eprobe cannot copy", ev.FullName())
			x.Warning = true
			continue
		}
		t.Probe = pr
		var strs []string
		for _, fl := range used[i] {
			if isCharPointer(ev, fl) {
				strs = append(strs, fl.Name)
			}
		}
		p.note("--deref: %s is read through eprobe %s.%s, which dereferences %s to a string",
			ev.System+"."+ev.Name, p.probeGroup(), ev.Name, strings.Join(strs, ", "))
	}
}

func orderExprs(q *compiler.Query) []compiler.Expr {
	var out []compiler.Expr
	for _, o := range q.OrderBy {
		out = append(out, o.Expr)
	}
	return out
}

// derefProbe builds the eprobe on ev that carries the fields a query
// uses: char * fields as strings (user strings for system calls), integer
// fields copied with their size and sign.
func derefProbe(ev *tracefs.Event, fields []*tracefs.Field, pos, end source.Pos) (*compiler.Probe, bool) {
	pr := &compiler.Probe{Kind: compiler.EProbe, Pos: pos, End: end, TargetPos: pos, TargetEnd: end,
		Event: &compiler.Name{Pos: pos, End: end, Parts: []*compiler.Ident{
			{Name: ev.System, Pos: pos, End: end}, {Name: ev.Name, Pos: pos, End: end}}}}
	for _, f := range fields {
		a := &compiler.ProbeArg{Name: f.Name, Pos: pos, End: end, FetchPos: pos,
			Fields: []*compiler.Ident{{Name: f.Name, Pos: pos, End: end}}}
		switch {
		case isCharPointer(ev, f):
			a.Loc = &compiler.Fetch{Kind: compiler.FetchDeref, Text: "0", X: &compiler.Fetch{Kind: compiler.FetchField, Name: f.Name}}
			a.Fetch, a.Type = a.Loc.String(), "string"
			if ev.System == "syscalls" {
				a.Type = "ustring"
			}
		case (f.Kind == tracefs.KindInt || f.Kind == tracefs.KindPointer) && (f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8):
			a.Loc = &compiler.Fetch{Kind: compiler.FetchField, Name: f.Name}
			a.Fetch = a.Loc.String()
			a.Type = fmt.Sprintf("u%d", f.Size*8)
			if f.Signed {
				a.Type = fmt.Sprintf("s%d", f.Size*8)
			}
		default:
			return nil, false
		}
		pr.Args = append(pr.Args, a)
	}
	return pr, true
}
