package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

const refuseScript = `
T=/sys/kernel/tracing
snap() { cat $T/dynamic_events; grep -H '^[^#]' $T/events/*/*/trigger 2>/dev/null; ls $T/events; }
snap > /tmp/before.txt
/work/sqlhist -e -n wl 'SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid' > /tmp/out.txt 2> /tmp/err.txt
echo "@@exit $?"
echo "@@stdout"; cat /tmp/out.txt
echo "@@stderr"; cat /tmp/err.txt
snap > /tmp/after.txt
echo "@@diff"; diff /tmp/before.txt /tmp/after.txt | sed "s/^@@/ @@/"
echo "@@done"
`

// refusalJob boots a kernel without hist triggers (refusalKernels:
// Debian bullseye's 5.10 on x86-64, trixie's riscv64) with the static
// sqlhist of its architecture and checks that sqlhist -e refuses with a
// message naming the missing feature and the kernel's release, and writes
// nothing.
func refusalJob(t *testing.T, kname string) {
	start := time.Now()
	defer func() { notePhase(t, kname, "refusal", time.Since(start), nil) }()
	bin := buildStatic(t, kernelArch(t, kname))
	res := boot(t, kname, vm.Guest{
		Script: refuseScript, CombinedOutput: true, Timeout: 4 * time.Minute,
		Files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: bin}},
	})
	out := res.Stdout
	sec := sections(out)
	if !strings.Contains(out, "@@exit 1\n") {
		t.Errorf("sqlhist -e on %s: want exit 1; guest said:\n%s", kname, out)
	}
	if s := sec["stdout"]; s != "" {
		t.Errorf("sqlhist -e on %s printed a script:\n%s", kname, s)
	}
	if s := sec["stderr"]; !strings.Contains(s, "no hist triggers") {
		t.Errorf("the refusal does not name the missing feature:\n%s", s)
	}
	if s := sec["stderr"]; !strings.Contains(s, res.Kernel.Release) {
		t.Errorf("the refusal does not name the kernel's release %s:\n%s", res.Kernel.Release, s)
	}
	if s := sec["diff"]; s != "" {
		t.Errorf("tracefs changed:\n%s", s)
	}
	if !strings.Contains(out, "@@done") {
		t.Errorf("the guest script did not finish:\n%s", out)
	}
	t.Logf("%s (%s): sqlhist -e said: %s", kname, res.Kernel.Release, sec["stderr"])
}
