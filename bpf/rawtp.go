package bpf

import (
	"github.com/cilium/ebpf/asm"

	"github.com/sqlhist/sqlhist/tracefs"
)

// Raw tracepoints. A classic tracepoint program (BPF_PROG_TYPE_TRACEPOINT)
// reads the record the kernel builds for it: the tracepoint's
// TP_fast_assign runs, into a per-CPU perf buffer, before the program.
// A raw tracepoint program (BPF_PROG_TYPE_RAW_TRACEPOINT) gets the
// tracepoint's own arguments instead, and no record is built: on 6.1
// that is about 500 ns of guest time an event less (make bench-kernel's
// rows bpf-empty-tp and bpf-empty-rawtp), what runqlat's tp_btf programs
// save too.
//
// Where every field a program reads is one the arguments give exactly
// (rawFields: a member of the task the argument points to, copied
// unchanged by TP_fast_assign; or the argument itself), and
// the running kernel's BTF gives the members' offsets (btfscan.go), the
// program is compiled a second time as a raw tracepoint's (progDef.raw):
// its prologue copies those fields, and only those, from the arguments
// into a record of the event's layout on its frame, and the triggers
// then read that record exactly as they read the kernel's. Load tries
// the raw variants first and falls back to the classic programs when
// the kernel refuses them (Options.NoRaw forces the classic ones).
//
// Not compiled raw: a program that reads a field not listed (a computed
// one, such as sched_switch's prev_state), an event not listed (the
// system calls'), a __data_loc
// string, or the kernel stack (its frames differ from the classic
// tracepoint's the stacks are calibrated with).

// rawField says where a raw tracepoint's arguments hold a record field.
type rawField struct {
	arg    int    // args[arg] of struct bpf_raw_tracepoint_args
	member string // a member of the struct task_struct args[arg] points to; "": the argument itself
}

// rawFields are the fields of each event that its raw tracepoint's
// arguments give exactly, from the events' TP_PROTO and TP_fast_assign
// (include/trace/events/sched.h), the same from 5.10 to 7.2:
// sched_waking, sched_wakeup and sched_wakeup_new take (struct
// task_struct *p) and copy p->pid and p->comm; sched_switch takes (bool
// preempt, struct task_struct *prev, struct task_struct *next, ...) and
// copies each task's pid and comm. The scheduler calls them with
// interrupts off (but for a task waking itself), so a program seldom
// nests in itself there (a skipped run is counted: Stop's lost). The system
// call tracepoints are left classic: 7.2's may sleep (they take page
// faults), and a raw program preempted in one is skipped when another
// task on its CPU enters a system call (the suite's 7.2 guest counted
// 13 program runs skipped among 14,347, and lost those calls); a
// classic program is not skipped so. The differential phase checks the
// raw fields against the kernel's hist triggers.
var rawFields = map[string]map[string]rawField{
	"sched/sched_waking":     wakeupRaw,
	"sched/sched_wakeup":     wakeupRaw,
	"sched/sched_wakeup_new": wakeupRaw,
	"sched/sched_switch": {
		"prev_pid": {1, "pid"}, "prev_comm": {1, "comm"},
		"next_pid": {2, "pid"}, "next_comm": {2, "comm"},
	},
}

var wakeupRaw = map[string]rawField{"pid": {0, "pid"}, "comm": {0, "comm"}}

// rawCtx holds a raw tracepoint program's context (its arguments) while
// rCtx points to the record its prologue builds.
const rawCtx = asm.R9

// rawUse is what a raw variant's first compilation found it reads.
type rawUse struct {
	fields map[string]*tracefs.Field
	bad    string // a field or read that stops the program from being raw
}

// rawField notes that the program reads field f of its event's record:
// false when the raw arguments do not give it.
func (g *gen) rawRead(ev *tracefs.Event, f *tracefs.Field) bool {
	m, ok := rawFields[ev.System+"/"+ev.Name][f.Name]
	if !ok || m.member != "" && f.Kind != tracefs.KindInt && f.Kind != tracefs.KindString ||
		m.member == "" && (f.Kind != tracefs.KindInt || sizes[f.Size] == 0) {
		if g.rawUse.bad == "" {
			g.rawUse.bad = f.Name
		}
		return false
	}
	g.rawUse.fields[f.Name] = f
	return true
}

// rawPrologue copies the fields the program reads (g.rawUse, from its
// first compilation) from the arguments (in rawCtx) into a record on
// the frame, and points rCtx at it: off fields at their record offsets.
func (g *gen) rawPrologue(ev *tracefs.Event, task map[string]int) {
	size := 8
	for _, f := range g.rawUse.fields {
		size = max(size, f.Offset+f.Size)
	}
	rec := g.alloc(size)
	for _, f := range ev.Fields {
		if g.rawUse.fields[f.Name] == nil {
			continue // in the record's order: deterministic
		}
		m := rawFields[ev.System+"/"+ev.Name][f.Name]
		at := rec + int16(f.Offset)
		if m.member == "" {
			g.ins(asm.LoadMem(asm.R0, rawCtx, int16(8*m.arg), asm.DWord),
				asm.StoreMem(g.fp, at, asm.R0, sizes[f.Size]))
			continue
		}
		g.ins(asm.LoadMem(asm.R3, rawCtx, int16(8*m.arg), asm.DWord),
			asm.Add.Imm(asm.R3, int32(task[m.member])),
			asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(at)),
			asm.Mov.Imm(asm.R2, int32(f.Size)),
			asm.FnProbeReadKernel.Call())
	}
	g.ins(asm.Mov.Reg(rCtx, g.fp), asm.Add.Imm(rCtx, int32(rec)))
}

// ctxReg is the register holding the program's context for helpers that
// take it (bpf_perf_event_output).
func (g *gen) ctxReg() asm.Register {
	if g.rawUse != nil {
		return rawCtx
	}
	return rCtx
}

// rawVariant compiles p's triggers again as a raw tracepoint program,
// or returns nil when the arguments do not give what they read or the
// kernel's BTF cannot be read.
func (e *Engine) rawVariant(p *progDef) *progDef {
	if p.probe != nil || e.opt.NoRaw || e.opt.Arch.Name != hostArch().Name {
		return nil
	}
	if _, ok := rawFields[p.system+"/"+p.event]; !ok {
		return nil
	}
	task, err := taskFields()
	if err != nil || task["pid"] == 0 || task["comm"] == 0 {
		return nil
	}
	use := &rawUse{fields: map[string]*tracefs.Field{}}
	if _, err := e.programRaw(p, use, nil); err != nil || use.bad != "" {
		return nil
	}
	raw, err := e.programRaw(p, use, task)
	if err != nil || use.bad != "" || callsStack(raw.insns) {
		return nil
	}
	return raw
}

// notRaw notes that the program reads what a raw tracepoint's
// arguments do not give (what).
func (g *gen) notRaw(what string) {
	if g.rawUse != nil && g.rawUse.bad == "" {
		g.rawUse.bad = what
	}
}
