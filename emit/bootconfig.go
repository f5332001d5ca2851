package emit

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Boot-time tracing limits of the kernel (kernel/trace/trace_boot.c,
// lib/bootconfig.c, Linux 5.6 to 7.2).
const (
	// BootCommandMax is the longest command the kernel composes from a
	// bootconfig (a 256-byte buffer with its NUL).
	BootCommandMax = 255
	// BootconfigMax is the largest bootconfig text (XBC_DATA_MAX).
	BootconfigMax = 32767
	// bootProbeNameMax is the longest kprobe name: the kernel formats
	// "p:kprobes/NAME" into MAX_EVENT_NAME_LEN (64) bytes and silently
	// cuts what does not fit.
	bootProbeNameMax = 64 - 1 - len("p:kprobes/")
)

// BootBufferSize is the trace buffer size (per CPU) a bootconfig that
// records events asks for: the kernel's default (trace_buf_size).
const BootBufferSize = "1408K"

// BootProbeGroup is the group the kernel gives every kprobe a bootconfig
// creates; a plan for a bootconfig names its probes in it.
const BootProbeGroup = "kprobes"

// BootCommands lowers a plan for boot-time tracing: the script's commands,
// with each JOIN's synthetic event enabled after its definition (nobody
// can enable it by hand before the boot's events happen; its events are
// then in the trace buffer from boot). Its teardown disables the events
// before removing them, as the kernel requires.
func BootCommands(p *planner.Plan, opt Options) []Command {
	var out []Command
	for _, u := range p.Units {
		for _, pr := range u.Probes {
			out = append(out, probeCommand(pr))
			if pr.Kind.String() == "kprobe" || pr.Kind.String() == "kretprobe" {
				out = append(out, probeEnable(pr, u.Start))
			}
		}
		if u.Synth != nil {
			out = append(out, unitSynth(u, opt))
			if !u.Feeds && !u.Intermediate {
				out = append(out, enableCommand(u.Synth, u.Start))
			}
		}
		if u.Start != nil {
			out = append(out, triggerCommand(u.Start))
		}
		if u.End != nil {
			out = append(out, triggerCommand(u.End))
		}
	}
	return out
}

func enableCommand(s *planner.Synth, start *planner.Hist) Command {
	f := "events/synthetic/" + s.Name + "/enable"
	if start != nil && start.Instance != "" {
		f = "instances/" + start.Instance + "/" + f
	}
	return Command{Kind: KindEnable, File: f, Line: "1", Undo: "0", What: "enable of synthetic/" + s.Name,
		Pos: s.Pos, End: s.End, Synth: s}
}

// probeEnable enables a kprobe the boot creates. Linux 6.1's
// init_kprobe_trace (an fs_initcall, after boot-time tracing ran) enables
// every kprobe event that exists then, so the bootconfig says so and the
// teardown disables them before removing them (the kernel refuses to
// remove an enabled probe: EBUSY).
func probeEnable(pr *planner.Probe, start *planner.Hist) Command {
	f := "events/" + BootProbeGroup + "/" + pr.Name + "/enable"
	if start != nil && start.Instance != "" {
		f = "instances/" + start.Instance + "/" + f
	}
	return Command{Kind: KindEnable, File: f, Line: "1", Undo: "0", What: "enable of " + BootProbeGroup + "/" + pr.Name,
		Pos: pr.Pos, End: pr.End, Probe: pr}
}

// BootOptions describe the target of a bootconfig.
type BootOptions struct {
	// Release is the target kernel's release or version ("6.1.0-56-cloud-amd64",
	// "5.10"); "" when unknown.
	Release string
	Arch    string
	// Features are the target's (its README's).
	Features tracefs.Features
	// Header lines are printed first as comments (the SQL, the target).
	Header []string
}

// HistSubkeys reports whether the target takes the hist { … } subkeys of
// a bootconfig (5.15); before, hist triggers are whole strings in the
// actions key. Without a release, .buckets (also 5.15) in the README
// tells.
func (o BootOptions) HistSubkeys() bool {
	if v := tracefs.ShortRelease(o.Release); v != "" {
		return tracefs.CompareVersions(v, "5.15") >= 0
	}
	return o.Features.Buckets
}

// bootNode is one event's key in the bootconfig:
// ftrace.[instance.I.]event.GROUP.EVENT.
type bootNode struct {
	instance, group, event string
	first                  int // index of the first command that uses it
	def                    *Command
	enable                 *Command
	hists                  []*Command
	deps                   map[string]bool // keys of the nodes that must be applied before
}

func (n *bootNode) key() string { return n.instance + "\x00" + n.group + "\x00" + n.event }

func (n *bootNode) groupKey() string { return n.instance + "\x00" + n.group }

// eventKey is the node's key as the bootconfig writes it.
func (n *bootNode) eventKey() string {
	return bootPrefix(n.instance) + "event." + n.group + "." + n.event
}

// Bootconfig renders cmds (from BootCommands) as a bootconfig. Where
// boot-time tracing cannot do what the commands do, it returns the reasons
// at the SQL that asked for it and no text.
func Bootconfig(cmds []Command, opt BootOptions) (string, source.Diags) {
	var diags source.Diags
	if v := tracefs.ShortRelease(opt.Release); v != "" && tracefs.CompareVersions(v, "5.6") < 0 {
		pos, end := firstPos(cmds)
		diags.Add(pos, end, "boot-time tracing needs Linux 5.6 (bootconfig and CONFIG_BOOTTIME_TRACING); this target is %s", opt.Release)
		return "", diags
	}
	nodes, order := bootNodes(cmds, opt, &diags)
	if len(diags) > 0 {
		return "", diags
	}
	groups, ok := orderNodes(nodes, order)
	if !ok {
		c := cycleCommand(nodes, order)
		diags.Add(c.Pos, c.End, "boot-time tracing applies the events of one group together, so no order of this bootconfig has every start trigger and synthetic event before the trigger that uses it (%s)", c.What).
			Hint = "run these statements from separate bootconfigs or at run time"
		return "", diags
	}
	var b strings.Builder
	for _, h := range opt.Header {
		for _, l := range strings.Split(h, "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	for _, g := range groups {
		for _, n := range g {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			writeNode(&b, n, opt, &diags)
		}
	}
	// Events the boot records must find a buffer of the usual size: 5.10
	// keeps a booting kernel's buffer at its minimum unless told, and the
	// boot's events were overwritten (6.1 grows it when an event is
	// enabled). The kernel applies this before any event key.
	enabled := map[string]bool{}
	for _, k := range order {
		if n := nodes[k]; n.enable != nil && !enabled[n.instance] {
			enabled[n.instance] = true
			// += so that bootconfigs of several queries can be
			// concatenated: a second "=" is "Value is redefined" and the
			// kernel drops the whole bootconfig. The kernel reads the
			// first value of the array.
			fmt.Fprintf(&b, "\n# The default size of a trace buffer (per CPU), for the events recorded from boot.\n%sbuffer_size += %s\n", bootPrefix(n.instance), BootBufferSize)
		}
	}
	if len(diags) > 0 {
		return "", diags
	}
	if b.Len() > BootconfigMax {
		pos, end := firstPos(cmds)
		diags.Add(pos, end, "the bootconfig is %d bytes; the kernel takes at most %d", b.Len(), BootconfigMax)
		return "", diags
	}
	return b.String(), nil
}

func firstPos(cmds []Command) (source.Pos, source.Pos) {
	for _, c := range cmds {
		if c.Pos.IsValid() {
			return c.Pos, c.End
		}
	}
	return source.NoPos, source.NoPos
}

// bootNodes sorts the commands into event nodes and records which node
// must come before which.
func bootNodes(cmds []Command, opt BootOptions, diags *source.Diags) (map[string]*bootNode, []string) {
	nodes := map[string]*bootNode{}
	var order []string
	node := func(i int, inst, group, event string) *bootNode {
		n := &bootNode{instance: inst, group: group, event: event, first: i, deps: map[string]bool{}}
		if old, ok := nodes[n.key()]; ok {
			return old
		}
		nodes[n.key()] = n
		order = append(order, n.key())
		return n
	}
	// Synthetic events and probes are global: they are created under the
	// instance of the triggers that use them.
	inst := ""
	for _, c := range cmds {
		if c.Hist != nil {
			inst = c.Hist.Instance
			break
		}
	}
	for i := range cmds {
		c := &cmds[i]
		switch c.Kind {
		case KindProbe:
			pr := c.Probe
			if pr == nil {
				continue
			}
			if !bootProbe(c, opt, diags) {
				continue
			}
			node(i, inst, BootProbeGroup, pr.Name).def = c
		case KindSynth:
			if c.Synth == nil {
				continue
			}
			checkSynthLen(c, diags)
			node(i, inst, "synthetic", c.Synth.Name).def = c
		case KindEnable:
			switch {
			case c.Synth != nil:
				node(i, inst, "synthetic", c.Synth.Name).enable = c
			case c.Probe != nil:
				node(i, inst, BootProbeGroup, c.Probe.Name).enable = c
			}
		case KindTrigger:
			h := c.Hist
			if h == nil {
				continue
			}
			n := node(i, h.Instance, h.System, h.Event)
			n.hists = append(n.hists, c)
			for _, a := range h.Actions {
				if a.Handler == planner.OnMatch {
					sys, ev, _ := strings.Cut(a.Match, ".")
					n.deps[(&bootNode{instance: h.Instance, group: sys, event: ev}).key()] = true
				}
				if a.Kind == planner.ActTrace {
					n.deps[(&bootNode{instance: inst, group: "synthetic", event: a.Synth}).key()] = true
				}
			}
		}
	}
	for _, k := range order {
		delete(nodes[k].deps, k)
		for d := range nodes[k].deps {
			if _, ok := nodes[d]; !ok {
				delete(nodes[k].deps, d) // made before the boot or outside the plan
			}
		}
	}
	return nodes, order
}

// bootProbe checks that boot-time tracing can create the probe.
func bootProbe(c *Command, opt BootOptions, diags *source.Diags) bool {
	pr := c.Probe
	switch kind := pr.Kind.String(); kind {
	case "uprobe", "uretprobe":
		diags.Add(pr.Pos, pr.End, "boot-time tracing cannot create a %s: the kernel makes only kprobes and synthetic events from a bootconfig (and no user binary has run at boot)", kind).
			Hint = "print the script instead and apply it once the binary's file system is mounted"
		return false
	case "eprobe":
		diags.Add(pr.Pos, pr.End, "boot-time tracing cannot create an eprobe: the kernel makes only kprobes and synthetic events from a bootconfig (Linux 5.6 to 7.2)").
			Hint = "print the script and apply it after boot (--deref reads strings through an eprobe too)"
		return false
	case "kretprobe":
		if !opt.Features.ReturnSuffix {
			diags.Add(pr.Pos, pr.End, "a bootconfig makes a return probe with the %%return suffix, which needs Linux 5.10; this target's README does not list it")
			return false
		}
	}
	if len(pr.Name) > bootProbeNameMax {
		diags.Add(pr.Pos, pr.End, "kprobe name %q is %d bytes; a bootconfig's kprobe names may have at most %d (the kernel cuts \"p:kprobes/NAME\" at 63)", pr.Name, len(pr.Name), bootProbeNameMax)
		return false
	}
	v := bootProbeValue(pr)
	// The kernel composes "p:kprobes/NAME VALUE " (dynevent_arg_add).
	if n := len("p:kprobes/") + len(pr.Name) + 1 + len(v) + 1; n > BootCommandMax {
		diags.Add(pr.Pos, pr.End, "the %s would be %d bytes once the kernel composes it from the bootconfig; boot-time tracing takes at most %d", c.What, n, BootCommandMax)
		return false
	}
	return true
}

// bootProbeValue is the probes value of a kprobe: its location and
// arguments, a return probe's location with the %return suffix.
func bootProbeValue(pr *planner.Probe) string {
	_, rest, _ := strings.Cut(pr.Line, " ")
	if pr.Kind.String() != "kretprobe" {
		return rest
	}
	loc, args, _ := strings.Cut(rest, " ")
	if !strings.HasSuffix(loc, "%return") {
		loc += "%return"
	}
	if args == "" {
		return loc
	}
	return loc + " " + args
}

func checkSynthLen(c *Command, diags *source.Diags) {
	// " NAME " then " FIELD;" per field (synth_event_add_field_str).
	n := 2 + len(c.Synth.Name)
	for _, f := range c.Synth.Fields {
		n += 2 + len(f.Decl())
	}
	if n > BootCommandMax {
		diags.Add(c.Pos, c.End, "the synthetic event %s would be %d bytes once the kernel composes it from the bootconfig; boot-time tracing takes at most %d", c.Synth.Name, n, BootCommandMax).
			Hint = "select fewer or shorter fields (short aliases make short field names)"
	}
}

// orderNodes orders the nodes as the kernel must apply them, grouped as
// the kernel applies them: groups in the order their first key appears,
// the events of a group together. Among the orders that do so it keeps
// the commands' order where it can. ok is false when no order works.
func orderNodes(nodes map[string]*bootNode, order []string) ([][]*bootNode, bool) {
	// Groups, and the groups each depends on.
	var gorder []string
	members := map[string][]*bootNode{}
	gdeps := map[string]map[string]bool{}
	for _, k := range order {
		n := nodes[k]
		g := n.groupKey()
		if _, ok := members[g]; !ok {
			gorder = append(gorder, g)
			gdeps[g] = map[string]bool{}
		}
		members[g] = append(members[g], n)
	}
	for _, k := range order {
		n := nodes[k]
		for d := range n.deps {
			if dg := nodes[d].groupKey(); dg != n.groupKey() {
				gdeps[n.groupKey()][dg] = true
			}
		}
	}
	gs, ok := topo(gorder, func(g string) map[string]bool { return gdeps[g] })
	if !ok {
		return nil, false
	}
	var out [][]*bootNode
	for _, g := range gs {
		var keys []string
		for _, n := range members[g] {
			keys = append(keys, n.key())
		}
		evs, ok := topo(keys, func(k string) map[string]bool {
			in := map[string]bool{}
			for d := range nodes[k].deps {
				if nodes[d].groupKey() == g {
					in[d] = true
				}
			}
			return in
		})
		if !ok {
			return nil, false
		}
		var ns []*bootNode
		for _, k := range evs {
			ns = append(ns, nodes[k])
		}
		out = append(out, ns)
	}
	return out, true
}

// topo orders items so that each comes after its dependencies, taking the
// earliest ready item in the given order each time; ok is false on a
// cycle.
func topo(items []string, deps func(string) map[string]bool) ([]string, bool) {
	done := map[string]bool{}
	var out []string
	for len(out) < len(items) {
		progress := false
		for _, it := range items {
			if done[it] {
				continue
			}
			ready := true
			for d := range deps(it) {
				if !done[d] {
					ready = false
					break
				}
			}
			if ready {
				done[it] = true
				out = append(out, it)
				progress = true
				break
			}
		}
		if !progress {
			return nil, false
		}
	}
	return out, true
}

// cycleCommand is a trigger caught in an ordering cycle, for the message.
func cycleCommand(nodes map[string]*bootNode, order []string) Command {
	for _, k := range order {
		n := nodes[k]
		if len(n.deps) > 0 && len(n.hists) > 0 {
			for i := len(n.hists) - 1; i >= 0; i-- {
				if len(n.hists[i].Hist.Actions) > 0 {
					return *n.hists[i]
				}
			}
		}
	}
	return Command{}
}

func bootPrefix(instance string) string {
	if instance == "" {
		return "ftrace."
	}
	return "ftrace.instance." + instance + "."
}

// writeNode writes one event's key block.
func writeNode(b *strings.Builder, n *bootNode, opt BootOptions, diags *source.Diags) {
	for _, w := range []string{n.instance, n.group, n.event} {
		if w != "" && (!bootKeyword(w) || w == "enable") {
			c := n.def
			if c == nil && len(n.hists) > 0 {
				c = n.hists[0]
			}
			pos, end := source.NoPos, source.NoPos
			if c != nil {
				pos, end = c.Pos, c.End
			}
			diags.Add(pos, end, "%q cannot be a bootconfig key (letters, digits, '-' and '_' only, and not \"enable\")", w)
			return
		}
	}
	val := func(c *Command, s string) string {
		v, err := BootValue(s)
		if err != nil {
			diags.Add(c.Pos, c.End, "the %s cannot be written in a bootconfig: %v", c.What, err)
		}
		return v
	}
	fmt.Fprintf(b, "%s {\n", n.eventKey())
	if c := n.def; c != nil {
		switch {
		case c.Synth != nil:
			var vs []string
			for _, f := range c.Synth.Fields {
				vs = append(vs, val(c, f.Decl()))
			}
			fmt.Fprintf(b, "\t# %s\n\tfields = %s\n", c.What, strings.Join(vs, ", "))
		case c.Probe != nil:
			fmt.Fprintf(b, "\t# %s\n\tprobes = %s\n", strings.Replace(c.What, c.Probe.Group+"/", BootProbeGroup+"/", 1), val(c, bootProbeValue(c.Probe)))
		}
	}
	if opt.HistSubkeys() {
		for _, c := range n.hists {
			writeHist(b, c, histSubkey(c), val, diags)
		}
	} else if len(n.hists) > 0 {
		var vs []string
		for _, c := range n.hists {
			if len(c.Line) > BootCommandMax {
				diags.Add(c.Pos, c.End, "the %s is %d bytes; a bootconfig action string may have at most %d", c.What, len(c.Line), BootCommandMax)
			}
			fmt.Fprintf(b, "\t# %s\n", c.What)
			vs = append(vs, val(c, c.Line))
		}
		// += as buffer_size: another query's actions on the event append.
		fmt.Fprintf(b, "\tactions += %s\n", strings.Join(vs, ",\n\t\t"))
	}
	switch {
	case n.enable != nil && n.enable.Probe != nil:
		fmt.Fprintf(b, "\t# the kernel enables the kprobes of a bootconfig anyway (6.1: init_kprobe_trace)\n\tenable\n")
	case n.enable != nil:
		fmt.Fprintf(b, "\t# its events go to the trace buffer from boot\n\tenable\n")
	}
	b.WriteString("}\n")
}

// histSubkey names a hist trigger's subkey: hist.N, where N (the kernel
// takes the subkeys of hist whose name starts with a digit as triggers,
// in the order they appear) is a checksum of the trigger, so that the
// bootconfigs of several queries with triggers on the same event can be
// concatenated: numbering them 1, 2, … in each bootconfig, or a bare
// "hist", would make the second one's keys redefine the first's.
func histSubkey(c *Command) string {
	h := fnv.New32a()
	h.Write([]byte(c.Line))
	return "hist." + strconv.FormatUint(uint64(h.Sum32()), 10)
}

// bootAction is a hist action as bootconfig subkeys write it:
// handler { param; name = args }. A trace of the form before trace()
// (onmatch(sys.event).SYNTH(args)) is written as trace = SYNTH, args.
type bootAction struct {
	handler, param, name string
	args                 []string
}

func bootActionOf(a *planner.Action) bootAction {
	var x bootAction
	switch a.Handler {
	case planner.OnMatch:
		x.handler, x.param = "onmatch", a.Match
	case planner.OnMax:
		x.handler, x.param = "onmax", "$"+a.Track
	case planner.OnChange:
		x.handler, x.param = "onchange", "$"+a.Track
	}
	switch a.Kind {
	case planner.ActTrace:
		x.name, x.args = "trace", []string{a.Synth}
	case planner.ActSave:
		x.name = "save"
	case planner.ActSnapshot:
		x.name = "snapshot"
	}
	x.args = append(x.args, planner.ExprStrings(a.Params)...)
	return x
}

// writeHist writes a hist trigger as hist subkeys and checks the command
// the kernel composes from them.
func writeHist(b *strings.Builder, c *Command, sub string, val func(*Command, string) string, diags *source.Diags) {
	h := c.Hist
	list := func(xs []string) string {
		vs := make([]string, len(xs))
		for i, x := range xs {
			vs[i] = val(c, x)
		}
		return strings.Join(vs, ", ")
	}
	fmt.Fprintf(b, "\t# %s\n\t%s {\n", c.What, sub)
	keys, vals := planner.ExprStrings(h.Keys), planner.ExprStrings(h.Vals)
	fmt.Fprintf(b, "\t\tkeys = %s\n", list(keys))
	composed := "hist:keys=" + strings.Join(keys, ",")
	if len(vals) > 0 {
		fmt.Fprintf(b, "\t\tvalues = %s\n", list(vals))
		composed += ":values=" + strings.Join(vals, ",")
	}
	if len(h.Sort) > 0 {
		fmt.Fprintf(b, "\t\tsort = %s\n", list(h.Sort))
		composed += ":sort=" + strings.Join(h.Sort, ",")
	}
	if h.Size > 0 {
		fmt.Fprintf(b, "\t\tsize = %d\n", h.Size)
		composed += ":size=" + strconv.Itoa(h.Size)
	}
	if h.Name != "" {
		fmt.Fprintf(b, "\t\tname = %s\n", h.Name)
		composed += ":name=" + h.Name
	}
	if h.NoHitcount {
		diags.Add(c.Pos, c.End, "the %s hides the raw count (nohitcount), which hist subkeys cannot express", c.What).
			Hint = "select COUNT(*) as well, which shows the count beside the percentage or bar"
	}
	if len(h.Vars) > 0 {
		b.WriteString("\t\tvar {\n")
		for _, v := range h.Vars {
			e := v.Expr.String()
			if !bootKeyword(v.Name) || strings.ContainsAny(e, " \t") {
				diags.Add(c.Pos, c.End, "variable %s=%s cannot be written as a bootconfig hist variable", v.Name, e)
			}
			fmt.Fprintf(b, "\t\t\t%s = %s\n", v.Name, val(c, e))
			composed += ":" + v.Name + "=" + e
		}
		b.WriteString("\t\t}\n")
	}
	// The kernel composes handlers by type: every onmax, then onchange,
	// then onmatch; numbered subkeys when a type has several.
	byType := map[string][]bootAction{}
	for _, a := range h.Actions {
		x := bootActionOf(a)
		if x.handler == "" || x.name == "" {
			diags.Add(c.Pos, c.End, "the %s has an action (%s) that hist subkeys cannot express", c.What, a)
			continue
		}
		byType[x.handler] = append(byType[x.handler], x)
	}
	for _, t := range []string{"onmax", "onchange", "onmatch"} {
		xs := byType[t]
		param := "var"
		if t == "onmatch" {
			param = "event"
		}
		for i, x := range xs {
			key := t
			if len(xs) > 1 {
				key += "." + strconv.Itoa(i+1)
			}
			fmt.Fprintf(b, "\t\t%s {\n\t\t\t%s = %s\n", key, param, val(c, x.param))
			composed += ":" + t + "(" + x.param + ")." + x.name + "(" + strings.Join(x.args, ",") + ")"
			switch x.name {
			case "snapshot":
				b.WriteString("\t\t\tsnapshot\n")
			default:
				fmt.Fprintf(b, "\t\t\t%s = %s\n", x.name, list(x.args))
			}
			b.WriteString("\t\t}\n")
		}
	}
	if h.Filter != nil {
		f := h.Filter.String()
		fmt.Fprintf(b, "\t\tfilter = %s\n", val(c, f))
		composed += " if " + f
	}
	b.WriteString("\t}\n")
	if len(composed) > BootCommandMax {
		diags.Add(c.Pos, c.End, "the %s would be %d bytes once the kernel composes it from the bootconfig; boot-time tracing takes at most %d", c.What, len(composed), BootCommandMax).
			Hint = "shorter names (-n, aliases) or fewer fields make it shorter"
	}
}

// bootKeyword reports whether s can be one word of a bootconfig key.
func bootKeyword(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// BootValue writes s as one bootconfig value: bare when it is made of
// characters that cannot end or quote a value, else in double quotes, or
// single quotes when s holds a double quote. Bootconfig has no escapes, so
// a value holding both quotes, a newline or a byte that is not printable
// ASCII cannot be written. It is the only place where sqlhist quotes a
// bootconfig value.
func BootValue(s string) (string, error) {
	bare := s != ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("the value %q holds a byte a bootconfig cannot carry (%#02x)", s, c)
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.$-+*/[]()", c) >= 0) {
			bare = false
		}
	}
	switch {
	case bare:
		return s, nil
	case !strings.Contains(s, `"`):
		return `"` + s + `"`, nil
	case !strings.Contains(s, "'"):
		return "'" + s + "'", nil
	}
	return "", fmt.Errorf("the value %q holds both quote characters, which a bootconfig value cannot (it has no escapes)", s)
}

// BootHeader returns the header comment of a bootconfig for the query.
func BootHeader(src *source.Source, opt BootOptions, cmds []Command, notes []string) []string {
	target := opt.Release
	if target == "" {
		target = "an unknown kernel release"
	} else {
		target = "Linux " + target
	}
	if opt.Arch != "" {
		target += " (" + opt.Arch + ")"
	}
	form := "hist subkeys (Linux 5.15 and later)"
	if !opt.HistSubkeys() {
		form = "actions strings (the form before Linux 5.15)"
	}
	h := []string{
		"Boot-time tracing written by sqlhist for " + target + ", hist triggers as " + form + ".",
		"The kernel needs CONFIG_BOOT_CONFIG and CONFIG_BOOTTIME_TRACING, this text appended to",
		"its initrd (sqlhist -o bootconfig --initrd FILE does it) and \"bootconfig\" on its",
		"command line. It applies the keys in the order they first appear, at the end of the",
		"core initcalls. At run time, the same query with -o bootconfig --teardown prints",
		"what removes everything it made.",
	}
	for _, c := range cmds {
		switch {
		case c.Kind == KindEnable && c.Synth != nil:
			h = append(h, "Synthetic event "+c.Synth.Name+" is enabled: its events are in the trace buffer from boot.")
		case c.Kind == KindEnable && c.Probe != nil:
			h = append(h, "Kprobe "+BootProbeGroup+"/"+c.Probe.Name+" is enabled (the kernel enables boot-time kprobes itself).")
		}
	}
	for _, n := range notes {
		h = append(h, "Note: "+n)
	}
	if src != nil {
		h = append(h, "", "SQL ("+src.Name+"):")
		for _, l := range strings.Split(strings.TrimRight(src.Text, "\n"), "\n") {
			h = append(h, "  "+commentSafe(l))
		}
	}
	return h
}

// commentSafe replaces the control characters of a comment line (a NUL
// would end the bootconfig) with '?'.
func commentSafe(l string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '?'
		}
		return r
	}, l)
}
