package bpf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ctrig is a trigger checked against its event's format.
type ctrig struct {
	idx  int
	t    *Trigger
	ev   *tracefs.Event
	m    *mapDef
	vals []*planner.Expr // Vals without hitcount
	// usecs says that every common_timestamp of the trigger is in µs
	// (one .usecs makes them all so, as the kernel's).
	usecs bool
	own   map[string]int // own variables by name
	// refs are the other triggers' variables read, in reading order,
	// each once; once says which of them are read as an operand (the
	// read clears them).
	refs []varRef
	once map[string]bool
	// strVars are the variables that hold a string, by index: the field
	// they copy.
	strVars map[int]*tracefs.Field
	// stackVars are the variables that hold a stack trace, by index.
	stackVars map[int]bool
	e         *Engine
}

// blob says whether variable i holds bytes (a string or a stack trace):
// another trigger reads it through its address.
func (ct *ctrig) blob(i int) bool { return ct.strVars[i] != nil || ct.stackVars[i] }

type varRef struct {
	name string
	t    *ctrig
	idx  int
}

// compileTriggers checks the triggers and lays out their maps.
func (e *Engine) compileTriggers(format func(system, event string) (*tracefs.Event, error)) error {
	vars := map[string]varRef{}
	named := map[string]*mapDef{}
	for i, t := range e.triggers {
		ct := &ctrig{idx: i, t: t, own: map[string]int{}, once: map[string]bool{}, strVars: map[int]*tracefs.Field{}, stackVars: map[int]bool{}, e: e}
		if t.System == SyntheticSystem && e.synths[t.Event] != nil {
			ct.ev = e.synths[t.Event]
		} else if pi := e.probes[t.System+"/"+t.Event]; pi != nil {
			if pi.p.Kind == compiler.EProbe {
				return ct.probeErr(pi, "", "an eprobe is not attached by the BPF engine (it attaches tracepoints, kprobes, kretprobes, uprobes and uretprobes)")
			}
			ct.ev = pi.ev
		} else {
			ev, err := format(t.System, t.Event)
			if err != nil {
				return &Error{Trigger: i, Event: t.System + "/" + t.Event, Reason: err.Error()}
			}
			if ev.ID == 0 {
				return ct.errf("", "%s/%s is not an event of the kernel yet (a probe the run would create, not given to the engine)", t.System, t.Event)
			}
			ct.ev = ev
		}
		if len(t.Keys) == 0 {
			return ct.errf("", "a trigger needs a key")
		}
		for _, v := range t.Vals {
			if v.Kind == planner.ExprHitcount {
				if v.Mod != "" && v.Mod != "percent" && v.Mod != "graph" {
					return ct.errf(v.String(), "modifier .%s on hitcount", v.Mod)
				}
				continue
			}
			ct.vals = append(ct.vals, v)
		}
		for j, v := range t.Vars {
			if v.Expr.Kind == planner.ExprField {
				if f := ct.ev.Field(v.Expr.Name); f != nil && f.IsString() {
					ct.strVars[j] = f
				}
			}
			if v.Expr.Kind == planner.ExprStack {
				ct.stackVars[j] = true
			}
			if _, dup := vars[v.Name]; dup {
				return ct.errf(v.Name+"="+v.Expr.String(), "variable %s defined twice", v.Name)
			}
			vars[v.Name] = varRef{v.Name, ct, j}
			ct.own[v.Name] = j
		}
		all := append(append([]*planner.Expr{}, t.Keys...), ct.vals...)
		for _, v := range t.Vars {
			all = append(all, v.Expr)
		}
		for _, a := range t.Actions {
			all = append(all, a.Params...)
		}
		for _, x := range all {
			x.Walk(func(o *planner.Expr) {
				if o.Kind == planner.ExprTimestamp && o.Mod == "usecs" {
					ct.usecs = true
				}
				if o.Kind == planner.ExprBinary {
					for _, s := range []*planner.Expr{o.L, o.R} {
						if s.Kind == planner.ExprVar {
							ct.once[s.Name] = true
						}
					}
				}
			})
		}
		if t.Name != "" && named[t.Name] != nil {
			ct.m = named[t.Name]
			if err := ct.m.sameShape(ct); err != nil {
				return err
			}
		} else {
			m, err := layoutOf(ct)
			if err != nil {
				return err
			}
			m.name = fmt.Sprintf("hist%d", len(e.maps))
			m.stat = len(e.maps)
			e.maps = append(e.maps, m)
			ct.m = m
			if t.Name != "" {
				named[t.Name] = m
			}
		}
		e.ctrigs = append(e.ctrigs, ct)
	}
	// The other triggers' variables each trigger reads.
	for _, ct := range e.ctrigs {
		var reads []string
		for _, v := range ct.t.Vars {
			reads = append(reads, v.Expr.Vars()...)
		}
		for _, a := range ct.t.Actions {
			for _, p := range a.Params {
				reads = append(reads, p.Vars()...)
			}
			if a.Handler != planner.OnMatch {
				if _, ok := ct.own[a.Track]; !ok {
					return ct.errf(a.String(), "$%s is not a variable of this trigger", a.Track)
				}
			}
			if a.Kind == planner.ActSnapshot {
				return ct.errf(a.String(), "a snapshot of the trace buffer is the kernel's hist triggers' own")
			}
			if a.Kind == planner.ActTrace && e.synths[a.Synth] == nil {
				return ct.errf(a.String(), "no synthetic event %s", a.Synth)
			}
		}
		for _, x := range append(append([]*planner.Expr{}, ct.t.Keys...), ct.vals...) {
			if len(x.Vars()) > 0 {
				return ct.errf(x.String(), "a variable in a key or a value is not compiled")
			}
		}
		for _, n := range reads {
			if _, ok := ct.own[n]; ok {
				continue
			}
			r, ok := vars[n]
			if !ok {
				return ct.errf("$"+n, "variable $%s is defined by no trigger", n)
			}
			if slices.ContainsFunc(ct.refs, func(x varRef) bool { return x.name == n }) {
				continue
			}
			if r.t.m.keySize != ct.m.keySize {
				return ct.errf("$"+n, "$%s is read by a key of %d bytes from a map keyed by %d", n, ct.m.keySize, r.t.m.keySize)
			}
			ct.refs = append(ct.refs, r)
		}
	}
	return nil
}

// Registers: R6 holds the context (the event's record), R7 the entry of
// the trigger being run; R0-R5 are scratch (helpers clobber them).
const (
	rCtx   = asm.R6
	rEntry = asm.R7
)

// maxFrame is the BPF stack.
const maxFrame = 512

// gen generates one program.
type gen struct {
	e       *Engine
	insns   asm.Instructions
	origins []origin // by instruction: what it computes
	origin  string
	trig    int // the trigger being generated
	// fp is the frame's base: R10 (the BPF stack), or R8 pointing past
	// the end of the per-CPU scratch map's value when the stack is too
	// small; offsets from it are negative.
	fp      asm.Register
	pending string // a label for the next instruction
	labels  int
	top     int // stack bytes in use
	// stop, smax: the BPF stack's bytes in use and most, when the frame
	// is in the scratch map (allocStack).
	stop, smax int
	max        int
	ts, pid    int16 // stack offsets of the time, the pid, the CPU
	cpu        int16
	depth      int // synthetic events fired, nested
	// fentry says the program is a probe's fentry or fexit variant: its
	// context is the function's arguments (and return value), not
	// pt_regs.
	fentry bool
	// rawUse, for a raw tracepoint's variant (rawtp.go), collects the
	// record fields it reads; nil for the others.
	rawUse *rawUse
}

func (g *gen) ins(list ...asm.Instruction) {
	for _, i := range list {
		if g.pending != "" {
			i = i.WithSymbol(g.pending)
			g.pending = ""
		}
		g.insns = append(g.insns, i)
		g.origins = append(g.origins, origin{g.trig, g.origin})
	}
}

func (g *gen) label() string {
	g.labels++
	return fmt.Sprintf("l%d", g.labels)
}

// at places label l at the next instruction.
func (g *gen) at(l string) {
	if g.pending != "" {
		// Two labels at one place: a no-op carries the first.
		g.ins(asm.Mov.Reg(rCtx, rCtx))
	}
	g.pending = l
}

// alloc reserves n bytes (rounded up to 8) of stack: their offset from
// R10.
func (g *gen) alloc(n int) int16 {
	g.top += align8(n)
	g.max = max(g.max, g.top)
	return int16(-g.top)
}

// storeImm stores a 32-bit constant, sign-extended, in 8 bytes (BPF_ST
// of a double word, which cilium/ebpf's StoreImm does not make).
func storeImm(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}

// allocStack reserves n bytes (rounded up to 8) of the BPF stack itself,
// whatever the frame's base: the slots that hold pointers (a pointer
// spilled to a map value is a number to the verifier). In scratch mode
// the stack holds only them; otherwise they are the frame's.
func (g *gen) allocStack(n int) int16 {
	if g.fp == asm.R10 {
		return g.alloc(n)
	}
	g.stop += align8(n)
	g.smax = max(g.smax, g.stop)
	return int16(-8 - g.stop) // below the scratch lookup's key
}

// zero clears n bytes (a multiple of 8) at off.
func (g *gen) zero(off int16, n int) {
	for i := 0; i < n; i += 8 {
		g.ins(storeImm(g.fp, off+int16(i), 0))
	}
}

// evctx is where an event's fields are read: the record (the context)
// or, for a synthetic event fired, its fields on the stack.
type evctx struct {
	ev    *tracefs.Event
	synth map[string]int16 // by field: the stack offset of its value or bytes
	// probe says the event is a probe's: synth holds its record.
	probe bool
}

var regs = []asm.Register{asm.R1, asm.R2, asm.R3, asm.R4, asm.R5}

var sizes = map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}

// loadField loads a number field into dst, sign-extended when signed;
// R0 is scratch.
func (g *gen) loadField(ct *ctrig, ec *evctx, f *tracefs.Field, dst asm.Register) error {
	if ec.synth != nil {
		if off, ok := ec.synth[f.Name]; ok {
			g.ins(asm.LoadMem(dst, g.fp, off, asm.DWord))
			return nil
		}
	}
	if f.Name == "common_pid" {
		g.ins(asm.LoadMem(dst, g.fp, g.pid, asm.DWord))
		return nil
	}
	if ec.probe {
		return ct.errf(f.Name, "%s of a probe's record is not compiled by the BPF engine (its fetch arguments and common_pid are)", f.Name)
	}
	if ec.synth != nil {
		return ct.errf(f.Name, "field %s of a synthetic event is not set by the program", f.Name)
	}
	if f.Kind != tracefs.KindInt && f.Kind != tracefs.KindPointer {
		return ct.errf(f.Name, "%s is a %s, not a number", f.Name, f.Kind)
	}
	if f.Offset < 8 {
		return ct.errf(f.Name, "%s is in the record's first 8 bytes, which a BPF program cannot read", f.Name)
	}
	if g.rawUse != nil && !g.rawRead(ec.ev, f) {
		return ct.errf(f.Name, "%s is not given by the raw tracepoint's arguments", f.Name)
	}
	if _, ok := sizes[f.Size]; !ok {
		return ct.errf(f.Name, "%s has %d bytes: a number of 1, 2, 4 or 8 is compiled", f.Name, f.Size)
	}
	// Aligned loads only: an unaligned field is read in aligned pieces
	// (little-endian: the first piece is the low bytes).
	piece := f.Size
	for f.Offset%piece != 0 {
		piece /= 2
	}
	if piece == f.Size {
		g.ins(asm.LoadMem(dst, rCtx, int16(f.Offset), sizes[piece]))
	} else {
		g.ins(asm.LoadMem(dst, rCtx, int16(f.Offset), sizes[piece]))
		for o := piece; o < f.Size; o += piece {
			g.ins(asm.LoadMem(asm.R0, rCtx, int16(f.Offset+o), sizes[piece]),
				asm.LSh.Imm(asm.R0, int32(8*o)),
				asm.Or.Reg(dst, asm.R0))
		}
	}
	if f.Signed && f.Size < 8 {
		sh := int32(64 - 8*f.Size)
		g.ins(asm.LSh.Imm(dst, sh), asm.ArSh.Imm(dst, sh))
	}
	return nil
}

// tstate is one run of a trigger: where its key and the variables it
// read are.
type tstate struct {
	ct      *ctrig
	ec      *evctx
	key     int16
	refVals []int16
	inEntry bool // R7 holds the trigger's entry
}

// expr evaluates x into regs[d] (R0 and the registers above it are
// scratch), jumping to fail when a variable it reads is not set.
func (g *gen) expr(s *tstate, x *planner.Expr, d int, fail string) error {
	if d >= len(regs) {
		return s.ct.errf(x.String(), "the expression is too deep")
	}
	dst := regs[d]
	switch x.Kind {
	case planner.ExprField:
		f := s.ec.ev.Field(x.Name)
		if f == nil {
			return s.ct.errf(x.String(), "no field %s in %s", x.Name, s.ec.ev.FullName())
		}
		if f.IsString() {
			return s.ct.errf(x.String(), "%s is a string, not a number", x.Name)
		}
		return g.loadField(s.ct, s.ec, f, dst)
	case planner.ExprTimestamp:
		g.ins(asm.LoadMem(dst, g.fp, g.ts, asm.DWord))
		if s.ct.usecs {
			// ns2usecs: rounded to the nearest µs.
			g.ins(asm.Add.Imm(dst, 500), asm.Div.Imm(dst, 1000))
		}
	case planner.ExprCPU:
		g.ins(asm.LoadMem(dst, g.fp, g.cpu, asm.DWord))
	case planner.ExprConst:
		g.ins(asm.LoadImm(dst, int64(x.N), asm.DWord))
	case planner.ExprVar:
		if i := slices.IndexFunc(s.ct.refs, func(r varRef) bool { return r.name == x.Name }); i >= 0 {
			if r := s.ct.refs[i]; r.t.blob(r.idx) {
				return s.ct.errf(x.String(), "$%s is a string or a stack trace, not a number", x.Name)
			}
			g.ins(asm.LoadMem(dst, asm.R10, s.refVals[i], asm.DWord))
			return nil
		}
		i, ok := s.ct.own[x.Name]
		if !ok || !s.inEntry {
			return s.ct.errf(x.String(), "variable $%s cannot be read here", x.Name)
		}
		if s.ct.blob(i) {
			return s.ct.errf(x.String(), "$%s is a string or a stack trace, not a number", x.Name)
		}
		off := int16(s.ct.m.vars[i])
		g.ins(asm.LoadMem(dst, rEntry, off-8, asm.DWord),
			asm.JEq.Imm(dst, 0, fail),
			asm.LoadMem(dst, rEntry, off, asm.DWord))
	case planner.ExprBinary:
		if d+1 >= len(regs) {
			return s.ct.errf(x.String(), "the expression is too deep")
		}
		if err := g.expr(s, x.L, d, fail); err != nil {
			return err
		}
		if err := g.expr(s, x.R, d+1, fail); err != nil {
			return err
		}
		r := regs[d+1]
		switch x.Op {
		case '+':
			g.ins(asm.Add.Reg(dst, r))
		case '-':
			g.ins(asm.Sub.Reg(dst, r))
		case '*':
			g.ins(asm.Mul.Reg(dst, r))
		case '/':
			// The kernel's division by zero yields -1.
			zero, done := g.label(), g.label()
			g.ins(asm.JEq.Imm(r, 0, zero), asm.Div.Reg(dst, r), asm.Ja.Label(done))
			g.at(zero)
			g.ins(asm.Mov.Imm(dst, -1))
			g.at(done)
		default:
			return s.ct.errf(x.String(), "operator %c", x.Op)
		}
	case planner.ExprHitcount:
		return s.ct.errf(x.String(), "hitcount in an expression")
	case planner.ExprStack:
		return s.ct.errf(x.String(), "a stack trace is not a number")
	default:
		return s.ct.errf(x.String(), "unknown operand")
	}
	return nil
}

// log2 turns R1 into the kernel's .log2 bucket, ilog2(roundup_pow_of_two(v))
// (0 for 0 and 1): fls64(v-1), by halving. R2, R3 are scratch.
func (g *gen) log2() {
	small, done := g.label(), g.label()
	g.ins(asm.JLE.Imm(asm.R1, 1, small),
		asm.Sub.Imm(asm.R1, 1),
		asm.Mov.Imm(asm.R2, 0))
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		skip := g.label()
		g.ins(asm.Mov.Reg(asm.R3, asm.R1),
			asm.RSh.Imm(asm.R3, sh),
			asm.JEq.Imm(asm.R3, 0, skip),
			asm.Add.Imm(asm.R2, sh),
			asm.Mov.Reg(asm.R1, asm.R3))
		g.at(skip)
	}
	// R1 is 0 or 1 now: its bit counts too.
	g.ins(asm.Add.Reg(asm.R2, asm.R1), asm.Mov.Reg(asm.R1, asm.R2), asm.Ja.Label(done))
	g.at(small)
	g.ins(asm.Mov.Imm(asm.R1, 0))
	g.at(done)
}

// add adds R1 (one, with one) to the u64 at off in the entry: an atomic
// add, or a plain one in a per-CPU map.
func (g *gen) add(m *mapDef, off int, one bool) {
	if one {
		g.ins(asm.Mov.Imm(asm.R1, 1))
	}
	if m.perCPU {
		g.ins(asm.LoadMem(asm.R2, rEntry, int16(off), asm.DWord),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(rEntry, int16(off), asm.R2, asm.DWord))
		return
	}
	g.ins(asm.AddAtomic.Mem(rEntry, asm.R1, asm.DWord, int16(off)))
}

// mask keeps the low size bytes of R1 (size < 8).
func (g *gen) mask(r asm.Register, size int) {
	switch size {
	case 1:
		g.ins(asm.And.Imm(r, 0xff))
	case 2:
		g.ins(asm.And.Imm(r, 0xffff))
	case 4:
		g.ins(asm.Mov.Reg32(r, r))
	}
}

// truncate keeps the bytes of a field of its size, sign-extended when
// signed: what the kernel stores in a synthetic field and reads back.
func (g *gen) truncate(r asm.Register, f *tracefs.Field) {
	if f.Size >= 8 || f.Size <= 0 {
		return
	}
	if f.Signed {
		sh := int32(64 - 8*f.Size)
		g.ins(asm.LSh.Imm(r, sh), asm.ArSh.Imm(r, sh))
		return
	}
	g.mask(r, f.Size)
}

// strSrc is where a string is: a field of the record, bytes on the stack.
type strSrc struct {
	ctx   bool
	ptr   bool  // off is a stack slot holding the string's address (a string variable read)
	off   int16 // in the record (ctx) or from R10
	size  int   // the bytes that may hold it
	field *tracefs.Field
}

// stringOf locates a string operand, reading what must be read first
// (a __data_loc string, the task name) into a buffer of at least want
// bytes.
func (g *gen) stringOf(s *tstate, name string, want int) (strSrc, error) {
	f := s.ec.ev.Field(name)
	if name == "COMM" || name == "comm" && f == nil {
		buf := g.alloc(16)
		g.ins(asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(buf)), asm.Mov.Imm(asm.R2, 16),
			asm.FnGetCurrentComm.Call())
		return strSrc{off: buf, size: 16}, nil
	}
	if f == nil {
		return strSrc{}, s.ct.errf(name, "no field %s in %s", name, s.ec.ev.FullName())
	}
	if s.ec.synth != nil {
		off, ok := s.ec.synth[name]
		if !ok || !f.IsString() {
			return strSrc{}, s.ct.errf(name, "string field %s of a synthetic event is not compiled", name)
		}
		return strSrc{off: off, size: g.e.fieldBytes(s.ec.ev, f), field: f}, nil
	}
	switch f.Kind {
	case tracefs.KindString:
		if f.Offset < 8 {
			return strSrc{}, s.ct.errf(name, "%s is in the record's first 8 bytes", name)
		}
		if g.rawUse != nil && !g.rawRead(s.ec.ev, f) {
			return strSrc{}, s.ct.errf(name, "%s is not given by the raw tracepoint's arguments", name)
		}
		return strSrc{ctx: true, off: int16(f.Offset), size: f.Size, field: f}, nil
	case tracefs.KindDynString:
		if f.Offset < 8 || f.Offset%4 != 0 {
			return strSrc{}, s.ct.errf(name, "%s's location is not readable", name)
		}
		n := min(maxDynString, align8(want))
		buf := g.alloc(n)
		g.zero(buf, n)
		g.dynString(f, buf, n)
		return strSrc{off: buf, size: n, field: f}, nil
	}
	return strSrc{}, s.ct.errf(name, "%s is not a string", name)
}

// dynString reads a __data_loc string into n bytes at buf (zeroed):
// bpf_probe_read_kernel_str from the record's address plus loc&0xffff.
func (g *gen) dynString(f *tracefs.Field, buf int16, n int) {
	g.notRaw("__data_loc " + f.Name)
	g.ins(asm.LoadMem(asm.R3, rCtx, int16(f.Offset), asm.Word),
		asm.And.Imm(asm.R3, 0xffff),
		asm.Add.Reg(asm.R3, rCtx),
		asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(buf)),
		asm.Mov.Imm(asm.R2, int32(n)),
		asm.FnProbeReadKernelStr.Call())
}

// copyString copies a string into n zeroed bytes at dst, stopping at
// its NUL (the kernel's strncpy).
func (g *gen) copyString(src strSrc, dst int16, n int) {
	g.copyStringTo(src, g.fp, dst, n)
}

// copyStringTo is copyString to n zeroed bytes at base+dst (the stack,
// or an entry). A source that is not the record (a stack buffer, or a
// string variable's bytes in another entry, through the pointer in ptr)
// is zero after its NUL already: it is copied by 8 bytes.
func (g *gen) copyStringTo(src strSrc, base asm.Register, dst int16, n int) {
	if !src.ctx {
		from, off := g.fp, src.off
		if src.ptr {
			g.ins(asm.LoadMem(asm.R3, asm.R10, src.off, asm.DWord))
			from, off = asm.R3, 0
		}
		for i := 0; i+8 <= min(n, align8(src.size)); i += 8 {
			g.ins(asm.LoadMem(asm.R1, from, off+int16(i), asm.DWord),
				asm.StoreMem(base, dst+int16(i), asm.R1, asm.DWord))
		}
		return
	}
	done := g.label()
	for i := 0; i < min(n, src.size); i++ {
		g.ins(asm.LoadMem(asm.R1, rCtx, src.off+int16(i), asm.Byte),
			asm.JEq.Imm(asm.R1, 0, done),
			asm.StoreMem(base, dst+int16(i), asm.R1, asm.Byte))
	}
	g.at(done)
}

// stack writes the kernel stack of the event (its first 16 return
// addresses, zero after the last) at base+off: bpf_get_stack, which
// zeroes what it does not fill.
func (g *gen) stack(base asm.Register, off int16) {
	g.ins(asm.Mov.Reg(asm.R1, rCtx),
		asm.Mov.Reg(asm.R2, base), asm.Add.Imm(asm.R2, int32(off)),
		asm.Mov.Imm(asm.R3, stackBytes),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetStack.Call())
}

// stringVar sets string variable i of the entry from its field: zeroed,
// then copied to its NUL (a __data_loc string read straight into the
// entry).
func (g *gen) stringVar(s *tstate, i int, f *tracefs.Field) error {
	m := s.ct.m
	off, n := int16(m.vars[i]), m.varBytes(i)
	for o := 0; o < n; o += 8 {
		g.ins(storeImm(rEntry, off+int16(o), 0))
	}
	if s.ec.synth == nil && f.Kind == tracefs.KindDynString {
		if f.Offset < 8 || f.Offset%4 != 0 {
			return s.ct.errf(f.Name, "%s's location is not readable", f.Name)
		}
		g.notRaw("__data_loc " + f.Name)
		g.ins(asm.LoadMem(asm.R3, rCtx, int16(f.Offset), asm.Word),
			asm.And.Imm(asm.R3, 0xffff),
			asm.Add.Reg(asm.R3, rCtx),
			asm.Mov.Reg(asm.R1, rEntry), asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, int32(n)),
			asm.FnProbeReadKernelStr.Call())
	} else {
		src, err := g.stringOf(s, f.Name, n)
		if err != nil {
			return err
		}
		g.copyStringTo(src, rEntry, off, n)
	}
	g.ins(storeImm(rEntry, off-8, 1))
	return nil
}

// cond jumps to t when the filter holds, to f when not.
func (g *gen) cond(s *tstate, fl *planner.Filter, t, f string) error {
	switch fl.Op {
	case planner.FilterAnd:
		next := g.label()
		if err := g.cond(s, fl.L, next, f); err != nil {
			return err
		}
		g.at(next)
		return g.cond(s, fl.R, t, f)
	case planner.FilterOr:
		next := g.label()
		if err := g.cond(s, fl.L, t, next); err != nil {
			return err
		}
		g.at(next)
		return g.cond(s, fl.R, t, f)
	case planner.FilterNot:
		return g.cond(s, fl.L, f, t)
	}
	what := fl.String()
	field := s.ec.ev.Field(fl.Field)
	str := fl.IsStr || fl.Field == "COMM" || fl.Field == "comm" && field == nil || field != nil && field.IsString()
	if str {
		if !fl.IsStr {
			return s.ct.errf(what, "a string compared with a number")
		}
		pat, prefix := fl.Str, false
		switch fl.Cmp {
		case "==", "!=":
		case "~":
			// The kernel's glob: a pattern without metacharacters is
			// a full match, one whose only star ends it a prefix; the
			// others (*x, *x*, ?, [...]) are not compiled yet.
			if strings.ContainsAny(strings.TrimSuffix(pat, "*"), "*?[\\") {
				return s.ct.errf(what, "a glob other than a prefix (text*) is not compiled yet")
			}
			pat, prefix = strings.TrimSuffix(pat, "*"), strings.HasSuffix(pat, "*")
		default:
			return s.ct.errf(what, "%s on a string is not compiled (==, != and ~ are)", fl.Cmp)
		}
		src, err := g.stringOf(s, fl.Field, len(pat)+2)
		if err != nil {
			return err
		}
		eq, ne := t, f
		if fl.Cmp == "!=" {
			eq, ne = f, t
		}
		// strncmp(field, pattern, size) == 0; a prefix's NUL is not
		// compared.
		n := len(pat)
		if prefix {
			n--
		}
		for i := 0; i < src.size && i <= n; i++ {
			want := int32(0)
			if i < len(pat) {
				want = int32(pat[i])
			}
			if src.ctx {
				g.ins(asm.LoadMem(asm.R1, rCtx, src.off+int16(i), asm.Byte))
			} else {
				g.ins(asm.LoadMem(asm.R1, g.fp, src.off+int16(i), asm.Byte))
			}
			g.ins(asm.JNE.Imm(asm.R1, want, ne))
		}
		g.ins(asm.Ja.Label(eq))
		return nil
	}
	if fl.IsStr {
		return s.ct.errf(what, "a number compared with a string")
	}
	val := fl.Num
	if fl.Neg {
		val = -val
	}
	signed := false
	switch {
	case fl.Field == "CPU" || fl.Field == "cpu" && field == nil || fl.Field == "common_cpu" && field == nil:
		g.ins(asm.LoadMem(asm.R1, g.fp, g.cpu, asm.DWord))
	case field == nil:
		return s.ct.errf(what, "no field %s in %s", fl.Field, s.ec.ev.FullName())
	default:
		if err := g.loadField(s.ct, s.ec, field, asm.R1); err != nil {
			return err
		}
		// The constant as the field's type holds it.
		if field.Size < 8 && field.Size > 0 {
			bits := uint(field.Size * 8)
			val &= 1<<bits - 1
			if field.Signed && val&(1<<(bits-1)) != 0 {
				val |= math.MaxUint64 << bits
			}
		}
		signed = field.Signed
	}
	g.ins(asm.LoadImm(asm.R2, int64(val), asm.DWord))
	var op asm.JumpOp
	switch fl.Cmp {
	case "==":
		op = asm.JEq
	case "!=":
		op = asm.JNE
	case "<":
		op = asm.JLT
	case "<=":
		op = asm.JLE
	case ">":
		op = asm.JGT
	case ">=":
		op = asm.JGE
	case "&":
		op = asm.JSet
	default:
		return s.ct.errf(what, "%s on a number", fl.Cmp)
	}
	if signed {
		switch op {
		case asm.JLT:
			op = asm.JSLT
		case asm.JLE:
			op = asm.JSLE
		case asm.JGT:
			op = asm.JSGT
		case asm.JGE:
			op = asm.JSGE
		}
	}
	g.ins(op.Reg(asm.R1, asm.R2, t), asm.Ja.Label(f))
	return nil
}

// mapPtr loads a map's address into R1.
func mapPtr(m *mapDef) asm.Instruction {
	return asm.LoadMapPtr(asm.R1, 0).WithReference(m.name)
}

// synthHeader is the bytes of a synthetic event record's header: its
// index, the time, the pid, the CPU.
const synthHeader = 32

// eventsMap is the perf event array the synthetic events go to when
// Options.OnSynth wants them.
const eventsMap = "events"

// statsMap holds the engine's counters, u64 each (statSlots): for each
// map, the events whose insert found it full and those whose insert failed
// otherwise; then the synthetic events' records the perf ring had no room
// for; then the code of the last insert that failed otherwise.
const statsMap = "stats"

// The stats map's slots, for maps maps.
func fullSlot(m int) uint32         { return uint32(8 * (2 * m)) }
func failedSlot(m int) uint32       { return uint32(8 * (2*m + 1)) }
func unwrittenSlot(maps int) uint32 { return uint32(8 * (2 * maps)) }
func lastErrSlot(maps int) uint32   { return uint32(8 * (2*maps + 1)) }
func statSlots(maps int) int        { return 2*maps + 2 }

// errE2BIG is the errno a full hash map's insert returns (its elements
// preallocated: all taken).
const errE2BIG = 7

// trigger generates one trigger on the event of ec.
func (g *gen) trigger(ct *ctrig, ec *evctx) error {
	saveTop, saveStop, saveOrigin, saveTrig := g.top, g.stop, g.origin, g.trig
	defer func() { g.top, g.stop, g.origin, g.trig = saveTop, saveStop, saveOrigin, saveTrig }()
	g.trig = ct.idx
	g.origin = ""
	s := &tstate{ct: ct, ec: ec}
	end := g.label()
	m := ct.m
	if ct.t.Filter != nil {
		pass := g.label()
		g.origin = "if " + ct.t.Filter.String()
		if err := g.cond(s, ct.t.Filter, pass, end); err != nil {
			return err
		}
		g.at(pass)
	}
	// The key.
	s.key = g.alloc(m.keySize)
	g.origin = "keys=" + joinExprs(ct.t.Keys)
	g.zero(s.key, m.keySize)
	for i, p := range m.parts {
		k := ct.t.Keys[i]
		g.origin = k.String()
		if p.kind == partStack {
			if k.Kind == planner.ExprStack {
				g.stack(g.fp, s.key+int16(p.off))
				continue
			}
			off, ok := ec.synth[k.Name]
			if !ok {
				return ct.errf(k.String(), "stack field %s is not set by the program", k.Name)
			}
			g.copyString(strSrc{off: off, size: stackBytes}, s.key+int16(p.off), stackBytes)
			continue
		}
		if p.kind == partStr && ec.synth == nil && p.field.Kind == tracefs.KindDynString {
			// Read straight into the key (zeroed).
			if p.field.Offset < 8 || p.field.Offset%4 != 0 {
				return ct.errf(k.String(), "%s's location is not readable", k.Name)
			}
			g.dynString(p.field, s.key+int16(p.off), p.size)
			continue
		}
		if p.kind == partStr {
			src, err := g.stringOf(s, k.Name, p.size)
			if err != nil {
				return err
			}
			g.copyString(src, s.key+int16(p.off), p.size)
			continue
		}
		if err := g.expr(s, k, 0, end); err != nil {
			return err
		}
		switch k.Mod {
		case "log2":
			g.log2()
		case "buckets":
			if k.Buckets == 0 {
				return ct.errf(k.String(), "buckets of 0")
			}
			g.ins(asm.LoadImm(asm.R2, int64(k.Buckets), asm.DWord), asm.Div.Reg(asm.R1, asm.R2), asm.Mul.Reg(asm.R1, asm.R2))
		case "", "hex", "sym", "sym-offset", "execname", "syscall", "usecs":
		default:
			return ct.errf(k.String(), "modifier .%s on a key", k.Mod)
		}
		if p.field != nil && p.field.Size < 8 {
			g.mask(asm.R1, p.field.Size)
		}
		g.ins(asm.StoreMem(g.fp, s.key+int16(p.off), asm.R1, asm.DWord))
	}
	// The other triggers' variables, looked up by this key.
	for i, r := range ct.refs {
		g.origin = "$" + r.name
		slot := g.allocStack(8)
		s.refVals = append(s.refVals, slot)
		off := int16(r.t.m.vars[r.idx])
		g.ins(mapPtr(r.t.m),
			asm.Mov.Reg(asm.R2, g.fp), asm.Add.Imm(asm.R2, int32(s.key)),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, end),
			asm.LoadMem(asm.R1, asm.R0, off-8, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, end))
		if r.t.blob(r.idx) {
			// A string or a stack trace: its address in the other entry (the program
			// runs under RCU and a map never frees an entry).
			g.ins(asm.Mov.Reg(asm.R1, asm.R0), asm.Add.Imm(asm.R1, int32(off)))
		} else {
			g.ins(asm.LoadMem(asm.R1, asm.R0, off, asm.DWord))
		}
		g.ins(asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord))
		if ct.once[r.name] {
			g.ins(storeImm(asm.R0, off-8, 0))
		}
		_ = i
	}
	// The entry: found, or made from a template (zero, with the task
	// names of .execname keys); a full map drops the event.
	g.origin = ""
	have, again, drop := g.label(), g.label(), g.label()
	g.ins(mapPtr(m),
		asm.Mov.Reg(asm.R2, g.fp), asm.Add.Imm(asm.R2, int32(s.key)),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, have))
	tmpl := g.alloc(m.valSize)
	g.zero(tmpl, align8(m.valSize))
	for _, off := range m.comm {
		if off >= 0 {
			g.ins(asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(tmpl)+int32(off)), asm.Mov.Imm(asm.R2, 16),
				asm.FnGetCurrentComm.Call())
		}
	}
	// The update's result is compared on its low 32 bits: the verifier
	// turns the helper into a direct call of the map's own update, an
	// int function before Linux 6.4 ("bpf: Change bpf map
	// update/delete to return long"), so on 5.10 and 6.1 R0 holds -17
	// as 0x00000000ffffffef, which a 64-bit compare with -17 misses: a
	// lost race of two CPUs inserting one key (EEXIST, which is fine)
	// was counted a failed insert whose code read 0xffffffff00000011
	// (6.1's run phase, 2026-12-06).
	const noExist, eExist = 1, -17
	g.ins(mapPtr(m),
		asm.Mov.Reg(asm.R2, g.fp), asm.Add.Imm(asm.R2, int32(s.key)),
		asm.Mov.Reg(asm.R3, g.fp), asm.Add.Imm(asm.R3, int32(tmpl)),
		asm.Mov.Imm(asm.R4, noExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm32(asm.R0, 0, again),
		asm.JEq.Imm32(asm.R0, eExist, again))
	// R0 is the insert's error, or 0 when the entry it made (or found
	// made) is not there: a full map is told apart from the rest, whose
	// last code is kept (the kernel's verdict, reported as it is: its low
	// 32 bits, sign-extended, negated).
	g.at(drop)
	full := g.label()
	g.ins(asm.JEq.Imm32(asm.R0, -errE2BIG, full),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.LSh.Imm(asm.R3, 32),
		asm.ArSh.Imm(asm.R3, 32),
		asm.Neg.Imm(asm.R3, 0),
		asm.LoadMapValue(asm.R1, 0, failedSlot(m.stat)).WithReference(statsMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
		asm.LoadMapValue(asm.R1, 0, lastErrSlot(len(g.e.maps))).WithReference(statsMap),
		asm.StoreMem(asm.R1, 0, asm.R3, asm.DWord),
		asm.Ja.Label(end))
	g.at(full)
	g.ins(asm.LoadMapValue(asm.R1, 0, fullSlot(m.stat)).WithReference(statsMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
		asm.Ja.Label(end))
	g.at(again)
	g.ins(mapPtr(m),
		asm.Mov.Reg(asm.R2, g.fp), asm.Add.Imm(asm.R2, int32(s.key)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, drop))
	g.at(have)
	g.ins(asm.Mov.Reg(rEntry, asm.R0))
	g.add(m, 0, true)
	s.inEntry = true
	// The sums: a value whose variable is not set adds nothing.
	for i, x := range ct.vals {
		g.origin = x.String()
		skip := g.label()
		if err := g.expr(s, x, 0, skip); err != nil {
			return err
		}
		g.add(m, m.sums[i], false)
		g.at(skip)
	}
	// The variables, all computed from the values before this event's.
	readsOwn := false
	for _, v := range ct.t.Vars {
		for _, n := range v.Expr.Vars() {
			_, own := ct.own[n]
			readsOwn = readsOwn || own
		}
	}
	if readsOwn && len(ct.strVars)+len(ct.stackVars) > 0 {
		return ct.errf("", "string or stack variables beside variables that read the trigger's own are not compiled")
	}
	if readsOwn {
		slots := g.alloc(16 * len(ct.t.Vars))
		for i, v := range ct.t.Vars {
			g.origin = v.Name + "=" + v.Expr.String()
			skip := g.label()
			o := slots + int16(16*i)
			g.ins(storeImm(g.fp, o+8, 0))
			if err := g.expr(s, v.Expr, 0, skip); err != nil {
				return err
			}
			g.ins(asm.StoreMem(g.fp, o, asm.R1, asm.DWord), storeImm(g.fp, o+8, 1))
			g.at(skip)
		}
		for i := range ct.t.Vars {
			skip := g.label()
			o := slots + int16(16*i)
			g.ins(asm.LoadMem(asm.R1, g.fp, o+8, asm.DWord), asm.JEq.Imm(asm.R1, 0, skip),
				asm.LoadMem(asm.R1, g.fp, o, asm.DWord),
				asm.StoreMem(rEntry, int16(m.vars[i]), asm.R1, asm.DWord),
				storeImm(rEntry, int16(m.vars[i])-8, 1))
			g.at(skip)
		}
	} else {
		for i, v := range ct.t.Vars {
			g.origin = v.Name + "=" + v.Expr.String()
			if f := ct.strVars[i]; f != nil {
				if err := g.stringVar(s, i, f); err != nil {
					return err
				}
				continue
			}
			if ct.stackVars[i] {
				off := int16(m.vars[i])
				g.stack(rEntry, off)
				g.ins(storeImm(rEntry, off-8, 1))
				continue
			}
			skip := g.label()
			if err := g.expr(s, v.Expr, 0, skip); err != nil {
				return err
			}
			g.ins(asm.StoreMem(rEntry, int16(m.vars[i]), asm.R1, asm.DWord),
				storeImm(rEntry, int16(m.vars[i])-8, 1))
			g.at(skip)
		}
	}
	// The actions, in order.
	track := 0
	for _, a := range ct.t.Actions {
		g.origin = a.String()
		if a.Handler == planner.OnMatch {
			if err := g.fire(s, a); err != nil {
				return err
			}
			continue
		}
		slot := track
		track++
		skip := g.label()
		off := int16(m.tracks[slot])
		if ct.blob(ct.own[a.Track]) {
			return ct.errf(a.String(), "$%s is not a number", a.Track)
		}
		vo := int16(m.vars[ct.own[a.Track]])
		g.ins(asm.LoadMem(asm.R1, rEntry, vo-8, asm.DWord), asm.JEq.Imm(asm.R1, 0, skip),
			asm.LoadMem(asm.R1, rEntry, vo, asm.DWord),
			asm.LoadMem(asm.R2, rEntry, off, asm.DWord))
		if a.Handler == planner.OnMax {
			g.ins(asm.JLE.Reg(asm.R1, asm.R2, skip))
		} else {
			g.ins(asm.JEq.Reg(asm.R1, asm.R2, skip))
		}
		g.ins(asm.StoreMem(rEntry, off, asm.R1, asm.DWord))
		switch a.Kind {
		case planner.ActSave:
			for i, p := range a.Params {
				unset := g.label()
				stored := g.label()
				if p.Kind == planner.ExprField {
					if f := ec.ev.Field(p.Name); f != nil && f.IsString() {
						return ct.errf(p.String(), "a string saved by save() is not compiled yet")
					}
				}
				if err := g.expr(s, p, 0, unset); err != nil {
					return err
				}
				g.ins(asm.StoreMem(rEntry, off+8+int16(8*i), asm.R1, asm.DWord), asm.Ja.Label(stored))
				g.at(unset)
				g.ins(storeImm(rEntry, off+8+int16(8*i), 0))
				g.at(stored)
			}
		case planner.ActTrace:
			if err := g.fire(s, a); err != nil {
				return err
			}
		}
		g.at(skip)
	}
	g.at(end)
	return nil
}

// fire builds the synthetic event of a trace action on the stack and
// runs its triggers inline, as the kernel's trace_synth runs them at
// once.
func (g *gen) fire(s *tstate, a *planner.Action) error {
	def := g.e.synths[a.Synth]
	var on []*ctrig
	for _, ct := range g.e.ctrigs {
		if ct.t.System == SyntheticSystem && ct.t.Event == a.Synth {
			on = append(on, ct)
		}
	}
	events := g.e.opt.OnSynth != nil
	if len(on) == 0 && !events {
		return nil // nothing reads the event
	}
	if g.depth >= 4 {
		return s.ct.errf(a.String(), "synthetic events fired more than 4 deep (a cycle?)")
	}
	first := len(def.Fields)
	for i, f := range def.Fields {
		if !f.IsCommon() {
			first = i
			break
		}
	}
	// The record, one block: a header (the synthetic event's index, the
	// time, the pid, the CPU: what Options.OnSynth is given), then each
	// field, 8 bytes or a string's or stack's, zeroed.
	size := synthHeader
	for _, f := range def.Fields[first:] {
		switch f.Kind {
		case tracefs.KindInt, tracefs.KindPointer:
			size += 8
		case tracefs.KindString, tracefs.KindDynString, tracefs.KindDynArray:
			size += g.e.fieldBytes(def, f)
		default:
			return s.ct.errf(a.String(), "synthetic field %s (%s) is not compiled yet", f.Name, f.Decl)
		}
	}
	block := g.alloc(size)
	g.zero(block, size)
	rec := map[string]int16{}
	at := block + synthHeader
	for _, f := range def.Fields[first:] {
		rec[f.Name] = at
		if f.Kind == tracefs.KindInt || f.Kind == tracefs.KindPointer {
			at += 8
		} else {
			at += int16(g.e.fieldBytes(def, f))
		}
	}
	skip := g.label()
	for i, p := range a.Params {
		j := first + i
		if j >= len(def.Fields) {
			break
		}
		f := def.Fields[j]
		if f.Kind == tracefs.KindDynArray && p.Kind == planner.ExprStack {
			g.stack(g.fp, rec[f.Name])
			continue
		}
		if f.IsString() || f.Kind == tracefs.KindDynArray {
			n := g.e.fieldBytes(def, f)
			if p.Kind == planner.ExprVar {
				i := slices.IndexFunc(s.ct.refs, func(r varRef) bool { return r.name == p.Name })
				if i < 0 || !s.ct.refs[i].t.blob(s.ct.refs[i].idx) || s.ct.refs[i].t.stackVars[s.ct.refs[i].idx] != (f.Kind == tracefs.KindDynArray) {
					return s.ct.errf(p.String(), "%s is not a %s variable of another trigger", p.String(), map[bool]string{true: "stack trace", false: "string"}[f.Kind == tracefs.KindDynArray])
				}
				r := s.ct.refs[i]
				g.copyString(strSrc{ptr: true, off: s.refVals[i], size: r.t.m.varBytes(r.idx)}, rec[f.Name], n)
				continue
			}
			if p.Kind != planner.ExprField || f.Kind == tracefs.KindDynArray {
				return s.ct.errf(p.String(), "a string parameter must be a string field or variable, a stack trace's the stack or a variable")
			}
			src, err := g.stringOf(s, p.Name, f.Size)
			if err != nil {
				return err
			}
			if src.field != nil && src.field.Kind != tracefs.KindString && src.field.Kind != tracefs.KindDynString {
				return s.ct.errf(p.String(), "%s is not a string", p.Name)
			}
			g.copyString(src, rec[f.Name], n)
			continue
		}
		if err := g.expr(s, p, 0, skip); err != nil {
			return err
		}
		g.truncate(asm.R1, f)
		g.ins(asm.StoreMem(g.fp, rec[f.Name], asm.R1, asm.DWord))
	}
	if events {
		// The record to the perf buffer: bpf_perf_event_output on this
		// CPU's ring (a full ring loses it: the reader counts the loss).
		g.ins(asm.LoadImm(asm.R1, int64(g.e.synthIndex(a.Synth)), asm.DWord),
			asm.StoreMem(g.fp, block, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, g.fp, g.ts, asm.DWord),
			asm.StoreMem(g.fp, block+8, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, g.fp, g.pid, asm.DWord),
			asm.StoreMem(g.fp, block+16, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, g.fp, g.cpu, asm.DWord),
			asm.StoreMem(g.fp, block+24, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R1, g.ctxReg()),
			asm.LoadMapPtr(asm.R2, 0).WithReference(eventsMap),
			asm.LoadImm(asm.R3, 0xffffffff, asm.DWord), // BPF_F_CURRENT_CPU
			asm.Mov.Reg(asm.R4, g.fp), asm.Add.Imm(asm.R4, int32(block)),
			asm.Mov.Imm(asm.R5, int32(size)),
			asm.FnPerfEventOutput.Call())
		// A record the ring had no room for is counted here: the kernel
		// tells the reader of such losses only with its next record,
		// and a run's last moments have none (TestHostEvents under a
		// loaded CI host: 433 of the reader's 502 events, 0 told lost).
		written := g.label()
		g.ins(asm.JSGE.Imm(asm.R0, 0, written),
			asm.LoadMapValue(asm.R1, 0, unwrittenSlot(len(g.e.maps))).WithReference(statsMap),
			asm.Mov.Imm(asm.R2, 1),
			asm.StoreXAdd(asm.R1, asm.R2, asm.DWord))
		g.at(written)
	}
	save := g.allocStack(8)
	g.ins(asm.StoreMem(asm.R10, save, rEntry, asm.DWord))
	g.depth++
	ec := &evctx{ev: def, synth: rec}
	origin := g.origin
	for _, ct := range on {
		if err := g.trigger(ct, ec); err != nil {
			return err
		}
	}
	g.origin = origin
	g.depth--
	g.ins(asm.LoadMem(rEntry, asm.R10, save, asm.DWord))
	g.at(skip)
	return nil
}

// needs scans what the event's program reads once at its start: the
// time, the pid, the CPU (the triggers of the synthetic events it fires
// included).
func (e *Engine) needs(ts []*ctrig, depth int, ts0, pid0, cpu0 *bool) {
	if depth > 4 {
		return
	}
	for _, ct := range ts {
		var xs []*planner.Expr
		xs = append(append(xs, ct.t.Keys...), ct.vals...)
		for _, v := range ct.t.Vars {
			xs = append(xs, v.Expr)
		}
		for _, a := range ct.t.Actions {
			xs = append(xs, a.Params...)
			if a.Kind == planner.ActTrace {
				if e.opt.OnSynth != nil {
					// The record's header.
					*ts0, *pid0, *cpu0 = true, true, true
				}
				var on []*ctrig
				for _, o := range e.ctrigs {
					if o.t.System == SyntheticSystem && o.t.Event == a.Synth {
						on = append(on, o)
					}
				}
				e.needs(on, depth+1, ts0, pid0, cpu0)
			}
		}
		synth := ct.t.System == SyntheticSystem
		for _, x := range xs {
			x.Walk(func(o *planner.Expr) {
				switch {
				case o.Kind == planner.ExprTimestamp:
					*ts0 = true
				case o.Kind == planner.ExprCPU:
					*cpu0 = true
				case o.Kind == planner.ExprField && o.Name == "common_pid":
					*pid0 = true
				}
			})
		}
		var walk func(f *planner.Filter)
		walk = func(f *planner.Filter) {
			if f == nil {
				return
			}
			switch f.Field {
			case "CPU", "cpu", "common_cpu":
				*cpu0 = true
			case "common_pid":
				*pid0 = true
			}
			walk(f.L)
			walk(f.R)
		}
		walk(ct.t.Filter)
		_ = synth
	}
}

// program generates the program of one traced event: its triggers in
// order.
func (e *Engine) program(system, event string, ts []*ctrig) (*progDef, error) {
	scratch := forceScratch
	p, err := e.programIn(system, event, ts, scratch, false)
	var be *Error
	if !forceScratch && errors.As(err, &be) && be.frame > 0 {
		// Too big for the stack: the frame in the scratch map.
		scratch = true
		p, err = e.programIn(system, event, ts, true, false)
		if p != nil {
			e.scratch = true
		}
	}
	if forceScratch && p != nil {
		e.scratch = true
	}
	if p != nil && p.probe != nil && p.probe.nargs >= 0 {
		// The same triggers on fentry/fexit, where the probe's fetches
		// allow it: Load tries them first.
		if alt, aerr := e.programIn(system, event, ts, scratch, true); aerr == nil && !callsStack(alt.insns) {
			p.alt = alt
		}
	}
	return p, err
}

// callsStack says whether a program reads the kernel stack (whose frames
// a fentry program's differ from a kprobe's).
func callsStack(insns asm.Instructions) bool {
	for _, ins := range insns {
		if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnGetStack) {
			return true
		}
	}
	return false
}

// forceScratch puts every program's frame in the scratch map (for the
// tests).
var forceScratch bool

// scratchMap is a per-CPU array of one scratchSize-byte value, the frame
// of the programs whose keys and records do not fit the BPF stack.
const (
	scratchMap  = "scratch"
	scratchSize = 4096
)

func (e *Engine) programIn(system, event string, ts []*ctrig, scratch, fentry bool) (*progDef, error) {
	return e.programWith(system, event, ts, scratch, fentry, nil, nil)
}

// programRaw compiles p's triggers as a raw tracepoint's program (see
// rawtp.go): with task nil, only to collect in use the fields it reads.
func (e *Engine) programRaw(p *progDef, use *rawUse, task map[string]int) (*progDef, error) {
	return e.programWith(p.system, p.event, p.triggers, e.scratch, false, use, task)
}

func (e *Engine) programWith(system, event string, ts []*ctrig, scratch, fentry bool, raw *rawUse, task map[string]int) (*progDef, error) {
	g := &gen{e: e, trig: ts[0].idx, fp: asm.R10, fentry: fentry, rawUse: raw}
	var needTS, needPID, needCPU bool
	e.needs(ts, 0, &needTS, &needPID, &needCPU)
	g.origin = ""
	g.ins(asm.Mov.Reg(rCtx, asm.R1))
	if raw != nil {
		g.ins(asm.Mov.Reg(rawCtx, asm.R1))
	}
	limit := maxFrame
	if scratch {
		// R8 = the CPU's scratch value + its size (the program cannot
		// nest on a CPU: the value is its own while it runs).
		limit = scratchSize
		g.ins(asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(scratchMap),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "have_scratch"),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
			asm.Mov.Reg(asm.R8, asm.R0).WithSymbol("have_scratch"),
			asm.Add.Imm(asm.R8, scratchSize))
		g.fp = asm.R8
	}
	g.ts, g.pid, g.cpu = g.alloc(8), g.alloc(8), g.alloc(8)
	if needTS {
		g.ins(asm.FnKtimeGetNs.Call(), asm.StoreMem(g.fp, g.ts, asm.R0, asm.DWord))
	}
	if needPID {
		g.ins(asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg32(asm.R0, asm.R0), asm.StoreMem(g.fp, g.pid, asm.R0, asm.DWord))
	}
	if needCPU {
		g.ins(asm.FnGetSmpProcessorId.Call(), asm.Mov.Reg32(asm.R0, asm.R0), asm.StoreMem(g.fp, g.cpu, asm.R0, asm.DWord))
	}
	ec := &evctx{ev: ts[0].ev}
	if raw != nil && task != nil {
		g.rawPrologue(ec.ev, task)
	}
	pi := e.probes[system+"/"+event]
	if pi != nil {
		rec, err := g.probeRecord(ts[0], pi)
		if err != nil {
			return nil, err
		}
		ec.synth, ec.probe = rec, true
	}
	for _, ct := range ts {
		if err := g.trigger(ct, ec); err != nil {
			return nil, err
		}
	}
	g.origin = ""
	g.ins(asm.Mov.Imm(asm.R0, 0), asm.Return())
	if g.smax+8 > maxFrame {
		return nil, &Error{Trigger: ts[0].idx, Event: system + "/" + event,
			Reason: fmt.Sprintf("the program reads %d variables of other triggers at once: too many for the BPF stack", g.smax/8)}
	}
	if g.max > limit {
		return nil, &Error{Trigger: ts[0].idx, Event: system + "/" + event, frame: g.max,
			Reason: fmt.Sprintf("the program needs %d bytes for its keys and records; it has %d (fewer or shorter string keys)", g.max, scratchSize)}
	}
	insns, origins := reachable(g.insns, g.origins)
	return &progDef{system: system, event: event, insns: insns, origins: origins, triggers: ts, probe: pi}, nil
}

// reachable drops the instructions no path reaches (a label no jump
// took: a value that cannot be unset), which the verifier refuses.
func reachable(insns asm.Instructions, origins []origin) (asm.Instructions, []origin) {
	at := map[string]int{}
	for i, ins := range insns {
		if s := ins.Symbol(); s != "" {
			at[s] = i
		}
	}
	seen := make([]bool, len(insns))
	work := []int{0}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		if i >= len(insns) || seen[i] {
			continue
		}
		seen[i] = true
		ins := insns[i]
		op := ins.OpCode.JumpOp()
		cls := ins.OpCode.Class()
		if !cls.IsJump() || op == asm.Call {
			work = append(work, i+1)
			continue
		}
		switch op {
		case asm.Exit:
		case asm.Ja:
			work = append(work, at[ins.Reference()])
		default:
			work = append(work, at[ins.Reference()], i+1)
		}
	}
	var out asm.Instructions
	var outO []origin
	for i, ins := range insns {
		if seen[i] {
			out = append(out, ins)
			outO = append(outO, origins[i])
		}
	}
	return out, outO
}

// progDef is one generated program.
type progDef struct {
	system, event string
	insns         asm.Instructions
	origins       []origin
	triggers      []*ctrig
	probe         *probeInfo // the probe the program is attached to, or nil (a tracepoint)
	// alt is the probe's program as fentry/fexit (BTF's arguments), when
	// its fetches allow it.
	alt *progDef
	// raw is the tracepoint's program as a raw tracepoint's (rawtp.go),
	// when the tracepoint's arguments give what it reads; set by Load.
	raw *progDef
}

// origin is what an instruction computes: for which trigger (its index)
// and what of it (an expression, a filter, an action, "keys=…").
type origin struct {
	trig int
	what string
}

// originAt is what the instruction at raw offset off computes.
func (p *progDef) originAt(off int) origin {
	raw := 0
	for i, ins := range p.insns {
		if raw >= off {
			return p.origins[i]
		}
		raw += int(ins.Width())
	}
	if len(p.origins) > 0 {
		return p.origins[len(p.origins)-1]
	}
	return origin{p.triggers[0].idx, ""}
}
