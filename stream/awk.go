package stream

import (
	"math/bits"
	"regexp"
	"sync"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"

	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AwkOptions say what the awk program [Machine.Awk] writes prints and
// how it ends.
type AwkOptions struct {
	// LongSize is the bytes of the target's long (8 when 0).
	LongSize int
	// Syscall names the system call numbers of .syscall keys (nil: the
	// program prints unknown_syscall); the names of numbers 0 to 1023
	// are written into the program.
	Syscall func(nr uint64) string
	// Show lists the events ("system/event") whose hist files the
	// program prints, in order; nil prints every event with triggers.
	Show []string
	// Marker is the text written to the instance's trace_marker that
	// ends the program (it then prints the hist files).
	Marker string
	// Tick, when not "", is the text written to the instance's
	// trace_marker at the end of each interval: the program prints the
	// hist files as they are then (counted from the start), after a line
	// "==> interval N <==", and goes on.
	Tick string
}

// The lines of the program's output that are not hist file text: a
// hist file's header and the last line.
const (
	// AwkFilePrefix and AwkFileSuffix frame the path of the hist file
	// that follows: "==> events/synthetic/x/hist <==".
	AwkFilePrefix = "==> "
	AwkFileSuffix = " <=="
	// AwkEnd starts the last line: "==> end: lost N, unread M <==".
	AwkEnd = "==> end: "
	// AwkInterval starts the line before an interval's hist files
	// (AwkOptions.Tick): "==> interval N <==". They end with an end
	// line too; the last hist files, printed when the program ends,
	// have no such line before them.
	AwkInterval = "==> interval "
	// AwkLost starts a line before the hist files of an output whose
	// events the kernel lost in part (before awk read them): "==> lost:
	// N events … <==", so that a reader sees it first, not only in the
	// end line's count.
	AwkLost = "==> lost: "
)

// awkGen writes one program.
type awkGen struct {
	m    *Machine
	opt  AwkOptions
	b    strings.Builder
	tidx map[*trigger]int
	evs  map[string]*textEvent
	// shown are the triggers whose hist files the program prints.
	shown map[*trigger]bool
	// readsPID says that a trigger reads an event's common_pid, readsTS
	// that one reads its timestamp.
	readsPID, readsTS bool
	// keyed are the numeric fields of each event ("system/event") that a
	// trigger of the event keys by as they are (awkKeyField): the event's
	// code gives them as key text (K_name); numeric are the fields read
	// as numbers (F_name).
	keyed, numeric map[string]map[int]bool
	// fast are the events whose lines are read by their words
	// (awkTokens), by name.
	fast map[string]*awkTokens
	// eagerTS are the events, by name, whose code for a line read by its
	// words (fastBlock) reads the timestamp at once (H_TS): a trigger of
	// the event reads it with no other trigger's variable to find first.
	// Elsewhere the timestamp is read where a trigger reads it.
	eagerTS map[string]bool
	// cur is the trigger being written.
	cur *trigger
	// exit is the statement that ends a trigger's work on an event where
	// the code is: return in a function, next for the last trigger of a
	// line's event in the line rule, break in a do-while of another.
	exit string
	// noFilter says that the trigger's filter is checked where its code
	// is (inlineSynth's pairs of complements).
	noFilter bool
	// fastLine says that the code runs only on a line read by its words
	// (fastBlock's): the timestamp and string fields are read from their
	// words, with no look at SLOW.
	fastLine bool
	// depths says that the program counts the depth of synthetic events
	// fired (D): a chain of them may be more than 16 deep (see
	// Machine.fire), which the program then stops as the machine does.
	depths bool
	// smallArgs are the fields, by index, of the synthetic event whose
	// trigger is written where it is fired (inlineSynth) whose argument
	// is within ±2^62 (awkCtx.small).
	smallArgs map[int]bool
	// refChecked says that the line's code found the trigger's first
	// variable to read set for its key before the trigger's code
	// (fastBlock's lookup first).
	refChecked bool
}

// sub is a generator of the same program that writes apart.
func (g *awkGen) sub() *awkGen {
	return &awkGen{m: g.m, opt: g.opt, tidx: g.tidx, evs: g.evs, shown: g.shown, readsPID: g.readsPID, readsTS: g.readsTS,
		keyed: g.keyed, numeric: g.numeric, fast: g.fast, eagerTS: g.eagerTS, exit: g.exit, depths: g.depths, fastLine: g.fastLine,
		smallArgs: g.smallArgs}
}

// Awk writes a POSIX awk program that computes the machine's triggers
// from the lines of trace_pipe, as the machine would from the same
// events, and prints, when it reads opt.Marker (or its input ends), the
// hist file of each event of opt.Show as [Machine.HistFile] prints it,
// each after a line "==> events/SYSTEM/EVENT/hist <==", then "==> end:
// lost N, unread M <==" (the events the kernel lost, the lines of no
// event read). It runs in busybox awk, mawk and gawk (with LC_ALL=C:
// strings compare and pad by bytes).
//
// Numbers are awk's doubles: exact below 2^53, which timestamps in µs,
// counts, pids and latencies are. What the text cannot give or the
// program does not compute is refused: a field trace_pipe does not print
// as stored, timestamps in ns (trace_pipe prints µs), stacks, symbols,
// shares and bars, shared maps (name=), snapshots, globs and & in
// filters the kernel does not apply.
func (m *Machine) Awk(opt AwkOptions) (string, error) {
	if opt.LongSize == 0 {
		opt.LongSize = 8
	}
	evs, err := m.textEvents(opt.LongSize)
	if err != nil {
		return "", err
	}
	g := &awkGen{m: m, opt: opt, tidx: map[*trigger]int{}, evs: evs, shown: map[*trigger]bool{}}
	for _, e := range g.show() {
		for _, t := range m.byEvent[e] {
			g.shown[t] = true
		}
	}
	for i, t := range m.triggers {
		g.tidx[t] = i
		if err := g.check(t); err != nil {
			return "", fmt.Errorf("%s/%s: %s: %v", t.spec.System, t.spec.Event, t.spec.Spec(), err)
		}
	}
	g.readsPID = m.reads(func(o *expr) bool { return o.kind == opField && o.def != nil && o.def.Name == "common_pid" })
	g.readsTS = m.reads(func(o *expr) bool { return o.kind == opTimestamp })
	g.keyed, g.numeric = m.awkFieldUses()
	// Read at once where it is read more than once; a single read
	// reads it in place (an assignment less).
	g.eagerTS = map[string]bool{}
	tsReads := map[string]int{}
	for _, t := range m.triggers {
		if t.spec.System != SyntheticSystem && len(t.refs) == 0 {
			t.reads(func(o *expr) bool {
				if o.kind == opTimestamp {
					tsReads[t.spec.Event]++
				}
				return false
			})
		}
	}
	for ev, n := range tsReads {
		g.eagerTS[ev] = n > 1
	}
	depth, cyclic := m.synthDepth()
	g.depths = cyclic || depth > 16
	g.fast = map[string]*awkTokens{}
	for n, te := range evs {
		if tk := newAwkTokens(te); tk != nil {
			g.fast[n] = tk
		}
	}
	g.program()
	return g.b.String(), nil
}

// synthDepth is the longest chain of synthetic events that events fire
// (1 when an event's trigger fires one that fires none), and whether
// the chains have a cycle.
func (m *Machine) synthDepth() (depth int, cyclic bool) {
	fires := map[string][]string{}
	for _, t := range m.triggers {
		from := t.spec.System + "/" + t.spec.Event
		for _, a := range t.actions {
			if a.synth != "" {
				fires[from] = append(fires[from], SyntheticSystem+"/"+a.synth)
			}
		}
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	longest := map[string]int{}
	var walk func(e string) int
	walk = func(e string) int {
		switch state[e] {
		case visiting:
			cyclic = true
			return 0
		case done:
			return longest[e]
		}
		state[e] = visiting
		n := 0
		for _, to := range fires[e] {
			n = max(n, 1+walk(to))
		}
		state[e] = done
		longest[e] = n
		return n
	}
	for _, e := range sortedKeys(fires) {
		depth = max(depth, walk(e))
	}
	return depth, cyclic
}

// reads reports whether an expression of a trigger (its filter, keys,
// values, variables or actions' parameters) has an operand that is.
func (m *Machine) reads(is func(*expr) bool) bool {
	for _, t := range m.triggers {
		if t.reads(is) {
			return true
		}
	}
	return false
}

// reads reports whether an expression of the trigger (its filter, keys,
// values, variables or actions' parameters) has an operand that is.
func (t *trigger) reads(is func(*expr) bool) bool {
	reads := false
	note := func(x *expr) {
		x.walk(func(o *expr) { reads = reads || is(o) })
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
	for _, x := range append(append(append([]*expr{}, t.keys...), t.vals...), t.vars...) {
		note(x)
	}
	for _, a := range t.actions {
		for _, p := range a.params {
			note(p)
		}
	}
	noteFilter(t.filter)
	return reads
}

// awkKeyField says that key part k is a field of a base event keyed by
// as it is (its text, K_name): a number other than common_pid, printed
// as the hist file prints it or by its number (.hex, .syscall).
func awkKeyField(t *trigger, k *expr) bool {
	return t.spec.System != SyntheticSystem && k.kind == opField && k.def != nil && k.def.Name != "common_pid" &&
		!k.isString() && (k.mod == "" || k.mod == "hex" || k.mod == "syscall")
}

// awkFieldUses says, by event, which numeric fields the triggers key by
// as they are (awkKeyField) and which they read as numbers (every other
// use: filters the kernel does not apply, values, variables, actions'
// parameters, keys of .log2 and .buckets).
func (m *Machine) awkFieldUses() (keyed, numeric map[string]map[int]bool) {
	keyed, numeric = map[string]map[int]bool{}, map[string]map[int]bool{}
	for _, t := range m.triggers {
		ev := t.spec.System + "/" + t.spec.Event
		if keyed[ev] == nil {
			keyed[ev], numeric[ev] = map[int]bool{}, map[int]bool{}
		}
		note := func(x *expr) {
			x.walk(func(o *expr) {
				if o.kind == opField && o.def != nil {
					numeric[ev][o.field] = true
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
		for _, k := range t.keys {
			if awkKeyField(t, k) {
				keyed[ev][k.field] = true
				continue
			}
			note(k)
		}
		for _, x := range append(append([]*expr{}, t.vals...), t.vars...) {
			note(x)
		}
		for _, a := range t.actions {
			for _, p := range a.params {
				note(p)
			}
		}
		if !t.kernelFiltered {
			noteFilter(t.filter)
		}
	}
	return keyed, numeric
}

// check refuses what the program does not compute.
func (g *awkGen) check(t *trigger) error {
	if t.spec.Name != "" {
		return fmt.Errorf("the awk engine does not share a map between triggers (name=)")
	}
	if len(t.keys) > 8 {
		return fmt.Errorf("the awk engine keys by at most 8 fields")
	}
	var bad error
	note := func(x *expr) {
		x.walk(func(o *expr) {
			switch {
			case bad != nil:
			case o.kind == opStack:
				bad = fmt.Errorf("trace_pipe's text carries no stack the awk engine could key by (STACKTRACE)")
			case o.kind == opTimestamp && !o.usecs:
				bad = fmt.Errorf("trace_pipe prints timestamps in µs, and this reads them in ns: use TIMESTAMP_USECS or TIMESTAMP_DELTA_USECS")
			case o.mod == "sym" || o.mod == "sym-offset":
				bad = fmt.Errorf("the awk engine does not name kernel addresses (.%s)", o.mod)
			case o.mod == "percent" || o.mod == "graph":
				bad = fmt.Errorf("the awk engine does not print shares or bars (.%s)", o.mod)
			}
		})
	}
	for _, x := range append(append(append([]*expr{}, t.keys...), t.vals...), t.vars...) {
		note(x)
	}
	for _, v := range t.spec.Vals {
		if v.Kind == planner.ExprHitcount && (v.Mod == "percent" || v.Mod == "graph") {
			return fmt.Errorf("the awk engine does not print shares or bars (%s)", v)
		}
	}
	for _, a := range t.actions {
		if a.what == "snapshot" {
			return fmt.Errorf("a snapshot of the trace buffer is the kernel's hist triggers' own")
		}
		for _, p := range a.params {
			note(p)
		}
	}
	if bad != nil {
		return bad
	}
	if t.filter != nil && !t.kernelFiltered {
		return checkAwkFilter(t.filter)
	}
	return nil
}

func checkAwkFilter(f *filter) error {
	switch f.op {
	case "&&", "||":
		if err := checkAwkFilter(f.l); err != nil {
			return err
		}
		return checkAwkFilter(f.r)
	case "!":
		return checkAwkFilter(f.l)
	case "~", "&":
		return fmt.Errorf("the awk engine does not evaluate %s in a filter the kernel does not apply", f.op)
	}
	return nil
}

func (g *awkGen) p(format string, args ...any) {
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

// program writes the whole program: BEGIN, the line rule, END and the
// functions.
func (g *awkGen) program() {
	// The trigger functions first, apart: what they read decides what
	// reading a line computes.
	tg := g.sub()
	for _, t := range g.m.triggers {
		if t.spec.System == SyntheticSystem && g.leaf(t) {
			continue // its code is where its event is fired
		}
		tg.trigger(t)
	}
	trig := tg.b.String()
	cpu, comm := strings.Contains(trig, "sqlhist_hcpu()"), strings.Contains(trig, "H_COMM")
	// A line read by its words is checked for the kernel's columns (the
	// task name's 16, then "-") where its pid or task name is read from
	// them.
	layout := ""
	if g.readsPID || comm {
		layout = " && substr($0, 17, 1) == \"-\""
	}
	g.p("BEGIN {")
	g.p("\tD = 0; LOST = 0; UNREAD = 0; NTICK = 0; MARK = %s; TICK = %s", awkString(g.opt.Marker), awkString(g.opt.Tick))
	// SQLHIST_AWK_TEE names a file that gets every line read, as read:
	// what the run computed from, for a replay (live.AwkReplay).
	g.p("\tTEE = ENVIRON[\"SQLHIST_AWK_TEE\"]; TEEON = TEE != \"\"")
	// Powers of two written out: busybox awk built without its math
	// library (riscv64's Debian busybox) has no ^.
	g.p("\tPOW[8] = 256; POW[16] = 65536; POW[32] = 4294967296")
	g.p("\tPOW[63] = 9223372036854775808; POW[64] = 18446744073709551616")
	g.syscallTable()
	if strings.Contains(trig, "L2[") {
		// .log2 of the values up to 2^16 by two tables (sqlhist_t*'s
		// keys): L2[v] for v <= 256, L2H[i] = L2[i] + 8 for the least
		// power of 256ths at or above v.
		g.p("	L2[0] = \"0\"; L2N = 0; L2P = 1")
		g.p("	for (L2I = 1; L2I <= 256; L2I++) { if (L2I > L2P) { L2N++; L2P *= 2 }; L2[L2I] = L2N \"\"; L2H[L2I] = (L2N + 8) \"\" }")
	}
	g.p("}")
	g.p("{")
	g.p("\tif (TEEON) print > TEE")
	names := make([]string, 0, len(g.evs))
	for n := range g.evs {
		names = append(names, n)
	}
	sort.Strings(names)
	// The events whose lines are read by their words first (awkTokens):
	// a line of the kernel's layout with as many words as the event's
	// print format makes.
	for _, n := range names {
		if tk := g.fast[n]; tk != nil {
			g.p("\tif (NF == %d && $5 == %s%s) {", 5+tk.words, awkString(n+":"), layout)
			g.b.WriteString(g.fastBlock(g.evs[n], tk, g.fastHeadReads(comm)))
			g.p("\t\tnext")
			g.p("\t}")
		}
	}
	g.p("\tif (!sqlhist_head($0)) {")
	g.p("\t\tif (substr($0, 1, 4) == \"CPU:\" && $0 ~ /^CPU:[0-9]+ \\[LOST [0-9]+ EVENTS\\]$/) { sub(/^CPU:[0-9]+ \\[LOST /, \"\"); sub(/ EVENTS\\]$/, \"\"); LOST += sqlhist_dec($0) } else UNREAD++")
	g.p("\t\tnext")
	g.p("\t}")
	g.p("\tif (H_EV == \"tracing_mark_write\") {")
	g.p("\t\tif (H_BODY == MARK) exit")
	// A tick prints the hist files as they are, and flushes them: the
	// output may be a file or a pipe read while the program runs.
	g.p("\t\tif (TICK != \"\" && H_BODY == TICK) { printf \"%s%%d%s\\n\", ++NTICK; sqlhist_output(); fflush() }", AwkInterval, AwkFileSuffix)
	g.p("\t\tnext")
	g.p("\t}")
	for i, n := range names {
		g.p("\tif (H_EV == %s) { sqlhist_e%d(); next }", awkString(n), i)
	}
	g.p("\tUNREAD++")
	g.p("}")
	g.p("END { sqlhist_output() }")
	g.p("function sqlhist_output() {")
	g.p("\tif (LOST > 0) printf \"%%s\\n\", \"%s\" sqlhist_u64(LOST) \" events the kernel dropped before awk read them (its buffer was full): the counts below are short%s\"", AwkLost, AwkFileSuffix)
	g.output()
	g.p("\tprintf \"%%s\\n\", \"%slost \" sqlhist_u64(LOST) \", unread \" sqlhist_u64(UNREAD) \"%s\"", AwkEnd, AwkFileSuffix)
	g.p("}")
	g.p("%s", awkLib)
	for i, n := range names {
		g.event(i, g.evs[n])
	}
	g.b.WriteString(trig)
	g.fastHead(cpu, comm)
	g.printFuncs()
	g.cmpFunc()
}

// syscallTable writes the names of .syscall keys, when a trigger has one.
func (g *awkGen) syscallTable() {
	need := false
	for _, t := range g.m.triggers {
		for _, k := range t.keys {
			need = need || k.mod == "syscall"
		}
	}
	if !need || g.opt.Syscall == nil {
		return
	}
	var parts []string
	for nr := uint64(0); nr < 1024; nr++ {
		if n := g.opt.Syscall(nr); n != "" && !strings.ContainsAny(n, " \"\\") {
			parts = append(parts, strconv.FormatUint(nr, 10)+" "+n)
		}
	}
	// One string a line of about 70 bytes, split at the spaces.
	g.p("\tSCT = \"\"")
	line := ""
	for _, p := range parts {
		if len(line)+len(p) > 70 {
			g.p("\tSCT = SCT %s", awkString(line))
			line = ""
		}
		line += p + " "
	}
	g.p("\tSCT = SCT %s", awkString(line))
	g.p("\tn = split(SCT, a, \" \"); for (i = 1; i < n; i += 2) SC[a[i]] = a[i + 1]")
}

// event writes the function that reads one event's body and runs its
// triggers.
func (g *awkGen) event(i int, te *textEvent) {
	l := te.layout
	g.exit = "return"
	g.p("function sqlhist_e%d(   r, k, s, v) {", i)
	g.p("\tr = H_BODY")
	g.p("\tif (substr(r, 1, %d) != %s) { UNREAD++; return }", len(l.Lits[0]), awkString(l.Lits[0]))
	need := map[int]bool{}
	for _, f := range te.needed {
		need[f] = true
	}
	runs, seps := l.groups()
	last := -1
	for ri, run := range runs {
		if len(run) == 1 && l.Values[run[0]].Field >= 0 && need[l.Values[run[0]].Field] {
			last = ri
		}
	}
	// The first literal, checked, is skipped when the first value is
	// read (it starts after it) or a separator searched could be found
	// in it.
	first := len(runs) > 0 && len(runs[0]) == 1 && l.Values[runs[0][0]].Field >= 0 && need[l.Values[runs[0][0]].Field]
	if first || last > 0 && slices.ContainsFunc(seps[:last], func(s string) bool { return strings.Contains(l.Lits[0], s) }) {
		g.p("\tr = substr(r, %d)", len(l.Lits[0])+1)
	}
	// r starts at run at: the runs before a needed one are skipped by
	// the separator that ends the last of them when no separator
	// skipped holds it (else one separator at a time), and nothing
	// after the last needed run is read.
	at := 0
	for ri, run := range runs {
		if len(run) != 1 || l.Values[run[0]].Field < 0 || !need[l.Values[run[0]].Field] {
			continue
		}
		for at < ri {
			to := at
			if sep := seps[ri-1]; !slices.ContainsFunc(seps[at:ri-1], func(s string) bool { return strings.Contains(s, sep) }) {
				to = ri - 1
			}
			g.p("\tk = index(r, %s); if (!k) { UNREAD++; return }", awkString(seps[to]))
			g.p("\tr = substr(r, k + %d)", len(seps[to]))
			at = to + 1
		}
		switch {
		case seps[ri] == "":
			g.p("\ts = r")
		case ri == last:
			g.p("\tk = index(r, %s); if (!k) { UNREAD++; return }", awkString(seps[ri]))
			g.p("\ts = substr(r, 1, k - 1)")
		default:
			g.p("\tk = index(r, %s); if (!k) { UNREAD++; return }", awkString(seps[ri]))
			g.p("\ts = substr(r, 1, k - 1); r = substr(r, k + %d)", len(seps[ri]))
		}
		at = ri + 1
		v := l.Values[run[0]]
		f := l.Event.Fields[v.Field]
		if f.IsString() {
			g.p("\t%s = s", awkBase(f.Name))
			continue
		}
		g.numField(l.Event.System+"/"+l.Event.Name, f, v, "s", "")
	}
	for _, t := range g.m.byEvent[l.Event.System+"/"+l.Event.Name] {
		g.p("\tsqlhist_t%d()", g.tidx[t])
	}
	g.p("}")
}

// awkTokens is how a line of an event is read by its words (awk's
// fields, split at blanks) when its print format allows: every value
// alone in its word a number (never empty, never blank), and each
// field the triggers need alone with literal text in its word. A value
// with blanks, or a string value alone in a word, would move the words
// after it: the line then has another count of words, and is read by
// its separators (sqlhist_head and the event's function).
type awkTokens struct {
	words int // the words of the event's text (after "EVENT:")
	// fields are the needed fields' places: word (1 for the first),
	// the literal text before and after the value in it.
	fields []awkToken
}

type awkToken struct {
	field, word   int
	before, after int
}

// newAwkTokens reads the words of an event's print format; nil when
// its lines cannot be read by their words.
func newAwkTokens(te *textEvent) *awkTokens {
	l := te.layout
	type word struct {
		vals   []int
		lits   []string // the literal text before each value, and after the last
		closed bool
	}
	var words []*word
	var cur *word
	lit := func(s string) {
		for _, c := range s {
			if c == ' ' || c == '\t' || c == '\n' {
				cur = nil
				continue
			}
			if cur == nil {
				cur = &word{lits: []string{""}}
				words = append(words, cur)
			}
			cur.lits[len(cur.lits)-1] += string(c)
		}
	}
	for i := range l.Values {
		lit(l.Lits[i])
		if cur == nil {
			cur = &word{lits: []string{""}}
			words = append(words, cur)
		}
		cur.vals = append(cur.vals, i)
		cur.lits = append(cur.lits, "")
	}
	lit(l.Lits[len(l.Values)])
	need := map[int]bool{}
	for _, f := range te.needed {
		need[f] = true
	}
	tk := &awkTokens{words: len(words)}
	for wi, w := range words {
		literal := strings.Join(w.lits, "") != ""
		for j, vi := range w.vals {
			v := l.Values[vi]
			if !literal && !strings.ContainsRune("diuxX", rune(v.Conv)) {
				return nil // a string alone in its word: it may be empty
			}
			if v.Field < 0 || !need[v.Field] {
				continue
			}
			if len(w.vals) > 1 {
				return nil // nothing marks where the value ends
			}
			tk.fields = append(tk.fields, awkToken{field: v.Field, word: wi + 1, before: len(w.lits[j]), after: len(w.lits[j+1])})
		}
	}
	if len(tk.fields) != len(te.needed) {
		return nil
	}
	return tk
}

// text is the awk expression of the token's text: the value in its
// word, less the literal text around it.
func (t awkToken) text() string {
	w := fmt.Sprintf("$%d", 5+t.word)
	switch {
	case t.after > 0:
		return fmt.Sprintf("substr(%s, %d, length(%s) - %d)", w, t.before+1, w, t.before+t.after)
	case t.before == 0:
		return w
	}
	return fmt.Sprintf("substr(%s, %d)", w, t.before+1)
}

// lazyStrings says whether event's lines read by their words leave
// its string fields in their words, read by the triggers where they
// read them (awkGen.field).
func (g *awkGen) lazyStrings(event string) bool {
	tk := g.fast[event]
	if tk == nil {
		return false
	}
	te := g.evs[event]
	for _, t := range tk.fields {
		if te.layout.Event.Fields[t.field].IsString() {
			return true
		}
	}
	return false
}

// fastBlock is the code of the line rule for a line of an event read
// by its words (awkTokens): its header's pid and task name where read
// (sqlhist_fhead), its timestamp where read at once (eagerTS), its
// numeric fields (its string fields are read where a trigger reads
// them), then its triggers.
func (g *awkGen) fastBlock(te *textEvent, tk *awkTokens, head bool) string {
	l := te.layout
	s := g.sub()
	s.exit = "next"
	s.fastLine = true
	if head {
		s.p("\tsqlhist_fhead()")
	}
	if g.eagerTS[l.Event.Name] {
		s.p("\tH_TS = %s", awkFastTS)
	}
	ts := g.m.byEvent[l.Event.System+"/"+l.Event.Name]
	look, lookField := g.lookupFirst(ts, te, tk)
	for _, t := range tk.fields {
		f := l.Event.Fields[t.field]
		if f.IsString() {
			continue // read where a trigger reads it (awkGen.field)
		}
		var tv TextValue
		for _, v := range l.Values {
			if v.Field == t.field {
				tv = v
			}
		}
		lk := ""
		if look != "" && t.field == lookField {
			lk = look
		}
		s.numField(l.Event.System+"/"+l.Event.Name, f, tv, t.text(), lk)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(s.b.String(), "\n") {
		if line != "" {
			b.WriteString("\t" + line)
		}
	}
	s.refChecked = look != ""
	for i, t := range ts {
		b.WriteString(s.inline(t, i == len(ts)-1))
	}
	return b.String()
}

// lookupFirst says whether the line's code for a line read by its words
// looks its key up first: the event's one trigger applies no filter of
// its own, keys by one numeric field as it is printed (a plain decimal),
// which the line's code reads only as key text and beside no other
// number, and reads another trigger's variable for that key first. The
// lookup then comes before the key text is checked: the text of a key
// found is a key made before, so it needs no check, and an event whose
// key is not found (most of the scheduler's switches) ends there. It
// returns the array looked up (VARi_j) and the field's index, or "".
func (g *awkGen) lookupFirst(ts []*trigger, te *textEvent, tk *awkTokens) (string, int) {
	if len(ts) != 1 {
		return "", 0
	}
	t := ts[0]
	if t.filter != nil && !t.kernelFiltered || len(t.keys) != 1 || len(t.refs) == 0 {
		return "", 0
	}
	k := t.keys[0]
	if !awkKeyField(t, k) || k.mod != "" {
		return "", 0
	}
	ev := te.layout.Event.System + "/" + te.layout.Event.Name
	if g.numeric[ev][k.field] {
		return "", 0
	}
	for _, w := range tk.fields {
		f := te.layout.Event.Fields[w.field]
		if w.field != k.field && !f.IsString() {
			return "", 0
		}
	}
	for _, v := range te.layout.Values {
		if v.Field == k.field && (v.Conv == 'x' || !v.Plain) {
			return "", 0
		}
	}
	r := t.refs[0]
	return fmt.Sprintf("VAR%d_%d", g.tidx[r.t], r.idx), k.field
}

// neverFull says that trigger t's map can never be full, so that its
// entries need no count: an entry is made only for a key whose
// variables of other triggers are all set (t.refs, resolved first), so
// its keys are among the entries of each of those triggers, never more
// than that map's size; one at most t's own is enough. No other trigger
// may share t's map.
func (g *awkGen) neverFull(t *trigger) bool {
	for _, u := range g.m.triggers {
		if u != t && u.m == t.m {
			return false
		}
	}
	for _, r := range t.refs {
		if r.t.m.size <= t.m.size {
			return true
		}
	}
	return false
}

// filterNonneg lists the fields, by index, that filter f, passing an
// event, holds within [0, 2^63), where the program holds a value as the
// double it is (awkGen.filter): an unsigned field below a constant of at
// most 2^63, alone or in a conjunction.
func filterNonneg(f *filter) map[int]bool {
	out := map[int]bool{}
	var walk func(f *filter)
	walk = func(f *filter) {
		switch {
		case f == nil || f.op == "||" || f.op == "!":
		case f.op == "&&":
			walk(f.l)
			walk(f.r)
		case f.comm || f.glob || f.field == nil || f.field.kind != opField || f.field.isString() || f.field.signed():
		case f.op == "<" && f.num <= 1<<63, f.op == "<=" && f.num < 1<<63:
			out[f.field.field] = true
		}
	}
	walk(f)
	return out
}

// isSmall says that x's value, as the program holds it, is within ±2^62
// (awkCtx.small): for a field of a synthetic event written where it is
// fired, as its argument is (smallArgs).
func (g *awkGen) isSmall(x *expr) bool {
	if t := g.cur; t != nil && t.spec.System == SyntheticSystem && x.kind == opField {
		return g.smallArgs[x.field]
	}
	return (&awkCtx{g: g, t: g.cur}).small(x, 0)
}

// numField writes the reading of a numeric field's text, in s, as what
// the event's triggers read of it: its value (F_name[0]) where one reads
// it as a number, its key text (K_name) where one keys by it as it is
// (awkKeyField). A decimal as a plain conversion prints it (no leading
// zero, no sign but a minus) is its own key text, and its value at once
// when it is below the field's limit; anything else is read in full,
// and text that is no number makes the line unread.
func (g *awkGen) numField(ev string, f *tracefs.Field, tv TextValue, text, lookup string) {
	num, key := g.numeric[ev][tv.Field], g.keyed[ev][tv.Field]
	hex, signed := 0, 0
	if tv.Conv == 'x' {
		hex = 1
	}
	if f.Signed {
		signed = 1
	}
	size := min(f.Size, 8)
	ks := 8
	if f.Size > 0 && f.Size <= 8 {
		ks = f.Size
	}
	// s = text, unless it is s.
	set := func(v string) string {
		if text == "s" {
			return v
		}
		return "(" + v + " = " + text + ")"
	}
	full := func(ind string) {
		g.p("%sif (!sqlhist_isnum(s, %d)) { UNREAD++; %s }", ind, hex, g.exit)
		g.p("%sv = sqlhist_num(s, %d, %d, %d, %d)", ind, hex, tv.Bytes, size, signed)
		if num {
			g.p("%s%s = v", ind, awkBase(f.Name))
		}
		if key {
			g.p("%s%s = (v >= 0 && v < 2147483648 ? v \"\" : sqlhist_kpart(v, %d))", ind, awkKey(f.Name), ks)
		}
	}
	if hex == 1 || !tv.Plain {
		if text != "s" {
			g.p("\ts = %s", text)
		}
		full("\t")
		return
	}
	// Below 10^15 a decimal is exact as a double, and a key's text is
	// the decimal (sqlhist_kpart's): an 8-byte one has at most 15 digits
	// (written out: mawk has no {m,n}).
	re := "/^(0|[1-9][0-9]*)$/"
	if tv.Bytes >= 8 || size >= 8 {
		re = "/^(0|[1-9]" + strings.Repeat("[0-9]?", 14) + ")$/"
	}
	if !num && lookup != "" {
		// Only a key, looked up at once (lookupFirst): checked only
		// when not found, and looked up again once read in full.
		k := awkKey(f.Name)
		g.p("\tif (!((%s = %s) in %s)) {", k, text, lookup)
		g.p("\t\tif (%s ~ %s) %s", k, re, g.exit)
		g.p("\t\ts = %s", k)
		full("\t\t")
		g.p("\t\tif (!(%s in %s)) %s", k, lookup, g.exit)
		g.p("\t}")
		return
	}
	if !num {
		// Only a key: its text is taken first, read in full if it is
		// not such a decimal.
		k := awkKey(f.Name)
		g.p("\tif ((%s = %s) !~ %s) {", k, text, re)
		g.p("\t\ts = %s", k)
		full("\t\t")
		g.p("\t}")
		return
	}
	g.p("\tif (%s ~ %s) {", set("s"), re)
	g.p("\t\tv = s + 0")
	if size < 8 {
		g.p("\t\tif (v >= %s) v = sqlhist_num(s, 0, %d, %d, %d)", awkNumber(awkFitLimit(size, f.Signed)), tv.Bytes, size, signed)
	}
	g.p("\t\t%s = v", awkBase(f.Name))
	if key {
		g.p("\t\t%s = s", awkKey(f.Name))
	}
	g.p("\t} else {")
	full("\t\t")
	g.p("\t}")
}

// fastHeadReads says whether sqlhist_fhead reads anything: the line's
// pid or task name, which the triggers read as they are.
func (g *awkGen) fastHeadReads(comm bool) bool { return g.readsPID || comm }

// fastHead writes sqlhist_fhead, which reads the header of a line read
// by its words when the triggers read them: the pid after the task
// name's 16 columns (%-7d) and the task name; and sqlhist_hcpu, which
// reads the CPU where a trigger asks: from word 2 ("[CCC]") of a line
// read by its words, as sqlhist_head read it of another (SLOW holds the
// last line, NR, sqlhist_head read; the timestamp is read alike,
// awkTS).
func (g *awkGen) fastHead(cpu, comm bool) {
	if g.fastHeadReads(comm) {
		g.p("function sqlhist_fhead() {")
		if g.readsPID {
			g.p("\tH_PID = substr($0, 18, 7) + 0")
		}
		if comm {
			g.p("\tH_COMM = substr($0, 1, 16); if (substr(H_COMM, 1, 1) == \" \") sub(/^ +/, \"\", H_COMM)")
		}
		g.p("}")
	}
	if cpu {
		g.p("function sqlhist_hcpu(   c) {")
		g.p("\tif (SLOW == NR) return H_CPU")
		g.p("\tc = (\"1\" substr($2, 2)) - 1000")
		g.p("\tif (c < 0 || c >= 1000) c = sqlhist_dec(substr($2, 2, length($2) - 2))")
		g.p("\treturn c")
		g.p("}")
	}
}

// awkTS is the timestamp of the line where the eager one (H_TS, read at
// once by fastBlock) is not read: as sqlhist_head read it, or from word
// 4 ("S.UUUUUU:") of a line read by its words.
const awkTS = "(SLOW == NR ? H_TS : " + awkFastTS + ")"

// awkFastTS is the timestamp of a line read by its words (word 4,
// "S.UUUUUU:"), in µs.
const awkFastTS = "int($4 * 1000000 + 0.5)"

// awkFitLimit is the least value a field of size bytes does not hold as
// it is (a signed one's sign bit set, or past its size): below it a
// decimal read is the field's value.
func awkFitLimit(size int, signed bool) uint64 {
	if size <= 0 || size >= 8 {
		return 1 << 63
	}
	bits := uint(size * 8)
	if signed {
		bits--
	}
	return 1 << bits
}

// trigger writes sqlhist_tN, the kernel's event_hist_trigger for one
// trigger (see Machine.hit).
func (g *awkGen) trigger(t *trigger) {
	params, locals := triggerLocals(t)
	g.p("function sqlhist_t%d(%s   %s) {", g.tidx[t], strings.Join(append(params, ""), ", "), strings.Join(locals, ", "))
	g.exit = "return"
	g.triggerBody(t)
	g.p("}")
}

// inline is the code of trigger t where the line rule runs it on a line
// read by its words: the last of the event's triggers ends the line
// (next), another its do-while (break). Its locals are the rule's
// variables, each set before it is read.
func (g *awkGen) inline(t *trigger, last bool) string {
	s := g.sub()
	s.refChecked = g.refChecked
	s.exit = "break"
	if last {
		s.exit = "next"
	}
	s.triggerBody(t)
	var b strings.Builder
	if !last {
		b.WriteString("\t\tdo {\n")
	}
	ind := "\t"
	if !last {
		ind = "\t\t"
	}
	for _, l := range strings.SplitAfter(s.b.String(), "\n") {
		if l != "" {
			b.WriteString(ind + l)
		}
	}
	if !last {
		b.WriteString("\t\t} while (0)\n")
	}
	return b.String()
}

// leaf says that trigger t, of a synthetic event, fires no synthetic
// event: fire writes its code where it fires it (inlineSynth).
func (g *awkGen) leaf(t *trigger) bool {
	return !slices.ContainsFunc(t.actions, func(a *action) bool { return a.synth != "" })
}

// inlineSynth writes the code of trigger t, a leaf of a synthetic
// event, where its event is fired with the parameters args (each a
// variable, or a constant): its fields read as args, its locals named
// apart (uN_name, N its index), its early end the break of a do-while.
func (g *awkGen) inlineSynth(t *trigger, args []string, ind string, noFilter, tail bool) {
	s := g.sub()
	s.exit = "break"
	if tail {
		// Nothing follows it but the line's end: its early end is
		// next, with no do-while.
		s.exit = "next"
	}
	s.noFilter = noFilter
	s.triggerBody(t)
	if !tail {
		g.p("%sdo {", ind)
	}
	names := g.synthArgs(t, args)
	for _, l := range strings.SplitAfter(awkRename(s.b.String(), names), "\n") {
		if tail {
			l = strings.TrimPrefix(l, "\t") // at the do-while's place
		}
		if l != "" {
			g.b.WriteString(ind + l)
		}
	}
	if !tail {
		g.p("%s} while (0)", ind)
	}
}

// synthArgs are the names of trigger t's parameters and locals where
// fire writes its code (inlineSynth): its fields, the arguments args;
// its locals, uN_name.
func (g *awkGen) synthArgs(t *trigger, args []string) map[string]string {
	params, locals := triggerLocals(t)
	names := map[string]string{}
	for i, p := range params {
		names[p] = "\"\""
		if i < len(args) {
			names[p] = args[i]
		}
	}
	for _, l := range locals {
		names[l] = fmt.Sprintf("u%d_%s", g.tidx[t], l)
	}
	return names
}

// keyedOnce says that each of the triggers ts reads field f of their
// synthetic event at most once an event, as a part of its key: an
// argument is then written where it is read (its entry's key text reads
// it again only when the entry is made), not computed into a variable
// first.
func keyedOnce(ts []*trigger, f int) bool {
	reads := func(x *expr) (n int) {
		x.walk(func(o *expr) {
			if o.kind == opField && o.field == f {
				n++
			}
		})
		return n
	}
	for _, t := range ts {
		keyed := 0
		for _, k := range t.keys {
			keyed += reads(k)
		}
		other := filterReads(t.filter, f)
		for _, x := range append(append([]*expr{}, t.vals...), t.vars...) {
			other = other || reads(x) > 0
		}
		for _, a := range t.actions {
			for _, p := range a.params {
				other = other || reads(p) > 0
			}
		}
		if keyed > 1 || other {
			return false
		}
	}
	return true
}

// filterReads says whether filter f reads field i.
func filterReads(f *filter, i int) bool {
	if f == nil {
		return false
	}
	if f.field != nil && f.field.kind == opField && f.field.field == i {
		return true
	}
	return filterReads(f.l, i) || filterReads(f.r, i)
}

// complement says that the filters of triggers a and b, both applied
// by the program, pass no event alike: one compares a field with a
// value as the other's negation does (< and >=, <= and >, == and !=).
func complement(a, b *trigger) bool {
	fa, fb := a.filter, b.filter
	if fa == nil || fb == nil || a.kernelFiltered || b.kernelFiltered || fa.field == nil || fb.field == nil {
		return false
	}
	neg := map[string]string{"<": ">=", ">=": "<", "<=": ">", ">": "<=", "==": "!=", "!=": "=="}
	x, y := fa.field, fb.field
	return neg[fa.op] == fb.op && !fa.glob && !fb.glob && fa.comm == fb.comm && fa.num == fb.num && fa.neg == fb.neg && fa.str == fb.str &&
		x.kind == opField && y.kind == opField && x.field == y.field && x.def == y.def
}

// awkRename renames the variables of awk code: each name (a word of a
// letter or _ then letters, digits and _) outside string literals.
func awkRename(code string, names map[string]string) string {
	var b strings.Builder
	isWord := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(code) && code[j] != '"' {
				if code[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(code))
			b.WriteString(code[i:j])
			i = j
		case isWord(c):
			j := i
			for j < len(code) && isWord(code[j]) {
				j++
			}
			w := code[i:j]
			if n, ok := names[w]; ok && (c < '0' || c > '9') {
				w = n
			}
			b.WriteString(w)
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// triggerLocals are the parameters (a synthetic event's fields, as fire
// passes them) and the local variables of trigger t's function.
func triggerLocals(t *trigger) (params, locals []string) {
	if t.spec.System == SyntheticSystem {
		for i := firstSynthField(t.ev); i < len(t.ev.Fields); i++ {
			params = append(params, fmt.Sprintf("p%d", i-firstSynthField(t.ev)))
		}
	}
	for i := range t.refs {
		locals = append(locals, fmt.Sprintf("r%d", i))
	}
	for i := range t.vars {
		locals = append(locals, fmt.Sprintf("n%d", i), fmt.Sprintf("s%d", i))
	}
	locals = append(locals, "k", "v", "t")
	for i, k := range t.keys {
		locals = append(locals, fmt.Sprintf("q%d", i))
		if k.mod == "log2" {
			locals = append(locals, fmt.Sprintf("x%d", i))
		}
	}
	for i := range t.actions {
		for j := range t.actions[i].params {
			locals = append(locals, fmt.Sprintf("a%d_%d", i, j))
		}
	}
	return params, locals
}

// triggerBody writes what trigger t does on an event (the kernel's
// event_hist_trigger; see Machine.hit), ending early by g.exit.
func (g *awkGen) triggerBody(t *trigger) {
	ti := g.tidx[t]
	g.cur = t
	if t.filter != nil && !t.kernelFiltered && !g.noFilter {
		g.p("\tif (!(%s)) %s", g.filter(t.filter), g.exit)
	}
	// The key: its parts as the map compares them. A part's value is
	// kept for its entry (KV) as computed (qN), or, where it is the
	// part's text and computing it again costs little, computed again
	// when the entry is made (kv).
	var parts []string
	kv := map[int]string{}
	shown := g.shown[t]
	nonneg := filterNonneg(t.filter)
	for i, k := range t.keys {
		switch {
		case k.isString() && awkIdent().MatchString(g.keyValue(k)):
			parts = append(parts, g.keyValue(k)) // a variable, stored as it is
		case k.isString():
			parts = append(parts, "("+g.keyValue(k)+")")
			kv[i] = g.keyValue(k)
		case awkKeyField(t, k):
			parts = append(parts, awkKey(k.def.Name))
		case k.mod == "log2":
			// 0 to 64, as text: by the tables L2 and L2H up to 2^16
			// (made in BEGIN), past it by sqlhist_log2. A variable
			// the filter holds at or above 0 is read as it is.
			x, e := fmt.Sprintf("x%d", i), (&awkCtx{g: g}).expr(k)
			if k.kind == opField && nonneg[k.field] && awkIdent().MatchString(e) {
				part := fmt.Sprintf("(%[1]s <= 256 ? L2[%[1]s] : %[1]s <= 65536 ? L2H[int((%[1]s + 255) / 256)] : sqlhist_log2(%[1]s) \"\")", e)
				parts, kv[i] = append(parts, part), part
				break
			}
			parts = append(parts, fmt.Sprintf("(q%[1]d = ((%[2]s = %[3]s) >= 0 && %[2]s <= 256 ? L2[%[2]s] : %[2]s > 256 && %[2]s <= 65536 ? L2H[int((%[2]s + 255) / 256)] : sqlhist_log2(%[2]s) \"\"))", i, x, e))
		default:
			// sqlhist_kpart's common case at once.
			parts = append(parts, fmt.Sprintf("((q%d = %s) >= 0 && q%d < 2147483648 ? q%d \"\" : sqlhist_kpart(q%d, %d))", i, g.keyValue(k), i, i, i, k.size()))
		}
	}
	// A key that is one variable (K_pid, a parameter) is that variable:
	// the rest of the code is written with k, then k renamed.
	mark := -1
	switch {
	case len(parts) == 0:
		g.p("\tk = \"\"")
	case len(parts) == 1 && awkIdent().MatchString(parts[0]):
		mark = g.b.Len()
		defer func() {
			code := g.b.String()
			g.b.Reset()
			g.b.WriteString(code[:mark])
			g.b.WriteString(awkRename(code[mark:], map[string]string{"k": parts[0]}))
		}()
	default:
		g.p("\tk = %s", strings.Join(parts, " SUBSEP "))
	}
	ctx := &awkCtx{g: g, t: t, ti: ti, nonneg: nonneg}
	for i, r := range t.refs {
		oi := g.tidx[r.t]
		if i > 0 || !g.refChecked {
			g.p("\tif (!(k in VAR%d_%d)) %s", oi, r.idx, g.exit)
		}
		g.p("\tr%d = VAR%d_%d[k]", i, oi, r.idx)
		if t.readOnce[t.refNames[i]] {
			g.p("\tdelete VAR%d_%d[k]", oi, r.idx)
		}
	}
	size := t.m.size
	// A trigger whose hist file is not printed keeps only what its
	// events do: its entries (a full map drops an event), variables and
	// tracked values; not its counts, sums and keys' values. Nor its
	// entries where its map can never be full (neverFull).
	if shown || !g.neverFull(t) {
		g.p("\tif (!(k in C%d)) {", ti)
		g.p("\t\tif (NE%d >= %d) { DROP%d++; %s }", ti, size, ti, g.exit)
		if shown {
			g.p("\t\tNE%d++; ORD%d[NE%d] = k; C%d[k] = 0", ti, ti, ti, ti)
			for i, k := range t.keys {
				switch {
				case awkKeyField(t, k):
					g.p("\t\tKV%d_%d[k] = %s", ti, i, awkKey(k.def.Name))
				case k.isString() && awkIdent().MatchString(g.keyValue(k)):
					g.p("\t\tKV%d_%d[k] = %s", ti, i, g.keyValue(k))
				case kv[i] != "":
					g.p("\t\tKV%d_%d[k] = %s", ti, i, kv[i])
				default:
					g.p("\t\tKV%d_%d[k] = q%d", ti, i, i)
				}
				if k.mod == "execname" {
					g.p("\t\tKC%d_%d[k] = H_COMM", ti, i)
				}
			}
		} else {
			g.p("\t\tNE%d++; C%d[k] = 0", ti, ti)
		}
		g.p("\t}")
	}
	if shown {
		// Hits is the counts' sum (sqlhist_printN).
		g.p("\tC%d[k]++", ti)
		for i, x := range t.vals {
			g.p("\tSUM%d_%d[k] += %s", ti, i, ctx.expr(x))
		}
	}
	// A variable whose expression reads no variable that may be unset
	// is set by every event (always): the actions read it as computed
	// (n0), and it is stored only where it is read later (by other
	// triggers, by onmax/onchange, by this trigger's values or
	// variables, which read the value before the event).
	// A variable computed as a variable's value (a parameter, another
	// trigger's variable read) is read as that.
	fresh := map[int]string{}
	exprs := make([]string, len(t.vars))
	for i, x := range t.vars {
		exprs[i] = ctx.expr(x)
		switch e := exprs[i]; {
		case strings.Contains(e, "sqlhist_unset()"):
		case awkIdent().MatchString(e):
			fresh[i] = e
		default:
			fresh[i] = fmt.Sprintf("n%d", i)
		}
	}
	// The actions, written first: what they read of the variables.
	acts := g.sub()
	acts.cur = t
	actx := &awkCtx{g: acts, t: t, ti: ti, fresh: fresh, nonneg: nonneg}
	for i, a := range t.actions {
		acts.action(actx, i, a)
	}
	stored := map[int]bool{}
	for i, e := range exprs {
		n, always := fresh[i]
		switch {
		case !always:
			g.p("\tOK = 1; n%d = %s; s%d = OK", i, e, i)
		case n == e:
		case len(t.vars) == 1 && g.readLater(t, i) && !awkReads(acts.b.String(), n):
			// Stored as computed: no other variable reads it first,
			// no action after.
			g.p("\tVAR%d_%d[k] = %s", ti, i, e)
			stored[i] = true
		case len(t.vars) == 1 && g.readLater(t, i):
			g.p("\tVAR%d_%d[k] = %s = %s", ti, i, n, e)
			stored[i] = true
		default:
			g.p("\t%s = %s", n, e)
		}
	}
	for i := range t.vars {
		switch n, always := fresh[i]; {
		case !always:
			g.p("\tif (s%d) VAR%d_%d[k] = n%d", i, ti, i, i)
		case g.readLater(t, i) && !stored[i]:
			g.p("\tVAR%d_%d[k] = %s", ti, i, n)
		}
	}
	g.b.WriteString(acts.b.String())
}

// awkReads says whether the awk code reads the variable name.
func awkReads(code, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(code)
}

// awkCtx compiles the expressions of one trigger.
type awkCtx struct {
	g  *awkGen
	t  *trigger
	ti int
	// fresh are the trigger's own variables set by the event, by slot:
	// the actions read their values as computed.
	fresh map[int]string
	// nonneg are the fields of the trigger's event, by index, that its
	// filter holds within [0, 2^63) (filterNonneg).
	nonneg map[int]bool
}

// readLater reports whether trigger t's variable i, set by every event
// of t, is read after the event that sets it: by another trigger, or by
// t's values or variables (which read the entry's value from before the
// event). Its actions (an onmax, onchange or its parameters) read it as
// the event computed it.
func (g *awkGen) readLater(t *trigger, i int) bool {
	for _, u := range g.m.triggers {
		for _, r := range u.refs {
			if r.t == t && r.idx == i {
				return true
			}
		}
	}
	name := t.varName[i]
	read := false
	for _, x := range append(append([]*expr{}, t.vals...), t.vars...) {
		x.walk(func(o *expr) {
			read = read || o.kind == opVar && o.name == name && !slices.Contains(t.refNames, name)
		})
	}
	return read
}

// expr is an awk expression of the value (a number as the machine's
// uint64, held as a double: a negative double d stands for 2^64+d).
func (c *awkCtx) expr(x *expr) string {
	switch x.kind {
	case opField:
		return c.g.field(x)
	case opTimestamp:
		if t := c.g.cur; t.spec.System != SyntheticSystem && c.g.eagerTS[t.spec.Event] {
			return "H_TS"
		}
		if c.g.fastLine {
			return awkFastTS
		}
		return awkTS
	case opCPU:
		return "sqlhist_hcpu()"
	case opConst:
		return awkNumber(x.n)
	case opVar:
		for i, n := range c.t.refNames {
			if n == x.name {
				return fmt.Sprintf("r%d", i)
			}
		}
		if idx, ok := c.t.own[x.name]; ok {
			if n, ok := c.fresh[idx]; ok {
				return n
			}
			return fmt.Sprintf("((k in VAR%d_%d) ? VAR%d_%d[k] : sqlhist_unset())", c.ti, idx, c.ti, idx)
		}
		return "sqlhist_unset()"
	case opBinary:
		l, r := c.expr(x.l), c.expr(x.r)
		if (x.op == '+' || x.op == '-') && c.small(x.l, 0) && c.small(x.r, 0) {
			// No wrap: the sum or difference is within ±2^63.
			return "(" + l + " " + string(x.op) + " " + r + ")"
		}
		switch x.op {
		case '+':
			return "sqlhist_wrap(" + l + " + " + r + ")"
		case '-':
			return "sqlhist_wrap(" + l + " - " + r + ")"
		case '*':
			return "sqlhist_wrap(" + l + " * " + r + ")"
		case '/':
			return "sqlhist_div(" + l + ", " + r + ")"
		}
	}
	return "0"
}

// small says that x's value, as the program holds it, is within ±2^62
// (bits).
func (c *awkCtx) small(x *expr, depth int) bool { return c.bits(x, depth) <= 62 }

// bits bounds x's value, as the program holds it: within ±2^bits. A
// timestamp (µs, from the trace's clock: 2^54 µs are 570 years) 54, the
// CPU 32, a constant its own, a field of fewer than 8 bytes its bits, a
// sum or difference one more than its larger operand, a variable set to
// one of those (followed a few steps); anything else 64.
func (c *awkCtx) bits(x *expr, depth int) int {
	switch x.kind {
	case opTimestamp:
		return 54
	case opCPU:
		return 32
	case opConst:
		return bits.Len64(x.n)
	case opField:
		if x.def != nil && !x.def.IsString() && x.def.Size > 0 && x.def.Size < 8 {
			return 8 * x.def.Size
		}
	case opBinary:
		if (x.op == '+' || x.op == '-') && depth < 8 {
			return max(c.bits(x.l, depth+1), c.bits(x.r, depth+1)) + 1
		}
	case opVar:
		if depth >= 4 || c.t == nil {
			return 64
		}
		for i, n := range c.t.refNames {
			if n == x.name {
				r := c.t.refs[i]
				return (&awkCtx{g: c.g, t: r.t}).bits(r.t.vars[r.idx], depth+1)
			}
		}
		if idx, ok := c.t.own[x.name]; ok {
			return c.bits(c.t.vars[idx], depth+1)
		}
	}
	return 64
}

// field is the value of a field of the trigger's event: a synthetic
// event's are the trigger function's parameters (p0 for its first
// field), a base event's are set by the event's function (F_name), but
// for its string fields in a line read by its words, read from their
// word where a trigger reads them.
func (g *awkGen) field(x *expr) string {
	if x.def != nil && x.def.Name == "common_pid" {
		return "H_PID" // a synthetic event's is its first event's
	}
	t := g.cur
	if t.spec.System == SyntheticSystem {
		return fmt.Sprintf("p%d", x.field-firstSynthField(t.ev))
	}
	if x.def != nil && x.def.IsString() && g.lazyStrings(t.spec.Event) {
		for _, tk := range g.fast[t.spec.Event].fields {
			if tk.field == x.field {
				if g.fastLine {
					return tk.text()
				}
				return "(SLOW == NR ? " + awkBase(x.name) + " : " + tk.text() + ")"
			}
		}
	}
	return awkBase(x.name)
}

// awkIdent matches the names awk takes as part of a variable's.
var awkIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// awkBase is the variable holding a base event's field: F_name, or
// F["name"] for a name awk takes no variable by.
func awkBase(name string) string {
	if awkIdent().MatchString(name) {
		return "F_" + name
	}
	return "F[" + awkString(name) + "]"
}

// awkKey is the variable holding a base event's numeric field as key
// text (awkKeyField): K_name, or K["name"] for a name awk takes no
// variable by.
func awkKey(name string) string {
	if awkIdent().MatchString(name) {
		return "K_" + name
	}
	return "K[" + awkString(name) + "]"
}

// keyValue is the awk expression of a key part's value as printed
// (Machine's keyValue).
func (g *awkGen) keyValue(k *expr) string {
	c := &awkCtx{g: g}
	v := c.expr(k)
	switch k.mod {
	case "log2":
		return "sqlhist_log2(" + v + ")"
	case "buckets":
		return fmt.Sprintf("sqlhist_bucket(%s, %s)", v, awkNumber(k.bucket))
	}
	return v
}

// action writes one handler (Machine.act).
func (g *awkGen) action(c *awkCtx, i int, a *action) {
	switch a.handler {
	case "onmatch":
		g.fire(c, i, a, "\t", g.exit == "next" && i == len(c.t.actions)-1)
	case "onmax", "onchange":
		idx := c.t.own[a.track]
		v, ind := "v", "\t\t"
		n, fresh := c.fresh[idx]
		if fresh {
			v, ind = n, "\t"
		} else {
			g.p("\tif (k in VAR%d_%d) {", c.ti, idx)
			g.p("\t\tv = VAR%d_%d[k]", c.ti, idx)
		}
		trk := fmt.Sprintf("TRK%d_%d[k]", c.ti, a.slot)
		// v > TRK… as uint64s written out: a negative double stands
		// for one at or above 2^63 (+ 0 first: busybox awk orders an
		// unset element before 0).
		cmp := fmt.Sprintf("(t = %s + 0) < 0 ? %s < 0 && %s > t : %s < 0 || %s > t", trk, v, v, v, v)
		if x := c.t.vars[idx]; fresh && x.kind == opField && c.nonneg[x.field] {
			// The filter holds the value within [0, 2^63) on every
			// event that gets here, so the tracked one too (set only
			// here): the doubles' order is the uint64s'.
			cmp = fmt.Sprintf("%s > %s + 0", v, trk)
		}
		if a.handler == "onchange" {
			cmp = fmt.Sprintf("%s != %s + 0", v, trk)
		}
		g.p("%sif (%s) {", ind, cmp)
		g.p("%s\t%s = %s", ind, trk, v)
		switch a.what {
		case "save":
			if !g.shown[c.t] {
				break // only printed
			}
			for j, p := range a.params {
				if e := c.expr(p); strings.Contains(e, "sqlhist_unset()") {
					g.p("%s\tOK = 1; SAV%d_%d_%d[k] = %s", ind, c.ti, a.slot, j, e)
				} else {
					g.p("%s\tSAV%d_%d_%d[k] = %s", ind, c.ti, a.slot, j, e)
				}
			}
		case "trace":
			g.fire(c, i, a, ind+"\t", g.exit == "next" && i == len(c.t.actions)-1)
		}
		g.p("%s}", ind)
		if !fresh {
			g.p("\t}")
		}
	}
}

// fire writes a trace action: the synthetic event's fields from the
// parameters (none unset), then its triggers at the next depth. With
// tail, nothing follows the action on the line but its end (the last
// action of the line's last trigger): the last trigger written here
// ends the line itself (inlineSynth).
func (g *awkGen) fire(c *awkCtx, i int, a *action, ind string, tail bool) {
	def := g.m.synths[a.synth]
	first := firstSynthField(def)
	var params []string
	unset := false
	for _, p := range a.params {
		e := c.expr(p)
		params = append(params, e)
		unset = unset || strings.Contains(e, "sqlhist_unset()")
	}
	// The synthetic event's fields, passed to its triggers: each
	// parameter (truncated to its field), computed first where one may
	// be unset (none passed then) or where more than one trigger takes
	// it, else where it is passed.
	ts := g.m.byEvent[SyntheticSystem+"/"+a.synth]
	var args []string
	if unset {
		g.p("%sOK = 1", ind)
	}
	// The fields whose arguments are within ±2^62, for the filters of
	// the triggers written here.
	small := map[int]bool{}
	for j, p := range a.params {
		if first+j < len(def.Fields) {
			f := def.Fields[first+j]
			small[first+j] = !f.IsString() && (f.Size > 0 && f.Size < 8 || c.small(p, 0))
		}
	}
	saved := g.smallArgs
	g.smallArgs = small
	defer func() { g.smallArgs = saved }()
	for j, e := range params {
		if first+j < len(def.Fields) {
			if f := def.Fields[first+j]; !f.IsString() && f.Size > 0 && f.Size < 8 {
				signed := 0
				if f.Signed {
					signed = 1
				}
				e = fmt.Sprintf("sqlhist_trunc(%s, %d, %d)", e, f.Size, signed)
			}
		}
		if unset || (len(ts) > 1 || slices.ContainsFunc(ts, g.leaf)) && !awkIdent().MatchString(e) && !keyedOnce(ts, first+j) {
			g.p("%sa%d_%d = %s", ind, i, j, e)
			e = fmt.Sprintf("a%d_%d", i, j)
		}
		if first+j < len(def.Fields) {
			args = append(args, e)
		}
	}
	cond := []string{}
	if unset {
		cond = append(cond, "OK")
	}
	if g.depths {
		cond = append(cond, "D < 16")
	}
	in := ind
	if len(cond) > 0 {
		g.p("%sif (%s) {", ind, strings.Join(cond, " && "))
		in += "\t"
	}
	if g.depths {
		g.p("%sD++", in)
	}
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		if !g.leaf(t) {
			g.p("%ssqlhist_t%d(%s)", in, g.tidx[t], strings.Join(args, ", "))
			continue
		}
		if i+1 < len(ts) && g.leaf(ts[i+1]) && complement(t, ts[i+1]) {
			// One filter checked for both: an event passes one.
			cur := g.cur
			g.cur = t
			g.p("%sif (%s) {", in, awkRename(g.filter(t.filter), g.synthArgs(t, args)))
			g.cur = cur
			last := tail && !g.depths && i+2 == len(ts)
			g.inlineSynth(t, args, in+"\t", true, last)
			g.p("%s} else {", in)
			g.inlineSynth(ts[i+1], args, in+"\t", true, last)
			g.p("%s}", in)
			i++
			continue
		}
		g.inlineSynth(t, args, in, false, tail && !g.depths && i+1 == len(ts))
	}
	if g.depths {
		g.p("%sD--", in)
	}
	if len(cond) > 0 {
		g.p("%s}", ind)
	}
}

// filter is an awk condition for a filter the kernel does not apply.
func (g *awkGen) filter(f *filter) string {
	switch f.op {
	case "&&", "||":
		return "(" + g.filter(f.l) + " " + f.op + " " + g.filter(f.r) + ")"
	case "!":
		return "!(" + g.filter(f.l) + ")"
	}
	if f.comm || f.field.isString() {
		s := "H_COMM"
		if !f.comm {
			s = g.field(f.field)
		}
		op := "=="
		if f.op == "!=" {
			op = "!="
		}
		return "(" + s + " \"\" " + op + " " + awkString(f.str) + ")"
	}
	v := g.field(f.field)
	if f.field.kind != opField {
		v = (&awkCtx{g: g}).expr(f.field)
	}
	var cmp string
	if !f.field.signed() && f.num <= 1<<63 {
		// Below 2^63 a value is held as itself and one at or above
		// it as a negative double (or, read in full, a double at or
		// above 2^63): against such a constant the unsigned order is
		// the doubles' with the negative ones last.
		// (-2^63 is 2^63 itself: <= and > only below it.)
		n := awkNumber(f.num)
		below := f.num < 1<<63
		if f.num >= 1<<62 && g.isSmall(f.field) {
			// Within ±2^62, a value is below such a constant when it
			// is not negative.
			switch f.op {
			case "<", "<=":
				return "(" + v + " >= 0)"
			case ">", ">=":
				return "(" + v + " < 0)"
			}
		}
		switch {
		case f.op == "<":
			return "(" + v + " >= 0 && " + v + " < " + n + ")"
		case f.op == "<=" && below:
			return "(" + v + " >= 0 && " + v + " <= " + n + ")"
		case f.op == ">" && below:
			return "(" + v + " < 0 || " + v + " > " + n + ")"
		case f.op == ">=":
			return "(" + v + " < 0 || " + v + " >= " + n + ")"
		}
	}
	if f.field.signed() {
		cmp = fmt.Sprintf("sqlhist_scmp(%s, %s)", v, awkSigned(f.num))
	} else {
		cmp = fmt.Sprintf("sqlhist_ucmp(%s, %s)", v, awkNumber(f.num))
	}
	return "(" + cmp + " " + f.op + " 0)"
}

// show lists the events whose hist files the program prints (opt.Show, or
// all).
func (g *awkGen) show() []string {
	if g.opt.Show != nil {
		return g.opt.Show
	}
	show := g.m.Events()
	for _, n := range sortedKeys(g.m.synths) {
		show = append(show, SyntheticSystem+"/"+n)
	}
	return show
}

// output writes END's printing of the hist files.
func (g *awkGen) output() {
	for _, e := range g.show() {
		ts := g.m.byEvent[e]
		if len(ts) == 0 {
			continue
		}
		g.p("\tprintf \"%%s\\n\", %s", awkString(AwkFilePrefix+"events/"+e+"/hist"+AwkFileSuffix))
		for i, t := range ts {
			if i > 0 {
				g.p("\tprintf \"\\n\\n\"")
			}
			g.p("\tsqlhist_print%d()", g.tidx[t])
		}
		g.p("\tprintf \"\\n\"")
	}
}

// printFuncs writes sqlhist_printN for each trigger (Machine.print).
func (g *awkGen) printFuncs() {
	for _, t := range g.m.triggers {
		ti := g.tidx[t]
		g.p("function sqlhist_print%d(   i, n, k, l, v, h) {", ti)
		g.p("\tprintf \"%%s\", %s", awkString("# event histogram\n#\n# trigger info: "+t.info()+" [active]\n#\n\n"))
		g.p("\tn = NE%d; for (i = 1; i <= n; i++) O[i] = ORD%d[i]", ti, ti)
		g.p("\tsqlhist_sort(%d, n)", ti)
		g.p("\tfor (i = 1; i <= n; i++) {")
		g.p("\t\tk = O[i]; l = \"{ \"")
		for i, k := range t.keys {
			if i > 0 {
				g.p("\t\tl = l \", \"")
			}
			g.p("\t\tv = KV%d_%d[k]", ti, i)
			if awkKeyField(t, k) && k.def.Signed && k.size() < 8 {
				// The key's text (K_name) holds a negative value as its
				// field's unsigned one: the value is printed.
				g.p("\t\tif (v + 0 >= %s) v -= %s", awkNumber(1<<(8*k.size()-1)), awkNumber(1<<(8*k.size())))
			}
			g.p("\t\tl = l %s", g.printKey(t, k, i))
		}
		g.p("\t\tl = l \" }\"")
		if !t.spec.NoHitcount {
			g.p("\t\tl = l sprintf(\" hitcount: %%10s\", sqlhist_u64(C%d[k]))", ti)
		}
		for i, v := range t.vals {
			if v.mod == "hex" {
				g.p("\t\tl = l sprintf(\"  %%s: %%10s\", %s, sqlhist_hexs(SUM%d_%d[k]))", awkString(v.name), ti, i)
			} else {
				g.p("\t\tl = l sprintf(\"  %%s: %%10s\", %s, sqlhist_u64(SUM%d_%d[k]))", awkString(v.name), ti, i)
			}
		}
		for _, a := range t.actions {
			if a.handler == "onmatch" || a.what == "snapshot" {
				continue
			}
			word := "max"
			if a.handler == "onchange" {
				word = "changed"
			}
			g.p("\t\tl = l sprintf(\"\\n\\t%s: %%10s\", sqlhist_u64(TRK%d_%d[k]))", word, ti, a.slot)
			if a.what == "save" {
				for j, p := range a.params {
					if p.isString() {
						g.p("\t\tl = l sprintf(\"  %%s: %%-32s\", %s, SAV%d_%d_%d[k])", awkString(p.name), ti, a.slot, j)
					} else {
						g.p("\t\tl = l sprintf(\"  %%s: %%10s\", %s, sqlhist_u64(SAV%d_%d_%d[k]))", awkString(paramName(p)), ti, a.slot, j)
					}
				}
			}
		}
		g.p("\t\tprintf \"%%s\\n\", l")
		g.p("\t}")
		g.p("\th = 0; for (i = 1; i <= n; i++) h += C%d[ORD%d[i]]", ti, ti)
		g.p("\tprintf \"\\nTotals:\\n    Hits: %%s\\n    Entries: %%s\\n    Dropped: %%s\\n\", sqlhist_u64(h), sqlhist_u64(NE%d), sqlhist_u64(DROP%d)", ti, ti)
		g.p("}")
	}
}

// printKey is the awk expression that prints key part i (value v) as
// Machine.printKey does.
func (g *awkGen) printKey(t *trigger, k *expr, i int) string {
	name := k.name
	if k.kind == opBinary || k.kind == opConst {
		name = k.text
	}
	n := awkString(name)
	if k.isString() {
		return fmt.Sprintf("sprintf(\"%%s: %%-50s\", %s, v)", n)
	}
	switch k.mod {
	case "log2":
		return fmt.Sprintf("sprintf(\"%%s: ~ 2^%%-2s\", %s, sqlhist_u64(v))", n)
	case "buckets":
		return fmt.Sprintf("sprintf(\"%%s: ~ %%s-%%s\", %s, sqlhist_u64(v), sqlhist_u64(sqlhist_wrap(v + %s)))", n, awkNumber(k.bucket-1))
	case "hex":
		return fmt.Sprintf("sprintf(\"%%s: %%s\", %s, sqlhist_hexs(v))", n)
	case "execname":
		return fmt.Sprintf("sprintf(\"%%s: %%-16s[%%10s]\", %s, KC%d_%d[k], sqlhist_u64(v))", n, g.tidx[t], i)
	case "syscall":
		return fmt.Sprintf("sprintf(\"%%s: %%-30s[%%3s]\", %s, ((v \"\") in SC) ? SC[v \"\"] : \"unknown_syscall\", sqlhist_u64(v))", n)
	}
	return fmt.Sprintf("sprintf(\"%%s: %%10s\", %s, sqlhist_u64(v))", n)
}

// cmpFunc writes sqlhist_cmp(t, x, y): how trigger t's sort= orders two
// entries (Machine's sortEntries).
func (g *awkGen) cmpFunc() {
	g.p("function sqlhist_cmp(t, x, y,   c) {")
	for _, t := range g.m.triggers {
		ti := g.tidx[t]
		g.p("\tif (t == %d) {", ti)
		spec := t.spec.Sort
		if len(spec) == 0 {
			spec = []string{"hitcount"}
		}
		for _, s := range spec {
			name, desc := strings.CutSuffix(s, ".descending")
			name = strings.TrimSuffix(name, ".ascending")
			base, _, _ := strings.Cut(name, ".")
			cmp := ""
			if base == "hitcount" {
				cmp = fmt.Sprintf("sqlhist_ucmp(C%d[x], C%d[y])", ti, ti)
			} else {
				for i, k := range t.keys {
					if k.name == base || k.text == name {
						if k.isString() {
							cmp = fmt.Sprintf("sqlhist_scmps(KV%d_%d[x], KV%d_%d[y])", ti, i, ti, i)
						} else {
							cmp = fmt.Sprintf("sqlhist_ucmp(KV%d_%d[x], KV%d_%d[y])", ti, i, ti, i)
						}
						break
					}
				}
				if cmp == "" {
					for i, v := range t.vals {
						if v.name == base || v.text == name {
							cmp = fmt.Sprintf("sqlhist_ucmp(SUM%d_%d[x], SUM%d_%d[y])", ti, i, ti, i)
							break
						}
					}
				}
			}
			if cmp == "" {
				continue
			}
			if desc {
				g.p("\t\tc = -%s; if (c) return c", cmp)
			} else {
				g.p("\t\tc = %s; if (c) return c", cmp)
			}
		}
		g.p("\t\treturn 0")
		g.p("\t}")
	}
	g.p("\treturn 0")
	g.p("}")
}

// awkString is s as an awk string literal: backslashes, quotes and
// bytes outside printable ASCII escaped (octal).
func awkString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// awkNumber is an unsigned number as awk reads it (a double: exact
// below 2^53).
func awkNumber(n uint64) string {
	if n >= 1<<63 {
		// As the double of the uint64, written out.
		return strconv.FormatFloat(float64(n), 'f', 0, 64)
	}
	return strconv.FormatUint(n, 10)
}

// awkSigned is a filter's number read as signed.
func awkSigned(n uint64) string {
	return strconv.FormatInt(int64(n), 10)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// awkLib holds the functions every program has. Decimal text goes
// through sqlhist_dec: busybox awk reads "010" as octal. Numbers are the
// machine's uint64s as doubles: d < 0 stands for 2^64+d. A function
// that takes a number adds 0 to it first: busybox awk passes an array
// element never set as the string "", which compares as a string.
const awkLib = `function sqlhist_head(line,   r, i, t) {
	# The kernel's own layout at once: the task name in 16 columns, its
	# pid (%-7d), " [CPU]" (%03d), the flags and the timestamp (%5lu.%06lu)
	# just before the first ": " after the name.
	if (substr(line, 17, 1) == "-") {
		r = substr(line, 18); i = index(r, ": ")
		if (i > 20 && substr(r, i - 13, 1) == " " && substr(r, i - 7, 1) == "." && substr(r, 8, 2) == " [") {
			H_COMM = substr(line, 1, 16)
			if (substr(H_COMM, 1, 1) == " ") sub(/^ +/, "", H_COMM)
			H_PID = substr(r, 1, 7) + 0
			if (substr(r, 13, 1) == "]") H_CPU = ("1" substr(r, 10, 3)) - 1000
			else H_CPU = sqlhist_dec(substr(r, 10, index(r, "]") - 10))
			H_TS = int(substr(r, i - 12, 12) * 1000000 + 0.5); SLOW = NR
			r = substr(r, i + 2); i = index(r, ": ")
			if (i) { H_EV = substr(r, 1, i - 1); H_BODY = substr(r, i + 2) } else { H_EV = r; H_BODY = "" }
			return 1
		}
	}
	return sqlhist_headre(line)
}
function sqlhist_headre(line,   r, p, s, i) {
	if (substr(line, 17, 1) == "-") {
		H_COMM = substr(line, 1, 16); r = substr(line, 18)
	} else {
		if (!match(line, /-[0-9]+ +(\([ 0-9-]+\) +)?\[[0-9]+\] /)) return 0
		H_COMM = substr(line, 1, RSTART - 1); r = substr(line, RSTART + 1)
	}
	sub(/^ +/, "", H_COMM)
	if (!match(r, /^[0-9]+ +(\([ 0-9-]+\) +)?\[[0-9]+\] +([^ ]+ +)?[0-9]+\.[0-9]+: /)) return 0
	p = substr(r, 1, RLENGTH); r = substr(r, RLENGTH + 1)
	H_PID = sqlhist_dec(substr(p, 1, index(p, " ") - 1))
	match(p, /\[[0-9]+\]/); H_CPU = sqlhist_dec(substr(p, RSTART + 1, RLENGTH - 2))
	match(p, /[0-9]+\.[0-9]+: $/); s = substr(p, RSTART, RLENGTH - 2)
	i = index(s, ".")
	if (length(s) - i != 6) return 0
	H_TS = sqlhist_dec(substr(s, 1, i - 1)) * 1000000 + sqlhist_dec(substr(s, i + 1)); SLOW = NR
	i = index(r, ": ")
	if (i) { H_EV = substr(r, 1, i - 1); H_BODY = substr(r, i + 2) } else { H_EV = r; H_BODY = "" }
	return 1
}
function sqlhist_dec(s,   neg) {
	neg = substr(s, 1, 1) == "-"
	if (neg) s = substr(s, 2)
	sub(/^0+/, "", s)
	if (s == "") return 0
	return neg ? -(s + 0) : s + 0
}
function sqlhist_isnum(s, hex) {
	if (hex) return s ~ /^(0[xX])?[0-9a-fA-F]+$/
	return s ~ /^-?[0-9]+$/
}
function sqlhist_hex(s,   i, c, v) {
	v = 0; sub(/^0[xX]/, "", s); s = tolower(s)
	for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)); v = v * 16 + c - 1 }
	return v
}
function sqlhist_num(s, hex, bytes, size, signed,   v) {
	if (hex) v = sqlhist_hex(s); else v = sqlhist_dec(s)
	return sqlhist_trunc(sqlhist_wrapn(v, bytes), size, signed)
}
function sqlhist_wrapn(v, bytes) {
	if (v < 0 && bytes < 8) v += POW[8 * bytes]
	return v
}
function sqlhist_trunc(v, size, signed,   m) {
	if (size >= 8) return sqlhist_wrap(v)
	m = POW[8 * size]
	v = v - int(v / m) * m
	if (v < 0) v += m
	if (signed && v >= m / 2) v -= m
	return v
}
function sqlhist_wrap(v) {
	if (v >= 9223372036854775808) v -= 18446744073709551616
	else if (v < -9223372036854775808) v += 18446744073709551616
	return v
}
function sqlhist_u(v) { v += 0; return v < 0 ? v + 18446744073709551616 : v }
function sqlhist_ucmp(a, b) {
	a += 0; b += 0
	if (a < 0) a += 18446744073709551616
	if (b < 0) b += 18446744073709551616
	return a < b ? -1 : a > b ? 1 : 0
}
function sqlhist_scmp(a, b) { a += 0; b += 0; return a < b ? -1 : a > b ? 1 : 0 }
function sqlhist_scmps(a, b) { a = a ""; b = b ""; return a < b ? -1 : a > b ? 1 : 0 }
function sqlhist_div(a, b) {
	if (b == 0) return -1
	return sqlhist_wrap(int(sqlhist_u(a) / sqlhist_u(b)))
}
function sqlhist_log2(v,   n, p) {
	v += 0
	if (v <= 1) {
		if (v >= 0) return 0
		v += 18446744073709551616
	}
	if (v <= 4294967296) {
		# The least n with 2^n >= v by halving: p = 2^n < v throughout.
		n = 0; p = 1
		if (v > 65536) { n = 16; p = 65536 }
		if (v > p * 256) { n += 8; p *= 256 }
		if (v > p * 16) { n += 4; p *= 16 }
		if (v > p * 4) { n += 2; p *= 4 }
		if (v > p * 2) { n++; p *= 2 }
		return n + 1
	}
	n = 0; p = 1
	while (p * 256 < v && n < 56) { p *= 256; n += 8 }
	while (p < v && n < 64) { p *= 2; n++ }
	return n
}
function sqlhist_bucket(v, b) { v = sqlhist_u(v); return sqlhist_wrap(int(v / b) * b) }
function sqlhist_kpart(v, size) {
	if (v >= 0 && v < 2147483648) return v ""
	v += 0
	if (v < 0 && size < 8) v += POW[8 * size]
	return sprintf("%.0f", v)
}
function sqlhist_unset() { OK = 0; return 0 }
function sqlhist_u64(v,   s, t, i, d, b, r) {
	v += 0
	if (v >= 0) return sprintf("%.0f", v)
	s = "18446744073709551616"; t = sprintf("%.0f", -v)
	while (length(t) < length(s)) t = "0" t
	r = ""; b = 0
	for (i = length(s); i >= 1; i--) {
		d = substr(s, i, 1) - substr(t, i, 1) - b
		if (d < 0) { d += 10; b = 1 } else b = 0
		r = d r
	}
	sub(/^0+/, "", r)
	return r
}
function sqlhist_hexs(v,   r, d) {
	v = sqlhist_u(v)
	if (v == 0) return "0"
	r = ""
	while (v > 0) { d = v - int(v / 16) * 16; r = substr("0123456789abcdef", d + 1, 1) r; v = int(v / 16) }
	return r
}
function sqlhist_sort(t, n,   w, lo, mid, hi, a, b, k, i) {
	for (w = 1; w < n; w *= 2) {
		for (lo = 1; lo <= n; lo += 2 * w) {
			mid = lo + w; hi = lo + 2 * w
			if (mid > n + 1) mid = n + 1
			if (hi > n + 1) hi = n + 1
			a = lo; b = mid; k = lo
			while (a < mid && b < hi) {
				if (sqlhist_cmp(t, O[b], O[a]) < 0) TMP[k++] = O[b++]; else TMP[k++] = O[a++]
			}
			while (a < mid) TMP[k++] = O[a++]
			while (b < hi) TMP[k++] = O[b++]
		}
		for (i = 1; i <= n; i++) O[i] = TMP[i]
	}
}`
