package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// histItem is one lowered SELECT item of a histogram.
type histItem struct {
	x     *Expr  // the key or value: call_site.sym-offset, bytes_alloc
	sort  string // the name sort= uses: the field without its modifier
	value bool
	count bool // COUNT(*): the implicit hitcount
	max   bool // MAX(field): an onmax() handler
	// display is "percent" or "graph" for CAST(COUNT(*) AS PERCENT|GRAPH)
	// (field "hitcount") and CAST(SUM(x) AS PERCENT|GRAPH).
	display string
	typ     vtype
	label   string
	field   string // resolved field name, for GROUP BY
	pos     source.Pos
	end     source.Pos
}

// text is the item's key or value as the trigger writes it.
func (it *histItem) text() string { return it.x.String() }

// histogram lowers a statement without JOIN into one hist trigger.
func (p *planner) histogram(q *compiler.Query, u *Unit) {
	if q.View != nil {
		x := p.diags.Add(q.View.Pos, q.View.End, "CREATE VIEW names a synthetic event, which only a JOIN creates")
		x.Hint = "drop CREATE VIEW … AS for a histogram"
		return
	}
	side := p.r.sides[0]
	h := &Hist{System: side.ev.System, Event: side.ev.Name, Role: "histogram", Instance: p.opt.Instance, Pos: q.From.Name.Pos, End: q.From.Name.End}
	u.Start = h
	var items []*histItem
	labels := map[string]compiler.Expr{}
	keySize := 0
	keys := map[string]bool{}
	failed := false
	for _, it := range q.Select {
		hi := p.histItem(it.Expr)
		if hi == nil {
			failed = true
			continue
		}
		if it.Label != nil {
			hi.label = it.Label.Name
			labels[it.Label.Name] = it.Expr
		}
		items = append(items, hi)
		switch {
		case hi.count:
		case hi.max:
			p.addMax(h, hi)
		case hi.value:
			h.Vals = append(h.Vals, hi.x)
		default:
			text := hi.text()
			if keys[text] {
				p.diags.Add(hi.pos, hi.end, "duplicate key %q", text)
			}
			keys[text] = true
			h.Keys = append(h.Keys, hi.x)
			keySize += keySizeOf(hi)
		}
	}
	if len(items) == 0 {
		return
	}
	if len(h.Keys) == 0 && !failed {
		x := p.diags.Add(q.Pos, q.End, "a histogram needs at least one key: every item is a count or a sum")
		x.Hint = "select a field to group by, e.g. SELECT common_pid, COUNT(*) FROM …"
		return
	}
	if len(h.Keys) > maxKeys {
		it := itemsOf(items, false)[maxKeys]
		p.diags.Add(it.pos, it.end, "%d keys; the kernel allows at most %d", len(h.Keys), maxKeys)
	}
	if len(h.Vals) > maxVals {
		it := itemsOf(items, true)[maxVals]
		p.diags.Add(it.pos, it.end, "%d summed values; the kernel allows at most %d besides the count", len(h.Vals), maxVals)
	}
	if keySize > maxKeySize {
		p.diags.Add(q.Pos, q.End, "the keys take %d bytes; the kernel allows %d (a dynamic string key takes 256, a stack trace 128)", keySize, maxKeySize)
	}
	p.groupBy(q, items)
	if failed {
		// An ORDER BY of an item that failed would only repeat its error.
		p.quietly(func() { p.orderBy(q, h, items) })
	} else {
		p.orderBy(q, h, items)
	}
	h.Limit = p.limit(q)
	h.Size = p.opt.Size
	p.noHitcount(h, items)
	h.Columns = histColumns(items)
	if !hasAggregate(items) {
		// Without COUNT(*) or a sum, the kernel's hit count is still the
		// answer people look for: show it, most first unless ORDER BY
		// says otherwise.
		h.Columns = append(h.Columns, Column{Label: "count", Kind: ColCount})
		if len(q.OrderBy) == 0 {
			h.Sort = []string{"hitcount.descending"}
		}
	}
	h.Filter = p.where(q.Where, labels)[0]
	p.histHandler(q, h, labels)
}

// limit checks LIMIT: the number of rows shown, the first in the
// histogram's order. --run cuts the rows it reads; a printed script's
// closing lines show the first entries of the hist file, as the kernel
// keeps every entry.
func (p *planner) limit(q *compiler.Query) int {
	if q.Limit == nil {
		return 0
	}
	if q.Limit.Neg || q.Limit.Value == 0 || q.Limit.Value > 1<<20 {
		p.diags.Add(q.Limit.Pos, q.Limit.End, "LIMIT takes a row count from 1 to %d", 1<<20)
		return 0
	}
	return int(q.Limit.Value)
}

// histColumns describes the histogram's results in SELECT order.
func histColumns(items []*histItem) []Column {
	var cols []Column
	keys, vals := 0, 0
	for _, it := range items {
		c := Column{Label: it.label}
		switch {
		case it.count:
			c.Kind = ColCount
			if c.Label == "" {
				c.Label = "count"
			}
		case it.max:
			c.Kind = ColMax
			if c.Label == "" {
				c.Label = "max(" + it.field + ")"
			}
		case it.display != "" && it.field == "hitcount":
			c.Kind, c.Index = ColPercent, vals
			if it.display == "graph" {
				c.Kind = ColGraph
			}
			vals++
			if c.Label == "" {
				c.Label = "count(" + it.display + ")"
			}
		case it.display != "":
			c.Kind, c.Index = ColSumPercent, vals
			if it.display == "graph" {
				c.Kind = ColSumGraph
			}
			vals++
			if c.Label == "" {
				c.Label = "sum(" + it.field + ")(" + it.display + ")"
			}
		case it.value:
			c.Kind, c.Index = ColValue, vals
			vals++
			if c.Label == "" {
				c.Label = "sum(" + it.field + ")"
			}
		default:
			c.Kind, c.Index = ColKey, keys
			c.Signed = it.typ.Signed && it.typ.Kind == tracefs.KindInt
			keys++
			if c.Label == "" {
				c.Label = it.field
			}
		}
		cols = append(cols, c)
	}
	return cols
}

// hasAggregate reports whether an item is COUNT(*) or a summed value.
func hasAggregate(items []*histItem) bool {
	for _, it := range items {
		if it.count || it.value || it.max {
			return true
		}
	}
	return false
}

func itemsOf(items []*histItem, values bool) []*histItem {
	var out []*histItem
	for _, it := range items {
		if !it.count && !it.max && it.value == values {
			out = append(out, it)
		}
	}
	return out
}

func keySizeOf(it *histItem) int {
	if it.x.Kind == ExprStack || it.x.Mod == "stacktrace" {
		return 128
	}
	return keySize(it.typ)
}

// histItem lowers a histogram SELECT item.
func (p *planner) histItem(e compiler.Expr) *histItem {
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Field:
		r := p.r.field(x)
		if r == nil || !p.stackKey(r) {
			return nil
		}
		return &histItem{x: r.expr(), sort: r.name, typ: r.typ, field: r.name, pos: r.pos, end: r.end}
	case *compiler.Cast:
		if it, isDisplay := p.displayItem(x); isDisplay {
			return it
		}
		if isTypeCast(x) {
			errTypeCastInHistogram(p.diags, x)
			return nil
		}
		mod, counter, ok := castModifier(x)
		if !ok {
			p.diags.Add(x.TargetPos, x.TargetEnd, "unknown CAST type %q: use HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME, LOG2, BUCKETS=N or _COUNTER_", x.Target)
			return nil
		}
		f, isField := compiler.Unparen(x.X).(*compiler.Field)
		if !isField {
			pos, end := x.X.Span()
			p.diags.Add(pos, end, "CAST applies to a field")
			return nil
		}
		r := p.r.field(f)
		if r == nil {
			return nil
		}
		if counter {
			return p.valueItem(r, x.Pos, x.End)
		}
		if r.mod != "" && r.mod != "usecs" || r.mod == "usecs" && mod != "usecs" {
			p.diags.Add(x.TargetPos, x.TargetEnd, "%s already carries the modifier .%s; the kernel takes one modifier per field", r.name, r.mod)
			return nil
		}
		if !p.r.setModifier(r, mod, x.TargetPos, x.TargetEnd) || !p.stackKey(r) {
			return nil
		}
		return &histItem{x: r.expr(), sort: r.name, typ: r.typ, field: r.name, pos: x.Pos, end: x.End}
	case *compiler.Call:
		return p.callItem(x)
	case *compiler.Binary:
		if x.Op.IsArith() {
			pos, end := e.Span()
			return p.exprItem(x, false, pos, end)
		}
	}
	pos, end := e.Span()
	p.diags.Add(pos, end, "unsupported in a histogram SELECT: use fields, CAST(field AS modifier), COUNT(*) and SUM(field)")
	return nil
}

// stackKey gives a synthetic event's stack trace field (unsigned long[])
// the .stacktrace modifier the kernel needs to key a histogram by it and
// print its frames ("hist:keys=stack.stacktrace"). That arrived in Linux
// 6.3 with stack traces in synthetic events.
func (p *planner) stackKey(r *ref) bool {
	if r.pseudo || !r.isStack() || r.mod != "" && r.mod != "stacktrace" {
		return true
	}
	if !p.feat.StacktraceVars {
		p.diags.Add(r.pos, r.end, "%s", p.feat.Lacks("keying a histogram by the stack trace field "+r.name, "stacktrace-variables"))
		return false
	}
	r.mod = "stacktrace"
	return true
}

func (p *planner) valueItem(r *ref, pos, end source.Pos) *histItem {
	if !r.typ.isNumeric() {
		p.diags.Add(pos, end, "%s is a %s; only numbers can be summed", r.name, r.typ.Kind)
		return nil
	}
	if r.mod != "" && r.mod != "usecs" && r.mod != "hex" {
		p.diags.Add(pos, end, "a summed value cannot carry the .%s modifier (only .hex)", r.mod)
		return nil
	}
	return &histItem{x: r.expr(), sort: r.text(), value: true, typ: r.typ, field: r.name, pos: pos, end: end}
}

func (p *planner) callItem(c *compiler.Call) *histItem {
	switch c.Func {
	case "COUNT":
		if !c.Star || len(c.Args) > 0 {
			p.diags.Add(c.Pos, c.End, "only COUNT(*) is supported: the kernel counts events")
			return nil
		}
		return &histItem{x: &Expr{Kind: ExprHitcount}, sort: "hitcount", count: true, pos: c.Pos, end: c.End}
	case "SUM":
		if len(c.Args) != 1 {
			p.diags.Add(c.Pos, c.End, "SUM takes one field")
			return nil
		}
		if b, isArith := compiler.Unparen(c.Args[0]).(*compiler.Binary); isArith && b.Op.IsArith() {
			return p.exprItem(b, true, c.Pos, c.End)
		}
		f, ok := compiler.Unparen(c.Args[0]).(*compiler.Field)
		if !ok {
			pos, end := c.Args[0].Span()
			p.diags.Add(pos, end, "SUM takes a field or an expression of fields")
			return nil
		}
		r := p.r.field(f)
		if r == nil {
			return nil
		}
		return p.valueItem(r, c.Pos, c.End)
	case "MAX", "MIN":
		return p.maxItem(c)
	}
	x := p.diags.Add(c.Pos, c.End, "%s is not supported: the kernel keeps counts, sums and maxima only", c.Func)
	x.Hint = "use COUNT(*), SUM(field) or MAX(field)"
	return nil
}

// groupBy checks that GROUP BY, when given, names exactly the keys.
func (p *planner) groupBy(q *compiler.Query, items []*histItem) {
	if len(q.GroupBy) == 0 {
		return
	}
	keys := map[string]bool{}
	for _, it := range itemsOf(items, false) {
		keys[it.field] = true
		if it.label != "" {
			keys[it.label] = true
		}
	}
	grouped := map[string]bool{}
	for _, g := range q.GroupBy {
		f, ok := compiler.Unparen(g).(*compiler.Field)
		pos, end := g.Span()
		if !ok {
			p.diags.Add(pos, end, "GROUP BY takes the fields the histogram is keyed by")
			continue
		}
		name := f.Name.Parts[len(f.Name.Parts)-1].Name
		if len(f.Name.Parts) == 1 && keys[name] {
			grouped[name] = true
			continue
		}
		r := p.r.field(f)
		if r == nil {
			continue
		}
		if !keys[r.name] {
			x := p.diags.Add(pos, end, "GROUP BY %s: %s is not selected as a key", f.Name.String(), r.name)
			x.Hint = "the keys of a histogram are the selected fields that are not COUNT(*) or SUM()"
			continue
		}
		grouped[r.name] = true
	}
	for _, it := range itemsOf(items, false) {
		if !grouped[it.field] && (it.label == "" || !grouped[it.label]) {
			p.diags.Add(it.pos, it.end, "%s is a key but missing from GROUP BY", it.field)
		}
	}
}

// orderBy lowers ORDER BY into the trigger's sort= (applied when the
// histogram is read).
func (p *planner) orderBy(q *compiler.Query, h *Hist, items []*histItem) {
	if len(q.OrderBy) > 2 {
		pos, _ := q.OrderBy[2].Expr.Span()
		_, end := q.OrderBy[len(q.OrderBy)-1].Expr.Span()
		p.diags.Add(pos, end, "the kernel sorts by at most 2 fields")
		return
	}
	for _, o := range q.OrderBy {
		it := p.orderTarget(o.Expr, items)
		if it == nil {
			continue
		}
		if it.max {
			pos, end := o.Expr.Span()
			x := p.diags.Add(pos, end, "the kernel cannot sort by MAX: it sorts by keys, sums and the count, and the maximum is an onmax() value")
			x.Hint = "order by COUNT(*) or a SUM"
			continue
		}
		s := it.sort
		if o.Desc {
			s += ".descending"
		}
		h.Sort = append(h.Sort, s)
	}
}

func (p *planner) orderTarget(e compiler.Expr, items []*histItem) *histItem {
	pos, end := e.Span()
	e = compiler.Unparen(e)
	if f, ok := e.(*compiler.Field); ok && len(f.Name.Parts) == 1 {
		for _, it := range items {
			if it.label == f.Name.Parts[0].Name {
				return it
			}
		}
	}
	if c, ok := e.(*compiler.Call); ok && c.Func == "COUNT" && c.Star {
		return &histItem{x: &Expr{Kind: ExprHitcount}, sort: "hitcount", count: true}
	}
	var probe *histItem
	p.quietly(func() { probe = p.histItem(e) })
	if probe != nil {
		for _, it := range items {
			if it.x.Equal(probe.x) && it.value == probe.value && it.count == probe.count ||
				!it.value && !it.count && it.field == probe.field && probe.field != "" {
				return it
			}
		}
	}
	x := p.diags.Add(pos, end, "ORDER BY must name a selected item")
	x.Hint = "order by a key, a SUM, COUNT(*) or an AS label"
	return nil
}
