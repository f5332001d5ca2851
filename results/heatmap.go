package results

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
)

// DefaultHeatmapKeys is how many row keys a heatmap draws a panel for,
// the keys with the most events first.
const DefaultHeatmapKeys = 8

// HeatmapLevels is the number of colours of a heatmap's scale: a cell's
// count is drawn in the colour of its level (see [HeatLevel]).
const HeatmapLevels = 8

// HeatmapBackground is the colour of a panel's cells without events.
const HeatmapBackground = "#f0f0f0"

// HeatmapOptions say what a heatmap draws.
type HeatmapOptions struct {
	// Keys is the most panels a statement gets (one per row key, the
	// keys with the most events first); 0 is DefaultHeatmapKeys.
	Keys int
	// Source is the SQL of a live run: each statement is titled with its
	// text. Without it (saved JSON), with its event and columns.
	Source *source.Source
}

// HeatInterval is one interval of a run, with the label of the target
// it is from ("" for a lone run): when the intervals are of several
// targets, each target's rows are panels of their own ("LABEL: KEY").
type HeatInterval struct {
	Label string
	*Interval
}

// Heatmap is the latency heatmap of a run with -i: for each statement
// with a latency (a JOIN's) or a log2 key, the counts of each interval
// (across) in each log2 bucket (up), one panel per row key.
type Heatmap struct {
	Spans []HeatSpan // the intervals: the columns, in order
	Maps  []*HeatStatement
}

// HeatSpan is one interval's time since the collection began.
type HeatSpan struct {
	Start, End time.Duration
	Partial    bool
}

// HeatStatement is one statement's heatmap.
type HeatStatement struct {
	Title   string // the query's text, or its event and columns
	Event   string // "synthetic/wakeup_lat"
	Measure string // the bucketed column: "lat (us)", "bytes"
	Panels  []*HeatPanel
	// Left and LeftEvents count the row keys beyond the panels' limit
	// and their events.
	Left       int
	LeftEvents uint64
	MinExp     int // the lowest and highest log2 bucket drawn
	MaxExp     int
	Max        uint64 // the largest count of a cell: the top of the scale
}

// HeatPanel is one row key's counts: Cells[column][log2 bucket].
type HeatPanel struct {
	Key    string // "comm=cat, pid=12"; "" when the statement has no key
	Events uint64
	Cells  map[int]map[int]uint64
}

// ErrNoHeatmap says that no statement has a latency or a log2 key.
var ErrNoHeatmap = errors.New("nothing to draw: no statement has a latency (a JOIN's) or a log2 key (CAST(x AS LOG2))")

// NewHeatmap gathers the intervals of a run (live, or read back with
// [ReadJSONIntervals]) into heatmaps. The intervals are numbered from 1
// (Interval.N); a fleet's targets each have theirs, with the same
// numbers.
func NewHeatmap(ivs []HeatInterval, opt HeatmapOptions) (*Heatmap, error) {
	keys := opt.Keys
	if keys <= 0 {
		keys = DefaultHeatmapKeys
	}
	hm := &Heatmap{}
	type gather struct {
		st     *HeatStatement
		panels map[string]*HeatPanel
	}
	var stmts []*gather // by result index
	spans := map[int]HeatSpan{}
	last := 0
	// The targets' labels name panels only when there are several.
	labels := map[string]bool{}
	for _, iv := range ivs {
		labels[iv.Label] = true
	}
	for _, iv := range ivs {
		if iv.Interval == nil || iv.N < 1 || iv.N > MaxHeatIntervals {
			continue
		}
		col := iv.N - 1
		if s, ok := spans[col]; !ok || iv.End > s.End {
			spans[col] = HeatSpan{Start: iv.Start, End: iv.End, Partial: iv.Partial}
		}
		last = max(last, iv.N)
		for i, res := range iv.Results {
			for len(stmts) <= i {
				stmts = append(stmts, nil)
			}
			axis := heatAxis(res)
			if axis.kind == "" {
				continue
			}
			g := stmts[i]
			if g == nil {
				g = &gather{st: &HeatStatement{Title: HeatTitle(res, opt.Source), Event: res.Title, Measure: axis.measure, MinExp: math.MaxInt, MaxExp: math.MinInt}, panels: map[string]*HeatPanel{}}
				stmts[i] = g
			}
			for ri := range res.Rows {
				r := &res.Rows[ri]
				key := heatKey(res.Hist, r, axis.col)
				if iv.Label != "" && len(labels) > 1 {
					key = strings.TrimSuffix(iv.Label+": "+key, ": ")
				}
				p := g.panels[key]
				if p == nil {
					p = &HeatPanel{Key: key, Cells: map[int]map[int]uint64{}}
					g.panels[key] = p
				}
				add := func(e int, n uint64) {
					if n == 0 {
						return
					}
					if p.Cells[col] == nil {
						p.Cells[col] = map[int]uint64{}
					}
					p.Cells[col][e] += n
					p.Events += n
				}
				if axis.kind == "latency" {
					if r.Stats != nil {
						for e, n := range r.Stats.Dist {
							add(e, n)
						}
					}
				} else {
					add(bucketExp(Bucket{High: r.At(res.Hist.Columns[axis.col], axis.col).Num}), r.Count)
				}
			}
		}
	}
	for i := 0; i < last; i++ {
		s, ok := spans[i]
		if !ok {
			// An interval missing from the input: a column of its own,
			// empty, as long as the one before.
			d := time.Second
			if i > 0 {
				d = hm.Spans[i-1].End - hm.Spans[i-1].Start
				s.Start = hm.Spans[i-1].End
			}
			s.End = s.Start + d
		}
		hm.Spans = append(hm.Spans, s)
	}
	for _, g := range stmts {
		if g == nil {
			continue
		}
		st := g.st
		var all []*HeatPanel
		for _, p := range g.panels {
			if p.Events > 0 {
				all = append(all, p)
			}
		}
		sort.Slice(all, func(a, b int) bool {
			if all[a].Events != all[b].Events {
				return all[a].Events > all[b].Events
			}
			return all[a].Key < all[b].Key
		})
		if len(all) > keys {
			for _, p := range all[keys:] {
				st.Left++
				st.LeftEvents += p.Events
			}
			all = all[:keys]
		}
		st.Panels = all
		for _, p := range all {
			for _, col := range p.Cells {
				for e, n := range col {
					st.MinExp, st.MaxExp = min(st.MinExp, e), max(st.MaxExp, e)
					st.Max = max(st.Max, n)
				}
			}
		}
		if st.Max == 0 {
			st.MinExp, st.MaxExp = 0, 0
		}
		hm.Maps = append(hm.Maps, st)
	}
	if len(hm.Maps) == 0 {
		return nil, ErrNoHeatmap
	}
	return hm, nil
}

// heatAxisOf is what a result's heatmap counts: its rows' latency
// distributions, or its log2 key (column col).
type heatAxisOf struct {
	kind    string // "latency", "log2", or "" (nothing to draw)
	col     int
	measure string
}

func heatAxis(res *Result) heatAxisOf {
	h := res.Hist
	if h == nil {
		return heatAxisOf{}
	}
	if res.Latency != nil {
		for j, c := range h.Columns {
			if c.Kind == planner.ColLatency {
				m := c.Label
				if c.Unit != "" {
					m += " (" + c.Unit + ")"
				}
				return heatAxisOf{"latency", j, m}
			}
		}
	}
	for j, c := range h.Columns {
		if keyModifier(h, c) == "log2" {
			return heatAxisOf{"log2", j, c.Label}
		}
	}
	return heatAxisOf{}
}

// heatKey is a row's panel: its key columns but the bucketed one, as
// "label=value" joined by ", " (a stack by its innermost frames).
func heatKey(h *planner.Hist, r *Row, skip int) string {
	var parts []string
	for j, c := range h.Columns {
		if c.Kind != planner.ColKey || j == skip || j >= len(r.Cells) {
			continue
		}
		cl := r.At(c, j)
		v := cl.Text
		if cl.Frames != nil {
			v = strings.Join(cl.Frames[:min(3, len(cl.Frames))], " ← ")
			if len(cl.Frames) > 3 {
				v += " ← …"
			}
		}
		parts = append(parts, c.Label+"="+v)
	}
	return strings.Join(parts, ", ")
}

// heatTitle titles a statement: its SQL when the run's source is known
// (white space folded), else its event.
func HeatTitle(res *Result, src *source.Source) string {
	if src != nil && res.Unit != nil && res.Unit.Query != nil {
		q := res.Unit.Query
		if q.Pos.IsValid() && q.End.IsValid() {
			lo, hi := q.Pos.Offset(), min(q.End.Offset(), len(src.Text))
			if lo < hi {
				return strings.Join(strings.Fields(src.Text[lo:hi]), " ")
			}
		}
	}
	return res.Title
}

// HeatLevel is the colour level (1 to HeatmapLevels) of a cell that
// counts n events (n >= 1) when the statement's largest cell counts most:
// levels grow with the logarithm of the count, 1 for a single event,
// HeatmapLevels for the largest.
func HeatLevel(n, most uint64) int {
	if n == 0 {
		return 0
	}
	if most <= 1 || n >= most {
		return HeatmapLevels
	}
	l := 1 + int(float64(HeatmapLevels-1)*math.Log(float64(n))/math.Log(float64(most)))
	return min(max(l, 1), HeatmapLevels)
}

// HeatColour is the colour of level l (1 to HeatmapLevels): from a pale
// yellow through orange to a dark red, as "#rrggbb".
func HeatColour(l int) string {
	r, g, b := HeatRGB(l)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}

// HeatRGB is the colour of level l as its red, green and blue,
// interpolated between three anchors.
func HeatRGB(l int) (r, g, b uint8) {
	anchors := [3][3]float64{{255, 236, 160}, {240, 110, 30}, {110, 0, 20}}
	t := 0.0
	if HeatmapLevels > 1 {
		t = float64(min(max(l, 1), HeatmapLevels)-1) / float64(HeatmapLevels-1)
	}
	a, z, u := anchors[0], anchors[1], t*2
	if t > 0.5 {
		a, z, u = anchors[1], anchors[2], (t-0.5)*2
	}
	mix := func(i int) uint8 { return uint8(math.Round(a[i] + (z[i]-a[i])*u)) }
	return mix(0), mix(1), mix(2)
}

// levelFloor is the least count of level l when the largest is most.
func levelFloor(l int, most uint64) uint64 {
	if l <= 1 {
		return 1
	}
	lo := uint64(math.Ceil(math.Exp(float64(l-1) / float64(HeatmapLevels-1) * math.Log(float64(most)))))
	lo = min(max(lo, 1), most)
	for lo > 1 && HeatLevel(lo-1, most) >= l {
		lo--
	}
	for lo < most && HeatLevel(lo, most) < l {
		lo++
	}
	return lo
}

// secondsText writes a time in seconds, as short as it is exact to the
// millisecond: "1", "2.5", "0.125".
func secondsText(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Round(time.Millisecond))/float64(time.Second), 'f', -1, 64)
}

// CheckHeatmap refuses --heatmap for a plan with no statement to draw:
// none has a latency (a JOIN's) or a log2 key (a usage error, before
// anything is applied).
func CheckHeatmap(plan *planner.Plan) error {
	for _, u := range plan.Units {
		h := u.Results
		if h == nil {
			h = u.Start
		}
		if u.Feeds || h == nil {
			continue
		}
		for _, c := range h.Columns {
			if c.Kind == planner.ColLatency || keyModifier(h, c) == "log2" {
				return nil
			}
		}
	}
	return source.Usagef("--heatmap: %v", ErrNoHeatmap)
}
