package emit

import (
	"strconv"

	"github.com/sqlhist/sqlhist/planner"
)

// StreamEvent is an event the stream engine reads: its filter (the
// filters of the triggers the engine computes on it, joined by ||; ""
// for all of its events) and whether each of its events must be
// followed by the kernel stack (a stacktrace key).
type StreamEvent struct {
	System, Event string
	Filter        string
	Stack         bool
}

// StreamOptions say how the stream engine's instance is set up.
type StreamOptions struct {
	Instance       string
	CreateInstance bool
	// Own says that the instance is the run's although these commands
	// do not create it (a stream run's lease, made before them): its
	// settings are written as in an instance they create.
	Own bool
	// Clock is the instance's trace_clock ("global": the clock hist
	// triggers stamp with); "" leaves it. Clock and BufferKB are set
	// only in an instance of the run's (CreateInstance, Own).
	Clock string
	// BufferKB is the instance's buffer_size_kb (per CPU); 0 leaves it.
	BufferKB int
	// NoWait sets the instance's buffer_percent to 0, so that a read of
	// trace_pipe_raw returns as soon as the buffer holds an event (a
	// reader that cannot read without blocking: a shell's dd).
	NoWait bool
	// Text says that the reader parses the instance's trace_pipe as
	// text (the awk engine): the instance is set to print the kernel's
	// default text whatever options it took from the top level (a new
	// instance copies them): hex, bin and raw off, context-info on,
	// latency-format off. Set only in an instance of the run's.
	Text bool
}

// textDefaults are the trace options that change how an event prints,
// each with the value of the kernel's default text; every one is an
// instance's own (none of TOP_LEVEL_TRACE_FLAGS) and has a file in its
// options directory on every kernel.
var textDefaults = [][2]string{{"hex", "0"}, {"bin", "0"}, {"raw", "0"}, {"context-info", "1"}, {"latency-format", "0"}}

// StreamCommands lowers a plan for the stream engine, which computes the
// plan's hist triggers and synthetic events itself from the events the
// kernel records: the instance, the plan's probes, the instance's clock
// and buffer size, then for each event it reads its filter, a stacktrace
// trigger when its stacks are keys, and its enable. No hist trigger and
// no synthetic event is written: a kernel without them runs it.
func StreamCommands(p *planner.Plan, events []StreamEvent, opt StreamOptions) []Command {
	var out []Command
	if opt.CreateInstance {
		out = append(out, Instance(opt.Instance))
	}
	seen := map[string]bool{}
	for _, u := range p.Units {
		for _, pr := range u.Probes {
			if c := probeCommand(pr); !seen[c.Line] {
				seen[c.Line] = true
				out = append(out, c)
			}
		}
	}
	dir := "instances/" + opt.Instance + "/"
	if !opt.CreateInstance && !opt.Own {
		// An instance the run did not make (-B): its settings are its
		// owner's, and stay.
		opt.Clock, opt.BufferKB, opt.NoWait, opt.Text = "", 0, false, false
	}
	if opt.Text {
		for _, o := range textDefaults {
			out = append(out, Command{Kind: KindSetting, File: dir + "options/" + o[0], Line: o[1], What: "trace option " + o[0] + " of instance " + opt.Instance})
		}
	}
	if opt.NoWait {
		out = append(out, Command{Kind: KindSetting, File: dir + "buffer_percent", Line: "0", What: "buffer_percent of instance " + opt.Instance})
	}
	if opt.Clock != "" {
		out = append(out, Command{Kind: KindSetting, File: dir + "trace_clock", Line: opt.Clock, What: "trace clock of instance " + opt.Instance})
	}
	if opt.BufferKB > 0 {
		out = append(out, Command{Kind: KindSetting, File: dir + "buffer_size_kb", Line: strconv.Itoa(opt.BufferKB), What: "buffer size of instance " + opt.Instance})
	}
	for _, ev := range events {
		name := ev.System + "/" + ev.Event
		evDir := dir + "events/" + name + "/"
		if ev.Filter != "" {
			out = append(out, Command{Kind: KindFilter, File: evDir + "filter", Line: ev.Filter, Undo: "0", What: "filter of " + name})
		}
		if ev.Stack {
			line := "stacktrace"
			if ev.Filter != "" {
				line += " if " + ev.Filter
			}
			out = append(out, Command{Kind: KindTrigger, File: evDir + "trigger", Line: line, Undo: "!" + line, What: "stacktrace trigger on " + name, Role: "stack"})
		}
		out = append(out, Command{Kind: KindEnable, File: evDir + "enable", Line: "1", Undo: "0", What: "enable of " + name})
	}
	return out
}
