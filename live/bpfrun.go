package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/bpf"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// EngineBPF compiles the plan's triggers (the stream engine's plan) into
// BPF programs and maps (package bpf), attached to the events'
// tracepoints of this machine and to the plan's kprobes and uprobes
// through the kernel's perf PMUs: nothing is written to tracefs, and a
// run killed at any point leaves nothing (its programs, maps, links and
// probes are file descriptors of the process).
const EngineBPF = "bpf"

// EngineUnavailable says that an engine cannot answer a plan on a
// target, before anything was written or attached: the caller may choose
// another (ChooseEngine with the reason).
type EngineUnavailable struct {
	Engine string
	Reason string
	// Diag is where in the SQL the engine stopped (the trigger a BPF
	// program of which the verifier refused), with the verifier's lines;
	// nil when the reason is the target's.
	Diag *source.Diag
}

func (e *EngineUnavailable) Error() string {
	return "the " + e.Engine + " engine cannot run this here: " + e.Reason
}

// unavailable wraps an error of package bpf: a *bpf.Error is placed at
// the trigger it names.
func unavailable(err error, hists []*planner.Hist) *EngineUnavailable {
	u := &EngineUnavailable{Engine: EngineBPF, Reason: err.Error()}
	var be *bpf.Error
	if errors.As(err, &be) {
		u.Reason = strings.TrimPrefix(be.Reason, "the BPF engine: ")
		if be.What != "" {
			u.Reason = be.What + ": " + u.Reason
		}
		if be.Trigger >= 0 && be.Trigger < len(hists) {
			h := hists[be.Trigger]
			pos, end := h.Pos, h.End
			if be.Probe != nil {
				// A probe's argument or the kernel's PMU: at the probe.
				pos, end = be.Probe.Pos, be.Probe.End
			}
			d := &source.Diag{Pos: pos, End: end, Msg: "the BPF engine cannot run this: " + u.Reason}
			if len(be.Log) > 0 {
				d.Hint = "the verifier said: " + strings.Join(be.Log, " | ")
			}
			u.Diag = d
		}
	}
	return u
}

// BPFTarget says whether the BPF engine can run on the target: nil when
// it is this machine's own tracefs (the programs are loaded and attached
// by this process), else why not.
func BPFTarget(t *Target) error {
	switch {
	case t == nil || t.FS == nil:
		return errors.New("no target")
	case t.Beat || t.ReadRaw != nil || t.OpenPipe != nil:
		return errors.New("the target is reached through a shell (--via): it has no sqlhist to load programs")
	case !t.Local || !isTracefs(t.Root):
		return fmt.Errorf("%s is not this machine's tracefs", t.Root)
	}
	// Whether this kernel and this process load programs is the load's
	// to say (LoadBPF): a probe would load one more.
	return nil
}

// bpfEngine is the BPF engine's part of a run.
type bpfEngine struct {
	e     *bpf.Engine
	hists []*planner.Hist // by the engine's trigger index
	// cur is the reading of the maps that histograms answers from, until
	// the next sync (one reading a snapshot), and the last one once
	// stopped.
	cur     []*tracefs.Histogram
	stopped bool
	total   int
	events  *streamer // --events' streamer its programs' synthetic events go to, or nil
	t       *Target   // the run's target (its kill hook counts the engine's steps)
	// shown are the hist files a run reads (snapshot): only their
	// triggers' maps are read.
	shown map[string]bool
}

// shownFiles are the hist files whose histograms a run of plan shows
// (runState.snapshot reads them): each unit's results and negatives.
func shownFiles(plan *planner.Plan) map[string]bool {
	files := map[string]bool{}
	for _, u := range plan.Units {
		if u.Feeds {
			continue
		}
		h := u.Results
		if h == nil {
			h = u.Start
		}
		if h != nil {
			files[h.HistFile()] = true
		}
		if u.Negatives != nil {
			files[u.Negatives.HistFile()] = true
		}
	}
	return files
}

// read reads the maps of the triggers of the shown files.
func (b *bpfEngine) read() ([]*tracefs.Histogram, error) {
	return b.e.ReadSome(func(i int) bool { return i < len(b.hists) && b.shown[b.hists[i].HistFile()] })
}

func (b *bpfEngine) streamer(io.Writer, *planner.Plan, string) *streamer { return b.events }

func (b *bpfEngine) name() string { return EngineBPF }
func (b *bpfEngine) start() error { return nil } // attached before the run began
func (b *bpfEngine) sync()        { b.cur = nil }

func (b *bpfEngine) lost() int {
	if b.stopped {
		return b.total
	}
	// The program runs the kernel skipped, and --events' records the
	// rings had no room for, as they are now (Stop counts both again).
	return int(min(b.e.Skipped()+b.e.Unwritten(), 1<<31))
}

func (b *bpfEngine) histograms(file string) ([]*tracefs.Histogram, error) {
	if b.cur == nil {
		if b.stopped {
			return nil, errors.New("the BPF engine's maps are closed")
		}
		hs, err := b.read()
		if err != nil {
			return nil, err
		}
		b.cur = hs
	}
	var out []*tracefs.Histogram
	for i, h := range b.hists {
		if h.HistFile() == file && i < len(b.cur) && b.cur[i] != nil {
			out = append(out, b.cur[i])
		}
	}
	return out, nil
}

// stop detaches the programs, reads the maps a last time and closes
// everything: what is read next is that reading.
func (b *bpfEngine) stop() (int, error) {
	if b.stopped {
		return 0, nil
	}
	derr := b.e.Detach()
	killStep(b.t, "bpf: detached")
	hs, rerr := b.read()
	killStep(b.t, "bpf: read")
	lost, serr := b.e.Stop()
	killStep(b.t, "bpf: closed")
	b.stopped, b.cur, b.total = true, hs, int(min(lost, 1<<31))
	return b.total, errors.Join(derr, rerr, serr)
}

// BPFProgram is a plan compiled for the BPF engine and loaded through
// the kernel's verifier, not attached yet: Run attaches it
// (Options.BPF). Close unloads it when it is not run.
type BPFProgram struct {
	eng *bpfEngine
	// events is --events' streamer, set by Run before the programs are
	// attached (none fire before).
	mu     sync.Mutex
	events *streamer
	// wantsEvents: loaded for --events (its programs write the synthetic
	// events); comms names their tasks.
	wantsEvents bool
	comms       *commCache
}

// Close unloads the programs and maps (a program Run took is Run's).
func (p *BPFProgram) Close() {
	if p != nil && p.eng != nil {
		p.eng.e.Stop()
	}
}

// BPFLoad is how LoadBPF loads a plan's programs.
type BPFLoad struct {
	// Events (--events): the programs also write each synthetic event
	// into a perf buffer for the run's streamer; without, they write
	// nothing there: the write costs a wakeup of the JOIN about 4.4 µs of
	// guest time, and the events a buffer drops are not results lost.
	Events bool
	// Fentry lets a kprobe or kretprobe run as a fentry or fexit program
	// where the kernel takes one (bpf.Options.NoFentry, inverted): for a
	// run that lasts (--metrics). Without it, the perf kprobe PMU. In a
	// 6.1 guest (make bench-kernel, instruction-counted) a fentry/fexit
	// pair costs a call 1.0 µs less than the PMU's kprobe and kretprobe,
	// but its start 120 ms more (cilium/ebpf parses the kernel's BTF to
	// load them) and its detaching 13 ms more (the BPF trampoline
	// rebuilt, then removed: 18.1 ms of the process's CPU against 5.2 for
	// the kprobes): the fentry run is the cheaper past about 130,000
	// calls, which a run serving metrics all day reaches and a run until
	// Ctrl-C or -d most often does not.
	Fentry bool
}

// LoadBPF compiles the plan for the BPF engine against the formats of
// t's events and loads its programs through the kernel's verifier,
// without attaching them: the check that the BPF engine can answer, and
// the programs Run then attaches (Options.BPF), loaded once. A plan the
// engine cannot compile, or a load the kernel refuses (no bpf() system
// call, not permitted, the verifier), is an *EngineUnavailable, and
// nothing is left loaded.
func LoadBPF(t *Target, plan *planner.Plan, arch *tracefs.Arch, how BPFLoad) (*BPFProgram, error) {
	p := &BPFProgram{wantsEvents: how.Events, comms: &commCache{t: t, names: map[int]string{}}}
	var onSynth func(ev *stream.Event)
	if how.Events {
		onSynth = p.onSynth
	}
	e, hists, err := compileBPF(t, plan, arch, onSynth, !how.Fentry)
	if err != nil {
		return nil, err
	}
	if err := e.Load(); err != nil {
		e.Stop()
		return nil, unavailable(err, hists)
	}
	p.eng = &bpfEngine{e: e, hists: hists, t: t, shown: shownFiles(plan)}
	killStep(t, "bpf: loaded")
	return p, nil
}

// onSynth gives a synthetic event the programs wrote to the run's
// streamer, as its trace line.
func (p *BPFProgram) onSynth(ev *stream.Event) {
	p.mu.Lock()
	st := p.events
	p.mu.Unlock()
	if st == nil {
		return
	}
	line := synthLine(ev, p.comms.name)
	st.mu.Lock()
	st.line(line)
	st.mu.Unlock()
}

// attach attaches the loaded programs to their events, their synthetic
// events going to events (nil: none are streamed).
func (p *BPFProgram) attach(events *streamer) (*bpfEngine, error) {
	p.mu.Lock()
	p.events = events
	p.mu.Unlock()
	p.eng.events = events
	if err := p.eng.e.Start(); err != nil {
		p.eng.e.Stop()
		return nil, unavailable(err, p.eng.hists)
	}
	killStep(p.eng.t, "bpf: attached")
	return p.eng, nil
}

// compileBPF compiles the plan's triggers for the BPF engine against the
// formats of t's events.
func compileBPF(t *Target, plan *planner.Plan, arch *tracefs.Arch, onSynth func(*stream.Event), noFentry bool) (*bpf.Engine, []*planner.Hist, error) {
	if err := BPFTarget(t); err != nil {
		return nil, nil, &EngineUnavailable{Engine: EngineBPF, Reason: err.Error()}
	}
	hists, synths := planHists(plan)
	// The plan's probes are attached by the engine itself (perf
	// kprobe/uprobe PMU): none is created in tracefs.
	var probes []*planner.Probe
	for _, u := range plan.Units {
		probes = append(probes, u.Probes...)
	}
	if arch == nil {
		arch, _ = tracefs.Open(t.FS).Arch()
	}
	format := func(system, name string) (*tracefs.Event, error) {
		data, err := fs.ReadFile(t.FS, "events/"+system+"/"+name+"/format")
		if err != nil {
			return nil, fmt.Errorf("reading the format of %s/%s: %v", system, name, err)
		}
		return tracefs.ParseFormat(system, string(data))
	}
	longSize := 8
	if data, err := fs.ReadFile(t.FS, "events/header_page"); err == nil {
		if hp, err := tracefs.ParseHeaderPage(string(data)); err == nil {
			longSize = hp.LongSize()
		}
	}
	syms := newSymCache(t)
	opt := bpf.Options{LongSize: longSize, Syscall: syscallNames(t, arch), Sym: syms.name, OnSynth: onSynth,
		Probes: probes, Arch: arch, NoFentry: noFentry}
	e, err := bpf.New(bpf.FromHists(hists), synths, format, opt)
	if err != nil {
		return nil, nil, unavailable(err, hists)
	}
	return e, hists, nil
}

// runBPF is Run for the BPF engine: no tracefs writes, no instance and no
// lease; the collection, the intervals and the reading are a run's.
func runBPF(ctx context.Context, t *Target, plan *planner.Plan, opt Options, r *runState) (*results.Report, error) {
	var events *streamer
	if opt.Events != nil {
		events = newStreamer(opt.Events, plan, opt.Format)
	}
	cat := tracefs.Open(t.FS)
	if opt.Catalog != nil {
		cat = opt.Catalog
	}
	arch, _ := cat.Arch()
	prog := opt.BPF
	if prog == nil {
		var err error
		if prog, err = LoadBPF(t, plan, arch, BPFLoad{Events: events != nil}); err != nil {
			return nil, err
		}
	}
	if events != nil && !prog.wantsEvents {
		prog.Close()
		return nil, errors.New("the BPF programs were loaded without --events' synthetic events")
	}
	eng, err := prog.attach(events)
	if err != nil {
		return nil, err
	}
	r.eng, r.bpfOnly = eng, true
	if r.log == nil {
		r.log = io.Discard
	}
	return r.run(ctx)
}

// describeEvents names the events an engine's programs are attached to.
func describeEvents(e engine) string {
	b, ok := e.(*bpfEngine)
	if !ok {
		return "its events"
	}
	how := b.e.Attachments()
	var out []string
	for _, ev := range b.e.Events() {
		if h := how[ev]; h != "" && h != "tracepoint" {
			ev += " (" + h + ")"
		}
		out = append(out, ev)
	}
	return strings.Join(out, ", ")
}
