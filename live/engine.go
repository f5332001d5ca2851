package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// engine is the part of a run that computes its answer. Run drives every
// engine the same way: it applies the run's tracefs writes (an engine may
// need none), starts the engine, reads the histograms as they are (at
// each interval and at the end), stops the sources so that what is read
// next is final, and removes what it wrote. The kernel's hist triggers,
// the stream engine and the awk engine's output read back through --via
// are engines; which one runs is chosen in one place ([ChooseEngine]).
type engine interface {
	// name is the engine as the table and JSON name it (EngineKernel,
	// EngineStream, EngineAwk).
	name() string
	// start begins the collection, once the run's tracefs writes are in.
	start() error
	// sync makes the next reading include what the sources gave so far.
	sync()
	// histograms reads the histograms of one of the plan's hist files
	// (instances/…/events/SYSTEM/EVENT/hist) as they are now.
	histograms(file string) ([]*tracefs.Histogram, error)
	// lost is how many events the engine's sources lost so far: final
	// once stopped.
	lost() int
	// stop stops the sources, so that what is read next is final, and
	// returns the events they lost; a second call does nothing.
	stop() (lost int, err error)
}

// EngineChoice is the engine that answers a run and why it was chosen.
type EngineChoice struct {
	Engine string // EngineKernel or EngineStream
	// Reason says why, for the table and JSON: "asked for with
	// --engine stream", "this kernel has no hist triggers".
	Reason string
}

// ChooseEngine picks the engine for a run from the choice given ("",
// "auto", "bpf", "kernel", "stream" or "awk"), the target's features
// and whether the BPF engine can run there (noBPF nil when it can, else
// why not: see [BPFTarget], or the BPF engine's refusal of the query):
// the one place that decides. Auto takes the cheapest engine that works:
// BPF, then the kernel's hist triggers, then the stream.
func ChooseEngine(want string, feat tracefs.Features, noBPF error) (EngineChoice, error) {
	switch want {
	case "", EngineAuto:
		if noBPF == nil {
			return EngineChoice{EngineBPF, "auto: BPF programs load here, the cheapest engine"}, nil
		}
		why := "; no BPF: " + noBPF.Error()
		switch {
		case feat.HistTriggers && feat.SyntheticEvents:
			return EngineChoice{EngineKernel, "auto: the kernel has hist triggers and synthetic events" + why}, nil
		case !feat.HistTriggers:
			return EngineChoice{EngineStream, "auto: this kernel has no hist triggers" + why}, nil
		}
		return EngineChoice{EngineStream, "auto: this kernel has no synthetic events" + why}, nil
	case EngineBPF, EngineKernel, EngineStream:
		return EngineChoice{want, "asked for with --engine " + want}, nil
	case EngineAwk:
		// The stream engine's plan, computed by the target's awk
		// where the run reaches it through a shell (RunAwkVia).
		return EngineChoice{EngineStream, "asked for with --engine awk"}, nil
	}
	return EngineChoice{}, fmt.Errorf("--engine %q: give bpf, kernel, stream, awk or auto", want)
}

// PickEngine resolves an engine choice for a target with the features
// feat where the BPF engine cannot run (see [ChooseEngine]).
func PickEngine(want string, feat tracefs.Features) (string, error) {
	c, err := ChooseEngine(want, feat, errors.New("not asked"))
	return c.Engine, err
}

// eventFeeder is an engine that computes the synthetic events itself and
// hands them to --events' streamer (the stream and BPF engines); the
// kernel's are read from trace_pipe.
type eventFeeder interface {
	// streamer returns the streamer the engine feeds, writing to w.
	streamer(w io.Writer, plan *planner.Plan, format string) *streamer
}

// kernelEngine is the kernel's hist triggers: what it computed is read
// from the hist files; stopping removes the end triggers (no synthetic
// event fires after) and pauses the histograms.
type kernelEngine struct {
	r       *runState
	first   []emit.Command // the end triggers' removals
	stopped bool
}

func (k *kernelEngine) name() string { return EngineKernel }
func (k *kernelEngine) start() error { return nil }
func (k *kernelEngine) sync()        {}
func (k *kernelEngine) lost() int    { return 0 }

func (k *kernelEngine) histograms(file string) ([]*tracefs.Histogram, error) {
	wait := settleFirstWait
	for start := time.Now(); ; {
		data, err := fs.ReadFile(k.r.t.FS, file)
		if err != nil {
			return nil, err
		}
		hs, err := parseHistFile(file, data)
		if err != nil || !k.stopped || !pausedInFlight(hs) || time.Since(start) >= settleMax {
			return hs, err
		}
		time.Sleep(wait)
		wait = min(2*wait, settleMax/4)
	}
}

// settleFirstWait and settleMax bound the reads again of a paused
// histogram printed with a hit its entries do not show yet
// (pausedInFlight): first after 5 ms, then twice as long each time, for
// at most 2 s in all.
var (
	settleFirstWait = 5 * time.Millisecond
	settleMax       = 2 * time.Second
)

// pausedInFlight reports whether a paused histogram among hs was printed
// while an event was still going into it: a CPU that was inside the
// trigger when the pause came finishes its update after (the pause does
// not wait for it). A fleet's merged count read from such a file was one
// short of its Totals under a loaded host (CI, 2026-12-06: rows summing
// to 710 of 711 hits).
func pausedInFlight(hs []*tracefs.Histogram) bool {
	for _, h := range hs {
		if h.Paused && h.InFlight() {
			return true
		}
	}
	return false
}

func (k *kernelEngine) stop() (int, error) {
	if k.stopped {
		return 0, nil
	}
	k.stopped = true
	// The end triggers first: then no synthetic event fires, and pausing
	// the histograms stops the rest.
	err := Teardown(k.r.t, k.first)
	k.r.pauseHistograms()
	return 0, err
}

// streamEngine is the stream engine: sqlhist reads the events from the
// ring buffers and computes the triggers (package stream).
type streamEngine struct {
	s       *streamRun
	arch    *tracefs.Arch
	events  bool // the synthetic events are streamed (--events)
	stopped bool
	total   int // the events lost, once stopped
}

func (e *streamEngine) name() string { return EngineStream }

func (e *streamEngine) streamer(w io.Writer, plan *planner.Plan, format string) *streamer {
	e.s.events = newStreamer(w, plan, format)
	return e.s.events
}
func (e *streamEngine) start() error { return e.s.start(e.arch, e.events) }
func (e *streamEngine) sync()        { e.s.sync() }

func (e *streamEngine) lost() int {
	if e.stopped {
		return e.total
	}
	return max(e.s.lost()-e.s.lostBefore, 0)
}

func (e *streamEngine) histograms(file string) ([]*tracefs.Histogram, error) {
	return e.s.histograms(file)
}

func (e *streamEngine) stop() (int, error) {
	if e.stopped {
		return 0, nil
	}
	e.stopped = true
	lost, err := e.s.finish()
	e.total = lost
	return lost, err
}

// awkEngine is what the awk engine's program printed on a target reached
// through a shell (RunAwkVia): the hist files of one reading.
type awkEngine struct{ out *AwkOutput }

func (a *awkEngine) name() string       { return EngineAwk }
func (a *awkEngine) start() error       { return nil }
func (a *awkEngine) sync()              {}
func (a *awkEngine) lost() int          { return int(min(a.out.Lost, 1<<31)) }
func (a *awkEngine) stop() (int, error) { return a.lost(), nil }

func (a *awkEngine) histograms(file string) ([]*tracefs.Histogram, error) {
	data, err := a.out.hist(file)
	if err != nil {
		return nil, err
	}
	return parseHistFile(file, data)
}

// parseHistFile parses the text of a hist file the kernel (or the awk
// engine, which prints the kernel's format) wrote.
func parseHistFile(file string, data []byte) ([]*tracefs.Histogram, error) {
	hs, err := tracefs.ParseHist(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return hs, nil
}
