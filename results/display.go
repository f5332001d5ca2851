package results

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The cells of a histogram's columns that are neither keys nor plain
// sums: MAX(field) (the onmax line under the entry) and the count shown
// as a percentage or a bar (hitcount.percent, hitcount.graph).

// hitcountOf returns the entry's raw hitcount, its first value unless
// nohitcount hides it. The raw count is a number even where a parser
// that keys modifiers by name took it for the bar of hitcount.graph.
func hitcountOf(ent *tracefs.HistEntry) (uint64, bool) {
	if len(ent.Values) == 0 || ent.Values[0].Name != "hitcount" || ent.Values[0].Kind == tracefs.HistPercent {
		return 0, false
	}
	if ent.Values[0].Kind == tracefs.HistNumber {
		return ent.Values[0].Num, true // summed when twins are folded
	}
	n, err := strconv.ParseUint(ent.Values[0].Raw, 10, 64)
	return n, err == nil
}

// hitcountShown reports whether the entry's first value is the raw
// hitcount, which nohitcount hides.
func hitcountShown(ent *tracefs.HistEntry) bool {
	_, ok := hitcountOf(ent)
	return ok
}

// valueAt is the cell of the i-th vals= entry, after the hitcount when
// the kernel prints it.
func valueAt(ent *tracefs.HistEntry, i int) Cell {
	if hitcountShown(ent) {
		i++
	}
	if i >= len(ent.Values) {
		return Cell{Text: "?"}
	}
	v := ent.Values[i]
	switch v.Kind {
	case tracefs.HistPercent:
		return Cell{Text: strconv.FormatFloat(v.Percent, 'f', 2, 64)}
	case tracefs.HistGraph:
		return Cell{Text: v.Text}
	}
	return Cell{Text: strconv.FormatUint(v.Num, 10), Num: v.Num, IsNum: true}
}

// maxCell is the largest value of the entry's MAX column: the onmax
// line's. In an interval without a new maximum it is only a bound, the
// maximum so far.
func maxCell(ent *tracefs.HistEntry) Cell {
	for _, t := range ent.Tracked {
		switch t.Handler {
		case "max":
			return Cell{Text: strconv.FormatUint(t.Value, 10), Num: t.Value, IsNum: true}
		case "max<=":
			return Cell{Text: "<=" + strconv.FormatUint(t.Value, 10), Num: t.Value}
		}
	}
	return Cell{Text: "?"}
}

// trackedCell is the entry's last value of an onchange() handler.
func trackedCell(ent *tracefs.HistEntry, handler string) Cell {
	for _, t := range ent.Tracked {
		if t.Handler == handler {
			return Cell{Text: strconv.FormatUint(t.Value, 10), Num: t.Value, IsNum: true}
		}
	}
	return Cell{Text: "?"}
}

// savedCell is the i-th field a handler's save() kept with the entry's
// maximum or last change.
func savedCell(ent *tracefs.HistEntry, i int) Cell {
	for _, t := range ent.Tracked {
		if i < len(t.Saved) {
			v := t.Saved[i]
			if v.Kind == tracefs.HistString {
				return Cell{Text: v.Text}
			}
			return Cell{Text: strconv.FormatUint(v.Num, 10), Num: v.Num, IsNum: true}
		}
	}
	return Cell{Text: "?"}
}

// jsonCell is the JSON value of a percentage column: a number.
func jsonCell(c planner.Column, cl Cell) (any, bool) {
	if c.Kind != planner.ColPercent && c.Kind != planner.ColSumPercent {
		return nil, false
	}
	f, err := strconv.ParseFloat(cl.Text, 64)
	if err != nil {
		return cl.Text, true
	}
	return f, true
}

// titleOf names a result: "sched/sched_switch", or for the shared
// histogram of a UNION ALL its events, "net/netif_receive_skb+net/netif_rx".
func titleOf(u *planner.Unit, h *planner.Hist) string {
	title := h.System + "/" + h.Event
	if h.Name == "" || u == nil || u.Query == nil {
		return title
	}
	for _, q := range u.Query.Union {
		title += "+" + q.From.Name.String()
	}
	return title
}

// checkIntervalColumns refuses -i for columns an interval cannot show: a
// percentage or bar of the count or of a sum is a share of everything the
// kernel counted or summed since the start, and the difference of two is
// not the share of what came between.
func CheckIntervalColumns(plan *planner.Plan, every time.Duration) error {
	if every <= 0 {
		return nil
	}
	for _, u := range plan.Units {
		if u.Start == nil {
			continue
		}
		for _, c := range u.Start.Columns {
			switch c.Kind {
			case planner.ColPercent, planner.ColGraph:
				return fmt.Errorf("-i shows what each interval collected, and %s is the count's share of all the kernel counted since the start: run without -i, or select COUNT(*)", c.Label)
			case planner.ColSumPercent, planner.ColSumGraph:
				return fmt.Errorf("-i shows what each interval collected, and %s is a sum's share of all the kernel summed since the start: run without -i, or select the SUM instead", c.Label)
			}
		}
	}
	return nil
}

// sameNameAndFilter reports whether a trigger listing ("hist:name=u:keys=…
// if count == 3") has the hist's name= (or none) and its filter.
func SameNameAndFilter(info string, h *planner.Hist) bool {
	head, filter, _ := strings.Cut(info, " if ")
	name := ""
	for _, part := range strings.Split(head, ":") {
		if v, ok := strings.CutPrefix(part, "name="); ok {
			name = v
		}
	}
	return name == h.Name && strings.TrimSpace(filter) == h.FilterText()
}
