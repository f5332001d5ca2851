package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Options are what the engine needs beyond the triggers.
type Options struct {
	// LongSize is the bytes of an unsigned long on the target (8 when 0):
	// the size of a synthetic event's long fields.
	LongSize int
	// Syscall names a system call number for a .syscall key; nil (or
	// "") gives "unknown_syscall", as the kernel prints one it cannot
	// name.
	Syscall func(nr uint64) string
	// Sym names a kernel address for .sym ("func") and .sym-offset
	// ("func+0x10/0x80") keys and stack frames (with offset); nil (or
	// "") gives the address in hex.
	Sym func(addr uint64, offset bool) string
	// PerCPU makes the maps that only count and sum (no variables, no
	// onmax or onchange, no .execname) per-CPU hashes, added to without
	// atomics: what costs less is measured by TestCostPerCPU.
	PerCPU bool
	// OnSynth, when set, is given every synthetic event the programs
	// fire (for --events), as the stream engine gives them: its format
	// (planner.SynthFormat), the time (bpf_ktime_get_ns), the CPU, the
	// pid and its fields. The programs send them through a perf buffer
	// that a goroutine of Start reads; OnSynth runs on that goroutine,
	// one event at a time, the event the engine's until it returns.
	// Events the buffer had no room for are counted (Stop's lost).
	OnSynth func(*stream.Event)
	// Probes are the plan's probes (kprobes, kretprobes, uprobes and
	// uretprobes; planner.Unit.Probes): the triggers on their events run
	// in programs attached to the functions through the kernel's perf
	// kprobe and uprobe PMUs, their records computed as the probe events'
	// (planner.ProbeFormat). An eprobe is refused.
	Probes []*planner.Probe
	// Arch is the target's architecture (the registers of the probes'
	// fetch arguments); nil is this machine's.
	Arch *tracefs.Arch
	// EventPages is the size of each CPU's ring of synthetic events
	// (OnSynth), in pages; 0 is 64. A record the ring has no room for is
	// lost, and counted (Stop).
	EventPages int
	// NoFentry attaches kprobes and kretprobes through the perf kprobe
	// PMU always; else a probe at a function's entry or return whose
	// fetches are its arguments and return value runs on fentry/fexit
	// where the kernel's BTF describes the function and the kernel loads
	// them (cheaper: a BPF trampoline, no breakpoint, no return probe).
	NoFentry bool
	// NoRaw attaches every tracepoint's program as a classic tracepoint
	// program (on the record the kernel builds); else a program whose
	// fields the tracepoint's arguments give runs as a raw tracepoint's
	// where the kernel's BTF and verifier allow it (rawtp.go: cheaper,
	// no record built).
	NoRaw bool
}

// Engine is a set of triggers compiled into BPF programs and maps.
type Engine struct {
	opt      Options
	triggers []*Trigger
	synths   map[string]*tracefs.Event
	ctrigs   []*ctrig
	maps     []*mapDef
	progs    []*progDef
	// caps are the bytes of each synthetic char[] field ("synth/field"):
	// the most a parameter fired into it brings.
	caps map[string]int
	// scratch says a program's frame is in the scratch map.
	scratch bool
	// synthNames index the synthetic events in their records.
	synthNames []string
	reader     *eventReader
	readDone   chan struct{}

	coll  *ebpf.Collection
	links []link.Link
	// probes are the plan's probes by "group/name"; fcaps the bytes of
	// their string fields that hold less than a __data_loc string's 256
	// ($comm, immediate strings); probeFDs each attached probe's perf
	// event and, where the kernel makes one, its BPF link.
	probes   map[string]*probeInfo
	fcaps    map[*tracefs.Field]int
	probeFDs [][]int
	// fentry says the programs loaded are the probes' fentry/fexit
	// variants (progDef.alt), where they have one; noFentry that the
	// kernel could not attach them.
	fentry, noFentry bool
	// raw says the programs loaded are the tracepoints' raw variants
	// (progDef.raw), where they have one; noRaw that the kernel refused
	// them.
	raw, noRaw bool
}

// New compiles the triggers (in the order the kernel would run them on
// an event: the order written) on the events format gives, with the
// synthetic events synths. Nothing is loaded: a trigger the engine
// cannot compile is an *Error naming it and the expression.
func New(triggers []*Trigger, synths []*planner.Synth, format func(system, event string) (*tracefs.Event, error), opt Options) (*Engine, error) {
	if opt.LongSize == 0 {
		opt.LongSize = 8
	}
	if opt.Arch == nil {
		opt.Arch = hostArch()
	}
	e := &Engine{opt: opt, triggers: triggers, synths: map[string]*tracefs.Event{}, fcaps: map[*tracefs.Field]int{}}
	var common []*tracefs.Field
	if ev, err := format("sched", "sched_switch"); err == nil {
		for _, f := range ev.Fields {
			if f.IsCommon() {
				common = append(common, f)
			}
		}
	}
	e.probeEvents(common)
	e.fentryArgs()
	for _, s := range synths {
		e.synths[s.Name] = planner.SynthFormat(s, opt.LongSize)
		e.synthNames = append(e.synthNames, s.Name)
	}
	e.computeCaps(format)
	if err := e.compileTriggers(format); err != nil {
		return nil, err
	}
	if opt.PerCPU {
		for _, m := range e.maps {
			m.perCPU = len(m.vars) == 0 && len(m.tracks) == 0 && !slices.ContainsFunc(m.comm, func(o int) bool { return o >= 0 })
		}
	}
	// One program per traced event, its triggers in order; a synthetic
	// event's triggers run inside the programs that fire it.
	var order []string
	by := map[string][]*ctrig{}
	for _, ct := range e.ctrigs {
		if ct.t.System == SyntheticSystem && e.synths[ct.t.Event] != nil {
			continue
		}
		k := ct.t.System + "/" + ct.t.Event
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], ct)
	}
	for _, k := range order {
		sys, ev, _ := strings.Cut(k, "/")
		p, err := e.program(sys, ev, by[k])
		if err != nil {
			return nil, err
		}
		e.progs = append(e.progs, p)
	}
	return e, nil
}

// computeCaps sizes the synthetic events' char[] fields by what the
// trace actions bring them: a char[N] field N bytes, a __data_loc string
// 256, a string variable what its field brings.
func (e *Engine) computeCaps(format func(system, event string) (*tracefs.Event, error)) {
	e.caps = map[string]int{}
	evOf := func(t *Trigger) *tracefs.Event {
		if t.System == SyntheticSystem && e.synths[t.Event] != nil {
			return e.synths[t.Event]
		}
		if pi := e.probes[t.System+"/"+t.Event]; pi != nil {
			return pi.ev
		}
		ev, err := format(t.System, t.Event)
		if err != nil {
			return nil
		}
		return ev
	}
	size := func(ev *tracefs.Event, name string) int {
		if ev == nil {
			return 0
		}
		f := ev.Field(name)
		if f == nil || !f.IsString() {
			return 0
		}
		if f.Kind == tracefs.KindString {
			return align8(f.Size)
		}
		if ev.System == SyntheticSystem {
			return e.caps[ev.Name+"/"+f.Name]
		}
		return maxDynString
	}
	// Twice: a synthetic event's field read by another's parameters.
	for range 2 {
		vars := map[string]int{}
		for _, t := range e.triggers {
			ev := evOf(t)
			for _, v := range t.Vars {
				if v.Expr.Kind == planner.ExprField {
					vars[v.Name] = size(ev, v.Expr.Name)
				}
			}
		}
		for _, t := range e.triggers {
			ev := evOf(t)
			for _, a := range t.Actions {
				def := e.synths[a.Synth]
				if a.Kind != planner.ActTrace || def == nil {
					continue
				}
				first := len(def.Fields)
				for i, f := range def.Fields {
					if !f.IsCommon() {
						first = i
						break
					}
				}
				for i, p := range a.Params {
					if first+i >= len(def.Fields) || def.Fields[first+i].Kind != tracefs.KindDynString {
						continue
					}
					n := 0
					switch p.Kind {
					case planner.ExprField:
						n = size(ev, p.Name)
					case planner.ExprVar:
						n = vars[p.Name]
					}
					k := a.Synth + "/" + def.Fields[first+i].Name
					e.caps[k] = max(e.caps[k], n)
				}
			}
		}
	}
}

// synthIndex is a synthetic event's index in its records.
func (e *Engine) synthIndex(name string) int { return slices.Index(e.synthNames, name) }

// decodeEvent reads a synthetic event's record into ev.
func (e *Engine) decodeEvent(b []byte, ev *stream.Event) bool {
	ne := binary.NativeEndian
	if len(b) < synthHeader {
		return false
	}
	i := ne.Uint64(b)
	if i >= uint64(len(e.synthNames)) {
		return false
	}
	def := e.synths[e.synthNames[i]]
	*ev = stream.Event{Def: def, TS: ne.Uint64(b[8:]), PID: int(int32(ne.Uint64(b[16:]))), CPU: int(ne.Uint64(b[24:])),
		Fields: make([]stream.Value, len(def.Fields))}
	at := synthHeader
	for j, f := range def.Fields {
		if f.IsCommon() {
			if f.Name == "common_pid" {
				ev.Fields[j] = stream.Num(uint64(int64(ev.PID)))
			}
			continue
		}
		n := 8
		if f.Kind != tracefs.KindInt && f.Kind != tracefs.KindPointer {
			n = e.fieldBytes(def, f)
		}
		if at+n > len(b) {
			return false
		}
		v := b[at : at+n]
		switch {
		case f.IsString():
			if z := bytes.IndexByte(v, 0); z >= 0 {
				v = v[:z]
			}
			ev.Fields[j] = stream.Text(string(v))
		case f.Kind == tracefs.KindDynArray:
			var st []uint64
			for o := 0; o+8 <= n; o += 8 {
				a := ne.Uint64(v[o:])
				if a == 0 {
					break
				}
				st = append(st, a)
			}
			ev.Fields[j] = stream.Value{Stack: st}
		default:
			ev.Fields[j] = stream.Num(ne.Uint64(v))
		}
		at += n
	}
	return true
}

// Check compiles the triggers as New does, for its refusal alone.
func Check(triggers []*Trigger, synths []*planner.Synth, format func(system, event string) (*tracefs.Event, error), opt Options) error {
	_, err := New(triggers, synths, format, opt)
	return err
}

// Attachments says how each program is attached, by event: "tracepoint",
// "kprobe PMU", "uprobe PMU", "fentry" or "fexit".
func (e *Engine) Attachments() map[string]string {
	out := map[string]string{}
	for _, p := range e.progs {
		how := "tracepoint"
		switch {
		case p.probe == nil && e.raw && p.raw != nil:
			how = "raw tracepoint"
		case p.probe == nil:
		case e.fentry && p.alt != nil && p.probe.p.Return:
			how = "fexit"
		case e.fentry && p.alt != nil:
			how = "fentry"
		case p.probe.user():
			how = "uprobe PMU"
		default:
			how = "kprobe PMU"
		}
		out[p.system+"/"+p.event] = how
	}
	return out
}

// Events lists the events the programs attach to ("system/event").
func (e *Engine) Events() []string {
	var out []string
	for _, p := range e.progs {
		out = append(out, p.system+"/"+p.event)
	}
	return out
}

// Instructions returns the instructions of the program of an event, as
// cilium/ebpf prints them (for tests and diagnostics).
func (e *Engine) Instructions(system, event string) string {
	for _, p := range e.progs {
		if p.system == system && p.event == event {
			return fmt.Sprintf("%v", p.insns)
		}
	}
	return ""
}

// spec builds the collection: the maps and the programs.
func (e *Engine) spec() *ebpf.CollectionSpec {
	cs := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for _, m := range e.maps {
		typ := ebpf.Hash
		if m.perCPU {
			typ = ebpf.PerCPUHash
		}
		cs.Maps[m.name] = &ebpf.MapSpec{Name: m.name, Type: typ, KeySize: uint32(m.keySize),
			ValueSize: uint32(m.valSize), MaxEntries: uint32(m.entries)}
	}
	if e.opt.OnSynth != nil {
		cs.Maps[eventsMap] = &ebpf.MapSpec{Name: eventsMap, Type: ebpf.PerfEventArray}
	}
	if e.scratch {
		cs.Maps[scratchMap] = &ebpf.MapSpec{Name: scratchMap, Type: ebpf.PerCPUArray, KeySize: 4,
			ValueSize: scratchSize, MaxEntries: 1}
	}
	cs.Maps[statsMap] = &ebpf.MapSpec{Name: statsMap, Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(8 * statSlots(len(e.maps))), MaxEntries: 1}
	for i, p := range e.progs {
		name := progName(i)
		typ := ebpf.TracePoint
		if p.probe != nil {
			typ = ebpf.Kprobe
		}
		if e.raw && p.raw != nil {
			cs.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.RawTracepoint, License: "GPL",
				Instructions: p.raw.insns}
			continue
		}
		if e.fentry && p.alt != nil {
			at := ebpf.AttachTraceFEntry
			if p.probe.p.Return {
				at = ebpf.AttachTraceFExit
			}
			cs.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.Tracing, AttachType: at,
				AttachTo: p.probe.p.Symbol, License: "GPL", Instructions: p.alt.insns}
			continue
		}
		cs.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: typ, License: "GPL",
			Instructions: p.insns}
	}
	return cs
}

func progName(i int) string { return fmt.Sprintf("sqlhist%d", i) }

// Load loads the maps and programs into the kernel without attaching
// them: the verifier's check. A refusal is an *Error naming the trigger
// and expression of the instruction the verifier stopped at, with the
// verifier's last lines.
func (e *Engine) Load() error {
	if e.coll != nil {
		return nil
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK (busybox's
	// default is 64 KiB): lift it there; a no-op where memory cgroups
	// account for it.
	liftMemlock()
	// The probes on fentry/fexit first, where they have a variant; the
	// kernel may refuse them (no BTF trampolines, a function it cannot
	// attach to): then every probe on the perf kprobe PMU.
	e.fentry = !e.noFentry && slices.ContainsFunc(e.progs, func(p *progDef) bool { return p.alt != nil })
	// The tracepoints' raw variants likewise (rawtp.go), compiled here:
	// only the machine that loads them reads its BTF.
	if !e.noRaw && !e.opt.NoRaw {
		for _, p := range e.progs {
			if p.raw == nil {
				p.raw = e.rawVariant(p)
			}
		}
	}
	e.raw = !e.noRaw && !e.opt.NoRaw && slices.ContainsFunc(e.progs, func(p *progDef) bool { return p.raw != nil })
	var coll *ebpf.Collection
	var err error
	for e.fentry || e.raw {
		coll, err = ebpf.NewCollectionWithOptions(e.spec(), ebpf.CollectionOptions{})
		if err == nil {
			break
		}
		// Without the fentry/fexit variants first, then without the raw
		// ones.
		if e.fentry {
			e.fentry = false
		} else {
			e.raw = false
		}
	}
	if coll == nil {
		coll, err = ebpf.NewCollectionWithOptions(e.spec(), ebpf.CollectionOptions{})
		if err != nil {
			return e.verifierError(err)
		}
	}
	// A probe is attached through the kernel's perf PMU only: without
	// one the programs are unloaded and the probe refused (cilium/ebpf's
	// link.Kprobe would write kprobe_events instead; Start never calls
	// it).
	for _, p := range e.progs {
		if p.probe == nil || e.fentry && p.alt != nil {
			continue
		}
		if err := p.probe.checkPMU(); err != nil {
			coll.Close()
			return &Error{Trigger: p.triggers[0].idx, Event: p.system + "/" + p.event, Reason: err.Error(), Probe: p.probe.p}
		}
	}
	e.coll = coll
	return nil
}

var insnRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+): \(`) })

// verifierError maps a load error to the trigger of the instruction the
// verifier stopped at.
func (e *Engine) verifierError(err error) error {
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return fmt.Errorf("the BPF engine: loading: %w", err)
	}
	prog := -1
	msg := err.Error()
	for i := range e.progs {
		if strings.Contains(msg, "program "+progName(i)+":") || strings.Contains(msg, progName(i)) {
			prog = i
			break
		}
	}
	last := -1
	for _, l := range ve.Log {
		if m := insnRE().FindStringSubmatch(l); m != nil {
			last, _ = strconv.Atoi(m[1])
		}
	}
	tail := ve.Log
	if len(tail) > 6 {
		tail = tail[len(tail)-6:]
	}
	out := &Error{Reason: "the kernel's verifier refused the program: " + ve.Cause.Error(), Log: tail}
	if prog >= 0 {
		p := e.progs[prog]
		out.Event = p.system + "/" + p.event
		out.Trigger = p.triggers[0].idx
		if last >= 0 {
			o := p.originAt(last)
			out.Trigger, out.What = o.trig, o.what
			t := e.triggers[o.trig]
			out.Event = t.System + "/" + t.Event
		}
	}
	return out
}

// Start loads the programs and maps and attaches each program to its
// event's tracepoint (through perf_event_open: the event's id is read
// from tracefs, which must be mounted). Nothing is pinned or written.
func (e *Engine) Start() error {
	if len(e.links) > 0 || len(e.probeFDs) > 0 || e.reader != nil {
		return errors.New("the BPF engine is started already")
	}
	if err := e.Load(); err != nil {
		return err
	}
	for {
		fentry, raw, err := e.attach()
		if err == nil || !fentry && !raw {
			return err
		}
		// The kernel loaded the fentry/fexit programs and cannot attach
		// them (6.1 on arm64 has no BPF trampolines), or a raw
		// tracepoint: everything again, the probes on the perf kprobe
		// PMU, the tracepoints classic.
		e.Stop()
		e.noFentry = e.noFentry || fentry
		e.noRaw = e.noRaw || raw
		if err := e.Load(); err != nil {
			return err
		}
	}
}

// attach attaches the loaded programs; fentry and raw say that
// attaching a fentry/fexit program, or a raw tracepoint's, failed. On an
// error everything is closed.
func (e *Engine) attach() (fentry, raw bool, err error) {
	if e.opt.OnSynth != nil {
		pages := e.opt.EventPages
		if pages <= 0 {
			pages = 64
		}
		rd, err := newEventReader(e.coll.Maps[eventsMap], pages*os.Getpagesize())
		if err != nil {
			e.Stop()
			return false, false, fmt.Errorf("the BPF engine: the synthetic events' buffer: %v", err)
		}
		e.reader, e.readDone = rd, make(chan struct{})
		go e.readEvents()
	}
	for i, p := range e.progs {
		if p.probe != nil && e.fentry && p.alt != nil {
			l, err := attachTracing(e.coll.Programs[progName(i)])
			if err != nil {
				e.Stop()
				return true, false, &Error{Trigger: p.triggers[0].idx, Event: p.system + "/" + p.event, Reason: "attaching fentry/fexit: " + err.Error(), Probe: p.probe.p}
			}
			e.links = append(e.links, l)
			continue
		}
		if p.probe != nil {
			fds, err := attachProbe(p.probe, e.coll.Programs[progName(i)].FD())
			if err != nil {
				e.Stop()
				return false, false, &Error{Trigger: p.triggers[0].idx, Event: p.system + "/" + p.event, Reason: "attaching: " + err.Error(), Probe: p.probe.p}
			}
			e.probeFDs = append(e.probeFDs, fds)
			continue
		}
		if e.raw && p.raw != nil {
			l, err := attachRawTracepoint(p.event, e.coll.Programs[progName(i)])
			if err != nil {
				e.Stop()
				return false, true, &Error{Trigger: p.triggers[0].idx, Event: p.system + "/" + p.event, Reason: "attaching the raw tracepoint: " + err.Error()}
			}
			e.links = append(e.links, l)
			continue
		}
		l, err := attachTracepoint(p.system, p.event, e.coll.Programs[progName(i)])
		if err != nil {
			e.Stop()
			return false, false, &Error{Trigger: p.triggers[0].idx, Event: p.system + "/" + p.event, Reason: "attaching: " + err.Error()}
		}
		e.links = append(e.links, l)
	}
	return false, false, nil
}

// Stats are a program's runs and time (the kernel counts them while
// kernel.bpf_stats_enabled is 1) and the runs it skipped because another
// BPF program ran on the CPU (counted from 5.12 on kernels that count
// them).
type Stats struct {
	Event           string
	Runs            uint64
	RunTimeNs       uint64
	RecursionMisses uint64
}

// Stats returns each program's statistics.
func (e *Engine) Stats() ([]Stats, error) {
	if e.coll == nil {
		return nil, errors.New("the BPF engine is not loaded")
	}
	var out []Stats
	for i, p := range e.progs {
		st, err := e.coll.Programs[progName(i)].Stats()
		if err != nil {
			return nil, err
		}
		out = append(out, Stats{Event: p.system + "/" + p.event, Runs: st.RunCount, RunTimeNs: uint64(st.Runtime), RecursionMisses: st.RecursionMisses})
	}
	return out, nil
}

// Stop detaches and closes everything. lost is the program runs the
// kernel skipped (another BPF program ran on the CPU), where it counts
// them, and the synthetic events the perf buffer had no room for.
func (e *Engine) Stop() (lost uint64, err error) {
	err = closeLinks(e.links)
	e.links = nil
	if cerr := e.closeProbes(); cerr != nil && err == nil {
		err = cerr
	}
	if e.reader != nil {
		// The programs are detached: what they wrote before is still in
		// the rings. Flush makes the reader return all of it, then
		// ErrFlushed, which ends readEvents; closing first would lose
		// the events of the run's last moments (the suite's --events
		// check saw 337 of 357).
		if err := e.reader.Flush(); err == nil {
			<-e.readDone
		}
		e.reader.Close()
		<-e.readDone
		e.reader = nil
		if e.coll != nil {
			if c, err := e.counters(); err == nil {
				lost += c.unwritten
			}
		}
	}
	if e.coll != nil {
		if st, serr := e.Stats(); serr == nil {
			for _, s := range st {
				lost += s.RecursionMisses
			}
		}
		e.coll.Close()
		e.coll = nil
	}
	return lost, err
}
