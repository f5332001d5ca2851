package planner

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// TestStreamPlansWithoutHistTriggers: for the stream engine a kernel
// without hist triggers (Debian's 5.10, riscv64's 6.12) gets the same
// lowering as one with them; without Stream it is refused as before.
func TestStreamPlansWithoutHistTriggers(t *testing.T) {
	const wake = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`
	for _, cat := range []*tracefs.Catalog{debian510(t), riscv612(t)} {
		if _, d := build(t, cat, wake, Options{}); d.Err() == nil || !strings.Contains(d.Error(), "no hist triggers") {
			t.Errorf("without Stream: %v, want the refusal naming hist triggers", d)
		}
		p := buildOK(t, cat, wake, Options{Stream: true})
		if len(p.Units) != 1 || p.Units[0].Synth == nil || p.Units[0].End == nil {
			t.Errorf("with Stream: want the JOIN's synthetic event and triggers, got %+v", p.Units)
		}
	}
}

// TestRiscvKprobesRefused: on riscv64 a kprobe is refused with the
// reason (its breakpoint is an NMI there, where the ring buffer takes no
// writes), a uprobe is not.
func TestRiscvKprobesRefused(t *testing.T) {
	cat := riscv612(t)
	_, d := build(t, cat, `SELECT TIMESTAMP_DELTA_USECS AS lat FROM kprobe(vfs_read) AS start JOIN kretprobe(vfs_read) AS end ON start.common_pid = end.common_pid`, Options{Stream: true})
	if d.Err() == nil || !strings.Contains(d.Error(), "kprobes record nothing on riscv64") {
		t.Fatalf("kprobe on riscv64: %v, want the refusal", d)
	}
}

func riscv612(t *testing.T) *tracefs.Catalog {
	t.Helper()
	arch, err := tracefs.LookupArch("riscv64")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tracefs.EmbeddedOf("6.12", arch)
	if err != nil {
		t.Fatal(err)
	}
	return tracefs.Open(fsys)
}
