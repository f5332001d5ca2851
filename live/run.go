package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// InstancePrefix starts the name of the private instance of a run, and of
// its probe group: sqlhist_<id>.
const InstancePrefix = "sqlhist_"

// Prepare returns opt set up for a run identified by id (the process id
// for sqlhist): derived synthetic event names get the suffix _<id> and the
// probes the group sqlhist_<id>, whatever the flags (-n too), so runs at
// once do not collide and a killed run's probes are found by their group;
// the triggers go into the private instance sqlhist_<id> unless
// opt.Instance names one.
func Prepare(opt planner.Options, id int) planner.Options {
	opt.Run = true
	if opt.Name == "" {
		opt.Suffix = strconv.Itoa(id)
	}
	opt.ProbeGroup = InstancePrefix + strconv.Itoa(id)
	if opt.Instance == "" {
		opt.Instance = InstancePrefix + strconv.Itoa(id)
	}
	// The results histograms go in the run's lease, an instance with no
	// timestamp triggers: the JOINs' synthetic events they read are then
	// built in the kernel's per-CPU scratch buffer, not reserved in the
	// ring buffer of the instance of the JOIN's triggers and discarded
	// (373 of 6481 guest ns a wakeup for the wakeup JOIN under --run, on
	// 6.1: make bench-kernel).
	opt.ResultsInstance = LeaseName(id)
	return opt
}

// ParseDuration reads a collection time as sqlhist's -d takes it: a
// number of seconds ("10", "0.5"), as the kprobe tool's -d, or a Go
// duration ("1m30s").
func ParseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > 1e9 {
			return 0, fmt.Errorf("-d %s: too long", s)
		}
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("-d %q: give seconds (10, 0.5) or a duration (1m30s, 500ms)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("-d %s: the duration must be positive", s)
	}
	return d, nil
}

// Options control a [Run].
type Options struct {
	// Duration ends the collection; zero collects until ctx is done.
	Duration time.Duration
	// BufferKB is the stream engine's ring buffer per CPU, in its
	// instance (buffer_size_kb; 0: streamBufferKB); an instance the run
	// did not make (-B) keeps its own.
	BufferKB int
	// StreamInstance makes the stream engine read its events through a
	// tracefs instance even where this machine's perf events would serve
	// (see [perfRings]).
	StreamInstance bool
	// Events, when set, receives the synthetic events' lines as the kernel
	// records them, in Format: "table" (the kernel's lines), "json" (an
	// object per line) or "csv".
	Events io.Writer
	Format string
	// Log receives progress and warnings ("sqlhist: collecting for 2s in
	// instance …"); nil discards them.
	Log io.Writer
	// Marker is written to the instance's trace_marker once the sources
	// stopped, to end the stream; default "sqlhist-end-<instance>".
	Marker string
	// After replaces time.After (for tests).
	After func(time.Duration) <-chan time.Time
	// Interval, when positive, reads the results every Interval and
	// passes what each interval alone collected to OnInterval; the last,
	// partial one when the collection ends.
	Interval   time.Duration
	OnInterval func(*results.Interval)
	// OnTotal, when set with Interval, receives at each tick (and at the
	// end) everything the run has collected so far: the kernel's
	// cumulative counts, which only grow (a --metrics exporter's).
	OnTotal func([]*results.Result)
	// Tick replaces time.NewTicker for the intervals (for tests): it
	// returns the ticks and a stop function.
	Tick func(time.Duration) (<-chan time.Time, func())
	// ID is the run's id as given to [Prepare], which names its lease
	// (see [LeaseName]); 0 takes it from the private instance's name.
	ID int
	// Alive reports whether the process of another run exists, to tell
	// a running run's objects from a killed one's; nil asks the kernel.
	Alive func(pid int) bool
	// Engine is the engine that answers: EngineKernel (the default) or
	// EngineStream (see PickEngine); the plan must be made for it
	// (planner.Options.Stream).
	Engine string
	// EngineReason says why Engine answers (see [EngineChoice]), for the
	// table and JSON; "" says nothing.
	EngineReason string
	// BPF, with Engine EngineBPF, is the plan's programs as LoadBPF
	// loaded them (nil: Run loads them).
	BPF *BPFProgram
	// Catalog is the catalog the plan was compiled against (it defines
	// the plan's probes); the stream engine reads the formats of the
	// events it enables from it before they exist. Nil reads the
	// target's tracefs.
	Catalog *tracefs.Catalog
	// Watch is how often the collection checks that the run's instance,
	// lease and triggers are still there (someone may remove them); 0 is
	// every second.
	Watch time.Duration
}

// Run applies a plan prepared for a run (see [Prepare]) in its instance,
// creating the instance when it is missing; collects for opt.Duration or
// until ctx is done; stops the sources so that what is read is final;
// reads each statement's histogram; and removes everything it created, on
// every way out once the apply succeeded. The context's cause, when it
// ends the collection, is logged. A refused write is an *ApplyError, and
// nothing is left behind.
func Run(ctx context.Context, t *Target, plan *planner.Plan, opt Options) (*results.Report, error) {
	r := &runState{t: t, plan: plan, opt: opt, log: opt.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	r.instance = instanceOf(plan)
	every := opt.Interval
	if opt.OnInterval == nil {
		// Only the totals are read at each tick (--live, --metrics):
		// a share of everything counted is one.
		every = 0
	}
	if err := results.CheckIntervalColumns(plan, every); err != nil {
		return nil, err
	}
	if t.FS == nil || r.instance == "" {
		return nil, errors.New("live.Run needs a Target with an FS and a plan made with Prepare's options")
	}
	if opt.Engine == EngineBPF {
		return runBPF(ctx, t, plan, opt, r)
	}
	created := !t.HasInstance(r.instance)
	if opt.Engine == EngineStream && created && !opt.StreamInstance {
		if rep, err, ran := runStreamPerf(ctx, t, plan, opt, r); ran {
			return rep, err
		}
	}
	cat := tracefs.Open(t.FS)
	if created && !cat.HasFile("instances") {
		return nil, fmt.Errorf("%s has no instances/ directory: this kernel cannot keep a run apart from other tracing", t.Root)
	}
	id := runID(opt.ID, r.instance)
	r.lease = LeaseName(id)
	// A stream run that would make its instance reads its events in its
	// lease instead, where a snapshot buffer can keep its records: one
	// instance made and removed, not two (on 6.1, with no eventfs, an
	// instance's 8,448 event files take 42 ms of CPU to make and 25 ms
	// to remove under make bench-kernel's qemu).
	inLease := opt.Engine == EngineStream && created && cat.HasFile("snapshot")
	if opt.Engine == EngineStream {
		if opt.Catalog != nil {
			cat = opt.Catalog
		}
		if inLease {
			r.instance, created = r.lease, false
		}
		s, cmds, err := newStreamRun(t, plan, cat, r.instance, created, inLease, opt.BufferKB)
		if err != nil {
			return nil, err
		}
		arch, _ := cat.Arch()
		r.cmds = cmds
		r.eng = &streamEngine{s: s, arch: arch, events: opt.Events != nil}
	} else {
		eopt := emit.Options{SyntheticEventsFile: !cat.Features().DynamicEvents}
		r.cmds = emit.RunCommands(plan, eopt, emit.RunOptions{Instance: r.instance, CreateInstance: created, Enable: opt.Events != nil})
		r.eng = &kernelEngine{r: r}
	}
	alive := opt.Alive
	if alive == nil {
		alive = processAlive
	}
	alive = t.liveness(alive)
	if err := checkClaims(t, alive, id, r.cmds); err != nil {
		return nil, err
	}
	if t.HasInstance(r.lease) {
		return nil, fmt.Errorf("the instance %s is there already: a killed run with the same process id (%d) left it; sqlhist --cleanup removes what it left", r.lease, id)
	}
	var h *heart
	if t.Beat {
		var err error
		if h, err = startBeat(t, id); err != nil {
			return nil, err
		}
	}
	if err := takeLease(t, r.lease, r.cmds, inLease, opt.BufferKB); err != nil {
		return nil, errors.Join(err, h.end(r.lease))
	}
	rep, err := r.run(ctx)
	return rep, errors.Join(err, h.end(r.lease))
}

// runID is the id of a run: id, or the one in the name of its private
// instance sqlhist_<id>.
func runID(id int, instance string) int {
	if id != 0 {
		return id
	}
	if m := runName().FindStringSubmatch(instance); m != nil && m[2] == "" {
		id, _ = strconv.Atoi(m[1])
	}
	return id
}

// instanceOf is the instance a plan's triggers are in.
func instanceOf(plan *planner.Plan) string {
	for _, u := range plan.Units {
		if u.Start != nil {
			return u.Start.Instance
		}
	}
	return ""
}

// runState is one run in progress.
type runState struct {
	t        *Target
	plan     *planner.Plan
	opt      Options
	log      io.Writer
	instance string
	lease    string // the run's lease instance (see LeaseName)
	cmds     []emit.Command
	eng      engine // what computes the answer
	lost     int    // events the engine's sources lost
	// bpfOnly says that the run writes nothing to tracefs (the BPF
	// engine, the stream engine on perf events): no lease, no instance to
	// watch.
	bpfOnly bool
}

func (r *runState) instanceDir() string { return "instances/" + r.instance }

// madeInstance reports whether the run creates its instance (not one -B
// names that was there before it).
func (r *runState) madeInstance() bool {
	return slices.ContainsFunc(r.cmds, func(c emit.Command) bool {
		return c.Kind == emit.KindDir && c.File == r.instanceDir() && c.Line == "mkdir"
	})
}

func (r *runState) run(ctx context.Context) (*results.Report, error) {
	if err := Apply(r.t, r.cmds); err != nil {
		if ae, ok := err.(*ApplyError); !ok || len(ae.Undo) == 0 {
			err = dropLease(r.t, r.lease, err)
		}
		return nil, err
	}
	// The teardown runs in two steps: first the end triggers are removed,
	// which stops the synthetic events at their source, so that what is
	// read afterwards is final; then the rest, after reading.
	rest := emit.Teardown(r.cmds)
	if k, ok := r.eng.(*kernelEngine); ok {
		var first []emit.Command
		first, rest = splitEnds(rest)
		k.first = first
	}
	var errs, terrs []error
	tornDown := false
	stopSources := func() {
		lost, err := r.eng.stop()
		r.lost += lost
		terrs = append(terrs, err)
	}
	teardown := func() {
		stopSources()
		if !tornDown {
			tornDown = true
			terrs = append(terrs, r.teardownRest(rest))
			errs = append(errs, terrs...)
			// The lease goes last, and only when everything else went:
			// what stays is then --cleanup's to remove.
			if errors.Join(terrs...) == nil && !r.bpfOnly {
				if err := r.t.W.Rmdir("instances/" + r.lease); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing the run's lease, instance %s: %v", r.lease, errnoText(err)))
				}
			}
		}
	}
	defer teardown()
	if err := r.eng.start(); err != nil {
		teardown()
		return nil, errors.Join(append([]error{err}, errs...)...)
	}

	until := "until Ctrl-C"
	var timeout <-chan time.Time
	if d := r.opt.Duration; d > 0 {
		until = "for " + d.String()
		after := r.opt.After
		if after == nil {
			after = time.After
		}
		timeout = after(d)
	}
	if se, ok := r.eng.(*streamEngine); ok && se.s.perf != nil {
		fmt.Fprintf(r.log, "sqlhist: collecting %s from perf events on %s (no tracefs instance); Ctrl-C to stop\n", until, strings.Join(se.s.m.Events(), ", "))
	} else if r.bpfOnly {
		fmt.Fprintf(r.log, "sqlhist: collecting %s with BPF programs on %s; Ctrl-C to stop\n", until, describeEvents(r.eng))
	} else {
		fmt.Fprintf(r.log, "sqlhist: collecting %s in instance %s; Ctrl-C to stop\n", until, r.instance)
	}

	var st *streamer
	fed, streams := r.eng.(eventFeeder)
	if r.opt.Events != nil && streams {
		st = fed.streamer(r.opt.Events, r.plan, r.opt.Format)
	} else if r.opt.Events != nil {
		if r.madeInstance() {
			// Its events are read as text: a top level set to hex,
			// bin or raw gave the instance its option.
			textOptions(r.t, r.instanceDir())
		}
		p, err := r.t.openPipe(path.Join(r.t.Root, r.instanceDir(), "trace_pipe"))
		if err != nil {
			teardown()
			return nil, errors.Join(append([]error{err}, errs...)...)
		}
		st = newStreamer(r.opt.Events, r.plan, r.opt.Format)
		st.marker = r.opt.Marker
		if st.marker == "" {
			st.marker = "sqlhist-end-" + r.instance
		}
		st.pipe = p
		defer p.Close()
		go st.copy(p)
	}
	iv := r.newIntervals()
	defer iv.stop()
	every := r.opt.Watch
	if every <= 0 {
		every = time.Second
	}
	// A run with nothing in tracefs (perf events, BPF) has nothing to
	// check, and no tick to wake for (each costs a 6.1 guest about
	// 60 µs of CPU).
	var watchC <-chan time.Time
	if !r.bpfOnly {
		watch := time.NewTicker(every)
		defer watch.Stop()
		watchC = watch.C
	}
wait:
	for {
		// The end of the collection comes before a tick or a check that
		// was due with it (a reading that took long must not add an
		// interval after -d).
		select {
		case <-timeout:
			break wait
		default:
		}
		select {
		case <-timeout:
			break wait
		case <-ctx.Done():
			fmt.Fprintf(r.log, "sqlhist: %v: reading what was collected and cleaning up\n", context.Cause(ctx))
			break wait
		case <-st.doneChan():
			fmt.Fprintln(r.log, "sqlhist: trace_pipe ended; reading what was collected and cleaning up")
			break wait
		case <-iv.ticks:
			if err := iv.take(false); err != nil {
				fmt.Fprintf(r.log, "sqlhist: reading interval %d: %v\n", iv.n+1, err)
			}
		case <-watchC:
			if err := r.changed(); err != nil {
				fmt.Fprintf(r.log, "sqlhist: %v: reading what is left and removing what is still the run's\n", err)
				errs = append(errs, err)
				break wait
			}
		}
	}
	// Stop the synthetic events at their source, let trace_pipe hand over
	// what is left, then read: the kernel's count and the lines streamed
	// cover the same events.
	stopSources()
	if st != nil && !streams {
		// A marker written after the sources stopped comes out of
		// trace_pipe after every event before it: once the streamer has
		// seen it, everything was streamed.
		if err := r.t.W.Append(r.instanceDir()+"/trace_marker", st.marker); err != nil {
			fmt.Fprintf(r.log, "sqlhist: writing the end marker: %v\n", err)
		} else if !st.wait(endMarkerWait) {
			// A loaded target, or a slow line under --via, can take
			// long to hand the rest over: say so rather than let the
			// count fall short unexplained (it waited 5 s, silently).
			fmt.Fprintf(r.log, "sqlhist: warning: the end marker did not come out of trace_pipe within %v: the events after the last one streamed were not streamed\n", endMarkerWait)
		}
	}
	rs, rerr := r.read()
	if rerr == nil && iv.ticks != nil {
		iv.last(rs)
	}
	rep := &results.Report{Results: rs, Engine: r.eng.name(), EngineReason: r.opt.EngineReason, Lost: r.lost}
	if rep.Engine != EngineKernel {
		for _, res := range rs {
			res.Engine, res.EngineReason, res.Lost = rep.Engine, rep.EngineReason, r.lost
		}
	}
	if st != nil && streams {
		st.mu.Lock()
		rep.Streamed, rep.Lost = maps.Clone(st.counts), r.lost+st.lost
		st.mu.Unlock()
	} else if st != nil {
		st.stop()
		st.mu.Lock()
		rep.Streamed, rep.Lost = maps.Clone(st.counts), st.lost
		st.mu.Unlock()
	}
	teardown()
	if rerr != nil {
		errs = append(errs, fmt.Errorf("reading the results: %w", rerr))
	}
	return rep, errors.Join(errs...)
}

// splitEnds splits a teardown into the removals of the end triggers and
// the rest, each in its order.
func splitEnds(teardown []emit.Command) (first, rest []emit.Command) {
	for _, c := range teardown {
		if c.Role == "end" {
			first = append(first, c)
		} else {
			rest = append(rest, c)
		}
	}
	return first, rest
}

// teardownRest removes what is left of the run once its end triggers are
// gone: its other triggers and enables, then the instances it made, then
// every probe and synthetic event in one write to dynamic_events (a
// line each, in the teardown's order). Removing a dynamic event resets
// every ring buffer, the lease's too, and with it the manifest that says
// what the run made: whatever the run still had then, a -B instance or a
// synthetic event named with -n or a view, could not be told as the
// run's by --cleanup once the run was killed. Removing them all at once
// leaves only the lease after that write. Should the kernel refuse that
// write, the removals are made one by one, so that each refusal is
// reported with its own error_log entry.
func (r *runState) teardownRest(rest []emit.Command) error {
	var before, dirs, dyn []emit.Command
	batch := true // every removal of a dynamic event is a line of dynamic_events
	for _, c := range rest {
		switch {
		case c.Kind == emit.KindDir:
			dirs = append(dirs, c)
		case c.Kind == emit.KindSynth || c.Kind == emit.KindProbe:
			dyn = append(dyn, c)
			batch = batch && c.File == "dynamic_events"
		default:
			before = append(before, c)
		}
	}
	// The triggers and enables, then the instances: their removal needs
	// nothing of the dynamic events, and they go before the manifest does.
	errs := []error{Teardown(r.t, before), Teardown(r.t, dirs)}
	if batch && len(dyn) > 1 {
		lines := make([]string, len(dyn))
		for i, c := range dyn {
			lines[i] = c.Line
		}
		if err := r.t.W.Append("dynamic_events", strings.Join(lines, "\n")); err == nil {
			return errors.Join(errs...)
		}
		// Refused: one by one below, what the batch removed skipped as
		// gone, each refusal with its own error_log entry.
	}
	errs = append(errs, Teardown(r.t, dyn))
	return errors.Join(errs...)
}

// pauseHistograms pauses the trigger of each histogram query, so that the
// entries and the Totals read from its hist file count the same events
// (the kernel prints them one after the other while events keep coming).
// A JOIN's results need no pause: removing the end triggers stops them.
// A trigger with variables could not be paused this way (the kernel parses
// the spec as a new trigger first and finds them defined); a histogram
// has none.
func (r *runState) pauseHistograms() {
	for _, u := range r.plan.Units {
		h := u.Start
		if u.End != nil || h == nil || len(h.Vars) > 0 {
			continue
		}
		if err := r.t.W.Append(h.TriggerFile(), h.PauseSpec()); err != nil {
			fmt.Fprintf(r.log, "sqlhist: warning: pausing the histogram on %s/%s: %v (its counts may differ slightly from its Totals)\n", h.System, h.Event, errnoText(err))
		}
	}
}

// read reads the histogram of each unit: a JOIN's results histogram or a
// histogram query's own.
func (r *runState) read() ([]*results.Result, error) {
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	return snap.results(), nil
}

// snapshot is the histograms of a run as read at one moment.
type snapshot struct {
	units []*planner.Unit
	hists []*planner.Hist
	got   []*tracefs.Histogram
	neg   []uint64
}

// snapshot reads the histogram each unit shows.
func (r *runState) snapshot() (*snapshot, error) {
	snap := &snapshot{}
	for _, u := range r.plan.Units {
		if u.Feeds {
			continue // a later unit shows what it computes
		}
		h := u.Results
		if h == nil {
			h = u.Start
		}
		file := h.HistFile()
		hs, err := r.eng.histograms(file)
		if err != nil {
			return nil, err
		}
		got := findHist(hs, h)
		if got == nil {
			return nil, fmt.Errorf("%s: no histogram keyed by %s", file, strings.Join(planner.ExprStrings(h.Keys), ","))
		}
		var neg uint64
		if u.Negatives != nil {
			if neg, err = r.countNegatives(u.Negatives); err != nil {
				return nil, err
			}
		}
		snap.units, snap.hists = append(snap.units, u), append(snap.hists, h)
		snap.got, snap.neg = append(snap.got, got), append(snap.neg, neg)
	}
	return snap, nil
}

// results turns a snapshot into results.
func (s *snapshot) results() []*results.Result {
	var out []*results.Result
	for i, u := range s.units {
		res := results.NewResult(u, s.hists[i], s.got[i])
		res.Negative += s.neg[i]
		out = append(out, res)
	}
	return out
}

// endMarkerWait bounds the wait, after the sources stopped, for the
// events still in the buffer to be streamed (the end marker's return).
var endMarkerWait = 30 * time.Second

// countNegatives reads the counter of a JOIN's negative latencies.
func (r *runState) countNegatives(h *planner.Hist) (uint64, error) {
	file := h.HistFile()
	hs, err := r.eng.histograms(file)
	if err != nil {
		return 0, err
	}
	for _, got := range hs {
		if strings.Join(got.KeyFields(), ",") == strings.Join(planner.ExprStrings(h.Keys), ",") {
			return got.Totals.Hits, nil
		}
	}
	return 0, fmt.Errorf("%s: no histogram keyed by %s", file, strings.Join(planner.ExprStrings(h.Keys), ","))
}

// findHist picks, among the histograms of a hist file, the one of the
// trigger sqlhist wrote: the one keyed as it is (other tools may have
// triggers on the same event when -B names a shared instance).
func findHist(hs []*tracefs.Histogram, h *planner.Hist) *tracefs.Histogram {
	var keyed []*tracefs.Histogram
	for _, got := range hs {
		if strings.Join(got.KeyFields(), ",") == strings.Join(planner.ExprStrings(h.Keys), ",") {
			keyed = append(keyed, got)
		}
	}
	if len(keyed) > 1 {
		// Several triggers keyed alike (a UNION ALL's shared histogram
		// beside a statement of its own on the event): the one with this
		// trigger's name= and filter.
		for _, got := range keyed {
			if results.SameNameAndFilter(got.TriggerInfo, h) {
				return got
			}
		}
	}
	if len(keyed) > 0 {
		return keyed[0]
	}
	if len(hs) == 1 {
		return hs[0]
	}
	return nil
}

// changed says what of the run is gone, when someone else removed its
// instance, its lease or one of its triggers while it collected.
func (r *runState) changed() error {
	if r.bpfOnly {
		return nil // nothing of the run is in tracefs
	}
	for _, inst := range []string{r.instance, r.lease} {
		if !r.t.HasInstance(inst) {
			return fmt.Errorf("the instance %s was removed while the run collected, by another process", inst)
		}
	}
	for _, c := range r.cmds {
		if c.Kind == emit.KindTrigger && r.t.gone(c) {
			return fmt.Errorf("the %s was removed while the run collected, by another process", c.What)
		}
	}
	return nil
}
