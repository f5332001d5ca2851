package e2e

import (
	"strings"
	"testing"
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

// checkNoHistRefusal checks what refuseScript printed on a kernel
// without hist triggers (refusalKernels: Debian bullseye's 5.10 on x86-64,
// trixie's riscv64): sqlhist -e refuses with a message naming the missing
// feature and the kernel's release, prints nothing and writes nothing.
func checkNoHistRefusal(t *testing.T, kname, release, out string) {
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
	if s := sec["stderr"]; !strings.Contains(s, release) {
		t.Errorf("the refusal does not name the kernel's release %s:\n%s", release, s)
	}
	if s := sec["diff"]; s != "" {
		t.Errorf("tracefs changed:\n%s", s)
	}
	if !strings.Contains(out, "@@done") {
		t.Errorf("the guest script did not finish:\n%s", out)
	}
	t.Logf("%s (%s): sqlhist -e said: %s", kname, release, sec["stderr"])
}
