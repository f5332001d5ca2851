package bpf

import (
	"encoding/binary"
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

// TestRawArgs answers, where the kernel has BTF, whether a raw
// tracepoint's arguments give what the BPF engine reads from the
// record (issue 43, item 5): sched_switch's next_pid and prev_pid are
// next->pid and prev->pid of its task arguments, read at the offset
// BTF gives for task_struct.pid. A classic tracepoint program (the
// engine's kind: the kernel builds the record first) and a raw one (no
// record: runqlat's kind) count the switches into and out of a
// ping-pong thread at once; each reads the pid its own way. The counts
// must be equal: the raw arguments are exact for these fields. The
// engine does not use BTF; this measures what it would give.
func TestRawArgs(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("the kernel has no BTF to find task_struct.pid with: %v", err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		t.Fatalf("task_struct in the kernel's BTF: %v", err)
	}
	pidOff := -1
	for _, m := range task.Members {
		if m.Name == "pid" {
			pidOff = int(m.Offset.Bytes())
		}
	}
	if pidOff < 0 {
		t.Fatal("task_struct has no pid member in the kernel's BTF")
	}
	ev, err := hostFormat("sched", "sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	next, prev := ev.Field("next_pid"), ev.Field("prev_pid")
	if next == nil || prev == nil || next.Size != 4 || prev.Size != 4 {
		t.Fatalf("sched_switch's next_pid and prev_pid: %+v %+v", next, prev)
	}
	runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 500
	tid, run, release := pingPong(t, n)
	defer release()
	// counts: [0] switches into the thread, [1] out of it, as the
	// record says; [2] and [3] as the raw arguments say.
	counts, err := ebpf.NewMap(&ebpf.MapSpec{Name: "counts", Type: ebpf.Array, KeySize: 4, ValueSize: 32, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer counts.Close()
	// count adds one to counts[slot] when R2 holds the thread's pid.
	count := func(slot int, label string) asm.Instructions {
		return asm.Instructions{
			asm.JNE.Imm(asm.R2, int32(tid), label),
			asm.LoadMapValue(asm.R1, counts.FD(), uint32(8*slot)),
			asm.Mov.Imm(asm.R2, 1),
			asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
		}
	}
	classic := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	classic = append(classic, asm.LoadMem(asm.R2, asm.R6, int16(next.Offset), asm.Word))
	classic = append(classic, count(0, "out")...)
	classic = append(classic, asm.LoadMem(asm.R2, asm.R6, int16(prev.Offset), asm.Word).WithSymbol("out"))
	classic = append(classic, count(1, "end")...)
	classic = append(classic, asm.Mov.Imm(asm.R0, 0).WithSymbol("end"), asm.Return())
	// The raw arguments of sched_switch: preempt, prev, next (and,
	// since 5.18, prev_state), each a u64 of the context.
	readPid := func(arg int16) asm.Instructions {
		return asm.Instructions{
			asm.LoadMem(asm.R3, asm.R6, 8*arg, asm.DWord),
			asm.Add.Imm(asm.R3, int32(pidOff)),
			asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8),
			asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
			asm.Mov.Imm(asm.R2, 4),
			asm.FnProbeReadKernel.Call(),
			asm.LoadMem(asm.R2, asm.R10, -8, asm.Word),
		}
	}
	raw := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	raw = append(raw, readPid(2)...)
	raw = append(raw, count(2, "out")...)
	p := readPid(1)
	p[0] = p[0].WithSymbol("out")
	raw = append(raw, p...)
	raw = append(raw, count(3, "end")...)
	raw = append(raw, asm.Mov.Imm(asm.R0, 0).WithSymbol("end"), asm.Return())
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	for _, typ := range []ebpf.ProgramType{ebpf.TracePoint, ebpf.RawTracepoint} {
		insns := classic
		if typ == ebpf.RawTracepoint {
			insns = raw
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "rawargs", Type: typ, License: "GPL", Instructions: insns})
		if err != nil {
			var ve *ebpf.VerifierError
			if errors.As(err, &ve) {
				t.Fatalf("%v: %+v", typ, ve)
			}
			t.Fatalf("%v: %v", typ, err)
		}
		defer prog.Close()
		var l link.Link
		if typ == ebpf.TracePoint {
			l, err = link.Tracepoint("sched", "sched_switch", prog, nil)
		} else {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: prog})
		}
		if err != nil {
			t.Fatalf("attaching the %v program: %v", typ, err)
		}
		links = append(links, l)
	}
	// The kernel's own count of the thread's switches, read while both
	// programs are attached: every switch between the two reads is one
	// each program saw. Whether the thread sleeps in a round depends on
	// timing (on a busy machine it may find its byte already there), so
	// the bound is what the kernel counted, not the rounds.
	v0, i0 := switchCounts(t, tid)
	run()
	// The thread blocks in its last read before the programs go.
	time.Sleep(50 * time.Millisecond)
	v1, i1 := switchCounts(t, tid)
	kernel := (v1 - v0) + (i1 - i0)
	for _, l := range links {
		l.Close()
	}
	links = nil
	buf := make([]byte, 32)
	if err := counts.Lookup(uint32(0), &buf); err != nil {
		t.Fatal(err)
	}
	c := make([]uint64, 4)
	for i := range c {
		c[i] = binary.NativeEndian.Uint64(buf[8*i:])
	}
	t.Logf("task_struct.pid at offset %d (BTF); switches into the thread %d (record) and %d (raw arguments), out of it %d and %d; the kernel counted %d out while both were attached", pidOff, c[0], c[2], c[1], c[3], kernel)
	if kernel == 0 {
		t.Errorf("the kernel counted no switch of the thread in %d rounds", n)
	}
	// Each switch out between the reads follows a switch in, but for
	// one that began before the first read. The switches in are held
	// to that loosely: on this machine's 6.18, loaded by the suite's
	// guests, both programs alike once saw 499 switches into the thread
	// and 501 out of it, all 501 the kernel counted (a fresh clone,
	// 2026-12-06, fc32): two were not seen by either program, which
	// tells nothing of the pids each reads (equal, below).
	if c[1] < kernel || c[0]+1+kernel/100 < kernel {
		t.Errorf("the record counted %d switches into the thread and %d out: the kernel counted %d out while the programs were attached", c[0], c[1], kernel)
	}
	if c[0] != c[2] || c[1] != c[3] {
		t.Errorf("the raw arguments' pids counted %d switches in and %d out, the record's %d and %d", c[2], c[3], c[0], c[1])
	}
}
