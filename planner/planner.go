package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ParseSave reads -S: comma-separated field names ("" gives none).
func ParseSave(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !tracefs.IsIdent(f) {
			return nil, fmt.Errorf("-S %q: %q is not a field name", s, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// Check refuses options that cannot go together or names the kernel
// would refuse, in the words of sqlhist's flags.
func (o Options) Check() error {
	switch {
	case o.OnMax != "" && o.OnChange != "":
		return errors.New("-m and -c cannot be used together")
	case (o.Snapshot || o.Trace || len(o.Save) > 0) && o.OnMax == "" && o.OnChange == "":
		return errors.New("-s, -S and -T act on a handler: add -m VAR or -c VAR")
	case o.Name != "" && !tracefs.IsIdent(o.Name):
		return fmt.Errorf("-n %q: a synthetic event name uses letters, digits and _, not starting with a digit", o.Name)
	case o.Instance != "" && (strings.ContainsAny(o.Instance, "/\x00") || o.Instance == "." || o.Instance == ".."):
		return fmt.Errorf("-B %q is not a valid instance name", o.Instance)
	}
	return nil
}

// Options are the command-line choices that shape a plan. The zero value
// plans with no handler and in the top-level instance.
type Options struct {
	Name     string   // -n: synthetic event name for a single JOIN statement
	OnMax    string   // -m VAR: onmax handler on this synthetic field
	OnChange string   // -c VAR: onchange handler
	Snapshot bool     // -s
	Save     []string // -S f1,f2
	Trace    bool     // -T
	Instance string   // -B
	// Teardown plans the removal of what the script creates: its synthetic
	// events are expected to exist already.
	Teardown bool
	// Run plans for --run: LIMIT and a JOIN's ORDER BY are accepted (they
	// apply when the results are read) and each JOIN gets a results
	// histogram on its synthetic event (Unit.Results).
	Run bool
	// ResultsInstance is the instance of a --run's results histograms and
	// negative-latency counters (on the JOINs' synthetic events); ""
	// puts them beside the triggers, in Instance. An instance whose
	// triggers read no timestamp is cheaper for them: there the kernel
	// builds each synthetic event a histogram reads in a per-CPU scratch
	// buffer, where an instance with common_timestamp triggers reserves it
	// in its ring buffer and discards it.
	ResultsInstance string
	// Suffix is appended to derived synthetic event names ("_<Suffix>"),
	// so that concurrent runs do not collide. Names given with -n or
	// CREATE VIEW are kept as they are.
	Suffix string
	// Size is the number of entries of each histogram the run reads
	// (size=, a power of 2); 0 keeps the kernel's default (2048) for
	// histogram queries and DefaultResultsSize for JOIN results.
	Size int
	// Tasks restricts every unit to these thread ids (-p, -L); see
	// filterTasks for which trigger of a JOIN gets the filter.
	Tasks []int
	// TaskFlag names the flags that chose Tasks in the script's comments
	// ("-L 42").
	TaskFlag string
	// TaskNote, when set, is printed first among the script's comments
	// (how -p found the threads).
	TaskNote string
	// ReadFile reads a uprobe's binary to resolve a symbol to a file
	// offset; nil refuses uprobes on symbols.
	ReadFile func(name string) ([]byte, error)
	// Deref replaces an event whose char * fields a query selects with an
	// eprobe that reads the strings they point to.
	Deref bool
	// ProbeGroup, when set, is the group of the probes instead of
	// ProbeGroup: "kprobes" for a bootconfig, where the kernel creates
	// every kprobe in that group.
	ProbeGroup string
	// Stream plans for the stream engine (package stream), which
	// computes the hist triggers and synthetic events itself from the
	// events the kernel records: every hist-trigger feature is there,
	// whatever the kernel has; the probes are still the kernel's.
	Stream bool
	// CatalogHint is the hint of a refusal of the catalog itself (a
	// kernel without hist triggers): how to compile for another target.
	CatalogHint string
}

// histKeywords are the attributes of a hist trigger that are not
// variables: a variable must never be named one (the kernel matches them
// as attribute prefixes).
var histKeywords = map[string]bool{"key": true, "keys": true, "val": true, "vals": true,
	"values": true, "sort": true, "size": true, "name": true, "clock": true, "hitcount": true,
	"pause": true, "cont": true, "continue": true, "clear": true, "nohitcount": true, "NOHC": true}

// IsHistKeyword reports whether name is an attribute of a hist trigger
// (keys, vals, sort, size, name, hitcount, nohitcount …) rather than a
// variable.
func IsHistKeyword(name string) bool { return histKeywords[name] }

type planner struct {
	cat    *tracefs.Catalog
	feat   tracefs.Features
	opt    Options
	diags  *source.Diags
	r      *resolver
	plan   *Plan
	probes probeState
	cur    *step // the step of a statement being planned
	// usecs are the synthetic fields that carry a µs timestamp between the
	// steps of a chain ("synthetic/<event>/<field>").
	usecs map[string]bool
	// failedViews are the CREATE VIEW names of statements that failed.
	failedViews map[string]bool
	// evVars hands out the variables of histogram triggers per event
	// ("instance/system/event"): see histVar.
	evVars map[string]*varNames
	// shared holds, by name=, the first histogram of each UNION ALL.
	shared map[string]*Hist
}

// Build plans a script against an event catalog.
func Build(script *compiler.Script, cat *tracefs.Catalog, opt Options) (*Plan, source.Diags) {
	var diags source.Diags
	feat := cat.Features()
	if opt.Stream {
		feat = feat.WithStream()
	}
	p := &planner{cat: cat, feat: feat, opt: opt, diags: &diags, plan: &Plan{},
		probes: probeState{byDef: map[string]*Probe{}, byName: map[string]*Probe{}}, usecs: map[string]bool{},
		failedViews: map[string]bool{}}
	if !p.feat.HistTriggers {
		feat, _ := tracefs.FeatureByID("hist-triggers")
		diags.Add(source.NoPos, source.NoPos, "the kernel behind this catalog has no hist triggers: it was built without CONFIG_HIST_TRIGGERS (in Linux since %s), and its tracefs README has no \"hist:keys\"; the in-kernel engine (printed scripts, -e) needs them: on that kernel, sqlhist -r answers from the events (the stream engine), and --engine stream prints a script whose awk computes the query; %s", feat.Since, p.feat.Target()).
			Hint = opt.CatalogHint
		return nil, diags
	}
	joins := 0
	for _, q := range script.Stmts {
		if q.Join != nil {
			joins++
		}
	}
	if opt.Name != "" && joins == 0 {
		// libtracefs's sqlhist ignores -n without a JOIN, and scripts
		// pass it to every query: accept it, and say so.
		x := diags.Add(source.NoPos, source.NoPos, "-n %s has no effect: the script has no JOIN, so no synthetic event to name", opt.Name)
		x.Warning = true
	} else if opt.Name != "" && joins != 1 {
		diags.Add(source.NoPos, source.NoPos, "-n names the synthetic event of a JOIN; the script has %d JOIN statements (name each with CREATE VIEW name AS SELECT …)", joins)
	}
	if (opt.OnMax != "" || opt.OnChange != "") && joins != 1 && !(joins == 0 && len(script.Stmts) == 1) {
		diags.Add(source.NoPos, source.NoPos, "-m and -c act on the synthetic event of a JOIN, or on the histogram of a single query; the script has %d JOIN statements", joins)
	}
	if opt.TaskNote != "" {
		p.note("%s", opt.TaskNote)
	}
	names := map[string]bool{}
	triggers := map[string]*Hist{}
	for _, q := range script.Stmts {
		for _, st := range p.expand(q) {
			p.cur = st
			u := p.statement(st.q, names)
			p.cur = nil
			if u == nil {
				if q.View != nil {
					p.failedViews[q.View.Name] = true
				}
				break
			}
			u.Probes = append(st.probes, u.Probes...)
			u.Feeds, u.Intermediate = st.feeds, st.middle
			p.checkDuplicateTriggers(u, triggers)
			p.plan.Units = append(p.plan.Units, u)
		}
	}
	p.placeResults()
	p.checkSizeUsed()
	diags.Sort()
	if diags.Err() != nil {
		return nil, diags
	}
	return p.plan, diags
}

// placeResults puts, for --run with a ResultsInstance, the histograms
// that aggregate the plan's own synthetic events (a JOIN's GROUP BY) in
// that instance, as it does a JOIN's results: they read no timestamp and
// no other trigger's variable, and there the kernel builds the events
// they read in a scratch buffer. A histogram shared by name=, or whose
// handler snapshots or fires an event, stays beside the triggers.
func (p *planner) placeResults() {
	if p.opt.ResultsInstance == "" {
		return
	}
	own := map[string]bool{}
	for _, u := range p.plan.Units {
		if u.Synth != nil {
			own[u.Synth.Name] = true
		}
		h := u.Start
		if u.End != nil || h == nil || h.System != "synthetic" || !own[h.Event] || h.Name != "" || h.Instance != p.opt.Instance {
			continue
		}
		movable := true
		for _, a := range h.Actions {
			movable = movable && a.Handler == OnMax && a.Kind == ActSave
		}
		exprs := append(append([]*Expr{}, h.Keys...), h.Vals...)
		for _, v := range h.Vars {
			exprs = append(exprs, v.Expr)
		}
		for _, x := range exprs {
			x.Walk(func(o *Expr) { movable = movable && o.Kind != ExprTimestamp && o.Kind != ExprVar })
		}
		if movable {
			h.Instance = p.opt.ResultsInstance
		}
	}
}

func (p *planner) statement(q *compiler.Query, names map[string]bool) *Unit {
	before := len(p.diags.Errors())
	var probes []*Probe
	p.derefRewrite(q)
	for _, t := range []*compiler.TableRef{q.From, q.Join} {
		if t != nil && t.Probe != nil && !p.probeSource(t, &probes) {
			return nil
		}
	}
	p.r = &resolver{cat: p.cat, feat: p.feat, diags: p.diags, usecs: p.usecs, failedViews: p.failedViews}
	from := p.r.event(q.From.Name)
	var join *tracefs.Event
	if q.Join != nil {
		join = p.r.event(q.Join.Name)
	}
	if from == nil || q.Join != nil && join == nil {
		return nil
	}
	p.r.addSide(from, q.From)
	if q.Join != nil {
		p.r.addSide(join, q.Join)
		if !p.checkAliases(q, from, join) {
			return nil
		}
	}
	u := &Unit{Query: q, Probes: probes}
	if q.Join != nil {
		p.join(q, u, names)
	} else {
		p.histogram(q, u)
	}
	if len(p.diags.Errors()) > before {
		return nil
	}
	if p.cur.shared != "" {
		p.share(u, p.cur.shared)
		if len(p.diags.Errors()) > before {
			return nil
		}
	}
	if len(p.opt.Tasks) > 0 && p.cur.first {
		p.filterTasks(q, u, names)
	}
	p.checkSizes(u)
	if u.Synth != nil {
		p.cat.Define(synthEvent(u.Synth, p.commonFields(), p.wordSize()))
	}
	return u
}

func (p *planner) checkAliases(q *compiler.Query, from, join *tracefs.Event) bool {
	a, b := q.From.Alias, q.Join.Alias
	if from == join && (a == nil || b == nil) {
		x := p.diags.Add(q.Join.Name.Pos, q.Join.Name.End, "a JOIN of %s with itself needs an alias on both sides", from.FullName())
		x.Hint = "FROM " + from.Name + " AS start JOIN " + from.Name + " AS end ON …"
		return false
	}
	if a != nil && b != nil && a.Name == b.Name {
		p.diags.Add(b.Pos, b.End, "alias %q is already used for the FROM event", b.Name)
		return false
	}
	return true
}

// maxWrite is the kernel's limit on one command: a trigger write and a
// dynamic_events line must be shorter than a page.
const maxWrite = 4095

// checkSizes refuses commands the kernel would reject for their length.
func (p *planner) checkSizes(u *Unit) {
	for _, pr := range u.Probes {
		if n := len(pr.Line); n > maxWrite {
			p.diags.Add(pr.Pos, pr.End, "the %s definition is %d bytes; the kernel takes at most %d in one line", pr.Kind, n, maxWrite)
		}
	}
	if u.Synth != nil {
		if n := len("s:" + u.Synth.Name + " " + u.Synth.Definition()); n > maxWrite {
			p.diags.Add(u.Synth.Pos, u.Synth.End, "the synthetic event definition is %d bytes; the kernel takes at most %d in one line", n, maxWrite)
		}
	}
	for _, h := range []*Hist{u.Start, u.End} {
		if h == nil {
			continue
		}
		if n := len(h.Spec()); n > maxWrite {
			x := p.diags.Add(h.Pos, h.End, "the %s trigger on %s/%s is %d bytes; the kernel takes at most %d in one write", h.Role, h.System, h.Event, n, maxWrite)
			x.Hint = "shorten the WHERE clause or select fewer fields"
		}
	}
	for _, h := range []*Hist{u.Start, u.End, u.Results, u.Negatives} {
		if h == nil {
			continue
		}
		var exprs []*Expr
		for _, v := range h.Vars {
			exprs = append(exprs, v.Expr)
		}
		exprs = append(append(exprs, h.Keys...), h.Vals...)
		for _, x := range exprs {
			if e := x.String(); len(e) > maxExpr && x.Kind == ExprBinary {
				x := p.diags.Add(h.Pos, h.End, "the %s trigger on %s/%s has an expression of %d bytes (%.40s…); the kernel writes an expression's text into a buffer of %d bytes: Linux 6.12 refuses a longer one (\"Argument list too long\"), 5.10, 6.1 and 7.2 write past the buffer and corrupt their memory", h.Role, h.System, h.Event, len(e), e, maxExpr+1)
				x.Hint = "shorten the synthetic event's name (-n) or the labels (AS), which name its variables"
				break
			}
		}
	}
}

// maxExpr is the longest expression text the kernel holds: it writes
// the text of each expression of a hist trigger (expr_str) into a buffer
// of MAX_FILTER_STR_VAL (256) bytes. Seen under qemu: 6.12 refuses a
// longer one with E2BIG; 5.10.262 and 6.1.176 wrote past it (a JOIN with
// a synthetic event name of 255 characters, "common_timestamp.usecs-
// $NAME_ts_us", overwrote the name of the event, which trace() then could
// not find, nor dynamic_events remove), and so does 7.2.13: it took
// expressions of 256 and 300 bytes, and one of 400 crashed it (a page
// fault in the slab allocator, on 0x78787878, the variable name's 'x's).
const maxExpr = 255

// synthName picks the synthetic event's name: CREATE VIEW, -n, or one
// derived from the two events.
func (p *planner) synthName(q *compiler.Query, from, join *tracefs.Event) (string, source.Pos, source.Pos) {
	name, pos, end := from.Name+"_to_"+join.Name, q.JoinPos, q.JoinPos
	if p.cur.name != "" {
		return p.cur.name, pos, end
	}
	if q.View != nil {
		name, pos, end = q.View.Name, q.View.Pos, q.View.End
		if p.opt.Name != "" && p.opt.Name != name {
			p.diags.Add(pos, end, "-n %s conflicts with CREATE VIEW %s", p.opt.Name, name)
		}
	} else if p.opt.Name != "" {
		name = p.opt.Name
	} else {
		name = p.suffixed(name)
	}
	return name, pos, end
}

// maxName is the longest name of a synthetic event before Linux 6.12:
// the kernel names its events/synthetic directory after it, and a file
// name there had at most 255 bytes (NAME_MAX): 5.10.262 and 6.1 made the
// event of a 256-character name but no directory for it, 6.12 (eventfs)
// makes one. Names of 64 to 250 characters work in 5.10.262 and 6.1, and
// field names of 64 and 200 in 6.1, which have no directory of their
// own; sqlhist took at most 63 for both until the refusal audit
// (e2e/audit_test.go). The variables a JOIN derives from these names
// keep its expressions within maxExpr.
const maxName = 255

// checkName validates a name the kernel will see (synthetic event, field).
func (p *planner) checkName(kind, name string, pos, end source.Pos) bool {
	switch {
	case !tracefs.IsIdent(name):
		p.diags.Add(pos, end, "%s %q is not a valid name: use letters, digits and _, not starting with a digit", kind, name)
		return false
	case kind == "synthetic event name" && len(name) > maxName && !tracefs.ReleaseAtLeast(p.feat.Kernel, 6, 12):
		x := p.diags.Add(pos, end, "%s %q is %d characters; before Linux 6.12 the kernel makes no events/synthetic directory for a name over %d bytes (NAME_MAX: seen in 5.10 and 6.1; 6.12 makes it); %s", kind, name, len(name), maxName, p.feat.Target())
		x.Hint = "name it with -n or CREATE VIEW in 255 characters or fewer"
		return false
	}
	return true
}

// note records a remark for the printed script.
func (p *planner) note(format string, args ...any) {
	p.plan.Notes = append(p.plan.Notes, fmt.Sprintf(format, args...))
}

// varNames hands out variable names unique within a unit and distinct
// from the field names of the events involved and from hist keywords.
type varNames struct {
	used map[string]bool
	next map[string]int // per base, the first candidate that may be free
}

func newVarNames(evs ...*tracefs.Event) *varNames {
	v := &varNames{used: map[string]bool{}, next: map[string]int{}}
	for _, ev := range evs {
		for _, f := range ev.Fields {
			v.used[f.Name] = true
		}
	}
	return v
}

func (v *varNames) take(base string) string {
	// Names starting with common_ look like the fields every event has:
	// prefix them instead, since no suffix can help.
	if strings.HasPrefix(base, "common_") {
		base = "v_" + base
	}
	// Candidates are base, base_2, base_3…; those before v.next[base]
	// are all taken, so a base taken n times costs n tries, not n².
	cand := func(i int) string {
		if i == 1 {
			return base
		}
		return fmt.Sprintf("%s_%d", base, i)
	}
	i := max(1, v.next[base])
	for v.used[cand(i)] || histKeywords[cand(i)] {
		i++
	}
	name := cand(i)
	v.next[base] = i + 1
	v.used[name] = true
	return name
}
