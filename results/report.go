package results

import (
	"fmt"
	"io"
	"time"
)

// The engines a report names: the kernel's hist triggers, the stream
// engine (events read from the ring buffer and counted in Go), the BPF
// engine and the awk script. live's EngineKernel, EngineStream, EngineBPF
// and EngineAwk are the same names.
const (
	EngineKernel = "kernel"
	EngineStream = "stream"
	EngineBPF    = "bpf"
	EngineAwk    = "awk"
)

// Report is what a run (live.Run) read.
type Report struct {
	Results []*Result
	// Streamed counts the events streamed to Options.Events, by synthetic
	// event; Lost the events the kernel reported lost before they were
	// read.
	Streamed map[string]int
	Lost     int
	// Engine is the engine that answered: EngineKernel or EngineStream,
	// and EngineReason why.
	Engine, EngineReason string
}

// Interval is what one interval of a run collected, alone: its rows count
// the events between its start and its end.
type Interval struct {
	N          int           // 1 for the first
	Start, End time.Duration // since the collection began
	// Partial is set on the last interval when the collection ended
	// before a whole Interval.
	Partial bool
	Results []*Result
}

// Write prints a report as sqlhist -r does: warnings on errw; then, when
// the events were streamed, how many against the kernel's count (on errw),
// else the results on w in format (see [Write]), with the Totals on errw
// for CSV, which has no place for them.
func (rep *Report) Write(w, errw io.Writer, format string) error {
	for _, res := range rep.Results {
		res.WriteWarnings(errw)
	}
	if len(rep.Results) > 0 && rep.Results[0].Lost > 0 && rep.Streamed == nil {
		if rep.Results[0].Engine == EngineBPF {
			fmt.Fprintf(errw, "sqlhist: warning: the kernel skipped the BPF engine's programs %d times (another BPF program ran on the CPU, as when an interrupt's wakeup comes during one): those events are not counted, the answer is not whole\n", rep.Results[0].Lost)
		} else {
			fmt.Fprintf(errw, "sqlhist: warning: the stream engine lost %d events (its ring buffers filled before they were read): the answer is not whole\n", rep.Results[0].Lost)
		}
	}
	if rep.Streamed != nil {
		rep.WriteStreamSummary(errw)
		return nil
	}
	if err := Write(w, rep.Results, format); err != nil {
		return err
	}
	if format == "csv" {
		for _, res := range rep.Results {
			t := res.Totals()
			fmt.Fprintf(errw, "sqlhist: %s: %s\n", res.Title, totalsText(t))
		}
	}
	return nil
}

// WriteStreamSummary tells, after streaming, how many events were streamed
// and what the kernel counted, which should agree.
func (rep *Report) WriteStreamSummary(w io.Writer) {
	for _, res := range rep.Results {
		name := ""
		switch u := res.Unit; {
		case u.Synth != nil:
			name = u.Synth.Name
		case u.Start != nil && u.Start.System == "synthetic":
			// a histogram on a synthetic event: it counts every one
			if _, ok := rep.Streamed[u.Start.Event]; ok {
				name = u.Start.Event
			}
		}
		if name == "" {
			continue
		}
		t := res.Read.Totals
		fmt.Fprintf(w, "sqlhist: synthetic/%s: %d events streamed; the kernel counted %d (entries %d, dropped %d)\n",
			name, rep.Streamed[name], t.Hits, t.Entries, t.Dropped)
	}
	if rep.Lost > 0 {
		fmt.Fprintf(w, "sqlhist: warning: the kernel lost %d events before they were read (the buffer was full): enlarge instances/<name>/buffer_size_kb\n", rep.Lost)
	}
}
