package planner

import (
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
)

// DefaultResultsSize is the size= of a JOIN's results histogram. Its
// entries are the rows times the latency's log2 buckets (at most 64, a few
// dozen in practice), so it needs more entries than the kernel's default
// 2048 for a few hundred rows.
const DefaultResultsSize = 8192

// negativeFrom is 2^63: a u64 latency at or above it is a negative one.
const negativeFrom = 1 << 63

// results plans what --run reads for a JOIN: a histogram on the synthetic
// event keyed by the fields that are not the latency and by the latency's
// log2 bucket, summing the latency and tracking its maximum per entry
// (onmax), and the order of the rows. Its entries grow with the rows the
// user asked for, not with the number of distinct latencies: count, sum,
// average and maximum are exact, the distribution (and so the
// percentiles) is by power of two. Without --run, the clauses that only
// make sense for read results are refused.
func (p *planner) results(q *compiler.Query, u *Unit) {
	if len(q.GroupBy) > 0 {
		pos, _ := q.GroupBy[0].Span()
		_, end := q.GroupBy[len(q.GroupBy)-1].Span()
		x := p.diags.Add(pos, end, "GROUP BY does not apply to a JOIN: its results are grouped by the selected fields that are not the latency")
		x.Hint = "drop GROUP BY, or aggregate a CREATE VIEW with a histogram query"
	}
	if !p.opt.Run {
		if len(q.OrderBy) > 0 {
			pos, _ := q.OrderBy[0].Expr.Span()
			_, end := q.OrderBy[len(q.OrderBy)-1].Expr.Span()
			x := p.diags.Add(pos, end, "ORDER BY on a JOIN applies when the results are read")
			x.Hint = "run the query with --run (-r), which shows the synthetic event's results sorted this way"
		}
		if q.Limit != nil {
			x := p.diags.Add(q.Limit.Pos, q.Limit.End, "LIMIT on a JOIN applies when its results are read: a printed JOIN's answer is each event in the trace, which has no rows to keep the first of")
			x.Hint = "run the query with --run (-r), which shows the first rows of its results; or count it with a histogram (COUNT(*) and GROUP BY), whose printed script shows the first entries"
		}
		return
	}
	s := u.Synth
	inst := p.opt.Instance
	if p.opt.ResultsInstance != "" {
		inst = p.opt.ResultsInstance
	}
	h := &Hist{System: "synthetic", Event: s.Name, Role: "results", Instance: inst, Size: p.opt.Size, Pos: s.Pos, End: s.End}
	if h.Size == 0 {
		h.Size = DefaultResultsSize
	}
	var lat *SynthField
	for _, f := range s.Fields {
		if f.Unit != "" {
			lat = f
			break
		}
	}
	room := maxKeys
	if lat != nil {
		room--
	}
	stacks := 0
	for _, f := range s.Fields {
		if f == lat {
			continue
		}
		if len(h.Keys) == room {
			p.note("results: %s is not shown: a histogram has at most %d keys", f.Name, maxKeys)
			continue
		}
		key := &Expr{Kind: ExprField, Name: f.Name}
		if f.Array == "[]" && f.Type != "char" {
			// A stack trace: the kernel keys a histogram by it, and
			// prints its frames, with .stacktrace. One fits in the key
			// (128 bytes of the 384).
			if stacks++; stacks > 1 {
				p.note("results: %s is not shown: the results are keyed by one stack trace", f.Name)
				continue
			}
			key.Mod = "stacktrace"
		}
		signed := f.Array == "" && f.Type != "" && !(f.Type[0] == 'u' || f.Type == "gfp_t")
		h.Columns = append(h.Columns, Column{Label: f.Name, Kind: ColKey, Index: len(h.Keys), Signed: signed})
		h.Keys = append(h.Keys, key)
	}
	h.Columns = append(h.Columns, Column{Label: "count", Kind: ColCount})
	if lat != nil {
		h.Columns = append(h.Columns, Column{Label: lat.Name, Kind: ColLatency, Index: len(h.Keys), Unit: lat.Unit})
		h.Keys = append(h.Keys, &Expr{Kind: ExprField, Name: lat.Name, Mod: "log2"})
		h.Vals = append(h.Vals, &Expr{Kind: ExprField, Name: lat.Name})
		// The variable's name is unique on the synthetic event, whatever
		// other triggers the script puts on it.
		v := newVarNames(synthEvent(s, nil, 8)).take(s.Name + "_max")
		h.Vars = append(h.Vars, Var{Name: v, Expr: &Expr{Kind: ExprField, Name: lat.Name}})
		h.Actions = append(h.Actions, &Action{Handler: OnMax, Track: v, Kind: ActSave, Params: []*Expr{{Kind: ExprField, Name: lat.Name}}})
		// A negative latency (the end stamped before the start: clock skew
		// between CPUs) wraps around as a u64, and its log2 bucket is
		// meaningless: such events are kept out and counted apart.
		h.Filter = &Filter{Op: FilterPred, Field: lat.Name, Cmp: "<", Num: negativeFrom}
		cpu := "common_cpu"
		if !p.feat.CommonCPU {
			cpu = "cpu"
		}
		u.Negatives = &Hist{System: "synthetic", Event: s.Name, Role: "negatives", Instance: inst,
			Keys: []*Expr{{Kind: ExprCPU, Name: cpu}}, Filter: &Filter{Op: FilterPred, Field: lat.Name, Cmp: ">=", Num: negativeFrom}, Pos: s.Pos, End: s.End}
	}
	u.Results = h
	for _, o := range q.OrderBy {
		label, ok := p.resultLabel(o.Expr, h)
		if ok {
			u.Order = append(u.Order, ResultOrder{Label: label, Desc: o.Desc})
		}
	}
	h.Limit = p.limit(q)
}

// resultLabel resolves an ORDER BY item of a JOIN to a results column: a
// synthetic field's name or COUNT(*).
func (p *planner) resultLabel(e compiler.Expr, h *Hist) (string, bool) {
	pos, end := e.Span()
	switch x := compiler.Unparen(e).(type) {
	case *compiler.Call:
		if x.Func == "COUNT" && x.Star {
			return "count", true
		}
	case *compiler.Field:
		if len(x.Name.Parts) == 1 {
			for _, c := range h.Columns {
				if c.Kind != ColCount && c.Label == x.Name.Parts[0].Name {
					return c.Label, true
				}
			}
		}
	}
	var names []string
	for _, c := range h.Columns {
		if c.Kind != ColCount {
			names = append(names, c.Label)
		}
	}
	x := p.diags.Add(pos, end, "ORDER BY on a JOIN names a result column: COUNT(*) or one of %s", strings.Join(names, ", "))
	x.Hint = "the results are the synthetic event's fields; the latency sorts by its average"
	return "", false
}
