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
	run()
	// The thread blocks in its last read before the programs go.
	time.Sleep(50 * time.Millisecond)
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
	t.Logf("task_struct.pid at offset %d (BTF); switches into the thread %d (record) and %d (raw arguments), out of it %d and %d", pidOff, c[0], c[2], c[1], c[3])
	if c[0] < n || c[1] < n {
		t.Errorf("the record counted %d switches into the thread and %d out: the workload made %d wakeups", c[0], c[1], n)
	}
	if c[0] != c[2] || c[1] != c[3] {
		t.Errorf("the raw arguments' pids counted %d switches in and %d out, the record's %d and %d", c[2], c[3], c[0], c[1])
	}
}
