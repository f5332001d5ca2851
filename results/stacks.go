package results

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// StackFormats are the formats that draw stacks: folded stacks (one line
// per stack, as flamegraph.pl, inferno and speedscope read them) and a
// gzipped pprof profile (go tool pprof, Pyroscope, Grafana).
var StackFormats = []string{"folded", "pprof"}

// HasStack reports whether a histogram is keyed by a stack trace: the
// event's STACKTRACE, or a synthetic event's stack field (a JOIN that
// carries the start event's stack).
func HasStack(h *planner.Hist) bool {
	return slices.IndexFunc(h.Keys, isStackKey) >= 0
}

func isStackKey(k *planner.Expr) bool {
	return k.Kind == planner.ExprStack || k.Mod == "stacktrace"
}

// Stacked returns the results keyed by a stack trace.
func Stacked(results []*Result) []*Result {
	var out []*Result
	for _, res := range results {
		if HasStack(res.Hist) {
			out = append(out, res)
		}
	}
	return out
}

// stackSample is one row of results as a stack: its frames from the root
// to the leaf, the row's other keys, and its values (the count, then each
// sum).
type stackSample struct {
	lead   []string // the folded form's first frames: the event, "label=value" per key
	stack  []string // the kernel's frames as functions, root first
	keys   []keyLabel
	values []int64
}

// keyLabel is a key of a row other than its stack.
type keyLabel struct {
	label string
	cell  Cell
}

// sampleType is one value of the samples: what it counts and its unit.
type sampleType struct {
	name, unit string
}

// stackTypes lists the values of a result's samples: the events counted,
// then each sum in SELECT order (a JOIN's latency, SUM(field)). Main is
// the index of the value folded stacks show and pprof shows first: a
// JOIN's latency; for a histogram, its first aggregate in SELECT order
// (COUNT(*) or a SUM); the count when it has none.
func (res *Result) stackTypes() (types []sampleType, main int) {
	types = []sampleType{{"events", "count"}}
	main = -1
	for _, c := range res.Hist.Columns {
		switch c.Kind {
		case planner.ColCount:
			if main < 0 {
				main = 0
			}
		case planner.ColValue:
			if main < 0 {
				main = len(types)
			}
			types = append(types, sampleType{c.Label, ""})
		case planner.ColLatency:
			main = len(types)
			types = append(types, sampleType{c.Label, unitName(c.Unit)})
		}
	}
	return types, max(main, 0)
}

// unitName is a latency's unit as pprof names it.
func unitName(u string) string {
	switch u {
	case "us":
		return "microseconds"
	case "ns":
		return "nanoseconds"
	}
	return u
}

// samples turns the rows of a result into stacks. prefix, when not "",
// is a first frame for every stack (the event, when several results are
// drawn together).
func (res *Result) samples(prefix string) []stackSample {
	var out []stackSample
	for _, r := range res.Rows {
		var s stackSample
		if prefix != "" {
			s.lead = append(s.lead, prefix)
		}
		for j, c := range res.Hist.Columns {
			if c.Kind != planner.ColKey {
				continue
			}
			cl := r.At(c, j)
			if cl.Frames != nil {
				s.stack = append(s.stack, rootFirst(cl.Frames)...)
				continue
			}
			s.keys = append(s.keys, keyLabel{c.Label, cl})
			s.lead = append(s.lead, c.Label+"="+cl.Text)
		}
		s.values = append(s.values, int64(r.Count))
		for j, c := range res.Hist.Columns {
			switch c.Kind {
			case planner.ColValue:
				s.values = append(s.values, int64(r.Cells[j].Num))
			case planner.ColLatency:
				s.values = append(s.values, int64(r.Stats.Sum))
			}
		}
		out = append(out, s)
	}
	return out
}

// rootFirst turns the kernel's frames (the innermost first,
// "__schedule+0x8fc/0x1070") into function names from the root to the
// leaf: flame graphs merge frames by name, and an offset would split one
// function into as many frames as it has call sites. A module's symbol
// keeps its module: "nfs_wait_bit_killable [nfs]".
func rootFirst(frames []string) []string {
	out := make([]string, 0, len(frames))
	for i := len(frames) - 1; i >= 0; i-- {
		out = append(out, FrameFunction(frames[i]))
	}
	return out
}

// FrameFunction is the function of a frame as the kernel prints it
// (%pS): "schedule+0x27/0xa0" is schedule, "foo+0x1/0x2 [mod]" is
// "foo [mod]"; an address without a symbol stays as it is.
func FrameFunction(frame string) string {
	name, mod, _ := strings.Cut(frame, " ")
	if i := strings.Index(name, "+0x"); i > 0 {
		name = name[:i]
	}
	if mod != "" {
		name += " " + mod
	}
	return name
}

// foldedFrame makes a frame safe for the folded format, where ";"
// separates frames and a line is one stack.
var foldedFrame = strings.NewReplacer(";", ":", "\n", " ", "\r", " ")

// WriteFolded writes the results keyed by a stack trace as folded stacks:
// a line "root;…;leaf VALUE" per row, the row's other keys first as
// "label=value" frames, VALUE its main value (see [Result] and
// stackTypes: a JOIN's summed latency, a histogram's first aggregate).
// When several results have stacks, each line starts with the result's
// event. Rows with a value of 0 are left out (the tools want positive
// weights).
func WriteFolded(w io.Writer, results []*Result) error {
	stacked := Stacked(results)
	for _, res := range stacked {
		prefix := ""
		if len(stacked) > 1 {
			prefix = res.Title
		}
		_, main := res.stackTypes()
		for _, s := range res.samples(prefix) {
			if s.values[main] <= 0 {
				continue
			}
			var frames []string
			for _, f := range append(s.lead, s.stack...) {
				frames = append(frames, foldedFrame.Replace(f))
			}
			if _, err := fmt.Fprintf(w, "%s %d\n", strings.Join(frames, ";"), s.values[main]); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildProfile builds a pprof profile of the results keyed by a stack
// trace: a sample per row with a location per frame (a function per kernel
// function, as WriteFolded names them) and the row's other keys as labels
// (their text: pprof drops a numeric label of 0); a sample type for the events counted and
// one per sum with its unit, the main one (see WriteFolded) the default.
// When several results have stacks, a label "event" tells them apart; the
// types are the first result's, and a result whose types differ is left
// out with a comment saying so. The comments hold each result's totals.
func buildProfile(results []*Result) *pprofProfile {
	p := &pprofProfile{}
	ids := map[string]uint64{}
	stacked := Stacked(results)
	var want []sampleType
	for i, res := range stacked {
		types, main := res.stackTypes()
		if i == 0 {
			want = types
			p.sampleTypes = types
			p.defaultType = types[main].name
		} else if !slices.Equal(types, want) {
			p.comments = append(p.comments, res.Title+": left out: its values differ from "+stacked[0].Title+"'s")
			continue
		}
		t := res.Read.Totals
		p.comments = append(p.comments, fmt.Sprintf("%s: %s", res.Title, totalsText(t)))
		for _, s := range res.samples("") {
			smp := pprofSample{values: s.values}
			// pprof lists a sample's locations from the leaf to the root;
			// a function and its location share one ID.
			for i := len(s.stack) - 1; i >= 0; i-- {
				id, ok := ids[s.stack[i]]
				if !ok {
					p.functions = append(p.functions, s.stack[i])
					id = uint64(len(p.functions))
					ids[s.stack[i]] = id
				}
				smp.locations = append(smp.locations, id)
			}
			if len(s.keys) > 0 || len(stacked) > 1 {
				smp.labels = map[string]string{}
			}
			for _, k := range s.keys {
				// As text, numbers too: pprof drops a numeric label of 0.
				smp.labels[k.label] = k.cell.Text
			}
			if len(stacked) > 1 {
				smp.labels["event"] = res.Title
			}
			p.samples = append(p.samples, smp)
		}
	}
	return p
}

// WriteProfile writes the profile of the results (see [buildProfile]),
// gzipped, as pprof reads it.
func WriteProfile(w io.Writer, results []*Result) error {
	return buildProfile(results).write(w)
}

// stackCell is a stack trace key as a cell: its frames, one a line.
func stackCell(v tracefs.HistValue) Cell {
	frames := v.Frames
	if frames == nil {
		frames = []string{}
	}
	return Cell{Text: strings.Join(v.Frames, "\n"), Frames: frames}
}
