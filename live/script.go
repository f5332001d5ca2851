package live

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ScriptOptions say which form of a compiled query Script makes.
type ScriptOptions struct {
	// Format is script (the default), json (the plan of every write) or
	// bootconfig (boot-time tracing).
	Format string
	// Teardown makes the removals instead, each synthetic event and
	// probe disabled first.
	Teardown bool
	// Instance is the tracefs instance the triggers go in ("" for none).
	Instance string
	// Root is the tracefs root in printed paths.
	Root string
	// Catalog says where the event formats came from ("tracefs
	// /sys/kernel/tracing", "embedded --kernel 6.1"): the plan's and the
	// script's target.
	Catalog string
}

// Script is what a compiled query prints, applies (-e) or puts in a
// bootconfig: its commands, its notes, and the target it was compiled
// for.
type Script struct {
	opt    ScriptOptions
	src    *source.Source
	cmds   []emit.Command
	notes  []string
	target emit.PlanTarget
	cat    *tracefs.Catalog
	plan   *planner.Plan
	synths []emit.PlanSynthetic // the synthetic events the header names
	reads  []emit.PlanRead      // how to read the answer
	doc    *emit.PlanDoc        // the plan a replay (ReadPlanScript) read
}

// NewScript makes the commands of plan, compiled from src against cat,
// in the form opt says.
func NewScript(src *source.Source, plan *planner.Plan, cat *tracefs.Catalog, opt ScriptOptions) *Script {
	if opt.Format == "" {
		opt.Format = "script"
	}
	eopt := emit.Options{SyntheticEventsFile: !cat.Features().DynamicEvents}
	s := &Script{opt: opt, src: src, cat: cat, notes: plan.Notes, plan: plan}
	if opt.Format == "bootconfig" {
		s.cmds = emit.BootCommands(plan, eopt)
	} else {
		s.cmds = emit.Commands(plan, eopt)
	}
	if opt.Teardown {
		s.cmds = emit.DisableFirst(emit.Teardown(s.cmds), opt.Instance)
	}
	s.target = catalogTarget(cat, opt.Catalog)
	if opt.Instance != "" && opt.Format == "bootconfig" {
		s.notes = append(s.notes, "the boot creates the instance "+opt.Instance+"; after the teardown: rmdir "+emit.Quote(opt.Root+"/instances/"+opt.Instance))
	}
	if opt.Format == "bootconfig" && opt.Teardown {
		s.notes = append([]string{"removes at run time what the bootconfig of this query made at boot"}, s.notes...)
	}
	if !opt.Teardown {
		s.synths, s.reads = synthetics(plan), reads(plan)
	}
	if opt.Format == "bootconfig" && !opt.Teardown {
		for _, r := range s.reads {
			if r.Limit > 0 { // a boot-time histogram keeps every entry too
				s.notes = append(s.notes, "once booted, "+r.Line(opt.Root))
			}
		}
	}
	return s
}

// ReadPlanScript is the script of a JSON plan (-o json) read from data
// (file names it in messages): its writes, or with teardown their
// removals, and the query it was made from.
func ReadPlanScript(file string, data []byte, root string, teardown bool) (*Script, error) {
	doc, err := emit.ReadPlan(data)
	if err != nil {
		return nil, err
	}
	if doc.Instance != "" && (strings.ContainsAny(doc.Instance, "/\n") || doc.Instance == "." || doc.Instance == "..") {
		return nil, fmt.Errorf("instance %q is not an instance's name", doc.Instance)
	}
	s := &Script{opt: ScriptOptions{Format: "script", Teardown: teardown, Root: root, Instance: doc.Instance},
		src: source.NewSource(doc.Query.File, doc.Query.Text), cmds: doc.Commands(teardown)}
	if teardown {
		s.cmds = emit.DisableFirst(s.cmds, "")
	} else {
		s.synths, s.reads = doc.Synthetic, doc.Reading
	}
	for _, r := range s.reads {
		err := emit.CheckPlanFile(r.Cat)
		if err == nil && r.Enable != "" {
			err = emit.CheckPlanFile(r.Enable)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %q: %v", r.What, err)
		}
	}
	s.notes = doc.Notes
	s.target = doc.Target
	s.doc = &doc
	return s, nil
}

// SaveAlso writes, beside what s prints or applies, the other forms of
// the same compile: its teardown script to teardownOut and its JSON plan
// (-o json) to planOut ("" for neither), each with replace. One compile
// gives a reviewer the three files, for the same catalog and names; the
// files are written before anything is applied, so that a run stopped
// half way has its teardown. A replayed plan (--plan) gives its teardown.
func (s *Script) SaveAlso(teardownOut, planOut string, replace func(string, []byte) error) error {
	save := func(file string, form *Script) error {
		var b strings.Builder
		if err := form.Write(&b); err != nil {
			return err
		}
		if err := replace(file, []byte(b.String())); err != nil {
			return fmt.Errorf("writing %s: %v", file, err)
		}
		return nil
	}
	if teardownOut != "" {
		var td *Script
		if s.doc != nil {
			td = &Script{opt: ScriptOptions{Format: "script", Teardown: true, Root: s.opt.Root, Instance: s.doc.Instance},
				src: s.src, cmds: emit.DisableFirst(s.doc.Commands(true), ""), notes: s.doc.Notes, target: s.doc.Target}
		} else {
			opt := s.opt
			opt.Teardown = true
			td = NewScript(s.src, s.plan, s.cat, opt)
		}
		if err := save(teardownOut, td); err != nil {
			return err
		}
	}
	if planOut != "" && s.plan != nil {
		opt := s.opt
		opt.Format, opt.Teardown = "json", false
		if err := save(planOut, NewScript(s.src, s.plan, s.cat, opt)); err != nil {
			return err
		}
	}
	return nil
}

// Source is the query the script was compiled from.
func (s *Script) Source() *source.Source { return s.src }

// Write prints the script as -o asked: a shell script of appends, or
// the JSON plan. A bootconfig is Bootconfig's.
func (s *Script) Write(w io.Writer) error {
	if s.opt.Format == "json" {
		doc := emit.BuildPlan(s.cmds, emit.PlanOptions{Root: s.opt.Root, Source: s.src, Target: s.target, Notes: s.notes,
			Instance: s.opt.Instance, Synthetic: s.synths, Reading: s.reads})
		return emit.WritePlan(w, doc)
	}
	head := append(s.Header(), s.notes...)
	if in := s.opt.Instance; in != "" && !s.opt.Teardown {
		head = append(head, "the instance must exist: mkdir "+emit.Quote(s.opt.Root+"/instances/"+in))
	}
	if err := emit.Print(w, s.cmds, emit.PrintOptions{Root: s.opt.Root, Notes: head}); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range s.Reading() {
		for _, l := range strings.Split(r, "\n") { // a replayed plan's text stays in comments
			b.WriteString("# " + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Header is what a printed script says first, as comments: the target
// it was compiled for (release, machine, where the event formats came
// from), and each synthetic event a JOIN defines, with its fields.
func (s *Script) Header() []string {
	h := []string{"sqlhist: " + targetText(s.target)}
	for _, e := range s.synths {
		h = append(h, "synthetic event "+e.Name+": "+strings.Join(e.Fields, ", "))
	}
	return h
}

// targetText says what a script was compiled for: "compiled for Linux
// 6.1.0-57-cloud-amd64 x86_64 (event formats: embedded --kernel 6.1)".
func targetText(t emit.PlanTarget) string {
	s := "compiled for Linux " + t.Kernel
	if t.Kernel == "" {
		s = "compiled for an unknown kernel"
	}
	if t.Arch != "" {
		s += " " + t.Arch
	}
	if t.Catalog != "" {
		s += " (event formats: " + t.Catalog + ")"
	}
	return s
}

// catalogTarget is the target of a catalog, named as catalog.
func catalogTarget(cat *tracefs.Catalog, catalog string) emit.PlanTarget {
	t := emit.PlanTarget{Kernel: cat.Features().Kernel, Catalog: catalog}
	if a, _ := cat.Arch(); a != nil {
		t.Arch = a.Name
	}
	return t
}

// synthetics are the synthetic events of plan's JOINs, with their
// fields.
func synthetics(plan *planner.Plan) []emit.PlanSynthetic {
	var out []emit.PlanSynthetic
	for _, u := range plan.Units {
		if u.Synth == nil {
			continue
		}
		fields := []string{}
		for _, f := range u.Synth.Fields {
			d := f.Decl()
			if f.Unit != "" {
				d += " (" + f.Unit + ")"
			}
			fields = append(fields, d)
		}
		out = append(out, emit.PlanSynthetic{Name: u.Synth.Name, Fields: fields})
	}
	return out
}

// Reading is how to read what an applied script measures, as commands
// for the closing comments of a printed script: each histogram's hist
// file, a saving handler's hist file and a snapshot, and a JOIN's
// synthetic event enabled and read from the trace. None for a teardown.
func (s *Script) Reading() []string {
	if len(s.reads) == 0 {
		return nil
	}
	out := []string{"to read what it measures, once applied:"}
	for _, r := range s.reads {
		out = append(out, r.Line(s.opt.Root))
	}
	return out
}

// reads are the reads of plan's answers, their files relative to the
// tracefs root.
func reads(plan *planner.Plan) []emit.PlanRead {
	var out []emit.PlanRead
	seen := map[emit.PlanRead]bool{}
	add := func(r emit.PlanRead) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	dir := func(instance string) string {
		if instance == "" {
			return ""
		}
		return "instances/" + instance + "/"
	}
	for _, u := range plan.Units {
		if u.Feeds {
			continue
		}
		for _, h := range []*planner.Hist{u.Start, u.End} {
			if h == nil {
				continue
			}
			saves := false
			for _, a := range h.Actions {
				saves = saves || a.Kind == planner.ActSave
				if a.Kind == planner.ActSnapshot {
					add(emit.PlanRead{What: "the trace buffer when the handler fired", Cat: dir(h.Instance) + "snapshot"})
				}
			}
			if u.Synth == nil && h == u.Start || saves {
				r := emit.PlanRead{What: "the answer", Cat: dir(h.Instance) + "events/" + h.System + "/" + h.Event + "/hist"}
				if h.Limit > 0 && h == u.Start {
					r.What, r.Limit = fmt.Sprintf("the answer, its first %d entries (LIMIT %d)", h.Limit, h.Limit), h.Limit
				}
				add(r)
			}
		}
		if u.Synth != nil && !u.Intermediate {
			d := dir(u.Start.Instance)
			add(emit.PlanRead{What: "each " + u.Synth.Name + " event", Enable: d + "events/synthetic/" + u.Synth.Name + "/enable", Cat: d + "trace"})
		}
	}
	return out
}

// Apply applies the commands to t, all or nothing (-e); a missing
// instance is created first, with a note on log. With Teardown, the
// removals that find nothing to remove are skipped and named on log.
func (s *Script) Apply(t *Target, log io.Writer) error {
	cmds := s.cmds
	if s.opt.Teardown {
		skipped, err := TeardownSkipped(t, cmds)
		if len(skipped) > 0 {
			n := 0
			for _, c := range cmds {
				if c.Kind != emit.KindEnable {
					n++
				}
			}
			var names []string
			for _, c := range skipped {
				names = append(names, strings.TrimPrefix(c.What, "removal of the "))
			}
			fmt.Fprintf(log, "sqlhist: note: %d of the %d removals found nothing to remove (never made, or removed already), skipped: %s\n",
				len(skipped), n, strings.Join(names, "; "))
		}
		return err
	}
	if in := s.opt.Instance; in != "" && !t.HasInstance(in) {
		fmt.Fprintf(log, "sqlhist: creating instance %s; it stays after --teardown (rmdir %s when done)\n", in, emit.Quote(filepath.Join(t.Root, "instances", in)))
		cmds = append([]emit.Command{emit.Instance(in)}, cmds...)
	}
	return Apply(t, cmds)
}

// ApplyAll applies scripts (-e with several --plan files) in order, all
// or nothing: when one is refused, those applied before it are removed
// again, the last first, and the refusal is returned with the index of
// its script. Teardowns (each script's opt.Teardown) go on past
// failures, which come back joined (index -1 when there are none).
func ApplyAll(t *Target, scripts []*Script, log io.Writer) (int, error) {
	var errs []error
	first := -1
	for i, s := range scripts {
		err := s.Apply(t, log)
		if err == nil {
			continue
		}
		if !s.opt.Teardown {
			for j := i - 1; j >= 0; j-- {
				if uerr := Teardown(t, scripts[j].undo()); uerr != nil {
					fmt.Fprintf(log, "sqlhist: undoing %s: %v\n", scripts[j].src.Name, uerr)
				}
			}
			return i, err
		}
		if first < 0 {
			first = i
		}
		errs = append(errs, err)
	}
	return first, errors.Join(errs...)
}

// undo is the removal of what an applied script made.
func (s *Script) undo() []emit.Command {
	if s.doc != nil {
		return emit.DisableFirst(s.doc.Commands(true), "")
	}
	return emit.DisableFirst(emit.Teardown(s.cmds), s.opt.Instance)
}

// Bootconfig is the script as a bootconfig (-o bootconfig), or the
// diagnostics that refuse it.
func (s *Script) Bootconfig() (string, source.Diags) {
	bopt := s.bootOptions()
	return emit.Bootconfig(s.cmds, bopt)
}

func (s *Script) bootOptions() emit.BootOptions {
	bopt := emit.BootOptions{Release: s.target.Kernel, Arch: s.target.Arch, Features: s.cat.Features()}
	bopt.Header = emit.BootHeader(s.src, bopt, s.cmds, s.notes)
	return bopt
}

// AddToInitrd adds the bootconfig text (Bootconfig's) to an initrd's
// bytes, after the sqlhist bootconfigs it carries: the new initrd, and
// what was done, for a message ("added a bootconfig of N bytes …"); same
// when its bootconfig already held this one (then out is nil).
func (s *Script) AddToInitrd(initrd []byte, text string) (out []byte, what string, same bool, err error) {
	bopt := s.bootOptions()
	data, old, had, err := emit.SplitBootconfig(initrd)
	var merged string
	if err == nil {
		merged, same, err = emit.MergeBootconfig(old, text, s.cmds, bopt)
	}
	if err != nil || same {
		return nil, "", same, err
	}
	out = emit.AttachBootconfig(data, merged)
	what = "added a bootconfig of " + strconv.Itoa(len(text)) + " bytes"
	if had {
		what += " to the sqlhist bootconfig it carried (" + strconv.Itoa(len(merged)) + " bytes of bootconfig now)"
	}
	return out, what, false, nil
}

// AddBootconfigTo adds the script's bootconfig text (Bootconfig's) to
// the initrd file path, read with read and replaced whole with replace:
// the message that says what was done ("PATH: added a bootconfig of N
// bytes, …"). On an error the file is left as it was.
func (s *Script) AddBootconfigTo(path, text string, read func(string) ([]byte, error), replace func(string, []byte) error) (string, error) {
	data, err := read(path)
	if err != nil {
		return "", fmt.Errorf("--initrd: %v", err)
	}
	out, what, same, err := s.AddToInitrd(data, text)
	if err == nil && !same {
		err = replace(path, out)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("--initrd %s: %v; the file is left as it was", path, err)
	case same:
		return path + ": its bootconfig already holds this one; the file is left as it was", nil
	}
	return fmt.Sprintf("%s: %s, %d bytes in all; boot with \"bootconfig\" on the kernel command line", path, what, len(out)), nil
}
