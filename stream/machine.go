package stream

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// DefaultSize is the kernel's map size when a trigger gives no size=.
const DefaultSize = 2048

// SyntheticSystem is the system of synthetic events.
const SyntheticSystem = "synthetic"

// Options are what the machine needs beyond the triggers.
type Options struct {
	// Comm names a task, as the kernel's .execname and the COMM pseudo
	// field do; nil names none ("<...>").
	Comm func(pid int) string
	// Syscall names a system call number, as .syscall does; nil prints
	// "unknown_syscall".
	Syscall func(nr uint64) string
	// Sym names a kernel address, as .sym ("func") and .sym-offset
	// ("func+0x10/0x80") do; nil prints the address alone.
	Sym func(addr uint64, offset bool) string
	// LongSize is the bytes of an unsigned long on the target (8 when 0).
	LongSize int
	// KernelFilters says the kernel filters the events before they are
	// fed, each event with its [Machine.Filter]: a trigger whose filter
	// is exactly that is not evaluated again (the kernel's COMM is the
	// task's name at the event, which the stream only knows from Comm).
	KernelFilters bool
	// OnSynth, when set, is given every synthetic event a trigger fires
	// (for --events); the event is the machine's until the call returns.
	OnSynth func(*Event)
}

// Machine evaluates triggers on events.
type Machine struct {
	opt     Options
	byEvent map[string][]*trigger // system/event → triggers, in the order written
	// defs and defTrig cache byEvent by the format of the events fed
	// (the first maxDefs formats, looked up in order), byDef the rest:
	// an event's triggers found without making its system/event key.
	defs     []*tracefs.Event
	defTrig  [][]*trigger
	byDef    map[*tracefs.Event][]*trigger
	triggers []*trigger
	named    map[string]*tmap
	vars     map[string]varRef
	synths   map[string]*tracefs.Event
	depth    int
	// fired are the synthetic events being fired, by depth: each fire
	// reuses its depth's (the triggers keep copies of what they need).
	fired []*Event
}

// varRef locates a variable: the trigger defining it and its slot.
type varRef struct {
	t   *trigger
	idx int
}

// trigger is one compiled hist trigger.
type trigger struct {
	spec    *planner.Hist
	ev      *tracefs.Event
	filter  *filter
	keys    []*expr
	vals    []*expr // after hitcount
	vars    []*expr
	varName []string
	actions []*action
	m       *tmap
	// selfRefs are the variables the actions read of this trigger;
	// otherRefs the variables of other triggers the trigger reads (in
	// its variables' expressions and its actions' parameters).
	otherRefs []string
	// readOnce are the other triggers' variables this trigger reads
	// once: those it reads as an operand of an operator anywhere (the
	// kernel shares one reference per variable in a trigger).
	readOnce map[string]bool
	hasStack bool

	// Set by New once every trigger is compiled: the other triggers'
	// variables read (refs, refNames, in reading order, each once), the
	// trigger's own by name, whether the kernel applies its filter, how
	// many tracked handlers an entry has.
	refs           []varRef
	refNames       []string
	refOnce        []bool // by refs: read as an operand (readOnce)
	own            map[string]int
	kernelFiltered bool
	evalFilter     bool // hit evaluates filter
	tracks         int
	// plainVars says that no variable of the trigger is a stack or reads
	// one of the trigger's own (hit sets each as it computes it).
	plainVars bool
	// numKey says that the trigger keys by one number: its entries and
	// the ones it reads of other triggers are looked up by that number
	// in a map of numbers (tmap.nums), with no key bytes made unless
	// bytesKey says a map it reads keys by bytes.
	numKey, bytesKey bool
	// Scratch space of one event.
	key              []Value
	kbuf             []byte
	refVals, newVals []uint64
	newSet           []bool
	// stackVars says that a variable of the trigger holds a stack trace
	// (its entries keep stacks beside the numbers); refStacks and
	// newStacks are the stacks read and computed for one event.
	stackVars            bool
	refStacks, newStacks [][]uint64
	cur                  *entry
	lookup               varLookup
}

// action is an onmatch, onmax or onchange handler with its action.
type action struct {
	handler string // "onmatch", "onmax", "onchange"
	// onmatch and onmax say which handler, for act.
	onmatch, onmax bool
	track          string // onmax/onchange: the variable tracked
	// trackVar reads it (resolveVars).
	trackVar *expr
	what     string // "trace", "save", "snapshot"
	synth    string // trace: the synthetic event
	// synthDef is synth's format, first its first field after the
	// common ones and pidField its common_pid (-1: none), found once.
	synthDef        *tracefs.Event
	first, pidField int
	params          []*expr
	slot            int // onmax/onchange: the tracked slot of an entry
	// trigs are the triggers on synth (fire finds them once).
	trigs []*trigger
	// numParam says, by param, that it is a number put in a number
	// field of synth.
	numParam []bool
}

// tmap is a trigger's map (shared by the triggers of one name=).
type tmap struct {
	size int
	// entries are the entries by the bytes of their key (appendKey);
	// nums, instead, by their key's number, when every trigger of the
	// map keys by one number (a pid, a bucket): the number at the size
	// the kernel compares it at, which two keys share exactly when
	// their bytes are the same.
	entries map[string]*entry
	nums    map[uint64]*entry
	order   []*entry // in insertion order
	hits    uint64
	drops   uint64
	// last is the entry found or added last, by its number or its key's
	// bytes: a task's events come in runs (a JOIN's end looks up the
	// key its start just stored; a latency falls in the bucket the last
	// one did), and a map's entries are never removed.
	last    *entry
	lastNum uint64
	lastKey []byte
}

// len is how many entries the map has.
func (m *tmap) len() int { return len(m.order) }

// find is the entry of the key the trigger t made for its event (num,
// or its bytes in t.kbuf), or nil.
func (m *tmap) find(t *trigger, num uint64) *entry {
	if m.nums == nil {
		if m.last != nil && string(m.lastKey) == string(t.kbuf) {
			return m.last
		}
		e := m.entries[string(t.kbuf)]
		if e != nil {
			m.last, m.lastKey = e, append(m.lastKey[:0], t.kbuf...)
		}
		return e
	}
	if !t.numKey {
		return nil // a key of another shape is no key of a map of numbers
	}
	if m.last != nil && m.lastNum == num {
		return m.last
	}
	e := m.nums[num]
	if e != nil {
		m.last, m.lastNum = e, num
	}
	return e
}

// add adds the entry of t's key.
func (m *tmap) add(t *trigger, num uint64, e *entry) {
	if m.nums != nil {
		m.nums[num] = e
		m.lastNum = num
	} else {
		m.entries[string(t.kbuf)] = e
		m.lastKey = append(m.lastKey[:0], t.kbuf...)
	}
	m.last = e
	m.order = append(m.order, e)
}

// entry is one key's values.
type entry struct {
	key    []Value
	count  uint64
	sums   []uint64
	vars   []uint64
	stacks [][]uint64 // the stack trace variables' values, when the trigger has any
	set    []bool
	comm   []string // the task name of each .execname key, saved at insert
	tracks []track
}

// track is an onmax/onchange handler's state in an entry.
type track struct {
	val   uint64
	saved []Value
}

// New compiles the triggers. format returns the format of an event the
// triggers are on (as the kernel the events come from has it); synthetic
// events are defined by synths. The triggers run, on an event, in the
// order given: the order sqlhist writes them, which is the kernel's.
func New(hists []*planner.Hist, synths []*planner.Synth, format func(system, event string) (*tracefs.Event, error), opt Options) (*Machine, error) {
	if opt.LongSize == 0 {
		opt.LongSize = 8
	}
	m := &Machine{opt: opt, byEvent: map[string][]*trigger{}, named: map[string]*tmap{},
		vars: map[string]varRef{}, synths: map[string]*tracefs.Event{}}
	for _, s := range synths {
		m.synths[s.Name] = planner.SynthFormat(s, opt.LongSize)
	}
	for _, h := range hists {
		var ev *tracefs.Event
		if h.System == SyntheticSystem && m.synths[h.Event] != nil {
			ev = m.synths[h.Event]
		} else {
			var err error
			if ev, err = format(h.System, h.Event); err != nil {
				return nil, err
			}
		}
		t, err := m.compile(h, ev)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %s: %v", h.System, h.Event, h.Spec(), err)
		}
		k := h.System + "/" + h.Event
		m.byEvent[k] = append(m.byEvent[k], t)
		m.triggers = append(m.triggers, t)
	}
	// Every variable read must be defined by some trigger.
	for _, t := range m.triggers {
		seen := map[string]bool{}
		for _, n := range t.otherRefs {
			r, ok := m.vars[n]
			if !ok {
				return nil, fmt.Errorf("%s/%s: variable $%s is defined by no trigger", t.spec.System, t.spec.Event, n)
			}
			if !seen[n] {
				seen[n] = true
				t.refs, t.refNames = append(t.refs, r), append(t.refNames, n)
				t.refOnce = append(t.refOnce, t.readOnce[n])
			}
		}
		t.own = map[string]int{}
		for i, n := range t.varName {
			t.own[n] = i
		}
		for _, a := range t.actions {
			if a.handler != "onmatch" {
				t.tracks++
			}
		}
		t.kernelFiltered = m.opt.KernelFilters && m.Filter(t.spec.System, t.spec.Event) == t.spec.FilterText()
		// The kernel filters an event it records, not a synthetic
		// event the machine fires.
		t.evalFilter = t.filter != nil && !(t.kernelFiltered && t.spec.System != SyntheticSystem)
		t.key = make([]Value, len(t.keys))
		t.refVals = make([]uint64, len(t.refs))
		t.newVals, t.newSet = make([]uint64, len(t.vars)), make([]bool, len(t.vars))
		for _, x := range t.vars {
			t.stackVars = t.stackVars || x.kind == opStack
		}
		t.refStacks, t.newStacks = make([][]uint64, len(t.refs)), make([][]uint64, len(t.vars))
		t.lookup = t.lookupVar
		t.resolveVars()
		t.plainVars = !t.stackVars
		for _, x := range t.vars {
			x.walk(func(o *expr) {
				if o.kind == opVar && (o.ref < 0 || o.stack) || o.kind == opStack {
					t.plainVars = false
				}
			})
		}
		for _, a := range t.actions {
			if a.what != "trace" {
				continue
			}
			def := m.synths[a.synth]
			if def == nil {
				return nil, fmt.Errorf("%s/%s: no synthetic event %s", t.spec.System, t.spec.Event, a.synth)
			}
			a.synthDef, a.first, a.pidField = def, firstSynthField(def), -1
			a.numParam = make([]bool, len(a.params))
			for i, p := range a.params {
				j := a.first + i
				a.numParam[i] = j < len(def.Fields) && !def.Fields[j].IsString() && p.isNumber() && !p.isString() && !p.hasStack()
			}
			for i, f := range def.Fields {
				if f.Name == "common_pid" {
					a.pidField = i
				}
			}
		}
	}
	m.keyMaps()
	return m, nil
}

// keyMaps makes each map whose every trigger keys by one number a map of
// numbers, and says which triggers still need their key's bytes.
func (m *Machine) keyMaps() {
	numeric := map[*tmap]bool{}
	for _, t := range m.triggers {
		t.numKey = len(t.keys) == 1 && t.keys[0].isNumber()
		ok, seen := numeric[t.m]
		numeric[t.m] = (ok || !seen) && t.numKey
	}
	for tm, ok := range numeric {
		if ok {
			tm.nums, tm.entries = map[uint64]*entry{}, nil
		}
	}
	for _, t := range m.triggers {
		t.bytesKey = t.m.nums == nil
		for _, r := range t.refs {
			t.bytesKey = t.bytesKey || r.t.m.nums == nil
		}
	}
}

func (m *Machine) compile(h *planner.Hist, ev *tracefs.Event) (*trigger, error) {
	t := &trigger{spec: h, ev: ev}
	var err error
	if h.Filter != nil {
		if t.filter, err = compileFilter(h.Filter, ev); err != nil {
			return nil, err
		}
	}
	for _, k := range h.Keys {
		x, err := compileExpr(k, ev)
		if err != nil {
			return nil, err
		}
		if x.kind == opStack {
			t.hasStack = true
		}
		x.number = x.isNumber()
		x.setFastKey()
		t.keys = append(t.keys, x)
	}
	for _, v := range h.Vals {
		x, err := compileExpr(v, ev)
		if err != nil {
			return nil, err
		}
		if x.kind == opHitcount {
			continue // the count, kept apart
		}
		t.vals = append(t.vals, x)
	}
	own := map[string]bool{}
	for _, v := range h.Vars {
		x, err := compileExpr(v.Expr, ev)
		if err != nil {
			return nil, err
		}
		if _, dup := m.vars[v.Name]; dup {
			return nil, fmt.Errorf("variable %s defined twice", v.Name)
		}
		m.vars[v.Name] = varRef{t, len(t.vars)}
		own[v.Name] = true
		if x.kind == opStack && (x.name == "" || x.name == "common_stacktrace" || x.name == "stacktrace") {
			// The event's own stack, saved in a variable (a JOIN's
			// start.STACKTRACE): its stacktrace trigger records it.
			t.hasStack = true
		}
		t.vars = append(t.vars, x)
		t.varName = append(t.varName, v.Name)
	}
	for _, v := range t.vars {
		for _, n := range v.vars(nil) {
			if !own[n] {
				t.otherRefs = append(t.otherRefs, n)
			}
		}
	}
	for _, s := range h.Actions {
		a, err := compileAction(s, ev)
		if err != nil {
			return nil, err
		}
		if a.handler != "onmatch" {
			if !own[a.track] {
				return nil, fmt.Errorf("%s tracks $%s, not a variable of this trigger", a.handler, a.track)
			}
		}
		for _, p := range a.params {
			for _, n := range p.vars(nil) {
				if !own[n] {
					t.otherRefs = append(t.otherRefs, n)
				}
			}
		}
		t.actions = append(t.actions, a)
	}
	t.readOnce = map[string]bool{}
	var all []*expr
	all = append(append(append(all, t.keys...), t.vals...), t.vars...)
	for _, a := range t.actions {
		all = append(all, a.params...)
	}
	usecs := false
	for _, x := range all {
		for _, n := range x.readOnce(nil) {
			t.readOnce[n] = true
		}
		x.walk(func(o *expr) { usecs = usecs || o.kind == opTimestamp && o.usecs })
	}
	// .usecs is the trigger's: every common_timestamp of it is in µs
	// when one is.
	for _, x := range all {
		x.walk(func(o *expr) {
			if o.kind == opTimestamp {
				o.usecs = o.usecs || usecs
			}
		})
	}
	slots := 0
	for _, a := range t.actions {
		if a.handler != "onmatch" {
			a.slot = slots
			slots++
		}
	}
	size := h.Size
	if size == 0 {
		size = DefaultSize
	}
	if h.Name != "" {
		if sh, ok := m.named[h.Name]; ok {
			t.m = sh
			return t, nil
		}
	}
	t.m = &tmap{size: size, entries: map[string]*entry{}}
	if h.Name != "" {
		m.named[h.Name] = t.m
	}
	return t, nil
}

// compileAction compiles a handler with its action.
func compileAction(pa *planner.Action, ev *tracefs.Event) (*action, error) {
	a := &action{}
	switch pa.Handler {
	case planner.OnMatch:
		a.handler, a.onmatch = "onmatch", true
	case planner.OnMax:
		a.handler, a.track, a.onmax = "onmax", pa.Track, true
	case planner.OnChange:
		a.handler, a.track = "onchange", pa.Track
	default:
		return nil, fmt.Errorf("action %q: unknown handler", pa.String())
	}
	switch pa.Kind {
	case planner.ActTrace:
		a.what, a.synth = "trace", pa.Synth
	case planner.ActSave:
		a.what = "save"
	case planner.ActSnapshot:
		a.what = "snapshot"
	default:
		return nil, fmt.Errorf("action %q: unknown action", pa.String())
	}
	for _, p := range pa.Params {
		x, err := compileExpr(p, ev)
		if err != nil {
			return nil, fmt.Errorf("action %q: %v", pa.String(), err)
		}
		a.params = append(a.params, x)
	}
	return a, nil
}

// Events lists the events the triggers are on that the kernel must
// record ("system/event"), in the order of the triggers; synthetic
// events are the machine's own.
func (m *Machine) Events() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range m.triggers {
		k := t.spec.System + "/" + t.spec.Event
		if seen[k] || t.spec.System == SyntheticSystem && m.synths[t.spec.Event] != nil {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// Filter is the filter the kernel can apply to an event for the
// triggers on it: their filters joined by ||, or "" when one of them has
// none (every event is needed).
func (m *Machine) Filter(system, event string) string {
	var fs []string
	seen := map[string]bool{}
	for _, t := range m.byEvent[system+"/"+event] {
		if t.spec.Filter == nil {
			return ""
		}
		if f := t.spec.Filter.String(); !seen[f] {
			seen[f] = true
			fs = append(fs, f)
		}
	}
	if len(fs) == 1 {
		return fs[0]
	}
	for i, f := range fs {
		fs[i] = "(" + f + ")"
	}
	return strings.Join(fs, " || ")
}

// Uses lists the indices of the event's fields its triggers read (in
// keys, values, variables, actions and filters), in increasing order: a
// reader need decode only those. The filters the kernel applies
// (Options.KernelFilters) are not read again, and their fields are left
// out.
func (m *Machine) Uses(system, event string) []int {
	return m.uses(system, event, m.opt.KernelFilters && system != SyntheticSystem)
}

// uses is Uses, leaving out with kernelOnly the filters the kernel
// applies (see Options.KernelFilters).
func (m *Machine) uses(system, event string, kernelOnly bool) []int {
	set := map[int]bool{}
	note := func(x *expr) {
		x.walk(func(o *expr) {
			if (o.kind == opField || o.kind == opStack) && o.def != nil {
				set[o.field] = true
			}
		})
	}
	var noteFilter func(f *filter)
	noteFilter = func(f *filter) {
		if f == nil {
			return
		}
		if f.field != nil {
			note(f.field)
		}
		noteFilter(f.l)
		noteFilter(f.r)
	}
	for _, t := range m.byEvent[system+"/"+event] {
		for _, x := range append(append(append([]*expr{}, t.keys...), t.vals...), t.vars...) {
			note(x)
		}
		for _, a := range t.actions {
			for _, p := range a.params {
				note(p)
			}
		}
		if !kernelOnly || !t.kernelFiltered {
			noteFilter(t.filter)
		}
	}
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// Addresses lists the kernel addresses the histograms print as symbols
// (.sym and .sym-offset keys, and stack frames), to resolve before
// printing.
func (m *Machine) Addresses() []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	add := func(a uint64) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, t := range m.triggers {
		for i, k := range t.keys {
			if k.kind != opStack && k.mod != "sym" && k.mod != "sym-offset" {
				continue
			}
			for _, e := range t.m.order {
				if k.kind == opStack {
					for _, a := range e.key[i].Stack {
						add(a)
					}
				} else {
					add(e.key[i].N)
				}
			}
		}
	}
	return out
}

// NeedsStack reports whether the event's triggers read its kernel stack
// (a stacktrace key): the kernel must record one after each of its
// events.
func (m *Machine) NeedsStack(system, event string) bool {
	for _, t := range m.byEvent[system+"/"+event] {
		if t.hasStack {
			return true
		}
	}
	return false
}

// NamesTasks reports whether a trigger keys on a task's name
// (.execname): the names the machine asks Options.Comm for.
func (m *Machine) NamesTasks() bool {
	for _, t := range m.triggers {
		for _, k := range t.keys {
			if k.mod == "execname" {
				return true
			}
		}
	}
	return false
}

// Feed runs the triggers of the event's event on it. Events must come in
// the order of their timestamps.
func (m *Machine) Feed(ev *Event) {
	for _, t := range m.triggersOf(ev.Def) {
		m.hit(t, ev)
	}
}

// Triggers are the triggers on one event, in order: what a reader that
// decodes an event's records finds once (TriggersOf) and feeds each of
// them to (FeedTo).
type Triggers struct{ list []*trigger }

// TriggersOf are the triggers on the events of format def.
func (m *Machine) TriggersOf(def *tracefs.Event) Triggers { return Triggers{m.triggersOf(def)} }

// FeedTo is Feed of an event whose triggers are ts (TriggersOf its
// format).
func (m *Machine) FeedTo(ts Triggers, ev *Event) {
	for _, t := range ts.list {
		m.hit(t, ev)
	}
}

// triggersOf are the triggers on the event of format def, in order (an
// empty slice, not nil, for none).
func (m *Machine) triggersOf(def *tracefs.Event) []*trigger {
	for i, d := range m.defs {
		if d == def {
			return m.defTrig[i]
		}
	}
	ts, ok := m.byDef[def]
	if !ok {
		ts = m.byEvent[def.System+"/"+def.Name]
		if ts == nil {
			ts = []*trigger{}
		}
		if len(m.defs) < maxDefs {
			m.defs, m.defTrig = append(m.defs, def), append(m.defTrig, ts)
		} else {
			if m.byDef == nil {
				m.byDef = map[*tracefs.Event][]*trigger{}
			}
			m.byDef[def] = ts
		}
	}
	return ts
}

// maxDefs is how many event formats Feed finds by a scan, not a map.
const maxDefs = 8

func (m *Machine) comm(pid int) string {
	if m.opt.Comm == nil {
		return "<...>"
	}
	return m.opt.Comm(pid)
}

// hit is the kernel's event_hist_trigger: the filter; the key; the
// variables of other triggers read (all must be set, and each is read
// once, or the trigger does nothing on this event); the entry (a full
// map drops the event); the values, sums and variables; then the
// actions. Its scratch space is the trigger's, so that an event
// allocates nothing unless it makes an entry.
func (m *Machine) hit(t *trigger, ev *Event) {
	if t.evalFilter && !t.filter.match(ev, m.comm) {
		return
	}
	t.kbuf = t.kbuf[:0]
	var num uint64
	for _, k := range t.keys {
		switch k.fast {
		case fastNum, fastLog2:
			// A field's number as the map compares it, at once.
			n := ev.Fields[k.field].N
			if k.fast == fastLog2 {
				n = log2Bucket(n)
			}
			n &= k.mask
			if t.numKey {
				num = n
			}
			if t.bytesKey {
				t.kbuf = appendKeyNum(t.kbuf, n)
			}
			continue
		case fastText:
			// A string field: its bytes, ended by a NUL.
			if t.numKey {
				num = 0
			}
			if t.bytesKey {
				t.kbuf = append(append(t.kbuf, ev.Fields[k.field].S...), 0)
			}
			continue
		}
		if k.number {
			// A number as the map compares it, with no Value made:
			// the key's Values are made with its entry (keyValues).
			n, _ := k.num(ev, nil)
			n = keyNumber(k, keyNum(k, n))
			if t.numKey {
				num = n
			}
			if t.bytesKey {
				t.kbuf = appendKeyNum(t.kbuf, n)
			}
			continue
		}
		v, _ := k.eval(ev, nil)
		v = keyValue(k, v)
		if t.numKey {
			num = keyNumber(k, v.N)
		}
		if t.bytesKey {
			t.kbuf = appendKey(t.kbuf, k, v)
		}
	}
	// The other triggers' variables, looked up by this key in the order
	// the trigger reads them; those read as an operand are cleared as
	// they are read, and the first one not set drops the event.
	for i, r := range t.refs {
		e := r.t.m.find(t, num)
		if e == nil || !e.set[r.idx] {
			return
		}
		t.refVals[i] = e.vars[r.idx]
		if e.stacks != nil {
			t.refStacks[i] = e.stacks[r.idx]
		}
		if t.refOnce[i] {
			e.set[r.idx] = false
		}
	}
	e := t.m.find(t, num)
	if e == nil {
		if t.m.len() >= t.m.size {
			t.m.drops++
			return
		}
		e = &entry{key: t.keyValues(ev), sums: make([]uint64, len(t.vals)),
			vars: make([]uint64, len(t.vars)), set: make([]bool, len(t.vars)), tracks: make([]track, t.tracks)}
		if t.stackVars {
			e.stacks = make([][]uint64, len(t.vars))
		}
		for i, k := range t.keys {
			if k.mod == "execname" {
				if e.comm == nil {
					e.comm = make([]string, len(t.keys))
				}
				e.comm[i] = m.comm(int(e.key[i].N))
			}
		}
		t.m.add(t, num, e)
	}
	t.m.hits++
	e.count++
	t.cur = e
	for i, x := range t.vals {
		n, _ := x.num(ev, t)
		e.sums[i] += n
	}
	// Variables are computed from what the event and the other triggers
	// give; a variable reading another of the same trigger reads the
	// value it had before this event (as the kernel computes them all
	// from the references resolved first).
	if t.plainVars {
		// No variable reads one of the trigger's own: each is set as
		// it is computed.
		for i, x := range t.vars {
			if n, ok := x.num(ev, t); ok {
				e.vars[i], e.set[i] = n, true
			}
		}
		for _, a := range t.actions {
			m.act(t, a, e, ev, t.lookup)
		}
		return
	}
	for i, x := range t.vars {
		if x.kind != opStack {
			t.newVals[i], t.newSet[i] = x.num(ev, t)
			continue
		}
		v, ok := x.eval(ev, t.lookup)
		t.newVals[i], t.newSet[i] = v.N, ok
		// A copy: the reader reuses an event's stack.
		t.newStacks[i] = append([]uint64(nil), v.Stack...)
	}
	for i := range t.vars {
		if t.newSet[i] {
			e.vars[i], e.set[i] = t.newVals[i], true
			if e.stacks != nil {
				e.stacks[i] = t.newStacks[i]
			}
		}
	}
	for _, a := range t.actions {
		m.act(t, a, e, ev, t.lookup)
	}
}

// lookupVar reads a variable for the event the trigger is on: another
// trigger's as read for it, or the entry's own (where resolveVars found
// it).
func (t *trigger) lookupVar(x *expr) (Value, bool) {
	if x.ref >= 0 {
		if x.stack {
			return Value{Stack: t.refStacks[x.ref]}, true
		}
		return Num(t.refVals[x.ref]), true
	}
	if x.own >= 0 && t.cur != nil && t.cur.set[x.own] {
		if x.stack && t.cur.stacks != nil {
			return Value{Stack: t.cur.stacks[x.own]}, true
		}
		return Num(t.cur.vars[x.own]), true
	}
	return Value{}, false
}

// varNum is lookupVar's number.
func (t *trigger) varNum(x *expr) (uint64, bool) {
	if x.ref >= 0 {
		if x.stack {
			return 0, true
		}
		return t.refVals[x.ref], true
	}
	if x.own >= 0 && t.cur != nil && t.cur.set[x.own] {
		if x.stack && t.cur.stacks != nil {
			return 0, true
		}
		return t.cur.vars[x.own], true
	}
	return 0, false
}

// resolveVars locates each variable the trigger's expressions read, by
// name: among the other triggers' variables it reads first, then among
// its own.
func (t *trigger) resolveVars() {
	resolve := func(x *expr) {
		x.walk(func(o *expr) {
			if o.kind != opVar {
				return
			}
			o.ref, o.own = slices.Index(t.refNames, o.name), -1
			if i, ok := t.own[o.name]; ok {
				o.own = i
			}
			switch {
			case o.ref >= 0:
				r := t.refs[o.ref]
				o.stack = r.t.vars[r.idx].kind == opStack
			case o.own >= 0:
				o.stack = t.vars[o.own].kind == opStack
			}
		})
	}
	for _, x := range append(append(append([]*expr{}, t.keys...), t.vals...), t.vars...) {
		resolve(x)
	}
	for _, a := range t.actions {
		for _, p := range a.params {
			resolve(p)
		}
		if a.handler != "onmatch" {
			a.trackVar = &expr{kind: opVar, name: a.track, text: "$" + a.track}
			resolve(a.trackVar)
		}
	}
}

// act runs one handler on an entry just updated.
func (m *Machine) act(t *trigger, a *action, e *entry, ev *Event, lookup varLookup) {
	if a.onmatch {
		m.fire(t, a, ev, lookup)
		return
	}
	if a.handler == "onmax" || a.handler == "onchange" {
		v, ok := t.varNum(a.trackVar)
		if !ok {
			return
		}
		// The kernel's tracked value starts at 0: onmax saves a value
		// above it, onchange one that differs from it.
		tr := &e.tracks[a.slot]
		if a.onmax && v <= tr.val || !a.onmax && v == tr.val {
			return
		}
		tr.val = v
		switch a.what {
		case "save":
			tr.saved = tr.saved[:0]
			for _, p := range a.params {
				pv, _ := p.eval(ev, lookup)
				tr.saved = append(tr.saved, pv)
			}
		case "trace":
			m.fire(t, a, ev, lookup)
		}
	}
}

// fire builds the synthetic event of a trace action from the event and
// runs the triggers on it at once, as the kernel's trace_synth does.
func (m *Machine) fire(t *trigger, a *action, ev *Event, lookup varLookup) {
	def := a.synthDef
	if def == nil || m.depth > 16 {
		return
	}
	for len(m.fired) <= m.depth {
		m.fired = append(m.fired, &Event{})
	}
	s := m.fired[m.depth]
	if s.Def != def {
		// The fields no action sets stay zero while the depth fires
		// this event; each action sets its own.
		fields := s.Fields
		if cap(fields) < len(def.Fields) {
			fields = make([]Value, len(def.Fields))
		}
		fields = fields[:len(def.Fields)]
		clear(fields)
		s.Def, s.Fields, s.setBy = def, fields, nil
	}
	if s.setBy != a {
		// Another action's fields: zero again.
		clear(s.Fields)
		s.setBy = a
	}
	s.TS, s.CPU, s.PID, s.Stack = ev.TS, ev.CPU, ev.PID, ev.Stack
	first := a.first
	for i, p := range a.params {
		j := first + i
		if j >= len(def.Fields) {
			break
		}
		f := def.Fields[j]
		if a.numParam[i] {
			// A number into a number field: the field's other parts
			// stay zero (only this action sets it while it fires).
			n, ok := p.num(ev, t)
			if !ok {
				return
			}
			s.Fields[j].N = truncate(n, f)
			continue
		}
		v, ok := p.eval(ev, lookup)
		if !ok {
			return
		}
		if !f.IsString() && !v.Str {
			v.N = truncate(v.N, f)
		}
		s.Fields[j] = v
	}
	if a.pidField >= 0 {
		s.Fields[a.pidField] = Num(uint64(int64(s.PID)))
	}
	if m.opt.OnSynth != nil {
		m.opt.OnSynth(s)
	}
	if a.trigs == nil {
		a.trigs = m.triggersOf(def)
	}
	m.depth++
	for _, t := range a.trigs {
		m.hit(t, s)
	}
	m.depth--
}

// truncate keeps the bytes of a field of its size, sign-extended when it
// is signed: what the kernel stores and reads back.
func truncate(n uint64, f *tracefs.Field) uint64 {
	if f.Size >= 8 || f.Size <= 0 || f.Kind == tracefs.KindDynArray || f.Kind == tracefs.KindArray {
		return n
	}
	bits := uint(f.Size * 8)
	n &= 1<<bits - 1
	if f.Signed && n&(1<<(bits-1)) != 0 {
		n |= ^uint64(0) << bits
	}
	return n
}

// keyValue is what the kernel keys by: .log2 and .buckets transform the
// value; integers are kept at their field's size.
func keyValue(k *expr, v Value) Value {
	if v.Str || v.Stack != nil {
		return v
	}
	return Num(keyNum(k, v.N))
}

// keyNum is keyValue of a number.
func keyNum(k *expr, n uint64) uint64 {
	switch {
	case k.log2:
		return log2Bucket(n)
	case k.buckets:
		return n / k.bucket * k.bucket
	case k.kind == opField && k.def != nil:
		return truncate(n, k.def)
	}
	return n
}

// keyValues are the parts of the event's key as its entry keeps them
// (hit computes the key's bytes or number first, and these only for an
// entry made).
func (t *trigger) keyValues(ev *Event) []Value {
	out := make([]Value, len(t.keys))
	for i, k := range t.keys {
		var v Value
		if k.number {
			v.N, _ = k.num(ev, nil)
		} else {
			v, _ = k.eval(ev, nil)
		}
		out[i] = keyValue(k, v)
	}
	return out
}

// appendKey appends a key part to the map key.
func appendKey(b []byte, k *expr, v Value) []byte {
	switch {
	case v.Str:
		b = append(b, v.S...)
		return append(b, 0)
	case k.kind == opStack:
		for _, a := range v.Stack {
			b = strconv.AppendUint(b, a, 16)
			b = append(b, ',')
		}
		return append(b, 0)
	default:
		return appendKeyNum(b, keyNumber(k, v.N))
	}
}

// appendKeyNum appends a number key part: its 8 bytes (a part's bytes
// are a fixed size or end at a byte no text has, so a key's bytes are
// its parts' alone).
func appendKeyNum(b []byte, n uint64) []byte {
	return binary.LittleEndian.AppendUint64(b, n)
}

// keyNumber is a number key part as keys compare: by its bytes at the
// field's size (a signed field's -1 keys as its size's all-ones,
// whatever reads it).
func keyNumber(k *expr, n uint64) uint64 {
	if sz := k.size(); sz < 8 {
		n &= 1<<(uint(sz)*8) - 1
	}
	return n
}

func firstSynthField(def *tracefs.Event) int {
	for i, f := range def.Fields {
		if !f.IsCommon() {
			return i
		}
	}
	return len(def.Fields)
}
