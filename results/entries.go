package results

import (
	"cmp"
	"sort"
	"strings"

	"github.com/sqlhist/sqlhist/tracefs"
)

// sortOf reads the sort= fields of a trigger listing.
func SortOf(info string) []string {
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
func MergeDuplicates(entries []*tracefs.HistEntry) []*tracefs.HistEntry {
	out, _ := foldTwins(entries)
	return out
}

// foldTwins is mergeDuplicates, also saying whether it folded any.
func foldTwins(entries []*tracefs.HistEntry) ([]*tracefs.HistEntry, bool) {
	folded := false
	seen := make(map[string]*tracefs.HistEntry, len(entries))
	out := entries[:0:0]
	for _, e := range entries {
		k := EntryKey(e)
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
func EntryKey(e *tracefs.HistEntry) string {
	var b strings.Builder
	for _, k := range e.Keys {
		b.WriteString(k.Raw)
		b.WriteByte(0)
	}
	return b.String()
}

// SortEntries puts entries in the order of a trigger's sort= fields
// ("hitcount.descending", "n", "lat.ascending"), as the kernel printed
// them: needed after twins were folded, which changes counts.
func SortEntries(entries []*tracefs.HistEntry, sortSpec []string) {
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

// HistMinus subtracts a histogram's earlier reading from a later one.
func HistMinus(h, prev *tracefs.Histogram) *tracefs.Histogram {
	old := map[string]*tracefs.HistEntry{}
	if prev != nil {
		for _, e := range MergeDuplicates(prev.Entries) {
			old[EntryKey(e)] = e
		}
	}
	out := &tracefs.Histogram{TriggerInfo: h.TriggerInfo, Paused: h.Paused}
	for _, e := range MergeDuplicates(h.Entries) {
		p := old[EntryKey(e)]
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
		out.Totals.Failed -= min(prev.Totals.Failed, h.Totals.Failed)
	}
	out.Totals.Entries = uint64(len(out.Entries))
	// An interval's counts are differences: order them as the trigger
	// orders its own.
	SortEntries(out.Entries, SortOf(h.TriggerInfo))
	return out
}
