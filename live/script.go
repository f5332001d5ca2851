package live

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/source"
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
	cat    *Catalog
}

// NewScript makes the commands of plan, compiled from src against cat,
// in the form opt says.
func NewScript(src *source.Source, plan *Plan, cat *Catalog, opt ScriptOptions) *Script {
	if opt.Format == "" {
		opt.Format = "script"
	}
	eopt := emit.Options{SyntheticEventsFile: !cat.Features().DynamicEvents}
	s := &Script{opt: opt, src: src, cat: cat, notes: plan.Notes}
	if opt.Format == "bootconfig" {
		s.cmds = emit.BootCommands(plan, eopt)
	} else {
		s.cmds = emit.Commands(plan, eopt)
	}
	if opt.Teardown {
		s.cmds = emit.DisableFirst(emit.Teardown(s.cmds), opt.Instance)
	}
	s.target = emit.PlanTarget{Kernel: cat.Features().Kernel, Catalog: opt.Catalog}
	if a, _ := cat.Arch(); a != nil {
		s.target.Arch = a.Name
	}
	switch {
	case opt.Instance != "" && opt.Format == "bootconfig":
		s.notes = append(s.notes, "the boot creates the instance "+opt.Instance+"; after the teardown: rmdir "+emit.Quote(opt.Root+"/instances/"+opt.Instance))
	case opt.Instance != "" && !opt.Teardown:
		s.notes = append(s.notes, "the instance must exist: mkdir "+emit.Quote(opt.Root+"/instances/"+opt.Instance))
	}
	if opt.Format == "bootconfig" && opt.Teardown {
		s.notes = append([]string{"removes at run time what the bootconfig of this query made at boot"}, s.notes...)
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
	s := &Script{opt: ScriptOptions{Format: "script", Teardown: teardown, Root: root},
		src: source.NewSource(doc.Query.File, doc.Query.Text), cmds: doc.Commands(teardown)}
	if teardown {
		s.cmds = emit.DisableFirst(s.cmds, "")
	}
	s.notes = append([]string{"the writes of the plan " + file}, doc.Notes...)
	s.target = doc.Target
	return s, nil
}

// Source is the query the script was compiled from.
func (s *Script) Source() *source.Source { return s.src }

// Write prints the script as -o asked: a shell script of appends, or
// the JSON plan. A bootconfig is Bootconfig's.
func (s *Script) Write(w io.Writer) error {
	if s.opt.Format == "json" {
		doc := emit.BuildPlan(s.cmds, emit.PlanOptions{Root: s.opt.Root, Source: s.src, Target: s.target, Notes: s.notes})
		return emit.WritePlan(w, doc)
	}
	return emit.Print(w, s.cmds, emit.PrintOptions{Root: s.opt.Root, Notes: s.notes})
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
