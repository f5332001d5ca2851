package bpf

import (
	"fmt"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
)

// SyntheticSystem is the system of synthetic events.
const SyntheticSystem = "synthetic"

// DefaultSize is the kernel's map size when a trigger gives no size=.
const DefaultSize = 2048

// Var is a hist variable: Name=Expr.
type Var = planner.Var

// Trigger is one hist trigger of the typed plan, the engine's input: the
// fields of planner.Hist the engine reads.
type Trigger struct {
	System, Event string
	Keys, Vals    []*planner.Expr
	Vars          []Var
	Actions       []*planner.Action
	Filter        *planner.Filter
	// Size is size= (0 for the kernel's 2048); the map holds Size rounded
	// up to a power of two entries, as the kernel's.
	Size int
	// Name is name=: the triggers of one name share one map.
	Name string
	// Sort is sort= (the order Read gives entries; "hitcount" when
	// empty), NoHitcount nohitcount: both only shape what Read returns.
	Sort       []string
	NoHitcount bool
	// File is the hist file that shows the trigger's histogram (relative
	// to the tracefs root, planner.Hist.HistFile): ReadFiles's key.
	File string
}

// FromHist is the trigger of a planned hist trigger.
func FromHist(h *planner.Hist) *Trigger {
	return &Trigger{System: h.System, Event: h.Event, Keys: h.Keys, Vals: h.Vals, Vars: h.Vars,
		Actions: h.Actions, Filter: h.Filter, Size: h.Size, Name: h.Name, Sort: h.Sort,
		NoHitcount: h.NoHitcount, File: h.HistFile()}
}

// FromHists is FromHist of each, in order.
func FromHists(hs []*planner.Hist) []*Trigger {
	out := make([]*Trigger, len(hs))
	for i, h := range hs {
		out[i] = FromHist(h)
	}
	return out
}

// Spec renders the trigger as the kernel lists it on "# trigger info:".
func (t *Trigger) Spec() string {
	var b strings.Builder
	b.WriteString("hist:")
	if t.Name != "" {
		b.WriteString("name=" + t.Name + ":")
	}
	b.WriteString("keys=" + joinExprs(t.Keys))
	vals := []string{"hitcount"}
	for _, v := range t.Vals {
		if v.Kind != planner.ExprHitcount || v.Mod != "" {
			vals = append(vals, v.String())
		}
	}
	b.WriteString(":vals=" + strings.Join(vals, ","))
	if len(t.Vars) > 0 {
		vs := make([]string, len(t.Vars))
		for i, v := range t.Vars {
			vs[i] = v.Name + "=" + v.Expr.String()
		}
		b.WriteString(":" + strings.Join(vs, ","))
	}
	srt := "hitcount"
	if len(t.Sort) > 0 {
		srt = strings.Join(t.Sort, ",")
	}
	fmt.Fprintf(&b, ":sort=%s:size=%d", srt, mapEntries(t.Size))
	if t.NoHitcount {
		b.WriteString(":nohitcount")
	}
	for _, a := range t.Actions {
		b.WriteString(":" + a.String())
	}
	if t.Filter != nil {
		b.WriteString(" if " + t.Filter.String())
	}
	return b.String()
}

func joinExprs(xs []*planner.Expr) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

// mapEntries is the entries a map of size= holds: the kernel's
// tracing_map has 2^ceil(log2(size)) elements.
func mapEntries(size int) int {
	if size <= 0 {
		size = DefaultSize
	}
	n := 1
	for n < size {
		n <<= 1
	}
	return n
}

// Error is a trigger the engine cannot run: the trigger (its index in
// the engine's input), the expression, filter or action that causes it,
// as the plan renders it, and why.
type Error struct {
	Trigger int    // index in the triggers given to New
	Event   string // "system/event"
	What    string // the expression, filter or action, as the kernel reads it ("" for the whole trigger)
	Reason  string
	// Log is the verifier's log, when the kernel refused the program
	// (its last lines: where it stopped).
	Log []string
	// Probe is the probe whose definition is refused (an argument the
	// engine does not compile, a kernel without the probe's PMU), or nil.
	Probe *planner.Probe
	// frame is the bytes a program's frame needs, when that is why.
	frame int
}

func (e *Error) Error() string {
	s := "the BPF engine: " + e.Event
	if e.What != "" {
		s += ": " + e.What
	}
	s += ": " + e.Reason
	if len(e.Log) > 0 {
		s += "\n\t" + strings.Join(e.Log, "\n\t")
	}
	return s
}
