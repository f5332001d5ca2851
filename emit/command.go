package emit

import (
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
)

// Kind says what a command creates.
type Kind int

// The kinds of command.
const (
	KindSynth   Kind = iota // a synthetic event definition in dynamic_events
	KindTrigger             // a hist trigger
	// KindDir creates (Line "mkdir") or removes (Line "rmdir") the
	// directory File: a tracefs instance.
	KindDir
	// KindEnable writes "1" (or "0") to an event's enable file.
	KindEnable
	KindProbe // a kprobe, uprobe or eprobe definition in dynamic_events
	// KindFilter writes an event filter to an event's filter file (the
	// stream engine's); its undo, "0", clears it.
	KindFilter
	// KindSetting writes a value to a file of the run's own instance
	// (trace_clock, buffer_size_kb): removing the instance undoes it, so
	// its Undo is empty and its teardown writes nothing.
	KindSetting
)

// Command is one write: Line appended to File (relative to the tracefs
// root). Undo is the line, appended to the same file, that removes what
// Line created.
type Command struct {
	Kind     Kind
	File     string
	Line     string
	Undo     string
	What     string     // for messages: "synthetic event wakeup_lat", "start trigger on sched/sched_waking"
	Pos, End source.Pos // the SQL that produced the command
	// Marker is text that only what this command creates shows in File's
	// listing (a variable or synthetic event name, unique to the query);
	// empty when there is none.
	Marker string
	// Role is, for a trigger, the planner's role of its hist: "start",
	// "end", "histogram" or "results".
	Role string
	// SpanPos and SpanEnd, when set, are the SQL a JSON plan shows for the
	// command instead of Pos and End (which place its diagnostics).
	SpanPos, SpanEnd source.Pos
	// What the command was lowered from (one of them, by Kind; nil in
	// commands read back from a JSON plan): renderers other than the
	// shell script (the bootconfig) need the parts, not the line.
	Hist  *planner.Hist
	Synth *planner.Synth
	Probe *planner.Probe
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
			out = append(out, unitSynth(u, opt))
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

// unitSynth is the command defining a unit's synthetic event. Its
// diagnostics point at the JOIN; when the planner gave the event no span
// of its own, the statement is its span in a JSON plan.
func unitSynth(u *planner.Unit, opt Options) Command {
	c := synthCommand(u.Synth, opt)
	if c.End <= c.Pos && u.Query != nil && u.Query.End > u.Query.Pos {
		c.SpanPos, c.SpanEnd = u.Query.Pos, u.Query.End
	}
	return c
}

func synthCommand(s *planner.Synth, opt Options) Command {
	c := Command{Kind: KindSynth, What: "synthetic event " + s.Name, Pos: s.Pos, End: s.End, Marker: "/" + s.Name + "\t", Synth: s}
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
	id := pr.Group + "/" + pr.Name
	return Command{
		Kind:   KindProbe,
		File:   "dynamic_events",
		Line:   pr.Line,
		Undo:   "-:" + id,
		What:   pr.Kind.String() + " " + id,
		Pos:    pr.Pos,
		End:    pr.End,
		Marker: ":" + id + " ",
		Probe:  pr,
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
		Role:   h.Role,
		Pos:    h.Pos,
		End:    h.End,
		Hist:   h,
	}
}

// Teardown returns the commands that remove what cmds create, in the order
// the kernel requires: the reverse of creation (end triggers reference the
// start triggers' variables, and triggers hold their synthetic events).
func Teardown(cmds []Command) []Command {
	out := make([]Command, 0, len(cmds))
	for i := len(cmds) - 1; i >= 0; i-- {
		c := cmds[i]
		if c.Kind == KindSetting {
			continue // undone by the removal of its instance
		}
		out = append(out, Command{Kind: c.Kind, File: c.File, Line: c.Undo, Undo: c.Line, What: "removal of the " + c.What, Pos: c.Pos, End: c.End, Marker: c.Marker, Role: c.Role,
			Hist: c.Hist, Synth: c.Synth, Probe: c.Probe, SpanPos: c.SpanPos, SpanEnd: c.SpanEnd})
	}
	return out
}

// DisableFirst returns the teardown td (from Teardown) with a write of
// "0" to the enable file of each synthetic event and probe it removes,
// just before the removal: the kernel refuses to remove an enabled event
// (EBUSY), and users enable synthetic events to see their lines in trace
// (a bootconfig does too). The event's file at the top level is written,
// and in instance when one is given (its triggers' instance). Writing 0 to
// a disabled event's enable is accepted and changes nothing. A file td
// already disables is not written twice.
func DisableFirst(td []Command, instance string) []Command {
	done := map[string]bool{}
	for _, c := range td {
		if c.Kind == KindEnable && c.Line == "0" {
			done[c.File] = true
		}
	}
	out := make([]Command, 0, len(td))
	for _, c := range td {
		ev := removedEvent(c)
		if ev == "" {
			out = append(out, c)
			continue
		}
		files := []string{"events/" + ev + "/enable"}
		if instance != "" {
			files = append(files, "instances/"+instance+"/events/"+ev+"/enable")
		}
		for _, f := range files {
			if !done[f] {
				done[f] = true
				out = append(out, Command{Kind: KindEnable, File: f, Line: "0", Undo: "1", What: "disable of " + ev,
					Pos: c.Pos, End: c.End, Synth: c.Synth, Probe: c.Probe})
			}
		}
		out = append(out, c)
	}
	return out
}

// removedEvent is "system/event" of the synthetic event or probe a
// removal command removes ("-:NAME" or "!NAME" for a synthetic event,
// "-:GROUP/NAME" for a probe), else "".
func removedEvent(c Command) string {
	switch c.Kind {
	case KindSynth:
		name, ok := strings.CutPrefix(c.Line, "-:")
		if !ok {
			name, ok = strings.CutPrefix(c.Line, "!")
		}
		name = strings.TrimPrefix(name, "synthetic/")
		if ok && name != "" && !strings.ContainsAny(name, "/ ") {
			return "synthetic/" + name
		}
	case KindProbe:
		id, ok := strings.CutPrefix(c.Line, "-:")
		if g, n, two := strings.Cut(id, "/"); ok && two && g != "" && n != "" && !strings.ContainsAny(id, " ") {
			return id
		}
	}
	return ""
}

// RunOptions shape the commands of a --run: where they go and what is
// added to read the results.
type RunOptions struct {
	// Instance is the tracefs instance the triggers are in ("" for the
	// top level); CreateInstance makes the commands create it first (and
	// the teardown remove it last).
	Instance       string
	CreateInstance bool
	// Enable enables each synthetic event in the instance, so that its
	// events are recorded in the instance's buffer (for --events).
	Enable bool
}

// Instance is the command that creates the tracefs instance name (and
// whose undo removes it).
func Instance(name string) Command {
	return Command{Kind: KindDir, File: "instances/" + name, Line: "mkdir", Undo: "rmdir", What: "instance " + name}
}

// RunCommands lowers a plan planned for --run so that every event is
// counted by everything that reads it: the instance when it is created,
// every probe and synthetic event, then the statements' triggers from the
// last statement to the first, each statement's results histogram and
// enable before its start and end triggers. A trigger that reads a
// synthetic event is then in place before the trigger that fires it.
func RunCommands(p *planner.Plan, opt Options, run RunOptions) []Command {
	var out []Command
	if run.CreateInstance {
		out = append(out, Instance(run.Instance))
	}
	for _, u := range p.Units {
		for _, pr := range u.Probes {
			out = append(out, probeCommand(pr))
		}
	}
	for _, u := range p.Units {
		if u.Synth != nil {
			out = append(out, unitSynth(u, opt))
		}
	}
	for i := len(p.Units) - 1; i >= 0; i-- {
		u := p.Units[i]
		if u.Results != nil {
			c := triggerCommand(u.Results)
			c.What = "results histogram on synthetic/" + u.Synth.Name
			out = append(out, c)
		}
		if u.Negatives != nil {
			c := triggerCommand(u.Negatives)
			c.What = "negative-latency counter on synthetic/" + u.Synth.Name
			out = append(out, c)
		}
		if run.Enable && u.Synth != nil && !u.Intermediate {
			f := "events/synthetic/" + u.Synth.Name + "/enable"
			if run.Instance != "" {
				f = "instances/" + run.Instance + "/" + f
			}
			out = append(out, Command{Kind: KindEnable, File: f, Line: "1", Undo: "0", What: "enable of synthetic/" + u.Synth.Name, Pos: u.Synth.Pos, End: u.Synth.End})
		}
		for _, h := range []*planner.Hist{u.Start, u.End} {
			if h != nil {
				out = append(out, triggerCommand(h))
			}
		}
	}
	return out
}
