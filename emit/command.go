package emit

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/planner"
)

// Kind says what a command creates.
type Kind int

// The kinds of command.
const (
	KindSynth   Kind = iota // a synthetic event definition in dynamic_events
	KindTrigger             // a hist trigger
	KindProbe               // a kprobe, uprobe or eprobe definition in dynamic_events
)

// Command is one write: Line appended to File (relative to the tracefs
// root). Undo is the line, appended to the same file, that removes what
// Line created.
type Command struct {
	Kind     Kind
	File     string
	Line     string
	Undo     string
	What     string       // for messages: "synthetic event wakeup_lat", "start trigger on sched/sched_waking"
	Pos, End compiler.Pos // the SQL that produced the command
	// Marker is text that only what this command creates shows in File's
	// listing (a variable or synthetic event name, unique to the query);
	// empty when there is none.
	Marker string
}

// Options control lowering.
type Options struct {
	// SyntheticEventsFile makes synthetic events go to synthetic_events
	// (kernels before 5.0, which have no dynamic_events).
	SyntheticEventsFile bool
}

// Commands lowers a plan into the commands that create it, in order:
// probes, synthetic event, start trigger, end trigger, statement by
// statement.
func Commands(p *planner.Plan, opt Options) []Command {
	var out []Command
	for _, u := range p.Units {
		for _, pr := range u.Probes {
			out = append(out, probeCommand(pr))
		}
		if u.Synth != nil {
			out = append(out, synthCommand(u.Synth, opt))
		}
		if u.Start != nil {
			out = append(out, triggerCommand(u.Start))
		}
		if u.End != nil {
			out = append(out, triggerCommand(u.End))
		}
	}
	return out
}

func synthCommand(s *planner.Synth, opt Options) Command {
	c := Command{Kind: KindSynth, What: "synthetic event " + s.Name, Pos: s.Pos, End: s.End, Marker: "/" + s.Name + "\t"}
	if opt.SyntheticEventsFile {
		c.File = "synthetic_events"
		c.Line = s.Name + " " + s.Definition()
		c.Undo = "!" + s.Name
	} else {
		c.File = "dynamic_events"
		c.Line = "s:" + s.Name + " " + s.Definition()
		c.Undo = "-:" + s.Name
	}
	return c
}

// probeCommand defines a probe event. Every probe type goes to
// dynamic_events (uprobes too: Linux 5.0 and later take them there).
func probeCommand(pr *planner.Probe) Command {
	id := planner.ProbeGroup + "/" + pr.Name
	return Command{
		Kind:   KindProbe,
		File:   "dynamic_events",
		Line:   pr.Line,
		Undo:   "-:" + id,
		What:   pr.Kind.String() + " " + id,
		Pos:    pr.Pos,
		End:    pr.End,
		Marker: ":" + id + " ",
	}
}

func triggerCommand(h *planner.Hist) Command {
	spec := h.Spec()
	marker := ""
	if len(h.Vars) > 0 {
		marker = h.Vars[0].Name + "="
	}
	return Command{
		Marker: marker,
		Kind:   KindTrigger,
		File:   h.TriggerFile(),
		Line:   spec,
		Undo:   "!" + spec,
		What:   h.Role + " trigger on " + h.System + "/" + h.Event,
		Pos:    h.Pos,
		End:    h.End,
	}
}

// Teardown returns the commands that remove what cmds create, in the order
// the kernel requires: the reverse of creation (end triggers reference the
// start triggers' variables, and triggers hold their synthetic events).
func Teardown(cmds []Command) []Command {
	out := make([]Command, 0, len(cmds))
	for i := len(cmds) - 1; i >= 0; i-- {
		c := cmds[i]
		out = append(out, Command{Kind: c.Kind, File: c.File, Line: c.Undo, Undo: c.Line, What: "removal of the " + c.What, Pos: c.Pos, End: c.End, Marker: c.Marker})
	}
	return out
}
