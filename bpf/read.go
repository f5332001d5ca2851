package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// rawEntry is one map entry as read: its key and value bytes.
type rawEntry struct {
	key, val []byte
}

// Read reads every trigger's map into the histogram its hist file would
// show, by trigger index (the triggers of one name= share one). The
// maps are read while the programs run: an entry counts what reached it
// before it was read.
func (e *Engine) Read() ([]*tracefs.Histogram, error) { return e.ReadSome(nil) }

// ReadSome is Read of the triggers want says (all when want is nil): the
// others' maps are not read (a JOIN's start map, which holds a variable
// for every task it saw, costs two system calls an entry), and their
// histograms are nil.
func (e *Engine) ReadSome(want func(trigger int) bool) ([]*tracefs.Histogram, error) {
	if e.coll == nil {
		return nil, errors.New("the BPF engine is not loaded")
	}
	cs, err := e.counters()
	if err != nil {
		return nil, err
	}
	wanted := map[*mapDef]bool{}
	for i, ct := range e.ctrigs {
		if want == nil || want(i) {
			wanted[ct.m] = true
		}
	}
	raws := map[*mapDef][]rawEntry{}
	for _, m := range e.maps {
		if !wanted[m] {
			continue
		}
		mp := e.coll.Maps[m.name]
		var out []rawEntry
		k, v := make([]byte, m.keySize), make([]byte, m.valSize)
		var vs [][]byte
		it := mp.Iterate()
		if m.perCPU {
			// Counts and sums, one value a CPU: their sums.
			for it.Next(&k, &vs) {
				sum := make([]byte, m.valSize)
				for _, c := range vs {
					for o := 0; o+8 <= m.valSize && o+8 <= len(c); o += 8 {
						ne := binary.NativeEndian
						ne.PutUint64(sum[o:], ne.Uint64(sum[o:])+ne.Uint64(c[o:]))
					}
				}
				out = append(out, rawEntry{bytes.Clone(k), sum})
			}
		} else {
			for it.Next(&k, &v) {
				out = append(out, rawEntry{bytes.Clone(k), bytes.Clone(v)})
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("the BPF engine: reading %s: %v", m.name, err)
		}
		raws[m] = out
	}
	hs := make([]*tracefs.Histogram, len(e.ctrigs))
	for i, ct := range e.ctrigs {
		if wanted[ct.m] && (want == nil || want(i)) {
			hs[i] = e.histogram(ct, raws[ct.m], cs.full[ct.m.stat])
			if n := cs.failed[ct.m.stat]; n > 0 {
				hs[i].Totals.Failed, hs[i].Totals.FailedWhy = n, failure(cs.lastErr)
			}
		}
	}
	return hs, nil
}

// ReadFiles is Read keyed by each trigger's hist file (Trigger.File):
// the histograms of the triggers on one event in the order written, as
// the kernel's hist file lists them.
func (e *Engine) ReadFiles() (map[string][]*tracefs.Histogram, error) {
	hs, err := e.Read()
	if err != nil {
		return nil, err
	}
	out := map[string][]*tracefs.Histogram{}
	for i, t := range e.triggers {
		out[t.File] = append(out[t.File], hs[i])
	}
	return out, nil
}

// counts is what the stats map holds (statsMap).
type counts struct {
	full, failed []uint64 // each map's inserts lost: full, or failed otherwise
	unwritten    uint64   // the synthetic events' records the perf ring had no room for
	lastErr      uint64   // the errno of the last insert that failed otherwise; 0: its entry was gone
}

// counters reads the stats map.
func (e *Engine) counters() (counts, error) {
	n := len(e.maps)
	buf := make([]byte, 8*statSlots(n))
	if err := e.coll.Maps[statsMap].Lookup(uint32(0), &buf); err != nil {
		return counts{}, fmt.Errorf("the BPF engine: reading the drops: %v", err)
	}
	at := func(off uint32) uint64 { return binary.NativeEndian.Uint64(buf[off:]) }
	c := counts{full: make([]uint64, n), failed: make([]uint64, n), unwritten: at(unwrittenSlot(n)), lastErr: at(lastErrSlot(n))}
	for i := range n {
		c.full[i], c.failed[i] = at(fullSlot(i)), at(failedSlot(i))
	}
	return c, nil
}

// failure names the code of an insert that failed with its map not full:
// the errno the kernel's map update returned, or that the entry the
// program made (or found made by another CPU) was gone when it looked.
func failure(code uint64) string {
	if code == 0 {
		return "the entry just inserted was not found"
	}
	name := errnoName(code)
	if name == "" {
		name = fmt.Sprintf("errno %d", code)
	}
	return fmt.Sprintf("the kernel's map update returned %s (%v)", name, syscall.Errno(code))
}

// histogram decodes a map's entries as the trigger ct shows them.
func (e *Engine) histogram(ct *ctrig, raws []rawEntry, drops uint64) *tracefs.Histogram {
	h := &tracefs.Histogram{TriggerInfo: ct.t.Spec()}
	m := ct.m
	ne := binary.NativeEndian
	var count, maxCount uint64
	total := make([]uint64, len(ct.vals))
	maxSum := make([]uint64, len(ct.vals))
	for _, r := range raws {
		c := ne.Uint64(r.val)
		count += c
		maxCount = max(maxCount, c)
		for i, off := range m.sums {
			v := ne.Uint64(r.val[off:])
			total[i] += v
			maxSum[i] = max(maxSum[i], v)
		}
	}
	type sortable struct {
		ent *tracefs.HistEntry
		raw rawEntry
	}
	var ents []sortable
	for _, r := range raws {
		ent := &tracefs.HistEntry{}
		for i, p := range m.parts {
			ent.Keys = append(ent.Keys, e.keyValue(ct, i, p, r))
		}
		c := ne.Uint64(r.val)
		if !ct.t.NoHitcount {
			ent.Values = append(ent.Values, number("hitcount", c))
		}
		for _, v := range ct.t.Vals {
			if v.Kind != planner.ExprHitcount {
				continue
			}
			switch v.Mod {
			case "percent":
				ent.Values = append(ent.Values, percent("hitcount", c, count))
			case "graph":
				ent.Values = append(ent.Values, graph("hitcount", c, maxCount))
			}
		}
		for i, x := range ct.vals {
			s := ne.Uint64(r.val[m.sums[i]:])
			name := exprName(x)
			switch x.Mod {
			case "percent":
				ent.Values = append(ent.Values, percent(name, s, total[i]))
			case "graph":
				ent.Values = append(ent.Values, graph(name, s, maxSum[i]))
			case "hex":
				ent.Values = append(ent.Values, tracefs.HistValue{Name: name, Kind: tracefs.HistHex, Num: s, Raw: strconv.FormatUint(s, 16)})
			default:
				ent.Values = append(ent.Values, number(name, s))
			}
		}
		slot := 0
		for _, a := range ct.t.Actions {
			if a.Handler == planner.OnMatch {
				continue
			}
			off := m.tracks[slot]
			slot++
			if a.Kind == planner.ActSnapshot {
				continue
			}
			tr := tracefs.HistTracked{Handler: "max", Value: ne.Uint64(r.val[off:])}
			if a.Handler == planner.OnChange {
				tr.Handler = "changed"
			}
			if a.Kind == planner.ActSave {
				for j, p := range a.Params {
					tr.Saved = append(tr.Saved, number(exprName(p), ne.Uint64(r.val[off+8+8*j:])))
				}
			}
			ent.Tracked = append(ent.Tracked, tr)
		}
		ents = append(ents, sortable{ent, r})
	}
	// The order of sort= (hitcount by default), ties by the key's bytes.
	spec := ct.t.Sort
	if len(spec) == 0 {
		spec = []string{"hitcount"}
	}
	sort.SliceStable(ents, func(a, b int) bool {
		for _, s := range spec {
			c := compareBy(ct, s, ents[a].ent, ents[b].ent)
			if c != 0 {
				return c < 0
			}
		}
		return bytes.Compare(ents[a].raw.key, ents[b].raw.key) < 0
	})
	for _, s := range ents {
		h.Entries = append(h.Entries, s.ent)
	}
	h.Totals = tracefs.HistTotals{Hits: count, Entries: uint64(len(raws)), Dropped: drops}
	return h
}

// compareBy compares two entries by one sort= field.
func compareBy(ct *ctrig, spec string, a, b *tracefs.HistEntry) int {
	name, desc := strings.CutSuffix(spec, ".descending")
	name = strings.TrimSuffix(name, ".ascending")
	base, _, _ := strings.Cut(name, ".")
	pick := func(vs []tracefs.HistValue, i int) (uint64, string) {
		if i < len(vs) {
			return vs[i].Num, vs[i].Text
		}
		return 0, ""
	}
	idx, keys := -1, false
	if base == "hitcount" {
		idx = 0
	} else {
		for i, k := range ct.t.Keys {
			if exprName(k) == base || k.String() == name {
				idx, keys = i, true
				break
			}
		}
		if idx < 0 {
			for i, v := range a.Values {
				if v.Name == base {
					idx = i
					break
				}
			}
		}
	}
	if idx < 0 {
		return 0
	}
	var na, nb uint64
	var sa, sb string
	if keys {
		na, sa = pick(a.Keys, idx)
		nb, sb = pick(b.Keys, idx)
	} else {
		na, sa = pick(a.Values, idx)
		nb, sb = pick(b.Values, idx)
	}
	c := 0
	switch {
	case na < nb:
		c = -1
	case na > nb:
		c = 1
	default:
		c = strings.Compare(sa, sb)
	}
	if desc {
		c = -c
	}
	return c
}

// exprName is how the kernel names a key or value: the field without its
// modifier, an expression as written.
func exprName(x *planner.Expr) string {
	switch x.Kind {
	case planner.ExprField, planner.ExprCPU, planner.ExprStack:
		return x.Name
	case planner.ExprVar:
		return x.Name
	case planner.ExprTimestamp:
		return "common_timestamp"
	case planner.ExprHitcount:
		return "hitcount"
	}
	c := *x
	c.Mod = ""
	return c.String()
}

func number(name string, n uint64) tracefs.HistValue {
	return tracefs.HistValue{Name: name, Kind: tracefs.HistNumber, Num: n, Raw: strconv.FormatUint(n, 10)}
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

func percent(name string, val, total uint64) tracefs.HistValue {
	pc, ok := percentage(val, total)
	if !ok {
		return tracefs.HistValue{Name: name, Kind: tracefs.HistPercent, Raw: "[ERROR]"}
	}
	raw := fmt.Sprintf("%d.%02d", pc/100, pc%100)
	return tracefs.HistValue{Name: name, Kind: tracefs.HistPercent, Raw: raw, Percent: float64(pc) / 100}
}

func graph(name string, val, maxVal uint64) tracefs.HistValue {
	pc, ok := percentage(val, maxVal)
	bar := "[ERROR]"
	if ok {
		bar = strings.Repeat("#", int(min(pc*20/10000, 20)))
	}
	return tracefs.HistValue{Name: name, Kind: tracefs.HistGraph, Raw: bar, Text: bar}
}

// keyValue decodes key part i of an entry.
func (e *Engine) keyValue(ct *ctrig, i int, p keyPart, r rawEntry) tracefs.HistValue {
	x := p.x
	name := exprName(x)
	if p.kind == partStr {
		b := r.key[p.off : p.off+p.size]
		if n := bytes.IndexByte(b, 0); n >= 0 {
			b = b[:n]
		}
		s := string(b)
		return tracefs.HistValue{Name: name, Kind: tracefs.HistString, Text: strings.TrimRight(s, " "), Raw: strings.TrimSpace(s)}
	}
	if p.kind == partStack {
		v := tracefs.HistValue{Name: name, Kind: tracefs.HistStacktrace}
		if x.Kind != planner.ExprStack {
			v.Name = x.Name + ".stacktrace"
		}
		top := true
		for o := p.off; o+8 <= p.off+p.size; o += 8 {
			a := binary.NativeEndian.Uint64(r.key[o:])
			if a == 0 {
				break
			}
			f := ""
			if e.opt.Sym != nil {
				f = e.opt.Sym(a, true)
			}
			// The tracepoint's own frames, which bpf_get_stack gives
			// on some kernels (6.1: __traceiter_sched_switch) and the
			// kernel's hist stacks skip: the stack starts at the
			// traced function, as theirs.
			if top && tracepointFrame(f) {
				continue
			}
			top = false
			if f == "" {
				f = fmt.Sprintf("0x%x", a)
			}
			v.Frames = append(v.Frames, f)
		}
		if e.opt.Sym != nil && runtime.GOARCH == "arm64" && len(v.Frames) > 0 {
			// arm64's hist stacks (6.1) start at the traced function's
			// caller, where bpf_get_stack gives the traced function
			// twice (its pc and its return address): skip it.
			first := funcName(v.Frames[0])
			for len(v.Frames) > 0 && funcName(v.Frames[0]) == first {
				v.Frames = v.Frames[1:]
			}
		}
		v.Raw = strings.Join(v.Frames, "\n")
		return v
	}
	n := binary.NativeEndian.Uint64(r.key[p.off:])
	if f := p.field; f != nil && f.Signed && f.Size < 8 && x.Mod != "log2" && x.Mod != "buckets" {
		// A signed field keys by its bytes and prints sign-extended.
		bits := uint(f.Size * 8)
		if n&(1<<(bits-1)) != 0 {
			n |= ^uint64(0) << bits
		}
	}
	v := tracefs.HistValue{Name: name, Num: n}
	switch x.Mod {
	case "log2":
		v.Kind, v.Raw = tracefs.HistLog2, fmt.Sprintf("~ 2^%d", n)
	case "buckets":
		v.Kind, v.High = tracefs.HistBuckets, n+x.Buckets-1
		v.Raw = fmt.Sprintf("~ %d-%d", n, v.High)
	case "hex":
		v.Kind, v.Raw = tracefs.HistHex, strconv.FormatUint(n, 16)
	case "sym", "sym-offset":
		v.Kind = tracefs.HistSym
		if x.Mod == "sym-offset" {
			v.Kind = tracefs.HistSymOffset
		}
		if e.opt.Sym != nil {
			v.Text = e.opt.Sym(n, x.Mod == "sym-offset")
		}
		if v.Text == "" {
			v.Text = fmt.Sprintf("0x%x", n)
		}
		v.Raw = fmt.Sprintf("[%x] %s", n, v.Text)
	case "execname":
		v.Kind, v.Text = tracefs.HistExecname, "<...>"
		if off := ct.m.comm[i]; off >= 0 {
			b := r.val[off : off+16]
			if z := bytes.IndexByte(b, 0); z >= 0 {
				b = b[:z]
			}
			v.Text = string(b)
		}
		v.Raw = fmt.Sprintf("%-16s[%10d]", v.Text, n)
	case "syscall":
		v.Kind, v.Text = tracefs.HistSyscall, "unknown_syscall"
		if e.opt.Syscall != nil {
			if s := e.opt.Syscall(n); s != "" {
				v.Text = s
			}
		}
		v.Raw = fmt.Sprintf("%-30s[%3d]", v.Text, n)
	default:
		v.Kind, v.Raw = tracefs.HistNumber, strconv.FormatUint(n, 10)
	}
	return v
}

// tracepointFrame says whether a frame ("func+0x1/0x2") is the tracing
// machinery's, between the traced function and the BPF program.
func tracepointFrame(f string) bool {
	for _, p := range []string{"__traceiter_", "__bpf_trace_", "bpf_trace_run", "perf_trace_", "trace_event_raw_event_", "trace_call_bpf"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// funcName is the function of a frame "func+0x1/0x2".
func funcName(f string) string {
	name, _, _ := strings.Cut(f, "+")
	return name
}
