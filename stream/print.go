package stream

import (
	"github.com/sqlhist/sqlhist/planner"

	"fmt"
	"sort"
	"strconv"
	"strings"
)

// HistFile prints the hist file of an event as the kernel prints it: one
// histogram per trigger on the event, in the order the triggers were
// written ("" when the event has none).
func (m *Machine) HistFile(system, event string) string {
	var b strings.Builder
	for i, t := range m.byEvent[system+"/"+event] {
		if i > 0 {
			b.WriteString("\n\n")
		}
		m.print(&b, t)
	}
	return b.String()
}

// Info is a trigger as the kernel lists it on "# trigger info:".
func (t *trigger) info() string {
	h := t.spec
	var b strings.Builder
	b.WriteString("hist:")
	if h.Name != "" {
		b.WriteString("name=" + h.Name + ":")
	}
	b.WriteString("keys=" + strings.Join(planner.ExprStrings(h.Keys), ","))
	vals := []string{"hitcount"}
	for _, v := range h.Vals {
		if v.Kind != planner.ExprHitcount || v.Mod != "" {
			vals = append(vals, v.String())
		}
	}
	b.WriteString(":vals=" + strings.Join(vals, ","))
	if len(h.Vars) > 0 {
		vs := make([]string, len(h.Vars))
		for i, v := range h.Vars {
			vs[i] = v.String()
		}
		b.WriteString(":" + strings.Join(vs, ","))
	}
	srt := "hitcount"
	if len(h.Sort) > 0 {
		srt = strings.Join(h.Sort, ",")
	}
	size := h.Size
	if size == 0 {
		size = DefaultSize
	}
	fmt.Fprintf(&b, ":sort=%s:size=%d", srt, size)
	if h.NoHitcount {
		b.WriteString(":nohitcount")
	}
	for _, a := range h.Actions {
		b.WriteString(":" + a.String())
	}
	if h.Filter != nil {
		b.WriteString(" if " + h.Filter.String())
	}
	return b.String()
}

// print writes one trigger's histogram.
func (m *Machine) print(b *strings.Builder, t *trigger) {
	b.WriteString("# event histogram\n#\n# trigger info: " + t.info() + " [active]\n#\n\n")
	entries := append([]*entry(nil), t.m.order...)
	t.sortEntries(entries)
	// .percent and .graph show a value against its total and maximum
	// over the entries (hitcount's too).
	st := valStats{total: make([]uint64, len(t.vals)), max: make([]uint64, len(t.vals))}
	for _, e := range entries {
		st.count += e.count
		st.maxCount = max(st.maxCount, e.count)
		for i, v := range e.sums {
			st.total[i] += v
			st.max[i] = max(st.max[i], v)
		}
	}
	for _, e := range entries {
		m.printEntry(b, t, e, &st)
	}
	fmt.Fprintf(b, "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n", t.m.hits, t.m.len(), t.m.drops)
}

// sortEntries orders entries as the trigger's sort= asks: by hitcount
// (the default) or a key or value, ascending unless .descending, ties in
// the order the entries were made.
func (t *trigger) sortEntries(es []*entry) {
	spec := t.spec.Sort
	if len(spec) == 0 {
		spec = []string{"hitcount"}
	}
	type sortKey struct {
		get  func(*entry) (uint64, string)
		desc bool
	}
	var keys []sortKey
	for _, s := range spec {
		name, desc := strings.CutSuffix(s, ".descending")
		name = strings.TrimSuffix(name, ".ascending")
		base, _, _ := strings.Cut(name, ".")
		switch {
		case base == "hitcount":
			keys = append(keys, sortKey{func(e *entry) (uint64, string) { return e.count, "" }, desc})
		default:
			found := false
			for i, k := range t.keys {
				if k.name == base || k.text == name {
					i := i
					keys = append(keys, sortKey{func(e *entry) (uint64, string) { return e.key[i].N, e.key[i].S }, desc})
					found = true
					break
				}
			}
			if found {
				continue
			}
			for i, v := range t.vals {
				if v.name == base || v.text == name {
					i := i
					keys = append(keys, sortKey{func(e *entry) (uint64, string) { return e.sums[i], "" }, desc})
					break
				}
			}
		}
	}
	sort.SliceStable(es, func(a, b int) bool {
		for _, k := range keys {
			na, sa := k.get(es[a])
			nb, sb := k.get(es[b])
			c := compare(na, nb)
			if c == 0 {
				c = strings.Compare(sa, sb)
			}
			if c != 0 {
				return (c < 0) != k.desc
			}
		}
		return false
	})
}

// printEntry writes "{ key: v, … } hitcount: n  val: v" and the handlers'
// lines under it.
// valStats are the totals and maxima of a histogram's values.
type valStats struct {
	count, maxCount uint64
	total, max      []uint64
}

func (m *Machine) printEntry(b *strings.Builder, t *trigger, e *entry, st *valStats) {
	b.WriteString("{ ")
	for i, k := range t.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		m.printKey(b, k, e, i)
	}
	if n := len(t.keys); n > 0 && t.keys[n-1].kind == opStack {
		b.WriteString("}") // the frames ended the line
	} else {
		b.WriteString(" }")
	}
	if !t.spec.NoHitcount {
		fmt.Fprintf(b, " hitcount: %10d", e.count)
	}
	for _, v := range t.spec.Vals {
		// hitcount.percent and hitcount.graph: the count as a value.
		if v.Kind != planner.ExprHitcount {
			continue
		}
		switch v.Mod {
		case "percent":
			printPercent(b, "hitcount", e.count, st.count)
		case "graph":
			fmt.Fprintf(b, "  hitcount: %20s", bar(e.count, st.maxCount))
		}
	}
	for i, v := range t.vals {
		name := v.name
		switch v.mod {
		case "percent":
			printPercent(b, name, e.sums[i], st.total[i])
		case "graph":
			fmt.Fprintf(b, "  %s: %20s", name, bar(e.sums[i], st.max[i]))
		case "hex":
			fmt.Fprintf(b, "  %s: %10x", name, e.sums[i])
		default:
			fmt.Fprintf(b, "  %s: %10d", name, e.sums[i])
		}
	}
	for _, a := range t.actions {
		if a.handler == "onmatch" || a.what == "snapshot" {
			continue
		}
		tr := e.tracks[a.slot]
		word := "max"
		if a.handler == "onchange" {
			word = "changed"
		}
		fmt.Fprintf(b, "\n\t%s: %10d", word, tr.val)
		if a.what == "save" {
			for j, p := range a.params {
				var v Value
				if j < len(tr.saved) {
					v = tr.saved[j]
				}
				if v.Str || p.isString() {
					fmt.Fprintf(b, "  %s: %-32s", p.name, v.S)
				} else {
					fmt.Fprintf(b, "  %s: %10d", paramName(p), v.N)
				}
			}
		}
	}
	b.WriteString("\n")
}

// paramName is how a saved value is named on a handler's line.
func paramName(p *expr) string {
	if p.kind == opVar {
		return p.name
	}
	return p.name
}

// percentage is the kernel's __get_percentage: val of total in
// hundredths of a percent; ok is false for a value over a zero total.
func percentage(val, total uint64) (uint64, bool) {
	if total == 0 {
		return 0, val == 0
	}
	if val < ^uint64(0)/10000 {
		return val * 10000 / total, true
	}
	if total /= 10000; total == 0 {
		return 0, val == 0
	}
	return val / total, true
}

// printPercent writes a .percent value as the kernel does: " name (%):"
// and two decimals.
func printPercent(b *strings.Builder, name string, val, total uint64) {
	pc, ok := percentage(val, total)
	if !ok {
		fmt.Fprintf(b, "  %s (%%):[ERROR]", name)
		return
	}
	fmt.Fprintf(b, "  %s (%%): %3d.%02d", name, pc/100, pc%100)
}

// bar is a .graph value: '#' for each twentieth of the maximum.
func bar(val, max uint64) string {
	pc, ok := percentage(val, max)
	if !ok {
		return "[ERROR]"
	}
	return strings.Repeat("#", int(min(pc*20/10000, 20)))
}

// printKey writes one key part as the kernel prints it.
func (m *Machine) printKey(b *strings.Builder, k *expr, e *entry, i int) {
	v := e.key[i]
	name := k.name
	if k.kind == opBinary || k.kind == opConst {
		name = k.text
	}
	switch {
	case k.kind == opStack:
		// The kernel: "common_stacktrace:" (6.1: "stacktrace:") and a
		// newline; a stack trace field's key "stack.stacktrace" with its
		// first frame on the same line.
		if name == "common_stacktrace" || name == "stacktrace" {
			b.WriteString(name + ":\n")
		} else {
			b.WriteString(name + ".stacktrace")
		}
		for _, a := range v.Stack {
			b.WriteString("         " + m.sym(a, true) + "\n")
		}
		return
	case v.Str:
		fmt.Fprintf(b, "%s: %-50s", name, v.S)
		return
	}
	switch k.mod {
	case "log2":
		fmt.Fprintf(b, "%s: ~ 2^%-2d", name, v.N)
	case "buckets":
		fmt.Fprintf(b, "%s: ~ %d-%d", name, v.N, v.N+k.bucket-1)
	case "hex":
		fmt.Fprintf(b, "%s: %x", name, v.N)
	case "sym":
		fmt.Fprintf(b, "%s: [%x] %-45s", name, v.N, m.sym(v.N, false))
	case "sym-offset":
		fmt.Fprintf(b, "%s: [%x] %-55s", name, v.N, m.sym(v.N, true))
	case "execname":
		comm := "<...>"
		if e.comm != nil {
			comm = e.comm[i]
		}
		fmt.Fprintf(b, "%s: %-16s[%10d]", name, comm, v.N)
	case "syscall":
		sc := "unknown_syscall"
		if m.opt.Syscall != nil {
			if s := m.opt.Syscall(v.N); s != "" {
				sc = s
			}
		}
		fmt.Fprintf(b, "%s: %-30s[%3d]", name, sc, v.N)
	default:
		fmt.Fprintf(b, "%s: %10s", name, strconv.FormatUint(v.N, 10))
	}
}

// sym names an address, or prints it in hex.
func (m *Machine) sym(a uint64, offset bool) string {
	if m.opt.Sym != nil {
		if s := m.opt.Sym(a, offset); s != "" {
			return s
		}
	}
	return fmt.Sprintf("0x%x", a)
}
