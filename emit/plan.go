package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// PlanSchema names the JSON plan format; it changes only when a field
// changes meaning or goes away (new fields may be added).
const PlanSchema = "sqlhist-plan/1"

// PlanDoc is the JSON plan: every write a script makes, in order, with
// what undoes it, the SQL that produced it and the kernel features it
// needs. It is what -o json prints without -r. Its fields are described
// in docs/plan.md and checked by TestPlanSchema.
type PlanDoc struct {
	Schema string     `json:"schema"`
	Target PlanTarget `json:"target"`
	// Tracefs is the root the paths are under.
	Tracefs string `json:"tracefs"`
	// Query is the SQL as given.
	Query PlanQuery `json:"query"`
	// Notes are the remarks a script prints as comments.
	Notes []string `json:"notes"`
	// Writes are applied in order; Teardown undoes them, in its order.
	Writes   []PlanWrite `json:"writes"`
	Teardown []PlanUndo  `json:"teardown"`
	// Features is every feature the writes need; MinKernel the newest
	// first release among them.
	Features  []PlanFeature `json:"features"`
	MinKernel string        `json:"min_kernel"`
	// Instance is the tracefs instance the triggers go in ("" for none):
	// it must exist before the writes.
	Instance string `json:"instance,omitempty"`
	// Synthetic is each synthetic event the writes define, with its
	// fields, as a printed script's first comments name them.
	Synthetic []PlanSynthetic `json:"synthetic_events"`
	// Reading is how to read what the applied writes measure, as a
	// printed script's closing comments say it. A plan written before
	// these two fields has neither: its replay prints no such comments.
	Reading []PlanRead `json:"reading"`
}

// PlanSynthetic is a synthetic event a plan defines.
type PlanSynthetic struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"` // each field's declaration, with its unit in parentheses when it has one
}

// PlanRead is one way to read what a plan measures: optionally a file to
// write 1 to (Enable) first, then a file to cat, both relative to the
// tracefs root.
type PlanRead struct {
	What   string `json:"what"`             // what it shows ("the answer")
	Enable string `json:"enable,omitempty"` // the enable file of an event to trace first
	Cat    string `json:"cat"`
	// Limit is the query's LIMIT on a hist file's entries: its first
	// Limit entries are shown, with its header and totals (0: all).
	Limit int `json:"limit,omitempty"`
}

// Line is the read as a printed script's closing comment says it, with
// the files under root: "the answer: cat '/sys/kernel/tracing/…/hist'".
// With a Limit, the command is LimitHist's.
func (r PlanRead) Line(root string) string {
	l := r.What + ": "
	if r.Enable != "" {
		l += "echo 1 > " + Quote(root+"/"+r.Enable) + "; "
	}
	if r.Limit > 0 {
		return l + LimitHist(r.Limit) + " " + Quote(root+"/"+r.Cat)
	}
	return l + "cat " + Quote(root+"/"+r.Cat)
}

// LimitHist is the command, for any POSIX awk (busybox's, mawk, gawk),
// that prints a hist file with only the first n entries of each of its
// histograms: the header comments, the first n entries (an entry starts
// with "{" and runs to the line of its hit count, a stack over several
// lines), then the blank line and the totals.
func LimitHist(n int) string {
	return "awk " + Quote(fmt.Sprintf("/^# event histogram/{n=0;t=0} /^[{]/{n++} /^$/{if(n)t=1} n<=%d||t", n))
}

// PlanTarget is the kernel the plan was compiled for.
type PlanTarget struct {
	Kernel  string `json:"kernel"`  // release or version of the catalog; "" when unknown
	Arch    string `json:"arch"`    // x86_64, arm64, arm, riscv64
	Catalog string `json:"catalog"` // where the event formats came from
}

// PlanQuery is the SQL of the plan.
type PlanQuery struct {
	File string `json:"file"` // "<args>", "<stdin>" or the -f file
	Text string `json:"text"`
}

// PlanWrite is one write: Text appended to Path.
type PlanWrite struct {
	Step  int      `json:"step"`           // 1-based
	Kind  string   `json:"kind"`           // probe, synthetic_event, trigger, enable, mkdir
	Role  string   `json:"role,omitempty"` // a trigger's role: start, end, histogram, results, negatives
	What  string   `json:"what"`
	File  string   `json:"file"` // relative to Tracefs
	Path  string   `json:"path"`
	Text  string   `json:"text"`
	Undo  string   `json:"undo"` // the text that, written to the same file, removes what Text created
	SQL   *Span    `json:"sql"`  // null when the write has no single source span
	Needs []string `json:"needs"`
}

// PlanUndo is one write of the teardown.
type PlanUndo struct {
	Undoes int    `json:"undoes"` // the step it undoes
	File   string `json:"file"`
	Path   string `json:"path"`
	Text   string `json:"text"`
}

// Span is a range of the SQL: from Start to End (exclusive), 1-based
// lines and byte columns, with the text it covers.
type Span struct {
	Start SpanPos `json:"start"`
	End   SpanPos `json:"end"`
	Text  string  `json:"text"`
}

// SpanPos is a position in the SQL.
type SpanPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Offset int `json:"offset"`
}

// PlanFeature is a kernel feature a plan needs.
type PlanFeature struct {
	ID    string `json:"id"`
	What  string `json:"what"`
	Since string `json:"since"`
}

// PlanOptions say what the plan document records besides the commands.
type PlanOptions struct {
	Root   string
	Source *source.Source
	Target PlanTarget
	Notes  []string
	// Instance, Synthetic and Reading are the plan's instance, synthetic
	// events and reads.
	Instance  string
	Synthetic []PlanSynthetic
	Reading   []PlanRead
}

// BuildPlan makes the plan document of cmds (in creation order).
func BuildPlan(cmds []Command, opt PlanOptions) PlanDoc {
	d := PlanDoc{Schema: PlanSchema, Target: opt.Target, Tracefs: opt.Root,
		Notes: append([]string{}, opt.Notes...), Writes: []PlanWrite{}, Teardown: []PlanUndo{}, Features: []PlanFeature{},
		Instance: opt.Instance, Synthetic: append([]PlanSynthetic{}, opt.Synthetic...), Reading: append([]PlanRead{}, opt.Reading...)}
	if opt.Source != nil {
		d.Query = PlanQuery{File: opt.Source.Name, Text: opt.Source.Text}
	}
	for i, c := range cmds {
		w := PlanWrite{Step: i + 1, Kind: kindName(c.Kind), Role: c.Role, What: c.What, File: c.File,
			Path: path.Join(opt.Root, c.File), Text: c.Line, Undo: c.Undo, Needs: Needs(c)}
		if w.Needs == nil {
			w.Needs = []string{}
		}
		pos, end := c.Pos, c.End
		if c.SpanPos.IsValid() {
			pos, end = c.SpanPos, c.SpanEnd
		}
		if opt.Source != nil && pos.IsValid() && end.IsValid() && end >= pos {
			w.SQL = span(opt.Source, pos, end)
		}
		d.Writes = append(d.Writes, w)
	}
	for i := len(cmds) - 1; i >= 0; i-- {
		c := cmds[i]
		d.Teardown = append(d.Teardown, PlanUndo{Undoes: i + 1, File: c.File, Path: path.Join(opt.Root, c.File), Text: c.Undo})
	}
	for _, id := range sortedIDs(cmds) {
		f, _ := tracefs.FeatureByID(id)
		d.Features = append(d.Features, PlanFeature{ID: f.ID, What: f.What, Since: f.Since})
	}
	d.MinKernel = MinKernel(cmds)
	return d
}

func span(src *source.Source, pos, end source.Pos) *Span {
	a, b := src.Position(pos), src.Position(end)
	return &Span{Start: SpanPos{a.Line, a.Col, a.Offset}, End: SpanPos{b.Line, b.Col, b.Offset},
		Text: src.Text[a.Offset:b.Offset]}
}

func kindName(k Kind) string {
	switch k {
	case KindSynth:
		return "synthetic_event"
	case KindTrigger:
		return "trigger"
	case KindDir:
		return "mkdir"
	case KindEnable:
		return "enable"
	case KindProbe:
		return "probe"
	case KindFilter:
		return "filter"
	case KindSetting:
		return "setting"
	}
	return fmt.Sprintf("kind%d", int(k))
}

// WritePlan writes the plan document as indented JSON with a final
// newline. Strings are written as they are (no HTML escaping), so the
// same plan gives the same bytes.
func WritePlan(w io.Writer, d PlanDoc) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ReadPlan reads a plan document written by WritePlan, refusing another
// schema and writes that are not tracefs writes sqlhist makes.
func ReadPlan(data []byte) (PlanDoc, error) {
	var d PlanDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("not a JSON plan: %v", err)
	}
	if d.Schema != PlanSchema {
		return d, fmt.Errorf("plan schema %q; this sqlhist reads %q", d.Schema, PlanSchema)
	}
	for _, w := range d.Writes {
		if err := CheckPlanFile(w.File); err != nil {
			return d, fmt.Errorf("write %d: %v", w.Step, err)
		}
	}
	for _, u := range d.Teardown {
		if err := CheckPlanFile(u.File); err != nil {
			return d, fmt.Errorf("teardown of write %d: %v", u.Undoes, err)
		}
	}
	return d, nil
}

// CheckPlanFile refuses a file a plan must not name: an absolute path or
// one that leaves the tracefs.
func CheckPlanFile(f string) error {
	if f == "" || path.IsAbs(f) || path.Clean(f) != f || f == ".." || len(f) > 2 && f[:3] == "../" {
		return fmt.Errorf("file %q is not a path inside tracefs", f)
	}
	return nil
}

// Commands returns the plan's writes (or, with teardown, its teardown) as
// commands to apply.
func (d PlanDoc) Commands(teardown bool) []Command {
	var out []Command
	if teardown {
		for _, u := range d.Teardown {
			k := KindTrigger
			if u.Undoes >= 1 && u.Undoes <= len(d.Writes) {
				k = kindOf(d.Writes[u.Undoes-1].Kind)
			}
			marker, what := "", fmt.Sprintf("teardown of write %d", u.Undoes)
			if u.Undoes >= 1 && u.Undoes <= len(d.Writes) {
				w := d.Writes[u.Undoes-1]
				marker = markerOf(k, w.Text)
				if w.What != "" {
					what = "removal of the " + w.What + fmt.Sprintf(" (write %d)", u.Undoes)
				}
			}
			out = append(out, Command{Kind: k, File: u.File, Line: u.Text, What: what, Marker: marker})
		}
		return out
	}
	for _, w := range d.Writes {
		k := kindOf(w.Kind)
		out = append(out, Command{Kind: k, File: w.File, Line: w.Text, Undo: w.Undo, What: w.What, Role: w.Role, Marker: markerOf(k, w.Text)})
	}
	return out
}

// markerOf is the Marker of the command of kind k that writes text, as
// the command made from the plan would have it: the name of a synthetic
// event or probe, the first variable of a trigger. A teardown replayed
// from a plan uses it to tell what is not there (the removal of an end
// trigger whose start trigger is gone fails with EINVAL).
func markerOf(k Kind, text string) string {
	switch k {
	case KindSynth:
		def := strings.TrimPrefix(text, "s:")
		name, _, _ := strings.Cut(def, " ")
		name = strings.TrimPrefix(name, "synthetic/")
		if name != "" {
			return "/" + name + "\t"
		}
	case KindProbe:
		_, rest, ok := strings.Cut(text, ":")
		id, _, _ := strings.Cut(rest, " ")
		if ok && strings.Contains(id, "/") {
			return ":" + id + " "
		}
	case KindTrigger:
		spec, _, _ := strings.Cut(text, " if ")
		for _, seg := range strings.Split(spec, ":")[1:] {
			name, _, ok := strings.Cut(seg, "=")
			if ok && !planner.IsHistKeyword(name) && !strings.ContainsAny(name, "(.") {
				return name + "="
			}
		}
	}
	return ""
}

func kindOf(name string) Kind {
	for _, k := range []Kind{KindSynth, KindTrigger, KindDir, KindEnable, KindProbe} {
		if kindName(k) == name {
			return k
		}
	}
	return KindTrigger
}
