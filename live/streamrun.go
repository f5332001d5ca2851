package live

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlhist/sqlhist/bpf"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The engines that answer a run.
const (
	// EngineKernel writes hist triggers and synthetic events and reads
	// the hist files the kernel keeps.
	EngineKernel = "kernel"
	// EngineStream enables the events the query reads, with its filters,
	// reads them from the ring buffer and computes the hist triggers and
	// synthetic events itself (package stream): for kernels without hist
	// triggers.
	EngineStream = "stream"
	// EngineAuto is the kernel's where it has hist triggers and
	// synthetic events, else the stream.
	EngineAuto = "auto"
)

// streamPoll is how often the stream engine drains the ring buffers.
const streamPoll = 100 * time.Millisecond

// streamPollVia is how often it drains them through a transport (--via).
const streamPollVia = time.Second

// perfPoll is how often a run on perf events that streams no events
// (--events) drains its rings: a ring's watermark wakes the run sooner
// (perfRings.watch). Each tick wakes the process and the Go runtime's
// monitor: a 6.1 guest under icount paid about 60 µs of CPU a tick, 330
// guest ns a wakeup of TestKeepUpCost's run at 100 ms (docs/cost.md).
const perfPoll = time.Second

// feedBatch is how many events the machine is fed under one lock.
const feedBatch = 1024

// pageTail is the room a full page may leave at its end: less than the
// largest small record the next one did not fit in.
const pageTail = 512

// streamBufferKB is the per-CPU buffer of a stream run's instance: room
// for about 100,000 small events a CPU between two drains, so that a busy
// CPU does not overwrite what was not read yet.
const streamBufferKB = 4096

// perfBufferKB is the ring a CPU of a stream run on perf events: read
// every perfPoll and each time half of it is written (perfRings.watch).
// The kernel allocates it when it is mapped: the instance's 4 MiB cost a
// 6.1 guest 4–5 ms of CPU a run (docs/cost.md).
const perfBufferKB = 4096

// MinBufferKB and MaxBufferKB bound --buffer-kb: a page, and 1 GiB per
// CPU.
const (
	MinBufferKB = 4
	MaxBufferKB = 1 << 20
)

// streamClock is the trace clock of a stream run's instance: the clock
// hist triggers stamp with.
const streamClock = "global"

// streamRun is the stream engine's part of a run: the machine that
// computes the triggers and the readers of the per-CPU ring buffers.
type streamRun struct {
	t        *Target
	plan     *planner.Plan
	instance string
	hists    []*planner.Hist
	synths   []*planner.Synth

	mu      sync.Mutex // guards m while the poller feeds it
	m       *stream.Machine
	cpus    []*cpuReader
	decoder tracefs.FieldDecoder
	native  bool // decoder reads the machine's own byte order (see int)
	pageH   *tracefs.PageHeader
	eventH  *tracefs.EventHeader
	formats map[int]*tracefs.Event // by event id
	kinds   []*eventKind           // by event id: how its records are decoded (nil: not read)
	kindTab []*eventKind           // by rawEvent.kind
	comms   *commCache
	syms    *symCache
	// strs are the strings decoded so far (task names, mostly), so
	// that an event's string is made once, not once an event.
	strs    map[string]string
	syscall func(uint64) string

	// events, for --events, gets each synthetic event the machine
	// fires as the kernel's trace line for it.
	events *streamer
	// streams says the run streams its synthetic events (--events):
	// they are read every streamPoll, whatever the sources.
	streams bool

	// perf, when set, are the sources instead of the instance's ring
	// buffers (see perfRings); perfScratch holds a record the end of a
	// ring splits.
	perf        *perfRings
	perfScratch []byte
	// bpfSeen are the classic BPF tracepoint programs seen loaded while
	// the perf events recorded (checkBPF), bpfChecked when last looked.
	bpfSeen    []string
	bpfChecked time.Time
	// perfTracepoints are the tracepoints' names (without their
	// systems), as BPF links name them.
	perfTracepoints []string
	// machineCat reads the machine's formats once for the run: the
	// perf events' ids (runStreamPerf), then start's machine.
	machineCat *tracefs.Catalog

	stop    chan struct{}
	done    chan struct{}
	syncReq chan chan struct{} // sync's requests to the loop
	readErr error
	// seen is the newest timestamp of each drain round: events up to the
	// one of the round before last are all read (see drain).
	prevMax, lastMax uint64
	// pending are the records read and not fed yet, kept as their bytes
	// in the pages read (decoded as they are fed, into one event of
	// their kind that every record of it reuses: a run that reads its
	// events at its end holds a few pages, not an event a record).
	// They hold no pointers: the collector has nothing to scan in
	// them, and growing the slice copies bytes.
	pending []rawEvent
	// merged is where sortPending merges the runs of pending into (its
	// other half), runs where they start.
	merged []rawEvent
	runs   []int
	// stacks are the kernel stacks of pending events (rawEvent.stack-1).
	stacks [][]uint64
	// lostBefore is what the buffers had lost when the run began (an
	// instance of -B may have lost events before).
	lostBefore int
	capMark    uint64       // the newest event a CPU read in part had (see read)
	pages      []*rawPage   // pages whose records were all fed, for the next reads
	pageTab    []*rawPage   // every page made, by rawPage.id
	decoded    tracefs.Page // the page being read, its records' memory reused
}

// eventKind is what decoding a record of one event needs: its format,
// its common_pid field, the fields the machine reads, and the
// event the records are decoded into.
type eventKind struct {
	idx   int32 // in kindTab
	def   *tracefs.Event
	pid   *tracefs.Field
	reads []fieldRead
	event stream.Event
	stack bool // ftrace/kernel_stack: the stack of the event before
	pid4  bool // pid is a signed 4-byte field of the machine's own order
	trigs stream.Triggers
}

// fieldRead is how decode reads one field the machine uses.
type fieldRead struct {
	idx  int // in the format's Fields and the event's
	f    *tracefs.Field
	kind uint8
	// native4 says the field is 4 bytes of the machine's own order.
	native4 bool
	// last is the string the field had in the record decoded before
	// (the event's value still): the same bytes again are that string.
	last string
}

// fieldRead kinds.
const (
	readNum     = iota // an integer
	readText           // a char array
	readDynText        // a __data_loc string
	readArray          // any other array: a stack's addresses
)

// newEventKind is how the records of ev are decoded, reading the fields
// uses of it (by index).
func newEventKind(idx int32, ev *tracefs.Event, uses []int, native bool) *eventKind {
	k := &eventKind{idx: idx, def: ev, pid: ev.Field("common_pid"), stack: ev.System == "ftrace" && ev.Name == "kernel_stack"}
	k.event.Def, k.event.Fields = ev, make([]stream.Value, len(ev.Fields))
	k.pid4 = k.pid != nil && k.pid.Size == 4 && k.pid.Signed && k.pid.Offset >= 0 && native
	for _, i := range uses {
		f := ev.Fields[i]
		fr := fieldRead{idx: i, f: f}
		switch f.Kind {
		case tracefs.KindString:
			fr.kind = readText
		case tracefs.KindDynString:
			fr.kind = readDynText
		case tracefs.KindArray, tracefs.KindDynArray:
			fr.kind = readArray
		default:
			fr.kind = readNum
		}
		fr.native4 = fr.kind == readNum && f.Size == 4 && f.Offset >= 0 && native
		if f.IsString() {
			// The field's value before any record: the empty string.
			k.event.Fields[i] = stream.Text("")
		}
		k.reads = append(k.reads, fr)
	}
	return k
}

// rawEvent is a record read and not fed yet: its bytes in a page read
// (pageTab[page].buf[off:off+n]), its kind (kindTab[kind]) and the
// kernel stack recorded after it (stacks[stack-1]; 0 for none).
type rawEvent struct {
	ts              uint64
	cpu, kind, page int32
	off, n          uint32
	stack           int32
}

// rawPage is a page read from a buffer; refs counts its records not fed
// yet.
type rawPage struct {
	id   int32
	buf  []byte
	refs int
}

// cpuReader reads one CPU's trace_pipe_raw.
type cpuReader struct {
	cpu  int
	dir  string // per_cpu/cpuN of the instance, relative to the root
	path string
	fd   int
}

// planHists lists the plan's triggers in the order a run writes them,
// which is the order the kernel runs them in on an event.
func planHists(plan *planner.Plan) ([]*planner.Hist, []*planner.Synth) {
	var hists []*planner.Hist
	var synths []*planner.Synth
	for _, c := range emit.RunCommands(plan, emit.Options{}, emit.RunOptions{}) {
		if c.Hist != nil {
			hists = append(hists, c.Hist)
		}
		if c.Synth != nil {
			synths = append(synths, c.Synth)
		}
	}
	return hists, synths
}

// newStreamRun plans the stream engine's part of a run: the commands that
// set up its instance (the probes, the events the triggers are on, their
// filters), from the triggers compiled against cat. The instance is one
// the run creates (created), its lease (inLease: made, and its clock set,
// by takeLease), or another's (-B: its settings stay).
func newStreamRun(t *Target, plan *planner.Plan, cat *tracefs.Catalog, instance string, created, inLease bool, bufferKB int) (*streamRun, []emit.Command, error) {
	s := &streamRun{t: t, plan: plan, instance: instance}
	s.hists, s.synths = planHists(plan)
	for _, h := range s.hists {
		for _, a := range h.Actions {
			if a.Kind == planner.ActSnapshot {
				return nil, nil, fmt.Errorf("%s: a snapshot of the trace buffer (-s, -T) is the kernel's hist triggers' own; the stream engine cannot take one (--engine kernel, where the kernel has hist triggers)", h.Event)
			}
		}
	}
	m, err := stream.New(s.hists, s.synths, cat.Event, stream.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("the stream engine: %v", err)
	}
	// The catalog's machine until start builds the kernel's.
	s.m = m
	var evs []emit.StreamEvent
	for _, k := range m.Events() {
		sys, ev, _ := strings.Cut(k, "/")
		evs = append(evs, emit.StreamEvent{System: sys, Event: ev, Filter: m.Filter(sys, ev), Stack: m.NeedsStack(sys, ev)})
	}
	clock := streamClock
	if inLease {
		clock = ""
	}
	if bufferKB <= 0 {
		bufferKB = streamBufferKB
	}
	cmds := emit.StreamCommands(plan, evs, emit.StreamOptions{Instance: instance, CreateInstance: created, Own: inLease, Clock: clock, BufferKB: bufferKB,
		NoWait: t.ReadRaw != nil})
	return s, cmds, nil
}

// runStreamPerf runs the stream engine on this machine's perf events
// (perfRings: nothing written to tracefs, nothing left by a kill) where
// they serve the query: the target is this machine's tracefs, the plan
// makes no probes, and no trigger needs what only an instance records
// (kernel stacks: the stacktrace trigger's records; task names: the
// kernel's saved_cmdlines, filled by the events an instance records).
// A run that reads its totals at each tick (--metrics, --live) runs
// long, and keeps an instance: a perf record costs the kernel more than
// an instance's (on 6.1 under icount, 1,374 guest ns a wakeup of the
// wakeup JOIN's two records against 1,158), which pays for an instance's
// mkdir and rmdir (75 M guest ns) after about 350,000 wakeups.
// ran is false where the run must use an instance (then nothing was
// done, and why is logged when the perf events would not open).
func runStreamPerf(ctx context.Context, t *Target, plan *planner.Plan, opt Options, r *runState) (_ *results.Report, _ error, ran bool) {
	if BPFTarget(t) != nil || opt.OnTotal != nil {
		return nil, nil, false
	}
	cat := tracefs.Open(t.FS)
	if opt.Catalog != nil {
		cat = opt.Catalog
	}
	s, _, err := newStreamRun(t, plan, cat, r.instance, false, false, opt.BufferKB)
	if err != nil {
		return nil, err, true
	}
	// The ids are the machine's own, whatever catalog compiled the plan.
	s.machineCat = tracefs.Open(t.FS)
	evs, err := perfEvents(plan, s.m, s.machineCat.Event)
	if err != nil {
		return nil, nil, false
	}
	bufferKB := opt.BufferKB
	if bufferKB <= 0 {
		bufferKB = perfBufferKB
	}
	// A classic BPF tracepoint program attached to one of the events
	// would take its records from the perf events (see
	// bpf.TracepointPrograms): with any loaded, the instance, which no
	// program touches.
	for _, ev := range evs {
		_, name, _ := strings.Cut(ev.name, "/")
		s.perfTracepoints = append(s.perfTracepoints, name)
	}
	before, err := bpf.TracepointPrograms(s.perfTracepoints)
	if err == nil && len(before) > 0 {
		err = fmt.Errorf("BPF tracepoint programs are loaded (%s) that the kernel does not place elsewhere, and one attached to an event the run reads would hide that event's records from perf events", strings.Join(before, ", "))
	}
	var rings *perfRings
	if err == nil {
		rings, err = openPerfRings(evs, bufferKB)
	}
	if err != nil {
		fmt.Fprintf(r.log, "sqlhist: the stream engine reads a tracefs instance: %v\n", err)
		return nil, nil, false
	}
	s.perf = rings
	// The table's and JSON's engine line says where the events came from.
	r.opt.EngineReason = strings.TrimPrefix(r.opt.EngineReason+"; read from perf events, no tracefs instance", "; ")
	arch, _ := cat.Arch()
	r.eng, r.bpfOnly = &streamEngine{s: s, arch: arch, events: opt.Events != nil}, true
	rep, err := r.run(ctx)
	if len(s.bpfSeen) > 0 {
		fmt.Fprintf(r.log, "sqlhist: warning: BPF tracepoint programs were loaded while the run read perf events, not placed by the kernel on other tracepoints (%s): the records of an event one of them is attached to can be missing from the answer (a program that returns 0 hides them all)\n", strings.Join(s.bpfSeen, ", "))
	}
	return rep, err, true
}

// perfEvents are the events a stream run of plan reads (m, its machine)
// as perf events, with their ids (format gives the machine's formats)
// and filters, or why perf events do not serve the run: it then reads
// an instance.
func perfEvents(plan *planner.Plan, m *stream.Machine, format func(system, name string) (*tracefs.Event, error)) ([]perfEvent, error) {
	for _, u := range plan.Units {
		if len(u.Probes) > 0 {
			return nil, errors.New("its probes are made in tracefs, for the run alone")
		}
	}
	if m.NamesTasks() {
		return nil, errors.New("task names (.execname) come from the kernel's saved_cmdlines, which an instance's records fill")
	}
	var evs []perfEvent
	for _, k := range m.Events() {
		sys, name, _ := strings.Cut(k, "/")
		if m.NeedsStack(sys, name) {
			return nil, errors.New("kernel stacks come from the stacktrace trigger's records in an instance")
		}
		ev, err := format(sys, name)
		if err != nil {
			return nil, err
		}
		evs = append(evs, perfEvent{name: k, id: ev.ID, filter: m.Filter(sys, name)})
	}
	if len(evs) == 0 {
		return nil, errors.New("no event to read")
	}
	return evs, nil
}

// start builds the machine from the formats the kernel has now (the
// probes exist), opens each CPU's trace_pipe_raw and starts draining.
func (s *streamRun) start(arch *tracefs.Arch, events bool) error {
	read := func(p string) (string, error) {
		data, err := fs.ReadFile(s.t.FS, p)
		return string(data), err
	}
	hp, err := read("events/header_page")
	if err != nil {
		return fmt.Errorf("the stream engine reads the ring buffer's pages: %v", err)
	}
	if s.pageH, err = tracefs.ParseHeaderPage(hp); err != nil {
		return err
	}
	if s.perf == nil {
		// The instance's pages: perf rings hold perf's records.
		if he, err := read("events/header_event"); err == nil {
			if s.eventH, err = tracefs.ParseHeaderEvent(he); err != nil {
				return err
			}
		}
	}
	s.decoder = tracefs.FieldDecoder{Order: binary.NativeEndian, LongSize: s.pageH.LongSize()}
	s.native = true
	s.formats = map[int]*tracefs.Event{}
	if s.machineCat == nil {
		s.machineCat = tracefs.Open(s.t.FS)
	}
	format := func(system, name string) (*tracefs.Event, error) {
		ev, err := s.machineCat.Event(system, name)
		if err != nil {
			return nil, fmt.Errorf("reading the format of %s/%s: %v", system, name, err)
		}
		s.formats[ev.ID] = ev
		return ev, nil
	}
	if ev, err := s.machineCat.Event("ftrace", "kernel_stack"); err == nil {
		s.formats[ev.ID] = ev
	}
	s.comms = &commCache{t: s.t, names: map[int]string{}}
	s.syms = newSymCache(s.t)
	s.syscall = syscallNames(s.t, arch)
	mopt := stream.Options{Comm: s.comms.name, Syscall: s.syscall, Sym: s.syms.name,
		LongSize: s.pageH.LongSize(), KernelFilters: true}
	if events {
		mopt.OnSynth = s.traceLine
	}
	s.streams = events
	s.m, err = stream.New(s.hists, s.synths, format, mopt)
	if err != nil {
		return fmt.Errorf("the stream engine: %v", err)
	}
	s.kinds = nil
	for id, ev := range s.formats {
		if id < 0 || id > 0xffff {
			continue // a record's type is 16 bits: no record has it
		}
		k := newEventKind(int32(len(s.kindTab)), ev, s.m.Uses(ev.System, ev.Name), s.native)
		k.trigs = s.m.TriggersOf(ev)
		if id >= len(s.kinds) {
			s.kinds = append(s.kinds, make([]*eventKind, id+1-len(s.kinds))...)
		}
		s.kinds[id] = k
		s.kindTab = append(s.kindTab, k)
	}
	if s.perf != nil {
		if err := s.perf.enable(); err != nil {
			return err
		}
	} else if err := s.openCPUs(); err != nil {
		return err
	}
	s.lostBefore = s.lost()
	s.stop, s.done, s.syncReq = make(chan struct{}), make(chan struct{}), make(chan chan struct{})
	go s.loop()
	return nil
}

// openCPUs opens each CPU's trace_pipe_raw in the run's instance.
func (s *streamRun) openCPUs() error {
	dir := "instances/" + s.instance + "/per_cpu"
	ents, err := fs.ReadDir(s.t.FS, dir)
	if err != nil {
		return fmt.Errorf("the stream engine reads each CPU's buffer: %v", err)
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "cpu")
		cpu, err := strconv.Atoi(n)
		if !ok || err != nil {
			continue
		}
		c := &cpuReader{cpu: cpu, dir: dir + "/" + e.Name(), fd: -1}
		c.path = path.Join(s.t.Root, c.dir, "trace_pipe_raw")
		if s.t.ReadRaw == nil {
			fd, err := rawOpen(c.path)
			if err != nil {
				s.close()
				return &os.PathError{Op: "open", Path: c.path, Err: err}
			}
			c.fd = fd
		}
		s.cpus = append(s.cpus, c)
	}
	return nil
}

// loop drains the buffers every streamPoll until stopped.
func (s *streamRun) loop() {
	defer close(s.done)
	every := streamPoll
	switch {
	case s.t.ReadRaw != nil:
		// Each drain is a request to the target.
		every = streamPollVia
	case s.perf != nil && !s.streams:
		every = perfPoll
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	// Perf rings are also drained when one is half full (perfRings.watch).
	var wake chan struct{}
	if s.perf != nil {
		wake = make(chan struct{}, 1)
		if stop, err := s.perf.watch(wake); err == nil {
			defer stop()
		}
	}
	for {
		select {
		case <-s.stop:
			return
		case <-wake:
			if err := s.drain(false); err != nil {
				s.readErr = err
				return
			}
		case <-tick.C:
			if err := s.drain(false); err != nil {
				s.readErr = err
				return
			}
			if s.perf != nil && time.Since(s.bpfChecked) >= bpfCheckEvery-every/2 {
				s.checkBPF()
			}
		case reply := <-s.syncReq:
			// Two rounds: the second feeds every event read by the
			// first, which began after the request.
			for range 2 {
				if err := s.drain(false); err != nil {
					s.readErr = err
					close(reply)
					return
				}
			}
			close(reply)
		}
	}
}

// sync feeds the machine every event recorded before it was called (an
// interval's reading needs them all, not only those the last drains
// could order).
func (s *streamRun) sync() {
	if s.stop == nil {
		return
	}
	reply := make(chan struct{})
	select {
	case s.syncReq <- reply:
		<-reply
	case <-s.done:
	}
}

// drain reads every CPU's buffer until it is empty and feeds the machine
// the events that can no longer be preceded by one not read yet: a
// round reads, on each CPU, every event committed before it began, so
// after this round every event up to the newest of the round before is
// in hand. With final (the sources stopped) it feeds them all.
func (s *streamRun) drain(final bool) error {
	if _, err := s.read(); err != nil {
		return err
	}
	s.feed(final)
	return nil
}

// read reads what every CPU's buffer holds now into pending, and returns
// the bytes read.
func (s *streamRun) read() (int, error) {
	if s.perf != nil {
		return s.readPerf(), nil
	}
	var roundMax uint64
	total := 0
	// A CPU whose last page read was full may hold more: its unread
	// events are newer than its last read one, and only events up to
	// that one can be ordered yet.
	s.capMark = ^uint64(0)
	var cpuLast uint64
	var cpuFull bool
	// add decodes a page; full says the writer had left it (a page
	// still being written comes back part full).
	add := func(c *cpuReader, page *rawPage) (full bool, err error) {
		p := &s.decoded
		if err := s.pageH.DecodePageTo(p, page.buf, binary.NativeEndian, s.eventH); err != nil {
			s.putPage(page)
			return false, fmt.Errorf("%s: %v", c.path, err)
		}
		for _, rec := range p.Records {
			if s.keep(c.cpu, rec, page) {
				roundMax = max(roundMax, rec.Timestamp)
			}
			cpuLast = max(cpuLast, rec.Timestamp)
		}
		if page.refs == 0 {
			s.putPage(page)
		}
		cpuFull = p.Commit+pageTail >= s.pageH.DataSize
		return cpuFull, nil
	}
	endCPU := func() {
		if cpuFull {
			s.capMark = min(s.capMark, cpuLast)
		}
		cpuLast, cpuFull = 0, false
	}
	if s.t.ReadRaw != nil {
		dirs := make([]string, len(s.cpus))
		for i, c := range s.cpus {
			dirs[i] = c.dir
		}
		data, err := s.t.ReadRaw(dirs, s.pageH.PageSize())
		if err != nil {
			return 0, err
		}
		size := s.pageH.PageSize()
		for i, c := range s.cpus {
			total += len(data[i])
			for d := data[i]; len(d) > 0; {
				n := min(size, len(d))
				page := s.getPage()
				copy(page.buf, d[:n])
				clear(page.buf[n:])
				if _, err := add(c, page); err != nil {
					return 0, err
				}
				d = d[n:]
			}
			endCPU()
		}
	}
	for _, c := range s.cpus {
		for c.fd >= 0 {
			page := s.getPage()
			n, err := rawRead(c.fd, page.buf)
			if err == syscall.EAGAIN || err == nil && n == 0 {
				s.putPage(page)
				break
			}
			if err == syscall.EINTR {
				s.putPage(page)
				continue
			}
			if err != nil {
				s.putPage(page)
				return 0, &os.PathError{Op: "read", Path: c.path, Err: err}
			}
			total += n
			if n < len(page.buf) {
				clear(page.buf[n:])
			}
			full, err := add(c, page)
			if err != nil {
				return 0, err
			}
			if !full {
				// The writer's own page: everything committed before
				// this read is in hand. Reading on would read the
				// events of these reads themselves (a query of system
				// calls would count its own read(2)s without end).
				break
			}
		}
		endCPU()
	}
	s.prevMax, s.lastMax = s.lastMax, max(s.lastMax, roundMax)
	return total, nil
}

// bpfCheckEvery is how often a run on perf events looks for BPF
// tracepoint programs loaded since it began (checkBPF).
const bpfCheckEvery = time.Second

// checkBPF adds the classic BPF tracepoint programs loaded now to
// bpfSeen: one attached to an event the run reads can hide its records
// from the perf events (bpf.TracepointPrograms), which the run then says.
func (s *streamRun) checkBPF() {
	s.bpfChecked = time.Now()
	progs, _ := bpf.TracepointPrograms(s.perfTracepoints)
	for _, p := range progs {
		if !slices.Contains(s.bpfSeen, p) {
			s.bpfSeen = append(s.bpfSeen, p)
		}
	}
}

// readPerf is read from the perf rings: each record is copied into a
// page, as a ring buffer page read holds it, and kept. A ring holds
// only records whole (the kernel publishes its head once a record is
// written), so there is no page in part to wait for.
func (s *streamRun) readPerf() int {
	if len(s.perf.rings) == 1 && len(s.pending) == 0 {
		return s.readPerfDirect(s.perf.rings[0])
	}
	var roundMax uint64
	total := 0
	s.capMark = ^uint64(0)
	var lost uint64
	for _, r := range s.perf.rings {
		page, used := s.getPage(), 0
		total += r.read(&s.perfScratch, &lost, func(ts uint64, raw []byte) {
			if len(raw) > len(page.buf)-used {
				if page.refs == 0 {
					s.putPage(page)
				}
				page, used = s.getPage(), 0
				if len(raw) > len(page.buf) {
					page.buf = make([]byte, len(raw))
				}
			}
			copy(page.buf[used:], raw)
			if s.keep(r.cpu, tracefs.Record{Timestamp: ts, Offset: used, Data: page.buf[used : used+len(raw)]}, page) {
				roundMax = max(roundMax, ts)
				used += len(raw)
			} else {
				// Not an event the rings were opened for: a record
				// whose common fields a BPF program's pointer
				// overwrote (bpf.TracepointPrograms). Lost.
				lost++
				s.perf.foreign.Add(1)
			}
		})
		if page.refs == 0 {
			s.putPage(page)
		}
	}
	s.perf.lost.Add(lost)
	s.prevMax, s.lastMax = s.lastMax, max(s.lastMax, roundMax)
	return total
}

// readPerfDirect is readPerf of the one CPU's ring of a machine with one
// CPU online: its records are the events in the order they happened, and
// no other CPU's can come before them, so each is decoded where the ring
// holds it and fed at once, in batches of feedBatch under the machine's
// lock (a record the ring's end splits is copied out first), the space of
// each batch given back to the kernel once it is fed. Nothing is kept for
// a later round.
func (s *streamRun) readPerfDirect(r *perfRing) int {
	var lost uint64
	var newest uint64
	n := 0
	s.mu.Lock()
	c := r.cursor()
	for {
		ts, raw, ok := c.next(&s.perfScratch, &lost)
		if !ok {
			break
		}
		k := s.kindOf(raw)
		if k == nil {
			// See readPerf: a record none of the run's events.
			lost++
			s.perf.foreign.Add(1)
			continue
		}
		s.m.FeedTo(k.trigs, s.decodeData(k, ts, int32(r.cpu), raw, nil))
		newest = max(newest, ts)
		if n++; n == feedBatch {
			// The records fed are the kernel's to write over: a ring
			// read while it fills keeps the room it had.
			c.free()
			s.mu.Unlock()
			n = 0
			s.mu.Lock()
		}
	}
	s.mu.Unlock()
	total := c.done()
	s.perf.lost.Add(lost)
	s.prevMax, s.lastMax = s.lastMax, max(s.lastMax, newest)
	return total
}

// feed gives the machine the pending events that no event still unread
// can precede (all of them with final), in timestamp order.
func (s *streamRun) feed(final bool) {
	// prevMax is the newest timestamp read before the last round: every
	// event stamped before it was committed before that round began, and
	// so is read now.
	mark := min(s.prevMax, s.capMark)
	if final {
		mark = ^uint64(0)
	}
	s.sortPending()
	n := sort.Search(len(s.pending), func(i int) bool { return s.pending[i].ts > mark })
	s.trimStacks(s.pending[:n])
	// In batches, so that a reading of the results (an interval's) waits
	// for one batch at most.
	for i := 0; i < n; i += feedBatch {
		s.mu.Lock()
		for j := i; j < min(i+feedBatch, n); j++ {
			r := &s.pending[j]
			s.m.FeedTo(s.kindTab[r.kind].trigs, s.decode(r))
			// The machine keeps copies of what it needs of an event:
			// the page serves the next reads once all its records
			// are fed.
			p := s.pageTab[r.page]
			if p.refs--; p.refs == 0 {
				s.putPage(p)
			}
		}
		s.mu.Unlock()
	}
	s.pending = append(s.pending[:0], s.pending[n:]...)
	s.keepStacks()
}

// sortPending orders pending by timestamp, stably (as
// slices.SortStableFunc would): it is made of runs already in order (those
// left from the last feed, then each CPU's records of a round, in the
// order each buffer gave them), so the runs are found and merged, two
// neighbours at a time, the left one's first on equal timestamps. With one
// CPU, or one busy CPU, that is one pass that finds one run.
func (s *streamRun) sortPending() {
	p := s.pending
	runs := append(s.runs[:0], 0)
	for i := 1; i < len(p); i++ {
		if p[i].ts < p[i-1].ts {
			runs = append(runs, i)
		}
	}
	s.runs = runs
	if len(runs) == 1 {
		return
	}
	if len(runs) > 256 {
		// Not runs of CPUs' buffers: sort.
		slices.SortStableFunc(p, func(a, b rawEvent) int { return cmp.Compare(a.ts, b.ts) })
		return
	}
	if cap(s.merged) < len(p) {
		s.merged = make([]rawEvent, len(p), cap(p))
	}
	out := s.merged[:len(p)]
	for len(runs) > 1 {
		next := runs[:0]
		for i := 0; i < len(runs); i += 2 {
			lo := runs[i]
			if i+1 == len(runs) {
				copy(out[lo:], p[lo:])
				next = append(next, lo)
				break
			}
			mid, hi := runs[i+1], len(p)
			if i+2 < len(runs) {
				hi = runs[i+2]
			}
			a, b, k := lo, mid, lo
			for a < mid && b < hi {
				if p[b].ts < p[a].ts {
					out[k] = p[b]
					b++
				} else {
					out[k] = p[a]
					a++
				}
				k++
			}
			k += copy(out[k:], p[a:mid])
			copy(out[k:], p[b:hi])
			next = append(next, lo)
		}
		runs = next
		p, out = out, p
	}
	s.pending, s.merged = p, out[:0]
}

// keepStacks drops the stacks of the events fed: all of them once none
// is pending, else when they are most of those kept.
func (s *streamRun) keepStacks() {
	if len(s.pending) == 0 {
		clear(s.stacks)
		s.stacks = s.stacks[:0]
		return
	}
	if len(s.stacks) < 64 || len(s.stacks) < 2*len(s.pending) {
		return
	}
	var kept [][]uint64
	for i := range s.pending {
		if r := &s.pending[i]; r.stack > 0 {
			kept = append(kept, s.stacks[r.stack-1])
			r.stack = int32(len(kept))
		}
	}
	s.stacks = kept
}

// getPage is a page to read into: one whose records were all fed, or a
// new one.
func (s *streamRun) getPage() *rawPage {
	if n := len(s.pages); n > 0 {
		p := s.pages[n-1]
		s.pages = s.pages[:n-1]
		return p
	}
	p := &rawPage{id: int32(len(s.pageTab)), buf: make([]byte, s.pageH.PageSize())}
	s.pageTab = append(s.pageTab, p)
	return p
}

// putPage keeps a page no record refers to for the next reads.
func (s *streamRun) putPage(p *rawPage) {
	p.refs = 0
	s.pages = append(s.pages, p)
}

// keep adds a record of a page read to pending, and reports whether it
// is an event of the machine's; a kernel stack record is attached to the
// event before it on its CPU.
func (s *streamRun) keep(cpu int, rec tracefs.Record, page *rawPage) bool {
	k := s.kindOf(rec.Data)
	if k == nil {
		return false // an event the run did not ask for (a trace_marker write)
	}
	if k.stack {
		for i := len(s.pending) - 1; i >= 0; i-- {
			if r := &s.pending[i]; int(r.cpu) == cpu {
				if r.stack == 0 {
					s.stacks = append(s.stacks, nil)
					r.stack = int32(len(s.stacks))
				}
				s.stacks[r.stack-1] = s.kernelStack(k.def, rec.Data)
				break
			}
		}
		return false
	}
	page.refs++
	s.pending = append(s.pending, rawEvent{ts: rec.Timestamp, cpu: int32(cpu), kind: k.idx, page: page.id,
		off: uint32(rec.Offset), n: uint32(len(rec.Data))})
	return true
}

// kindOf is how a record's event is decoded, by the event's id (its
// common_type), or nil for an event the run does not read.
func (s *streamRun) kindOf(data []byte) *eventKind {
	if len(data) < 2 {
		return nil
	}
	var id int
	if s.native {
		id = int(binary.NativeEndian.Uint16(data))
	} else {
		id = int(s.decoder.Order.Uint16(data))
	}
	if id < len(s.kinds) {
		return s.kinds[id]
	}
	return nil
}

// decode makes a record read an event of the machine: its kind's event,
// which the next record of the kind overwrites.
func (s *streamRun) decode(r *rawEvent) *stream.Event {
	var stack []uint64
	if r.stack > 0 {
		stack = s.stacks[r.stack-1]
	}
	return s.decodeData(s.kindTab[r.kind], r.ts, r.cpu, s.pageTab[r.page].buf[r.off:r.off+r.n:r.off+r.n], stack)
}

// decodeData is decode of a record's bytes, data.
func (s *streamRun) decodeData(k *eventKind, ts uint64, cpu int32, data []byte, stack []uint64) *stream.Event {
	ev := &k.event
	ev.TS, ev.CPU, ev.PID, ev.Stack = ts, int(cpu), 0, stack
	if p := k.pid; p != nil {
		if k.pid4 && p.Offset+4 <= len(data) {
			ev.PID = int(int32(binary.NativeEndian.Uint32(data[p.Offset:])))
		} else {
			ev.PID = int(s.int(p, data))
		}
	}
	// Only the fields the triggers read: the rest stay zero.
	for j := range k.reads {
		fr := &k.reads[j]
		f := fr.f
		switch fr.kind {
		case readNum:
			if fr.native4 && f.Offset+4 <= len(data) {
				// The common case at once: an int or u32 (a pid).
				v := binary.NativeEndian.Uint32(data[f.Offset:])
				if f.Signed {
					ev.Fields[fr.idx].N = uint64(int64(int32(v)))
				} else {
					ev.Fields[fr.idx].N = uint64(v)
				}
				continue
			}
			ev.Fields[fr.idx].N = uint64(s.int(f, data))
		case readText:
			var b []byte
			if f.Offset+f.Size <= len(data) {
				// A char array: its bytes, in place.
				b = data[f.Offset : f.Offset+f.Size]
			} else {
				b, _ = s.decoder.Bytes(f, data)
			}
			if n := bytes.IndexByte(b, 0); n >= 0 {
				b = b[:n]
			}
			if string(b) != fr.last {
				fr.last = s.text(b)
				ev.Fields[fr.idx] = stream.Text(fr.last)
			}
		case readDynText:
			b, _ := s.decoder.Bytes(f, data)
			if n := bytes.IndexByte(b, 0); n >= 0 {
				b = b[:n]
			}
			if string(b) != fr.last {
				fr.last = s.text(b)
				ev.Fields[fr.idx] = stream.Text(fr.last)
			}
		default:
			a, _ := s.decoder.Array(f, data)
			ev.Fields[fr.idx] = stream.Value{Stack: a}
		}
	}
	return ev
}

// int is decoder.Int (0 where it fails) with the common case at once: a
// field of 1, 2, 4 or 8 bytes inside the record, in the machine's byte
// order (the order a stream run reads: the target's own).
func (s *streamRun) int(f *tracefs.Field, data []byte) int64 {
	if s.native && f.Offset >= 0 && f.Offset+f.Size <= len(data) {
		b := data[f.Offset:]
		var v uint64
		switch f.Size {
		case 4:
			v = uint64(binary.NativeEndian.Uint32(b))
		case 8:
			return int64(binary.NativeEndian.Uint64(b))
		case 2:
			v = uint64(binary.NativeEndian.Uint16(b))
		case 1:
			v = uint64(b[0])
		default:
			n, _ := s.decoder.Int(f, data)
			return n
		}
		if f.Signed {
			shift := uint(64 - 8*f.Size)
			return int64(v<<shift) >> shift
		}
		return int64(v)
	}
	n, _ := s.decoder.Int(f, data)
	return n
}

// maxStrs bounds the strings a stream run keeps to reuse.
const maxStrs = 4096

// text is a string field's bytes up to their first NUL, as a string: one
// made before for the same bytes, while there are at most maxStrs.
func (s *streamRun) text(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if str, ok := s.strs[string(b)]; ok {
		return str
	}
	str := string(b)
	if s.strs == nil {
		s.strs = map[string]string{}
	}
	if len(s.strs) < maxStrs {
		s.strs[str] = str
	}
	return str
}

// traceLine hands --events the line the kernel would print in trace for a
// synthetic event the machine fired.
func (s *streamRun) traceLine(ev *stream.Event) {
	if s.events == nil {
		return
	}
	line := synthLine(ev, s.comms.name)
	s.events.mu.Lock()
	s.events.line(line)
	s.events.mu.Unlock()
}

// synthLine is a synthetic event an engine computed as the kernel's
// trace_pipe shows it (comm names its task).
func synthLine(ev *stream.Event, comm func(pid int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%16s-%-7d [%03d] ..... %5d.%06d: %s:", comm(ev.PID), ev.PID, ev.CPU, ev.TS/1e9, ev.TS%1e9/1e3, ev.Def.Name)
	for i, f := range ev.Def.Fields {
		if f.IsCommon() {
			continue
		}
		v := ev.Fields[i]
		switch {
		case v.Str:
			fmt.Fprintf(&b, " %s=%s", f.Name, v.S)
		case f.Kind == tracefs.KindDynArray:
			fmt.Fprintf(&b, " %s=%d", f.Name, len(v.Stack))
		case f.Signed:
			fmt.Fprintf(&b, " %s=%d", f.Name, int64(v.N))
		default:
			fmt.Fprintf(&b, " %s=%d", f.Name, v.N)
		}
	}
	return b.String()
}

// kernelStack reads a kernel_stack record: size entries from caller on
// (the format declares caller[8], the record holds as many as size says).
func (s *streamRun) kernelStack(def *tracefs.Event, rec []byte) []uint64 {
	caller, size := def.Field("caller"), def.Field("size")
	if caller == nil || size == nil {
		return nil
	}
	n, err := s.decoder.Int(size, rec)
	word := s.decoder.LongSize
	if err != nil || n <= 0 || word <= 0 {
		return nil
	}
	var out []uint64
	for i := 0; i < int(n) && caller.Offset+(i+1)*word <= len(rec); i++ {
		b := rec[caller.Offset+i*word:]
		var a uint64
		if word == 8 {
			a = binary.NativeEndian.Uint64(b)
		} else {
			a = uint64(binary.NativeEndian.Uint32(b))
		}
		if a == 0 {
			break
		}
		out = append(out, a)
	}
	return out
}

// histStackDepth is how many frames a hist trigger's stacktrace key keeps
// (the kernel's HIST_STACKTRACE_DEPTH).
const histStackDepth = 16

// stackSkip is how many more frames a hist trigger's stacktrace key skips
// than the stacktrace trigger's record (HIST_STACKTRACE_SKIP against
// STACKTRACE_SKIP): the tracepoint's own frames, which are
// trace_event_raw_event_<event> and __traceiter_<event> on x86-64 and
// trace_event_raw_event_<event> and its caller on arm64, where the
// iterator is not a frame of its own (e2e differ phase, 6.1, 6.12, 7.2,
// 6.1-arm64).
const stackSkip = 2

// trimStacks makes the stacks the stacktrace trigger recorded what a hist
// trigger's stacktrace key holds: the frames of the tracepoint's own
// machinery on top, which the key skips, are dropped, and at most
// histStackDepth frames kept.
func (s *streamRun) trimStacks(evs []rawEvent) {
	for _, ev := range evs {
		if ev.stack == 0 {
			continue
		}
		st := s.stacks[ev.stack-1]
		st = st[min(stackSkip, len(st)):]
		if len(st) > histStackDepth {
			st = st[:histStackDepth]
		}
		s.stacks[ev.stack-1] = st
	}
}

// finish stops the recording, reads what the buffers still hold and
// feeds it all, and closes the readers. The count of events the kernel
// lost (overwritten or dropped, every CPU) is returned.
func (s *streamRun) finish() (lost int, err error) {
	if s.stop == nil {
		return 0, nil
	}
	var werr error
	if s.perf != nil {
		werr = s.perf.disable()
		defer s.checkBPF() // once the loop is done
	} else {
		werr = s.t.W.Append("instances/"+s.instance+"/tracing_on", "0")
	}
	close(s.stop)
	<-s.done
	s.stop = nil
	err = errors.Join(werr, s.readErr)
	if s.readErr == nil {
		// Read until the buffers are empty (a request through a
		// transport reads a bounded number of pages), then feed all.
		for range 1000 {
			n, rerr := s.read()
			if rerr != nil {
				err = errors.Join(err, rerr)
				break
			}
			if n == 0 {
				break
			}
		}
		s.feed(true)
	}
	lost = max(s.lost()-s.lostBefore, 0)
	s.close()
	return lost, err
}

func (s *streamRun) close() {
	if s.perf != nil {
		s.perf.close()
	}
	for _, c := range s.cpus {
		if c.fd >= 0 {
			rawClose(c.fd)
		}
	}
	s.cpus = nil
}

// lost adds up the events each CPU's buffer overwrote or dropped, from
// its stats file.
func (s *streamRun) lost() int {
	if s.perf != nil {
		return int(min(s.perf.lostNow(), 1<<31))
	}
	total := 0
	for _, c := range s.cpus {
		data, err := fs.ReadFile(s.t.FS, "instances/"+s.instance+"/per_cpu/cpu"+strconv.Itoa(c.cpu)+"/stats")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok || k != "overrun" && k != "dropped events" {
				continue
			}
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			total += n
		}
	}
	return total
}

// histFile is the text of a trigger's hist file as the machine computed
// it (file: instances/…/events/SYSTEM/EVENT/hist).
func (s *streamRun) histFile(file string) string {
	parts := strings.Split(file, "/")
	if len(parts) < 4 {
		return ""
	}
	sys, ev := parts[len(parts)-3], parts[len(parts)-2]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syms.prefetch(s.m.Addresses())
	return s.m.HistFile(sys, ev)
}

// histograms are the histograms of a hist file as the machine computed
// them.
func (s *streamRun) histograms(file string) ([]*tracefs.Histogram, error) {
	return parseHistFile(file, []byte(s.histFile(file)))
}

// commCache names tasks from the kernel's saved_cmdlines, read again when
// a pid is not in it (at most every streamPoll).
type commCache struct {
	t     *Target
	names map[int]string
	read  time.Time
}

func (c *commCache) name(pid int) string {
	if n, ok := c.names[pid]; ok {
		return n
	}
	if time.Since(c.read) >= streamPoll {
		c.read = time.Now()
		if data, err := fs.ReadFile(c.t.FS, "saved_cmdlines"); err == nil {
			sc := bufio.NewScanner(strings.NewReader(string(data)))
			for sc.Scan() {
				p, n, ok := strings.Cut(sc.Text(), " ")
				if id, err := strconv.Atoi(p); ok && err == nil {
					c.names[id] = n
				}
			}
		}
	}
	if n, ok := c.names[pid]; ok {
		return n
	}
	if pid == 0 {
		return "<idle>"
	}
	return "<...>"
}

// syscallNames names system call numbers for the target's architecture
// as the kernel's .syscall does, checking each name against its syscalls
// events.
func syscallNames(t *Target, arch *tracefs.Arch) func(uint64) string {
	if arch == nil {
		arch = tracefs.Arches[0]
	}
	return tracefs.SyscallNamer(arch.Name, func(name string) bool {
		_, err := fs.Stat(t.FS, "events/syscalls/sys_enter_"+name)
		return err == nil
	})
}
