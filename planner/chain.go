package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
)

// A statement the kernel cannot do with one synthetic event is planned as
// several steps, each an ordinary JOIN or histogram:
//
//   - a chain "FROM a JOIN b ON … JOIN c ON …" becomes one synthetic event
//     per JOIN: a→b carries what the later steps need (fields of a and b,
//     their timestamps), and the next JOIN starts from it;
//   - aggregates over a JOIN (GROUP BY, COUNT(*), SUM, CAST and dotted
//     modifiers) become the JOIN's synthetic event, holding the raw values,
//     and a histogram on it that groups, counts and sums them.
//
// Every step is built as a query of the model, with identifiers that keep
// the positions of the SQL they come from, so the usual planning reports
// problems at the user's text.

// step is one part of a statement's lowering.
type step struct {
	q *compiler.Query
	// name is the synthetic event's name, decided for the whole statement
	// ("" lets synthName derive it).
	name string
	// feeds is set when the step's synthetic event only feeds a later step
	// of the same statement: --run reads no results of its own from it,
	// and the -m/-c handlers are not on it.
	feeds bool
	// first is set on the step that gets -p/-L's filter.
	first bool
	// middle is set on the steps of a chain before its last JOIN.
	middle bool
	// shared is the name= of a UNION ALL's histogram, shared by its steps.
	shared string
	// units are the latency units of the final JOIN's fields, known from
	// the whole statement (a carried timestamp looks like a plain number
	// to the step).
	units  map[string]string
	probes []*Probe
}

// maxChain is the number of events a chain may join: each JOIN is a
// synthetic event and two triggers, and a page of script is plenty.
const maxChain = 8

// expand splits a statement into the steps that lower it.
func (p *planner) expand(q *compiler.Query) []*step {
	if len(q.Union) > 0 {
		return p.unionSteps(q)
	}
	if q.Join == nil || len(q.More) == 0 && !aggregated(q) {
		return []*step{{q: q, first: true}}
	}
	if n := 2 + len(q.More); n > maxChain {
		st := q.More[maxChain-2]
		x := p.diags.Add(st.JoinPos, st.JoinPos, "a chain of %d events; sqlhist joins at most %d in one statement", n, maxChain)
		x.Hint = "split it with CREATE VIEW"
		return nil
	}
	c := &splitter{p: p, q: q, r: &resolver{cat: p.cat, feat: p.feat, diags: p.diags}, refs: map[*compiler.Field]*ref{}, quals: map[*compiler.Field]int{}, deltas: map[*compiler.Binary]string{}}
	if !c.events() || !c.resolveAll() {
		return nil
	}
	return c.steps()
}

// aggregated reports whether a JOIN statement asks for aggregates: GROUP
// BY, a function call, a CAST or a dotted display modifier on an item.
func aggregated(q *compiler.Query) bool {
	if len(q.GroupBy) > 0 {
		return true
	}
	for _, it := range q.Select {
		switch x := compiler.Unparen(it.Expr).(type) {
		case *compiler.Call:
			return true
		case *compiler.Cast:
			if !isTypeCast(x) {
				return true
			}
		case *compiler.Field:
			if displayModifier(x) != nil {
				return true
			}
		}
	}
	return false
}

// displayModifier returns the last part of a dotted field when it is a
// modifier that shapes a histogram key (hex, log2, …; not usecs, which
// picks the timestamp's unit, execname, which a synthetic field can hold,
// nor stacktrace).
func displayModifier(f *compiler.Field) *compiler.Ident {
	parts := f.Name.Parts
	if len(parts) < 2 {
		return nil
	}
	last := parts[len(parts)-1]
	m, _, _ := strings.Cut(strings.ToLower(last.Name), "=")
	switch m {
	case "hex", "sym", "sym-offset", "syscall", "log2", "log", "buckets", "bucket":
		return last
	}
	return nil
}

// splitter is the planning of a multi-step statement.
type splitter struct {
	p      *planner
	q      *compiler.Query
	r      *resolver // every event of the statement, in order
	tables []*compiler.TableRef
	joins  []source.Pos        // JOIN keyword of each step
	ons    [][]*compiler.Match // ON pairs of each step
	refs   map[*compiler.Field]*ref
	quals  map[*compiler.Field]int // parts of the field that name its event
	probes []*Probe
	named  map[string]string           // carried value's key → its synthetic field name
	deltas map[*compiler.Binary]string // expanded TIMESTAMP_DELTAs → their default label
	// same maps a field that an ON pair makes equal to a field of an
	// earlier event (same type, no modifier) to that field: one value,
	// carried once.
	same map[string]carried
}

// events resolves the statement's events and checks their aliases.
func (c *splitter) events() bool {
	q := c.q
	c.tables = []*compiler.TableRef{q.From, q.Join}
	c.joins = []source.Pos{q.JoinPos}
	c.ons = [][]*compiler.Match{q.On}
	for _, m := range q.More {
		c.tables = append(c.tables, m.Table)
		c.joins = append(c.joins, m.JoinPos)
		c.ons = append(c.ons, m.On)
	}
	for _, t := range c.tables {
		if t == nil || t.Probe != nil && !c.p.probeSource(t, &c.probes) {
			return false
		}
	}
	ok := true
	for _, t := range c.tables {
		ev := c.r.event(t.Name)
		if ev == nil {
			ok = false
			continue
		}
		c.r.addSide(ev, t)
	}
	if !ok {
		return false
	}
	for i, s := range c.r.sides {
		for _, o := range c.r.sides[:i] {
			a, b := o.table.Alias, s.table.Alias
			switch {
			case a != nil && b != nil && a.Name == b.Name:
				c.p.diags.Add(b.Pos, b.End, "alias %q is already used for an earlier event", b.Name)
				ok = false
			case o.ev == s.ev && (a == nil || b == nil):
				n := s.table.Name
				x := c.p.diags.Add(n.Pos, n.End, "%s appears twice in this JOIN; each needs an alias", s.ev.FullName())
				x.Hint = "FROM … JOIN " + s.ev.Name + " AS run ON …"
				ok = false
			}
		}
	}
	return ok
}

// resolveAll resolves every field the statement names, reporting each
// unknown one once, at its position.
func (c *splitter) resolveAll() bool {
	ok := true
	visit := func(f *compiler.Field) {
		if _, done := c.refs[f]; done {
			return
		}
		if c.isLabel(f) || deltaName(f) != "" && !c.anyHas(f.Name.Parts[0].Name) {
			return
		}
		r := c.r.field(f)
		if r == nil {
			ok = false
			return
		}
		c.refs[f] = r
		c.quals[f] = c.qualLen(r.side, f)
	}
	for _, it := range c.q.Select {
		eachField(it.Expr, visit)
	}
	for _, on := range c.ons {
		for _, m := range on {
			visit(m.Left)
			visit(m.Right)
		}
	}
	if c.q.Where != nil {
		eachField(c.q.Where, visit)
	}
	return ok
}

// isLabel reports whether f is a bare name that is an AS label of the
// SELECT (GROUP BY, ORDER BY and WHERE may name items by their labels).
func (c *splitter) isLabel(f *compiler.Field) bool {
	if len(f.Name.Parts) != 1 {
		return false
	}
	for _, it := range c.q.Select {
		if it.Label != nil && it.Label.Name == f.Name.Parts[0].Name {
			return !c.anyHas(f.Name.Parts[0].Name)
		}
	}
	return false
}

// anyHas reports whether an event of the statement has the field name.
func (c *splitter) anyHas(name string) bool {
	for _, s := range c.r.sides {
		if lookupField(s.ev, name) != nil {
			return true
		}
	}
	return false
}

func deltaName(f *compiler.Field) string {
	if len(f.Name.Parts) != 1 {
		return ""
	}
	switch up := strings.ToUpper(f.Name.Parts[0].Name); up {
	case "TIMESTAMP_DELTA", "TIMESTAMP_DELTA_USECS":
		return up
	}
	return ""
}

// qualLen returns how many leading parts of f name its event.
func (c *splitter) qualLen(side int, f *compiler.Field) int {
	best := 0
	for _, q := range c.r.sides[side].quals {
		if len(q) < len(f.Name.Parts) && len(q) > best && prefixEqual(f.Name.Parts, q) {
			best = len(q)
		}
	}
	return best
}

// carried is a value a step's synthetic event carries for later steps.
type carried struct {
	side  int    // the event it comes from
	field string // the kernel's field name
	// mod is a modifier that changes the value, kept with it: "usecs" on
	// a timestamp, "execname" on common_pid; else "".
	mod  string
	name string // the synthetic field's name
}

func (k carried) key() string { return fmt.Sprintf("%d/%s/%s", k.side, k.field, k.mod) }

// carriedOf is the value a resolved field stands for.
func carriedOf(r *ref) carried {
	k := carried{side: r.side, field: r.name}
	if r.mod == "usecs" || r.mod == "execname" {
		k.mod = r.mod
	}
	return k
}

// chainItem is one SELECT item of the final JOIN.
type chainItem struct {
	expr  compiler.Expr
	label *compiler.Ident
	unit  string
}

// steps builds the statement's steps.
func (c *splitter) steps() []*step {
	p := c.p
	q := c.q
	n := len(c.tables) - 1 // number of JOINs
	items, hist := c.aggregate()
	if items == nil {
		return nil
	}
	// Which step each WHERE term goes to: the step that joins the last
	// event it names.
	terms := make([][]compiler.Expr, n+1)
	if q.Where != nil {
		for _, t := range conjuncts(q.Where) {
			t = c.unlabel(t)
			if t == nil {
				continue
			}
			last := 1
			eachField(t, func(f *compiler.Field) {
				if r := c.refs[f]; r != nil && r.side > last {
					last = r.side
				}
			})
			terms[last] = append(terms[last], t)
		}
	}
	// What each step uses, to know what earlier steps must carry.
	uses := make([][]*compiler.Field, n+1)
	use := func(s int, e compiler.Expr) {
		eachField(e, func(f *compiler.Field) {
			if c.refs[f] != nil {
				uses[s] = append(uses[s], f)
			}
		})
	}
	for s := 1; s <= n; s++ {
		for _, m := range c.ons[s-1] {
			if !c.checkPair(s, m) {
				return nil
			}
			use(s, m.Left)
			use(s, m.Right)
		}
		for _, t := range terms[s] {
			use(s, t)
		}
	}
	for _, it := range items {
		use(n, it.expr)
	}
	c.sameAs()
	carry := make([][]carried, n) // carry[k]: what step k's event holds for later steps
	seen := make([]map[string]bool, n)
	names := newVarNames()
	c.named = map[string]string{}
	named := c.named
	arch, _ := p.cat.Arch()
	for s := 2; s <= n; s++ {
		for _, f := range uses[s] {
			k := c.canon(carriedOf(c.refs[f]))
			if r := c.refs[f]; arch.Bits == 32 && (r.name == "common_timestamp" || r.typ.Size == 8) && max(k.side, 1) < s {
				// Seen in Debian's armhf 6.1: a hist variable set from a
				// u64 field of a synthetic event keeps its low 32 bits
				// (a timestamp of 8.03 s read back as 3.73 s).
				x := p.diags.Add(f.Name.Pos, f.Name.End, "%s would pass through a synthetic event of the chain as a 64-bit value, and on 32-bit %s the kernel's hist triggers read such a field back as its low 32 bits", f.Name, arch.Name)
				x.Hint = "seen in Linux 6.1 on arm, where timestamps lose their upper half: measure each step with its own JOIN on this target"
				return nil
			}
			if named[k.key()] == "" {
				named[k.key()] = names.take(c.carriedName(k))
			}
			k.name = named[k.key()]
			for st := max(k.side, 1); st < s; st++ {
				if seen[st] == nil {
					seen[st] = map[string]bool{}
				}
				if !seen[st][k.key()] {
					seen[st][k.key()] = true
					carry[st] = append(carry[st], k)
				}
			}
		}
	}
	for _, cs := range carry {
		slices.SortStableFunc(cs, func(a, b carried) int { return a.side - b.side })
	}
	final, fpos, fend := c.finalName()
	if !p.checkName("synthetic event name", final, fpos, fend) {
		return nil
	}
	stepNames := make([]string, n+1)
	stepNames[n] = final
	for s := 1; s < n; s++ {
		stepNames[s] = c.stepName(s)
	}
	var out []*step
	for s := 1; s <= n; s++ {
		sq := &compiler.Query{Pos: q.Pos, End: q.End, Join: c.tables[s], JoinPos: c.joins[s-1]}
		if s == 1 {
			sq.From = c.tables[0]
		} else {
			at := c.joins[s-2]
			sq.From = &compiler.TableRef{Name: &compiler.Name{Pos: at, End: at, Parts: []*compiler.Ident{
				{Name: "synthetic", Pos: at, End: at}, {Name: stepNames[s-1], Pos: at, End: at}}}}
		}
		for _, m := range c.ons[s-1] {
			sq.On = append(sq.On, &compiler.Match{Left: c.rewriteField(m.Left, s, stepNames), Right: c.rewriteField(m.Right, s, stepNames), OpPos: m.OpPos})
		}
		for _, t := range terms[s] {
			t = c.rewrite(t, s, stepNames)
			if sq.Where == nil {
				sq.Where = t
			} else {
				pos, _ := t.Span()
				sq.Where = compiler.NewBinary(compiler.OpAnd, sq.Where, t, pos, pos)
			}
		}
		st := &step{q: sq, name: stepNames[s], feeds: s < n || hist != nil, first: s == 1, middle: s < n}
		if s == 1 {
			st.probes = c.probes
		}
		if s < n {
			for _, k := range carry[s] {
				at := c.joins[s-1]
				f := c.carriedRef(k, s, stepNames, at, at)
				sq.Select = append(sq.Select, &compiler.SelectItem{Expr: f, Label: &compiler.Ident{Name: k.name, Pos: at, End: at}})
			}
		} else {
			st.units = map[string]string{}
			for _, it := range items {
				sq.Select = append(sq.Select, &compiler.SelectItem{Expr: c.rewrite(it.expr, s, stepNames), Label: it.label})
				if it.label != nil && it.unit != "" {
					st.units[it.label.Name] = it.unit
				}
			}
			if hist == nil {
				sq.OrderBy, sq.Limit = q.OrderBy, q.Limit
			}
		}
		out = append(out, st)
	}
	if n > 1 {
		var parts []string
		for s := 1; s <= n; s++ {
			joined := c.qualName(s)
			if s == 1 {
				joined = c.qualName(0) + " -> " + joined
			} else {
				joined = "... -> " + joined
			}
			parts = append(parts, stepNames[s]+" ("+joined+")")
		}
		p.note("%s: a chain of %d events as %d synthetic events, each JOIN starting from the one before: %s", final, n+1, n, strings.Join(parts, ", "))
	}
	if hist != nil {
		p.note("%s: the aggregates are a histogram on synthetic/%s", final, final)
		at := q.JoinPos
		hist.From = &compiler.TableRef{Name: &compiler.Name{Pos: at, End: at, Parts: []*compiler.Ident{
			{Name: "synthetic", Pos: at, End: at}, {Name: final, Pos: at, End: at}}}}
		out = append(out, &step{q: hist, name: final})
	}
	return out
}

// checkPair checks that an ON pair of step s matches the event it joins
// with an earlier one: the start trigger of the step is on the events
// before (carried in its synthetic event), the end trigger on the new one.
func (c *splitter) checkPair(s int, m *compiler.Match) bool {
	l, r := c.refs[m.Left], c.refs[m.Right]
	if l == nil || r == nil {
		return false
	}
	if l.side > r.side {
		l, r = r, l
	}
	name := c.p.sideNameOf(c.r, s)
	switch {
	case r.side > s:
		x := c.p.diags.Add(m.Left.Name.Pos, m.Right.Name.End, "this ON names %s, which is joined later", c.p.sideNameOf(c.r, r.side))
		x.Hint = "each JOIN's ON pairs its event with the events before it"
		return false
	case r.side != s || l.side == s:
		x := c.p.diags.Add(m.Left.Name.Pos, m.Right.Name.End, "this ON must pair a field of %s with a field of an earlier event", name)
		x.Hint = "each step of a chain is a JOIN of what came before with the new event: the kernel matches the new event's key with one saved earlier"
		return false
	}
	return true
}

// sideNameOf names an event of a resolver for messages.
func (p *planner) sideNameOf(r *resolver, i int) string {
	s := r.sides[i]
	if s.table.Alias != nil {
		return strconv.Quote(s.table.Alias.Name) + " (" + s.ev.FullName() + ")"
	}
	return s.ev.FullName()
}

// unlabel replaces, in a WHERE term, the labels of selected fields by the
// fields; a label of a computed item cannot be filtered by a trigger.
func (c *splitter) unlabel(t compiler.Expr) compiler.Expr {
	bad := false
	out := mapFields(t, func(f *compiler.Field) compiler.Expr {
		if !c.isLabel(f) {
			return f
		}
		for _, it := range c.q.Select {
			if it.Label != nil && it.Label.Name == f.Name.Parts[0].Name {
				if g, ok := compiler.Unparen(it.Expr).(*compiler.Field); ok && c.refs[g] != nil {
					return &compiler.Field{Name: &compiler.Name{Parts: g.Name.Parts, Pos: f.Name.Pos, End: f.Name.End}}
				}
			}
		}
		x := c.p.diags.Add(f.Name.Pos, f.Name.End, "%s is computed by the JOIN; a trigger's filter tests the fields of its own event", f.Name.String())
		x.Hint = "filter the fields it is computed from"
		bad = true
		return f
	})
	if bad {
		return nil
	}
	eachField(out, func(f *compiler.Field) {
		if c.refs[f] == nil {
			c.refs[f] = c.r.field(f)
			if c.refs[f] != nil {
				c.quals[f] = c.qualLen(c.refs[f].side, f)
			}
		}
	})
	return out
}

// carriedName derives a readable name for a carried value: the event's
// alias (or name) and the field, "start_ts", "waking_pid".
func (c *splitter) carriedName(k carried) string {
	s := c.r.sides[k.side]
	q := s.ev.Name
	if s.table.Alias != nil {
		q = s.table.Alias.Name
	}
	short := (&ref{name: k.field}).short()
	switch k.mod {
	case "usecs":
		short = "ts_us"
	case "execname":
		short = "execname"
	}
	return q + "_" + short
}

// finalName is the name of the statement's synthetic event: CREATE VIEW,
// -n, or derived from its first and last events.
func (c *splitter) finalName() (string, source.Pos, source.Pos) {
	q, p := c.q, c.p
	n := len(c.tables) - 1
	if q.View != nil {
		if p.opt.Name != "" && p.opt.Name != q.View.Name {
			p.diags.Add(q.View.Pos, q.View.End, "-n %s conflicts with CREATE VIEW %s", p.opt.Name, q.View.Name)
		}
		return q.View.Name, q.View.Pos, q.View.End
	}
	if p.opt.Name != "" {
		return p.opt.Name, q.JoinPos, q.JoinPos
	}
	return p.suffixed(c.evName(0) + "_to_" + c.evName(n)), q.JoinPos, q.JoinPos
}

// stepName names the synthetic event of an intermediate step: after the
// statement's own name when it was given one, else after its events.
func (c *splitter) stepName(s int) string {
	if c.q.View != nil {
		return c.q.View.Name + "_step" + strconv.Itoa(s)
	}
	if c.p.opt.Name != "" {
		return c.p.opt.Name + "_step" + strconv.Itoa(s)
	}
	return c.p.suffixed(c.evName(0) + "_to_" + c.evName(s))
}

// evName is an event's name in derived names: its alias when the event
// appears twice in the statement.
func (c *splitter) evName(i int) string {
	s := c.r.sides[i]
	for j, o := range c.r.sides {
		if j != i && o.ev == s.ev && s.table.Alias != nil {
			return s.table.Alias.Name
		}
	}
	return s.ev.Name
}

// suffixed appends the run's suffix to a derived name.
func (p *planner) suffixed(name string) string {
	if p.opt.Suffix == "" {
		return name
	}
	tail := "_" + p.opt.Suffix
	if len(name)+len(tail) > 63 {
		name = name[:63-len(tail)]
	}
	return name + tail
}

// rewrite returns e as step s sees it: fields of its own two events named
// through them, fields of earlier events through the values the previous
// step carries.
func (c *splitter) rewrite(e compiler.Expr, s int, names []string) compiler.Expr {
	return mapFields(e, func(f *compiler.Field) compiler.Expr {
		if c.refs[f] == nil {
			return f
		}
		return c.rewriteField(f, s, names)
	})
}

func (c *splitter) rewriteField(f *compiler.Field, s int, names []string) *compiler.Field {
	r := c.refs[f]
	if r == nil {
		return f
	}
	k := carriedOf(r)
	parts := f.Name.Parts[c.quals[f]:]
	var mod []*compiler.Ident
	if len(parts) == 2 && k.mod == "" {
		mod = parts[1:] // a display modifier: the step applies it
	}
	if r.side < s && s > 1 {
		k = c.canon(k)
		k.name = c.named[k.key()] // the previous step carries it
	}
	out := c.carriedRef(k, s, names, parts[0].Pos, parts[0].End)
	out.Name.Parts = append(out.Name.Parts, mod...)
	out.Name.Pos, out.Name.End = f.Name.Pos, f.Name.End
	return out
}

// carriedRef is the field that holds k in step s: the event itself when
// step s joins it (or starts from it), else the previous step's carried
// value.
func (c *splitter) carriedRef(k carried, s int, names []string, pos, end source.Pos) *compiler.Field {
	id := func(n string) *compiler.Ident { return &compiler.Ident{Name: n, Pos: pos, End: end} }
	var parts []*compiler.Ident
	if k.side == s || s == 1 {
		for _, q := range c.r.sides[k.side].quals[0] {
			parts = append(parts, id(q))
		}
		name := k.field
		switch {
		case k.field == "common_timestamp" && k.mod == "usecs":
			name = "TIMESTAMP_USECS"
		case k.field == "common_timestamp":
			name = "TIMESTAMP"
		case k.field == "common_stacktrace" || k.field == "stacktrace":
			name = "STACKTRACE"
		}
		parts = append(parts, id(name))
		if k.mod == "execname" {
			parts = append(parts, id("execname"))
		}
	} else {
		parts = []*compiler.Ident{id(names[s-1]), id(k.name)}
		if k.mod == "usecs" {
			// The kernel refuses to subtract a plain number from a µs
			// timestamp ("Timestamp units in expression don't match", 6.1
			// and 7.2); the usecs modifier on the carried field gives it
			// the unit, and leaves its value as it is.
			parts = append(parts, id("usecs"))
			c.p.usecs["synthetic/"+names[s-1]+"/"+k.name] = true
		}
	}
	return &compiler.Field{Name: &compiler.Name{Parts: parts, Pos: pos, End: end}}
}

// aggregate splits the SELECT of an aggregated statement into the items
// of the JOIN (the raw values, each named) and a histogram query on its
// synthetic event (FROM is set by the caller); a statement without
// aggregates keeps its items and gets no histogram. Items are nil when a
// problem was reported.
func (c *splitter) aggregate() ([]chainItem, *compiler.Query) {
	q, p := c.q, c.p
	ok := true
	var inner []chainItem
	byKey := map[string]string{}
	// add makes x an item of the JOIN and returns its name there.
	add := func(x compiler.Expr, label *compiler.Ident) *compiler.Ident {
		x = c.expandDelta(x)
		name := ""
		if label != nil {
			name = label.Name
		} else {
			name = c.derivedLabel(x)
		}
		pos, end := x.Span()
		if name == "" {
			d := p.diags.Add(pos, end, "this expression needs a name")
			d.Hint = "add AS name: the name becomes the synthetic event's field"
			ok = false
			return nil
		}
		key := c.exprKey(x)
		if prev, dup := byKey[key]; dup && (label == nil || prev == name) {
			return &compiler.Ident{Name: prev, Pos: pos, End: end}
		}
		byKey[key] = name
		id := &compiler.Ident{Name: name, Pos: pos, End: end}
		if label != nil {
			id.Pos, id.End = label.Pos, label.End
		}
		inner = append(inner, chainItem{expr: x, label: id, unit: c.unitOf(x)})
		return &compiler.Ident{Name: name, Pos: pos, End: end}
	}
	field := func(id *compiler.Ident, more ...*compiler.Ident) *compiler.Field {
		parts := append([]*compiler.Ident{id}, more...)
		return &compiler.Field{Name: &compiler.Name{Parts: parts, Pos: id.Pos, End: parts[len(parts)-1].End}}
	}
	if !aggregated(q) {
		for _, it := range q.Select {
			add(it.Expr, it.Label)
		}
		if !ok {
			return nil, nil
		}
		return inner, nil
	}
	h := &compiler.Query{Pos: q.Pos, End: q.End, Limit: q.Limit}
	for _, it := range q.Select {
		var out compiler.Expr
		switch x := compiler.Unparen(it.Expr).(type) {
		case *compiler.Call:
			out = x
			if (x.Func == "SUM" || x.Func == "MAX") && len(x.Args) == 1 {
				var label *compiler.Ident
				if x.Func == "MAX" {
					label = it.Label // the synthetic field MAX tracks is named as its column
				}
				if id := add(x.Args[0], label); id != nil {
					out = &compiler.Call{Func: x.Func, Args: []compiler.Expr{field(id)}, Pos: x.Pos, End: x.End}
				}
			}
		case *compiler.Cast:
			if isTypeCast(x) {
				// A synthetic field's type: the JOIN item keeps the CAST.
				if id := add(x, it.Label); id != nil {
					out = field(id)
				}
				break
			}
			if f, isField := compiler.Unparen(x.X).(*compiler.Field); isField && (x.Target == "EXECNAME" || x.Target == "COMM") && c.refs[f] != nil {
				// The task's name travels as a string: the histogram keys
				// by it as it is.
				named := c.withModifier(f, "execname", x.TargetPos, x.TargetEnd)
				if named == nil {
					ok = false
					break
				}
				if id := add(named, it.Label); id != nil {
					out = field(id)
				}
				break
			}
			if id := add(x.X, it.Label); id != nil {
				cp := *x
				cp.X = field(id)
				out = &cp
			}
		case *compiler.Field:
			if r := c.refs[x]; r != nil && r.mod == "execname" {
				if id := add(x, it.Label); id != nil {
					out = field(id)
				}
				break
			}
			if m := displayModifier(x); m != nil {
				bare := &compiler.Field{Name: &compiler.Name{Parts: x.Name.Parts[:len(x.Name.Parts)-1], Pos: x.Name.Pos, End: x.Name.End}}
				c.refs[bare], c.quals[bare] = c.refs[x], c.quals[x]
				if r := c.refs[x]; r != nil {
					cp := *r
					cp.mod = ""
					c.refs[bare] = &cp
				}
				if id := add(bare, it.Label); id != nil {
					out = field(id, m)
				}
				break
			}
			if id := add(x, it.Label); id != nil {
				out = field(id)
			}
		default:
			if id := add(x, it.Label); id != nil {
				out = field(id)
			}
		}
		if out != nil {
			h.Select = append(h.Select, &compiler.SelectItem{Expr: out, Label: it.Label})
		}
	}
	for _, g := range q.GroupBy {
		if e := c.outer(g, byKey); e != nil {
			h.GroupBy = append(h.GroupBy, e)
			continue
		}
		pos, end := g.Span()
		x := p.diags.Add(pos, end, "GROUP BY of a JOIN takes selected items: this one is not in the SELECT")
		x.Hint = "select it (the histogram's keys are the selected items that are not COUNT(*) or SUM)"
		ok = false
	}
	for _, o := range q.OrderBy {
		e := c.outer(o.Expr, byKey)
		if e == nil {
			e = o.Expr // the histogram says it is not selected
		}
		h.OrderBy = append(h.OrderBy, &compiler.OrderItem{Expr: e, Desc: o.Desc})
	}
	if !ok || len(inner) == 0 && ok {
		if ok {
			x := p.diags.Add(q.Pos, q.End, "this JOIN selects only counts: a synthetic event needs at least one field")
			x.Hint = "select a field to group by, e.g. end.next_comm, COUNT(*)"
		}
		return nil, nil
	}
	return inner, h
}

// outer maps a GROUP BY or ORDER BY item of an aggregated JOIN to what the
// histogram on its synthetic event names: labels stay, COUNT(*) stays, a
// selected expression becomes its field, SUM(x) becomes SUM(field); nil
// when it names nothing selected.
func (c *splitter) outer(e compiler.Expr, byKey map[string]string) compiler.Expr {
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Call:
		if x.Func == "COUNT" {
			return x
		}
		if (x.Func == "SUM" || x.Func == "MAX") && len(x.Args) == 1 {
			if a := c.outer(x.Args[0], byKey); a != nil {
				return &compiler.Call{Func: x.Func, Args: []compiler.Expr{a}, Pos: x.Pos, End: x.End}
			}
		}
		return nil
	case *compiler.Field:
		if len(x.Name.Parts) == 1 {
			for _, it := range c.q.Select {
				if it.Label != nil && it.Label.Name == x.Name.Parts[0].Name {
					return x
				}
			}
		}
	}
	var bad bool
	eachField(e, func(f *compiler.Field) {
		if c.refs[f] == nil && deltaName(f) == "" {
			if c.refs[f] = c.r.field(f); c.refs[f] == nil {
				bad = true
			} else {
				c.quals[f] = c.qualLen(c.refs[f].side, f)
			}
		}
	})
	if bad {
		return nil
	}
	x := c.expandDelta(e)
	if name, found := byKey[c.exprKey(x)]; found {
		pos, end := e.Span()
		return &compiler.Field{Name: &compiler.Name{Parts: []*compiler.Ident{{Name: name, Pos: pos, End: end}}, Pos: pos, End: end}}
	}
	return nil
}

// expandDelta rewrites TIMESTAMP_DELTA[_USECS] (when no event has a field
// of that name) into the last event's timestamp minus the first's.
func (c *splitter) expandDelta(e compiler.Expr) compiler.Expr {
	f, ok := compiler.Unparen(e).(*compiler.Field)
	if !ok {
		return e
	}
	d := deltaName(f)
	if d == "" || c.anyHas(f.Name.Parts[0].Name) {
		return e
	}
	n := f.Name
	suffix := "TIMESTAMP"
	if strings.HasSuffix(d, "USECS") {
		suffix = "TIMESTAMP_USECS"
	}
	mk := func(side int) *compiler.Field {
		var parts []*compiler.Ident
		for _, s := range c.r.sides[side].quals[0] {
			parts = append(parts, &compiler.Ident{Name: s, Pos: n.Pos, End: n.End})
		}
		parts = append(parts, &compiler.Ident{Name: suffix, Pos: n.Pos, End: n.End})
		g := &compiler.Field{Name: &compiler.Name{Parts: parts, Pos: n.Pos, End: n.End}}
		c.refs[g] = c.r.field(g)
		c.quals[g] = len(parts) - 1
		return g
	}
	b := compiler.NewBinary(compiler.OpSub, mk(len(c.r.sides)-1), mk(0), n.Pos, n.End)
	c.deltas[b] = "delta"
	if suffix == "TIMESTAMP_USECS" {
		c.deltas[b] = "delta_us"
	}
	return b
}

// derivedLabel names an unlabelled item of the JOIN: a field by its own
// name ("ts" for a timestamp), TIMESTAMP_DELTA as "delta"; "" otherwise.
func (c *splitter) derivedLabel(x compiler.Expr) string {
	switch e := compiler.Unparen(x).(type) {
	case *compiler.Field:
		if r := c.refs[e]; r != nil {
			return r.short()
		}
	case *compiler.Binary:
		return c.deltas[e]
	}
	return ""
}

// unitOf says whether x is a latency (timestamps of two different events)
// and in which unit.
func (c *splitter) unitOf(x compiler.Expr) string {
	sides := map[int]bool{}
	unit := "ns"
	eachField(x, func(f *compiler.Field) {
		if r := c.refs[f]; r != nil && r.name == "common_timestamp" {
			sides[r.side] = true
			if r.mod == "usecs" {
				unit = "us"
			}
		}
	})
	if len(sides) >= 2 {
		return unit
	}
	return ""
}

// exprKey is a canonical text of an expression, with fields resolved: two
// spellings of the same value have the same key.
func (c *splitter) exprKey(e compiler.Expr) string {
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Field:
		if r := c.refs[x]; r != nil {
			return fmt.Sprintf("%d:%s.%s", r.side, r.name, r.mod)
		}
		return "?" + x.Name.String()
	case *compiler.Binary:
		return "(" + c.exprKey(x.X) + x.Op.String() + c.exprKey(x.Y) + ")"
	case *compiler.Unary:
		return x.Op.String() + c.exprKey(x.X)
	case *compiler.Number:
		return x.Text
	case *compiler.String:
		return strconv.Quote(x.Value)
	case *compiler.Cast:
		return "CAST(" + c.exprKey(x.X) + " AS " + x.Target + ")"
	case *compiler.Call:
		var args []string
		for _, a := range x.Args {
			args = append(args, c.exprKey(a))
		}
		return x.Func + "(" + strings.Join(args, ",") + ")"
	}
	return fmt.Sprintf("%T", e)
}

// mapFields returns e with every field replaced by fn's result; the
// other nodes are copied, keeping their positions.
func mapFields(e compiler.Expr, fn func(*compiler.Field) compiler.Expr) compiler.Expr {
	switch x := e.(type) {
	case *compiler.Field:
		return fn(x)
	case *compiler.Paren:
		return &compiler.Paren{X: mapFields(x.X, fn), Pos: x.Pos, End: x.End}
	case *compiler.Binary:
		return compiler.NewBinary(x.Op, mapFields(x.X, fn), mapFields(x.Y, fn), x.OpPos, x.OpEnd)
	case *compiler.Unary:
		return compiler.NewUnary(x.Op, mapFields(x.X, fn), x.Pos)
	case *compiler.Cast:
		cp := *x
		cp.X = mapFields(x.X, fn)
		return &cp
	case *compiler.Call:
		cp := *x
		cp.Args = make([]compiler.Expr, len(x.Args))
		for i, a := range x.Args {
			cp.Args[i] = mapFields(a, fn)
		}
		return &cp
	}
	return e
}

// withModifier returns f with a value modifier added (common_pid →
// common_pid.execname), resolved; nil when the field does not take it.
func (c *splitter) withModifier(f *compiler.Field, mod string, pos, end source.Pos) *compiler.Field {
	r := c.refs[f]
	if r.mod != "" {
		c.p.diags.Add(pos, end, "%s already carries the modifier .%s; the kernel takes one modifier per field", r.name, r.mod)
		return nil
	}
	parts := append(append([]*compiler.Ident{}, f.Name.Parts...), &compiler.Ident{Name: mod, Pos: pos, End: end})
	g := &compiler.Field{Name: &compiler.Name{Parts: parts, Pos: f.Name.Pos, End: f.Name.End}}
	cp := *r
	if !c.r.setModifier(&cp, mod, pos, end) {
		return nil
	}
	c.refs[g], c.quals[g] = &cp, c.quals[f]
	return g
}

// qualName is how the statement names an event: its alias, or its name.
func (c *splitter) qualName(i int) string {
	s := c.r.sides[i]
	if s.table.Alias != nil {
		return s.table.Alias.Name
	}
	return s.ev.Name
}

// sameAs records the fields that ON pairs make equal: the later event's
// field is the earlier one's, so a step carries the value once (carrying
// both halves of "w.pid = wk.pid" would save the same pid twice).
func (c *splitter) sameAs() {
	c.same = map[string]carried{}
	for _, on := range c.ons {
		for _, m := range on {
			l, r := c.refs[m.Left], c.refs[m.Right]
			if l == nil || r == nil || l.side == r.side || l.mod != "" || r.mod != "" || l.pseudo || r.pseudo || l.typ != r.typ {
				continue
			}
			if l.side > r.side {
				l, r = r, l
			}
			c.same[carriedOf(r).key()] = c.canon(carriedOf(l))
		}
	}
}

// canon returns the value k is known to equal in the earliest event.
func (c *splitter) canon(k carried) carried {
	for i := 0; i < len(c.same); i++ {
		e, ok := c.same[k.key()]
		if !ok {
			break
		}
		k = e
	}
	return k
}
