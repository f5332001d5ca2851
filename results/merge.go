package results

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Merge combines the reports of one query run on several targets into
// one, exactly where the data allows it. The statements are matched in
// order, and within a statement the rows by their key cells: a key seen on
// several targets becomes one row, a key seen on one is kept as it is.
//
//   - Counts, sums (SUM), the kernel's Totals (hits, entries, dropped),
//     the events with a negative latency, Streamed and Lost add up. The
//     merged entries are the targets' map entries added, not the rows.
//   - A JOIN's latency: its sum (so its average) and its log2
//     distribution add, per row and over all rows; its maximum is the
//     largest, exact unless every target's largest was only a bound (an
//     interval without a new maximum). The percentiles are computed from
//     the merged distribution, as for one target.
//   - MAX(x) and -m: the largest; the fields save() kept go with it (those
//     of the target whose maximum it is). The kernel has no MIN or AVG (a
//     JOIN's average is its sum over its count, recomputed).
//   - last(x) of -c (onchange) and its saved fields: no clock orders the
//     targets' last values, so a row that two targets saw with different
//     values shows "?" (and the result says so in its Notes).
//   - The count as a percentage or a bar: recomputed from the merged
//     counts and hits, as the kernel computes them. Without counts
//     (nohitcount), each target's percentage weighs by its hits: the
//     merged one is then approximate and shown with "~". A sum's share
//     or bar is of each target's own total, which the results do not
//     carry: merged, it shows "?" (and the Notes say so).
//   - LIMIT: the merged rows are sorted as the query orders them and cut
//     to the limit; when a target showed as many rows as the limit, it may
//     have cut a row that another target shows, whose counts then lack
//     that target's events: a note says so.
//
// Reports of different queries (other statements, columns or keys) are
// refused with an error naming what differs. Reports of one query carry
// different synthetic event names when each run named them after its
// process id ("synthetic/wakeup_4242"): the merged title drops the id.
func Merge(reps []*Report) (*Report, error) {
	names := make([]string, len(reps))
	for i := range reps {
		names[i] = "report " + strconv.Itoa(i+1)
	}
	return mergeNamed(names, reps)
}

// MergeLabelled merges the reports of the targets that answered (see
// [Merge]); errors name the targets by their labels.
func MergeLabelled(targets []Labelled) (*Report, error) {
	var names []string
	var reps []*Report
	for _, t := range targets {
		if t.Err == nil && t.Report != nil {
			names, reps = append(names, t.Label), append(reps, t.Report)
		}
	}
	return mergeNamed(names, reps)
}

func mergeNamed(names []string, reps []*Report) (*Report, error) {
	if len(reps) == 0 {
		return nil, errors.New("no results to merge")
	}
	for i, r := range reps {
		if r == nil {
			return nil, fmt.Errorf("%s: no results", names[i])
		}
	}
	for i := 1; i < len(reps); i++ {
		if err := sameQuery(reps[0], reps[i]); err != nil {
			return nil, fmt.Errorf("%s and %s ran different queries: %v", names[0], names[i], err)
		}
	}
	out := &Report{}
	for j := range reps[0].Results {
		rs := make([]*Result, len(reps))
		for i, r := range reps {
			rs[i] = r.Results[j]
		}
		out.Results = append(out.Results, mergeResults(rs))
	}
	for _, r := range reps {
		out.Lost += r.Lost
		if r.Streamed == nil {
			continue
		}
		if out.Streamed == nil {
			out.Streamed = map[string]int{}
		}
		for k, n := range r.Streamed {
			out.Streamed[streamName(reps[0].Streamed, k)] += n
		}
	}
	return out, nil
}

// runSuffix is the process id a run adds to the names it derives.
var runSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`_[0-9]+$`) })

// streamName is the name in first of a synthetic event named k by another
// run: the same but for the run's id.
func streamName(first map[string]int, k string) string {
	if _, ok := first[k]; ok {
		return k
	}
	base := runSuffix().ReplaceAllString(k, "")
	for f := range first {
		if runSuffix().ReplaceAllString(f, "") == base {
			return f
		}
	}
	return k
}

// sameTitle reports whether two results' titles name the same event, and
// returns the merged title.
func sameTitle(a, b string) (string, bool) {
	if a == b {
		return a, true
	}
	sa, sb := runSuffix().ReplaceAllString(a, ""), runSuffix().ReplaceAllString(b, "")
	return sa, sa == sb && sa != a && sb != b
}

// kindNames name the kinds of columns, in messages and in JSON.
var kindNames = map[planner.ColumnKind]string{
	planner.ColKey: "key", planner.ColValue: "sum", planner.ColCount: "count",
	planner.ColLatency: "latency", planner.ColMax: "max", planner.ColChanged: "last",
	planner.ColSaved: "saved", planner.ColPercent: "percent", planner.ColGraph: "graph",
	planner.ColSumPercent: "sum-percent", planner.ColSumGraph: "sum-graph",
}

// shape describes a result's columns: "comm (key), count (count), lat
// (latency, us)".
func shape(res *Result) string {
	var parts []string
	for _, c := range res.Hist.Columns {
		s := c.Label + " (" + kindNames[c.Kind]
		if m := keyModifier(res.Hist, c); m == "buckets" {
			s += " .buckets=" + strconv.FormatUint(res.Hist.Keys[c.Index].Buckets, 10)
		} else if m != "" {
			s += " ." + m
		}
		if c.Unit != "" {
			s += ", " + c.Unit
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}

// keyModifier is the modifier of a key column's field (log2, hex,
// buckets, stacktrace), which says what its values are.
func keyModifier(h *planner.Hist, c planner.Column) string {
	if c.Kind != planner.ColKey || c.Index >= len(h.Keys) {
		return ""
	}
	k := h.Keys[c.Index]
	switch {
	case isStackKey(k):
		return "stacktrace"
	case k.Kind == planner.ExprBinary:
		return ""
	}
	return k.Mod
}

// sameQuery reports how two reports differ in what they show.
func sameQuery(a, b *Report) error {
	if len(a.Results) != len(b.Results) {
		return fmt.Errorf("%d statements against %d", len(a.Results), len(b.Results))
	}
	for i, x := range a.Results {
		y := b.Results[i]
		if _, ok := sameTitle(x.Title, y.Title); !ok {
			return fmt.Errorf("statement %d reads %s against %s", i+1, x.Title, y.Title)
		}
		if sx, sy := shape(x), shape(y); sx != sy {
			return fmt.Errorf("statement %d (%s) shows %s against %s", i+1, x.Title, sx, sy)
		}
		if (x.Read == nil) != (y.Read == nil) {
			return fmt.Errorf("statement %d (%s): read on one, not on the other", i+1, x.Title)
		}
	}
	return nil
}

// rowAcc is a merged row being built.
type rowAcc struct {
	row     Row
	targets int     // how many targets had the row
	est     float64 // its count estimated from percentages (nohitcount)
	// conflict is set when the targets' last values (onchange) differ.
	conflict bool
}

// mergeResults merges one statement's results of several targets.
func mergeResults(rs []*Result) *Result {
	base := rs[0]
	h := base.Hist
	m := &Result{Unit: base.Unit, Hist: h, Title: base.Title, Latency: base.Latency}
	var tot tracefs.HistTotals
	dist := map[int]uint64{}
	info := ""
	for _, r := range rs {
		m.Title, _ = sameTitle(m.Title, r.Title)
		if r.Read != nil {
			tot.Hits += r.Read.Totals.Hits
			tot.Entries += r.Read.Totals.Entries
			tot.Dropped += r.Read.Totals.Dropped
			tot.Failed += r.Read.Totals.Failed
			if tot.FailedWhy == "" {
				tot.FailedWhy = r.Read.Totals.FailedWhy
			}
			info = r.Read.TriggerInfo
		}
		m.Negative += r.Negative
		m.Lost += r.Lost
		m.Engine = mergeEngine(m.Engine, r.Engine, r == rs[0])
		for _, b := range r.Distribution {
			dist[bucketExp(b)] += b.Count
		}
	}
	m.Read = &tracefs.Histogram{TriggerInfo: info, Totals: tot}
	if m.Latency != nil {
		m.Distribution = buckets(dist)
	}
	if len(rs) == 1 {
		m.Rows = make([]Row, len(base.Rows))
		for i, r := range base.Rows {
			m.Rows[i] = cloneRow(r)
		}
		return m
	}
	byKey := map[string]*rowAcc{}
	var accs []*rowAcc
	cut := false
	for _, r := range rs {
		if h.Limit > 0 && len(r.Rows) >= h.Limit {
			cut = true
		}
		hits := uint64(0)
		if r.Read != nil {
			hits = r.Read.Totals.Hits
		}
		for _, row := range r.Rows {
			k := rowKey(h, row)
			a := byKey[k]
			if a == nil {
				a = &rowAcc{row: cloneRow(row), targets: 1, est: estimate(h, row, hits)}
				byKey[k] = a
				accs = append(accs, a)
				continue
			}
			a.add(h, row, hits)
		}
	}
	for _, a := range accs {
		m.Rows = append(m.Rows, a.row)
	}
	m.recompute(accs, tot.Hits)
	m.sortMerged(resultOrder(base), accs)
	if h.Limit > 0 && len(m.Rows) > h.Limit {
		m.Rows = m.Rows[:h.Limit]
	}
	m.noteMerge(accs, cut)
	return m
}

// mergeEngine names the engines of merged results: the one engine they
// share, or those they have in the order bpf, kernel, stream, awk
// ("kernel+awk").
func mergeEngine(so, e string, first bool) string {
	if e == "" {
		e = EngineKernel
	}
	if first || so == e {
		return e
	}
	has := map[string]bool{e: true}
	for _, x := range strings.Split(so, "+") {
		has[x] = true
	}
	var out []string
	for _, x := range []string{EngineBPF, EngineKernel, EngineStream, EngineAwk} {
		if has[x] {
			out = append(out, x)
			delete(has, x)
		}
	}
	for _, x := range slices.Sorted(maps.Keys(has)) {
		out = append(out, x)
	}
	return strings.Join(out, "+")
}

// noteMerge adds to the merged result's Notes what it cannot show exactly.
func (m *Result) noteMerge(accs []*rowAcc, cut bool) {
	h := m.Hist
	for _, a := range accs {
		if a.conflict {
			for _, c := range h.Columns {
				if c.Kind == planner.ColChanged {
					m.Notes = append(m.Notes, c.Label+" is each target's own last value, and no clock orders the targets: a row that targets saw with different last values shows ?")
					break
				}
			}
			break
		}
	}
	if !hasCounts(h) {
		for _, c := range h.Columns {
			if c.Kind == planner.ColPercent {
				m.Notes = append(m.Notes, c.Label+" is estimated from each target's percentage and hits (the counts are not shown): ~ marks it")
				break
			}
		}
	}
	for _, c := range h.Columns {
		if c.Kind == planner.ColSumPercent || c.Kind == planner.ColSumGraph {
			m.Notes = append(m.Notes, c.Label+" is a share of each target's own total of the sum, which the results do not carry: merged, it shows ?")
		}
	}
	if cut {
		m.Notes = append(m.Notes, fmt.Sprintf("LIMIT %d: a target that shows %d rows may have cut a row that another shows, which then lacks its events; the rows every target shows are exact", h.Limit, h.Limit))
	}
}

// hasCounts reports whether a result's rows carry their counts: the kernel
// prints them unless nohitcount hides them.
func hasCounts(h *planner.Hist) bool { return !h.NoHitcount }

// estimate is a row's count as its first percentage of hits tells it,
// when the counts are hidden.
func estimate(h *planner.Hist, row Row, hits uint64) float64 {
	if hasCounts(h) {
		return float64(row.Count)
	}
	for j, c := range h.Columns {
		if c.Kind == planner.ColPercent {
			if p, err := strconv.ParseFloat(strings.TrimPrefix(row.Cells[j].Text, "~"), 64); err == nil {
				return p * float64(hits) / 100
			}
		}
	}
	return 0
}

// bucketExp is the exponent of a log2 bucket.
func bucketExp(b Bucket) int {
	if b.High <= 1 {
		return 0
	}
	return bits.Len64(b.High) - 1
}

// rowKey identifies a row by its key cells: a number by its value (a
// negative one by its sign too), a stack by its frames, the rest by their
// text (a symbol by its name, and with its offset without its address:
// addresses differ between machines).
func rowKey(h *planner.Hist, r Row) string {
	var b strings.Builder
	for j, c := range h.Columns {
		if c.Kind != planner.ColKey || j >= len(r.Cells) {
			continue
		}
		cl := r.Cells[j]
		switch {
		case cl.Frames != nil:
			b.WriteString("s" + strings.Join(cl.Frames, "\n"))
		case cl.IsNum && cl.Neg:
			b.WriteString("-" + strconv.FormatUint(cl.Num, 10))
		case cl.IsNum:
			b.WriteString("n" + strconv.FormatUint(cl.Num, 10))
		case keyModifier(h, c) == "sym-offset":
			b.WriteString("t" + withoutAddress(cl.Text))
		default:
			b.WriteString("t" + cl.Text)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// withoutAddress is a .sym-offset key without its address:
// "[ffffffff8a0b1c00] foo+0x10/0x20" is "foo+0x10/0x20".
func withoutAddress(s string) string {
	if addr, sym, ok := strings.Cut(s, "] "); ok && strings.HasPrefix(addr, "[") {
		return strings.TrimSpace(sym)
	}
	return s
}

// cloneRow copies a row, so that merging leaves the targets' rows alone.
func cloneRow(r Row) Row {
	r.Cells = append([]Cell(nil), r.Cells...)
	if r.Stats != nil {
		s := *r.Stats
		s.Dist = make(map[int]uint64, len(r.Stats.Dist))
		for e, n := range r.Stats.Dist {
			s.Dist[e] = n
		}
		r.Stats = &s
	}
	return r
}

// add merges another target's row of the same key into a.
func (a *rowAcc) add(h *planner.Hist, r Row, hits uint64) {
	a.targets++
	a.est += estimate(h, r, hits)
	a.row.Count += r.Count
	savedFollow := false // the saved fields follow the row whose max wins
	for j, c := range h.Columns {
		if j >= len(r.Cells) || j >= len(a.row.Cells) {
			break
		}
		got, x := &a.row.Cells[j], r.Cells[j]
		switch c.Kind {
		case planner.ColKey:
			if got.Text != x.Text {
				// .sym-offset: one symbol at other addresses.
				got.Text = withoutAddress(got.Text)
			}
		case planner.ColValue:
			if got.IsNum && x.IsNum {
				got.Num += x.Num
				got.Text = strconv.FormatUint(got.Num, 10)
			} else {
				*got = Cell{Text: "?"}
			}
		case planner.ColMax:
			savedFollow = mergeMax(got, x)
		case planner.ColChanged:
			if got.Text != x.Text {
				*got = Cell{Text: "?"}
				a.conflict = true
			}
		case planner.ColLatency:
			mergeStats(a.row.Stats, r.Stats)
		}
	}
	for j, c := range h.Columns {
		if c.Kind != planner.ColSaved || j >= len(r.Cells) || j >= len(a.row.Cells) {
			continue
		}
		switch {
		case hasChanged(h):
			if a.row.Cells[j].Text != r.Cells[j].Text || a.conflict {
				a.row.Cells[j] = Cell{Text: "?"}
			}
		case savedFollow:
			a.row.Cells[j] = r.Cells[j]
		}
	}
}

func hasChanged(h *planner.Hist) bool {
	for _, c := range h.Columns {
		if c.Kind == planner.ColChanged {
			return true
		}
	}
	return false
}

// mergeMax keeps in got the larger of two MAX cells (exact: the number;
// a bound: "<=N"; unknown: "?"), and reports whether x's won.
func mergeMax(got *Cell, x Cell) bool {
	if got.Text == "?" || x.Text == "?" {
		*got = Cell{Text: "?"}
		return false
	}
	switch {
	case x.Num > got.Num, x.Num == got.Num && x.IsNum && !got.IsNum:
		*got = x
		return true
	}
	return false
}

// mergeStats adds a row's latency statistics to s.
func mergeStats(s, x *LatencyStats) {
	if s == nil || x == nil {
		return
	}
	s.Sum += x.Sum
	switch {
	case x.Max > s.Max:
		s.Max, s.MaxBound = x.Max, x.MaxBound
	case x.Max == s.Max && !x.MaxBound:
		s.MaxBound = false
	}
	for e, n := range x.Dist {
		s.Dist[e] += n
	}
}

// graphWidth is the width of the kernel's hitcount.graph bar.
const graphWidth = 20

// recompute sets the cells that are shares of the whole: the count as a
// percentage of the hits, as a bar against the largest count.
func (m *Result) recompute(accs []*rowAcc, hits uint64) {
	h := m.Hist
	var most float64
	for _, a := range accs {
		most = max(most, a.est)
	}
	for i := range m.Rows {
		a := accs[i]
		for j, c := range h.Columns {
			if j >= len(m.Rows[i].Cells) {
				break
			}
			switch c.Kind {
			case planner.ColPercent:
				m.Rows[i].Cells[j] = percentCell(a, hasCounts(h), hits)
			case planner.ColGraph:
				n := 0
				if most > 0 {
					n = int(a.est * graphWidth / most)
				}
				m.Rows[i].Cells[j] = Cell{Text: strings.Repeat("#", min(n, graphWidth))}
			case planner.ColSumPercent, planner.ColSumGraph:
				m.Rows[i].Cells[j] = Cell{Text: "?"}
			}
		}
	}
}

// percentCell is a merged row's count as a percentage of the hits: as the
// kernel computes it (truncated to hundredths) from the counts, else
// estimated, with "~".
func percentCell(a *rowAcc, exact bool, hits uint64) Cell {
	if hits == 0 {
		return Cell{Text: "0.00"}
	}
	if exact {
		hi, lo := bits.Mul64(a.row.Count, 10000)
		if hi == 0 {
			pc := lo / hits
			return Cell{Text: fmt.Sprintf("%d.%02d", pc/100, pc%100)}
		}
		return Cell{Text: strconv.FormatFloat(float64(a.row.Count)*100/float64(hits), 'f', 2, 64)}
	}
	return Cell{Text: "~" + strconv.FormatFloat(a.est*100/float64(hits), 'f', 2, 64)}
}

// sortMerged orders merged rows as [Result.sortRows] does, and by their
// counts where the columns do not show them (the kernel's sort=hitcount
// of a histogram without COUNT(*)); accs are the rows' accumulators.
func (m *Result) sortMerged(order []planner.ResultOrder, accs []*rowAcc) {
	idx := make([]int, len(m.Rows))
	for i := range idx {
		idx[i] = i
	}
	cmpCol := func(i, j int, label string) int {
		a, b := &m.Rows[i], &m.Rows[j]
		for k, c := range m.Hist.Columns {
			if c.Label != label && !(label == "count" && c.Kind == planner.ColCount) {
				continue
			}
			if c.Kind == planner.ColLatency {
				return cmp.Compare(a.Avg(), b.Avg())
			}
			return compareCells(a.At(c, k), b.At(c, k))
		}
		if label == "count" {
			return cmp.Compare(accs[i].est, accs[j].est)
		}
		return 0
	}
	sort.SliceStable(idx, func(x, y int) bool {
		i, j := idx[x], idx[y]
		for _, o := range order {
			c := cmpCol(i, j, o.Label)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		a, b := m.Rows[i].Cells, m.Rows[j].Cells
		for k := range a {
			if c := compareCells(a[k], b[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	rows := make([]Row, len(idx))
	for x, i := range idx {
		rows[x] = m.Rows[i]
	}
	m.Rows = rows
}

// resultOrder is how a result's rows are ordered, as column labels
// ("count" for the count): the histogram's sort= fields, a JOIN's ORDER
// BY, else most events first (NewResult sorts a histogram without
// sort= so).
func resultOrder(res *Result) []planner.ResultOrder {
	h, u := res.Hist, res.Unit
	if len(h.Sort) > 0 {
		var out []planner.ResultOrder
		for _, spec := range h.Sort {
			name, dir, _ := strings.Cut(spec, ".")
			if label, ok := sortLabel(h, name); ok {
				out = append(out, planner.ResultOrder{Label: label, Desc: dir == "descending"})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if u != nil && len(u.Order) > 0 {
		return u.Order
	}
	return []planner.ResultOrder{{Label: "count", Desc: true}}
}

// sortLabel is the label of the column a sort= field names.
func sortLabel(h *planner.Hist, name string) (string, bool) {
	if name == "hitcount" {
		return "count", true
	}
	// base is the name sort= gives a key or value: its field without
	// the modifier.
	base := func(x *planner.Expr) string {
		switch x.Kind {
		case planner.ExprField, planner.ExprCPU, planner.ExprStack:
			return x.Name
		case planner.ExprTimestamp:
			return "common_timestamp"
		case planner.ExprHitcount:
			return "hitcount"
		}
		return x.String()
	}
	for _, c := range h.Columns {
		switch {
		case c.Kind == planner.ColKey && c.Index < len(h.Keys) && base(h.Keys[c.Index]) == name,
			c.Kind == planner.ColValue && c.Index < len(h.Vals) && base(h.Vals[c.Index]) == name:
			return c.Label, true
		}
	}
	return "", false
}
