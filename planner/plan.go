package planner

import (
	"fmt"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
)

// Plan is the lowered form of a script: one unit per statement, in order.
type Plan struct {
	Units []*Unit
	// Notes are remarks worth printing as comments (rewrites the compiler
	// made, warnings), in source order.
	Notes []string
}

// Unit is one statement's lowering: a synthetic event with its start and
// end triggers, or a single histogram.
type Unit struct {
	Query  *compiler.Query
	Probes []*Probe // the probes this statement creates first (shared ones appear once)
	Synth  *Synth   // nil in histogram mode
	Start  *Hist    // the start trigger (JOIN) or the histogram
	End    *Hist    // the end trigger; nil in histogram mode
	// Results is, for --run, the histogram on a JOIN's synthetic event
	// that collects what is shown: the non-latency fields as keys and the
	// latency as an exact key (so count, min, average, maximum and the
	// distribution can all be read from it).
	Results *Hist
	// Negatives is, for --run, the histogram that counts the events of a
	// JOIN's results whose latency is negative (left out of Results).
	Negatives *Hist
	// Order is, for --run, how a JOIN's results rows are sorted.
	Order []ResultOrder
	// Feeds is set when the unit's synthetic event only feeds a later unit
	// of the same statement (a step of a chain, or a JOIN whose aggregates
	// a histogram computes): it has no results of its own to read.
	Feeds bool
	// Intermediate is set on the steps of a chain before its last JOIN:
	// their synthetic events carry values between steps, and --events
	// streams only the last one's.
	Intermediate bool
}

// ResultOrder is one ORDER BY item of a JOIN's results: a column label of
// Results (the latency sorts by its average) or "count".
type ResultOrder struct {
	Label string
	Desc  bool
}

// Synth is a synthetic event definition.
type Synth struct {
	Name     string
	Fields   []*SynthField
	Pos, End source.Pos
}

// SynthField is one field of a synthetic event.
type SynthField struct {
	Name  string
	Type  string // element type, e.g. "u64", "pid_t", "char", "unsigned long"
	Array string // "" for scalars, "[16]" or "[]"
	// Unit is "ns" or "us" when the field is a latency (a difference of
	// the two events' timestamps), else "".
	Unit     string
	Pos, End source.Pos
}

// Decl returns the field declaration as the kernel reads it: "char comm[16]".
func (f *SynthField) Decl() string { return f.Type + " " + f.Name + f.Array }

// Definition returns the synthetic event's field list, "u64 lat; pid_t pid".
func (s *Synth) Definition() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Decl()
	}
	return strings.Join(parts, "; ")
}

// Var is a hist variable definition "name=expr".
type Var struct {
	Name string
	Expr *Expr
}

// String renders the definition: "ts0=common_timestamp.usecs".
func (v Var) String() string { return v.Name + "=" + v.Expr.String() }

// Hist is one hist trigger on one event.
type Hist struct {
	System, Event string
	Instance      string // "" for the top-level instance
	Role          string // "start", "end", "histogram" or (for --run) "results" and "negatives"
	Keys          []*Expr
	Vals          []*Expr
	Vars          []Var
	Sort          []string
	Actions       []*Action
	Filter        *Filter // nil for none
	Size          int     // size=: the map's entries; 0 for the kernel's default
	// Name is the shared histogram's name= (a UNION ALL's events all
	// write to one map); "" for a histogram of its own.
	Name string
	// NoHitcount hides the raw hitcount (nohitcount, 6.2): the SELECT
	// shows the count only as a percentage or a bar.
	NoHitcount bool
	// Columns say how to show what the hist file prints, in SELECT order.
	Columns []Column
	// Limit is the number of entries shown (LIMIT, applied on read); 0
	// shows all.
	Limit    int
	Pos, End source.Pos // the clause that produced the trigger
}

// ColumnKind says where a shown column comes from in a hist entry.
type ColumnKind int

// The kinds of [Column].
const (
	ColKey        ColumnKind = iota // Keys[Index]
	ColValue                        // Vals[Index], a sum
	ColCount                        // hitcount
	ColLatency                      // Keys[Index], an exact latency: shown as min, avg, max
	ColMax                          // the onmax line under the entry: MAX(field), -m on a histogram
	ColChanged                      // the onchange line under the entry: -c on a histogram
	ColSaved                        // the save() field Index of the handler's line
	ColPercent                      // Vals[Index], hitcount.percent: the count as a share of all
	ColGraph                        // Vals[Index], hitcount.graph: the count as a bar
	ColSumPercent                   // Vals[Index], x.percent: the sum of x as a share of x's total
	ColSumGraph                     // Vals[Index], x.graph: the sum of x as a bar
)

// Column is one column of a hist's results.
type Column struct {
	Label string
	Kind  ColumnKind
	Index int
	Unit  string // ColLatency: "ns" or "us"
	// Signed is set on a key of a signed integer type: the kernel prints
	// hist keys as unsigned 64-bit numbers (5.10 does; an s32 -100 reads
	// 18446744073709551516), so its value is read back as signed.
	Signed bool
}

// FilterText is the filter's text, "" for none.
func (h *Hist) FilterText() string {
	if h.Filter == nil {
		return ""
	}
	return h.Filter.String()
}

// TriggerFile returns the trigger file of the hist, relative to the
// tracefs root.
func (h *Hist) TriggerFile() string {
	p := fmt.Sprintf("events/%s/%s/trigger", h.System, h.Event)
	if h.Instance != "" {
		p = "instances/" + h.Instance + "/" + p
	}
	return p
}

// HistFile returns the hist file that shows what the trigger collected,
// relative to the tracefs root.
func (h *Hist) HistFile() string {
	return strings.TrimSuffix(h.TriggerFile(), "trigger") + "hist"
}

// PauseSpec returns the write that pauses the trigger: its spec with the
// pause attribute, before the filter.
func (h *Hist) PauseSpec() string { return h.spec(":pause") }

// Spec returns the trigger text: "hist:keys=…[:vals=…][:vars][:sort=…][:actions][ if filter]".
func (h *Hist) Spec() string { return h.spec("") }

// spec is the trigger text with attr written before the filter.
func (h *Hist) spec(attr string) string {
	var b strings.Builder
	b.WriteString("hist:keys=")
	b.WriteString(strings.Join(ExprStrings(h.Keys), ","))
	if len(h.Vals) > 0 {
		b.WriteString(":vals=" + strings.Join(ExprStrings(h.Vals), ","))
	}
	if len(h.Vars) > 0 {
		vs := make([]string, len(h.Vars))
		for i, v := range h.Vars {
			vs[i] = v.String()
		}
		b.WriteString(":" + strings.Join(vs, ","))
	}
	if len(h.Sort) > 0 {
		b.WriteString(":sort=" + strings.Join(h.Sort, ","))
	}
	if h.Size > 0 {
		fmt.Fprintf(&b, ":size=%d", h.Size)
	}
	if h.Name != "" {
		b.WriteString(":name=" + h.Name)
	}
	if h.NoHitcount {
		b.WriteString(":nohitcount")
	}
	for _, a := range h.Actions {
		b.WriteString(":" + a.String())
	}
	b.WriteString(attr)
	if h.Filter != nil {
		b.WriteString(" if " + h.Filter.String())
	}
	return b.String()
}
