package bpf

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// TestTracepointPrograms: a classic tracepoint program attached to
// sched_switch is named for a run that reads sched_switch; for a run of
// sys_enter alone it is left out where the kernel's link says it is on
// sched_switch (Linux 6.6), and named where the link does not say. One
// loaded and attached nowhere is named (nothing tells it from one
// attached through the perf event's ioctl).
func TestTracepointPrograms(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	load := func(name string) *ebpf.Program {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.TracePoint, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}})
		if err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		t.Cleanup(func() { prog.Close() })
		return prog
	}
	onSwitch, idle := load("onswitch"), load("idle")
	l, err := link.Tracepoint("sched", "sched_switch", onSwitch, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	placed := false
	if info, err := l.Info(); err == nil {
		if pe := info.PerfEvent(); pe != nil && pe.Tracepoint() != nil {
			placed = pe.Tracepoint().Tracepoint == "sched_switch"
		}
	}
	name := func(p *ebpf.Program) string {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		return fmt.Sprintf("id %d (%s)", id, info.Name)
	}
	has := func(list []string, p *ebpf.Program) bool { return slices.Contains(list, name(p)) }
	sw, err := TracepointPrograms([]string{"sched_switch"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := TracepointPrograms([]string{"sys_enter"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the link names its tracepoint: %v; for sched_switch: %s; for sys_enter: %s", placed, strings.Join(sw, ", "), strings.Join(other, ", "))
	if !has(sw, onSwitch) || !has(sw, idle) {
		t.Errorf("for sched_switch: %v, want %s and %s", sw, name(onSwitch), name(idle))
	}
	if has(other, onSwitch) == placed {
		t.Errorf("for sys_enter, the program on sched_switch named: %v; want it named only where the kernel's link does not place it (placed: %v)", has(other, onSwitch), placed)
	}
	if !has(other, idle) {
		t.Errorf("for sys_enter: %v, want the program attached nowhere named (%s)", other, name(idle))
	}
}
