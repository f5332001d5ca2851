package live

import (
	"cmp"
	"sort"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/tracefs"
)

// Interval is what one interval of a run collected, alone: its rows count
// the events between its start and its end.
type Interval struct {
	N          int           // 1 for the first
	Start, End time.Duration // since the collection began
	// Partial is set on the last interval when the collection ended
	// before a whole Interval.
	Partial bool
	Results []*Result
}

// intervals reads the results at each tick and hands the difference with
// the reading before to OnInterval. Counts, sums and the latency's
// distribution of an interval are exact (the difference of two readings
// of the same entries); its maximum is exact when a new maximum arrived
// in it, else it is bounded by the entry's bucket and the maximum so far
// (Row.Stats.MaxBound).
type intervals struct {
	r     *runState
	ticks <-chan time.Time
	stop  func()
	began time.Time
	n     int
	prev  *snapshot
}

func (r *runState) newIntervals() *intervals {
	iv := &intervals{r: r, stop: func() {}, began: time.Now()}
	if r.opt.Interval <= 0 || (r.opt.OnInterval == nil && r.opt.OnTotal == nil) {
		return iv
	}
	tick := r.opt.Tick
	if tick == nil {
		tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	iv.ticks, iv.stop = tick(r.opt.Interval)
	return iv
}

// take reads the results now and reports the interval that ends.
func (iv *intervals) take(partial bool) error {
	iv.r.eng.sync()
	snap, err := iv.r.snapshot()
	if err != nil {
		return err
	}
	iv.report(snap, partial)
	return nil
}

// last reports the interval that the end of the collection cut short,
// from the final reading.
func (iv *intervals) last(final []*Result) {
	snap := &snapshot{}
	for _, res := range final {
		snap.units = append(snap.units, res.Unit)
		snap.hists = append(snap.hists, res.Hist)
		snap.got = append(snap.got, res.Read)
		snap.neg = append(snap.neg, res.Negative)
	}
	iv.report(snap, true)
}

func (iv *intervals) report(snap *snapshot, partial bool) {
	iv.n++
	start := time.Duration(iv.n-1) * iv.r.opt.Interval
	end := time.Duration(iv.n) * iv.r.opt.Interval
	if partial {
		end = max(start, time.Since(iv.began).Round(time.Millisecond))
	}
	delta := snap
	if iv.prev != nil {
		delta = snap.minus(iv.prev)
	}
	iv.prev = snap
	lost := iv.r.eng.lost() // so far; final at the end
	engine := func(results []*Result) []*Result {
		if name := iv.r.eng.name(); name != EngineKernel {
			for _, res := range results {
				res.Engine, res.EngineReason, res.Lost = name, iv.r.opt.EngineReason, lost
			}
		}
		return results
	}
	if iv.r.opt.OnInterval != nil {
		iv.r.opt.OnInterval(&Interval{N: iv.n, Start: start, End: end, Partial: partial, Results: engine(delta.results())})
	}
	if iv.r.opt.OnTotal != nil {
		iv.r.opt.OnTotal(engine(snap.results()))
	}
}

// minus returns what s counted since prev: each entry's counts and sums
// less the same entry's in prev (entries prev did not have are new).
func (s *snapshot) minus(prev *snapshot) *snapshot {
	out := &snapshot{units: s.units, hists: s.hists}
	for i, got := range s.got {
		var before *tracefs.Histogram
		var neg uint64
		if i < len(prev.got) {
			before, neg = prev.got[i], prev.neg[i]
		}
		out.got = append(out.got, histMinus(got, before))
		out.neg = append(out.neg, s.neg[i]-min(neg, s.neg[i]))
	}
	return out
}

// histMinus subtracts a histogram's earlier reading from a later one.
func histMinus(h, prev *tracefs.Histogram) *tracefs.Histogram {
	old := map[string]*tracefs.HistEntry{}
	if prev != nil {
		for _, e := range mergeDuplicates(prev.Entries) {
			old[entryKey(e)] = e
		}
	}
	out := &tracefs.Histogram{TriggerInfo: h.TriggerInfo, Paused: h.Paused}
	for _, e := range mergeDuplicates(h.Entries) {
		p := old[entryKey(e)]
		d := &tracefs.HistEntry{Keys: e.Keys}
		for j, v := range e.Values {
			if p != nil && j < len(p.Values) {
				v.Num -= min(p.Values[j].Num, v.Num)
			}
			d.Values = append(d.Values, v)
		}
		if len(d.Values) > 0 && d.Values[0].Num == 0 {
			continue // no event in this interval
		}
		for j, t := range e.Tracked {
			if p != nil && j < len(p.Tracked) && p.Tracked[j].Value == t.Value && t.Handler == "max" {
				// No new maximum in the interval: its events stayed at or
				// below the earlier one.
				t.Handler = "max<="
			}
			d.Tracked = append(d.Tracked, t)
		}
		out.Entries = append(out.Entries, d)
	}
	out.Totals = h.Totals
	if prev != nil {
		out.Totals.Hits -= min(prev.Totals.Hits, h.Totals.Hits)
		out.Totals.Dropped -= min(prev.Totals.Dropped, h.Totals.Dropped)
	}
	out.Totals.Entries = uint64(len(out.Entries))
	// An interval's counts are differences: order them as the trigger
	// orders its own.
	sortEntries(out.Entries, sortOf(h.TriggerInfo))
	return out
}

// sortOf reads the sort= fields of a trigger listing.
func sortOf(info string) []string {
	info, _, _ = strings.Cut(info, " if ")
	for _, seg := range strings.Split(info, ":") {
		if list, ok := strings.CutPrefix(seg, "sort="); ok {
			return strings.Split(list, ",")
		}
	}
	return nil
}

// mergeDuplicates folds entries with the same keys into one: counts and
// sums add up, a tracked maximum is the larger. 7.2's hist files list some
// keys twice (two map elements inserted for one key by two CPUs at once,
// which older kernels merged when sorting): subtracting a reading from
// another entry by entry then paired a duplicate with the wrong one, and
// the intervals of a JOIN counted fewer events than the total (1869 of
// 1971 in the suite).
func mergeDuplicates(entries []*tracefs.HistEntry) []*tracefs.HistEntry {
	out, _ := foldTwins(entries)
	return out
}

// foldTwins is mergeDuplicates, also saying whether it folded any.
func foldTwins(entries []*tracefs.HistEntry) ([]*tracefs.HistEntry, bool) {
	folded := false
	seen := make(map[string]*tracefs.HistEntry, len(entries))
	out := entries[:0:0]
	for _, e := range entries {
		k := entryKey(e)
		m, ok := seen[k]
		if !ok {
			c := &tracefs.HistEntry{Keys: e.Keys, Values: append([]tracefs.HistValue(nil), e.Values...), Tracked: append([]tracefs.HistTracked(nil), e.Tracked...)}
			seen[k] = c
			out = append(out, c)
			continue
		}
		folded = true
		for j := range m.Values {
			if j < len(e.Values) {
				m.Values[j].Num += e.Values[j].Num
			}
		}
		for j := range m.Tracked {
			if j < len(e.Tracked) && e.Tracked[j].Handler == "max" && e.Tracked[j].Value > m.Tracked[j].Value {
				m.Tracked[j] = e.Tracked[j]
			}
		}
	}
	return out, folded
}

// entryKey identifies an entry by its keys as printed.
func entryKey(e *tracefs.HistEntry) string {
	var b strings.Builder
	for _, k := range e.Keys {
		b.WriteString(k.Raw)
		b.WriteByte(0)
	}
	return b.String()
}

// sortEntries puts entries in the order of a trigger's sort= fields
// ("hitcount.descending", "n", "lat.ascending"), as the kernel printed
// them: needed after twins were folded, which changes counts.
func sortEntries(entries []*tracefs.HistEntry, sortSpec []string) {
	value := func(e *tracefs.HistEntry, name string) (uint64, string, bool) {
		for _, v := range e.Values {
			if v.Name == name {
				return v.Num, "", true
			}
		}
		for _, k := range e.Keys {
			if k.Name == name {
				return k.Num, k.Raw, true
			}
		}
		return 0, "", false
	}
	if len(sortSpec) == 0 {
		sortSpec = []string{"hitcount"}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		for _, spec := range sortSpec {
			name, dir, _ := strings.Cut(spec, ".")
			x, xs, ok1 := value(entries[i], name)
			y, ys, ok2 := value(entries[j], name)
			if !ok1 || !ok2 {
				continue
			}
			c := cmp.Compare(x, y)
			if c == 0 {
				c = strings.Compare(xs, ys)
			}
			if dir == "descending" {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
}
