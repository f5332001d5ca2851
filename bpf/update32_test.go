package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/sqlhist/sqlhist/tracefs"
)

// TestUpdateResultCompared32: every compare of a map update's result is
// a 32-bit jump. Before Linux 6.4 the verifier makes the helper a direct
// call of the map's int update, whose -17 (EEXIST: another CPU inserted
// the key first, which is fine) reaches the program as 0x00000000ffffffef:
// a 64-bit compare with -17 missed it, and the lost race was counted a
// failed insert (6.1's run phase, 2026-12-06: "errno 18446744069414584337").
func TestUpdateResultCompared32(t *testing.T) {
	cat := catalog(t, "6.1")
	format := func(system, event string) (*tracefs.Event, error) { return cat.Event(system, event) }
	ts, synths := wakeupJoin("sched_waking", nil)
	e, err := New(ts, synths, format, Options{})
	if err != nil {
		t.Fatal(err)
	}
	updates, compares := 0, 0
	for _, p := range e.progs {
		for i, ins := range p.insns {
			if !ins.IsBuiltinCall() || asm.BuiltinFunc(ins.Constant) != asm.FnMapUpdateElem {
				continue
			}
			updates++
			for _, next := range p.insns[i+1:] {
				if next.OpCode.Class().IsJump() && next.Dst == asm.R0 && next.OpCode.JumpOp() != asm.Ja && next.OpCode.JumpOp() != asm.Call {
					compares++
					if next.OpCode.Class() != asm.Jump32Class {
						t.Errorf("%s/%s: the update's result compared on 64 bits: %v", p.system, p.event, next)
					}
					continue
				}
				break
			}
		}
	}
	if updates == 0 || compares < 2*updates {
		t.Errorf("%d map updates, %d compares of their results: want two a update at least", updates, compares)
	}
}
