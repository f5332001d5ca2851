package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// executeScript applies a query with sqlhist -e, tears it down twice, and
// then makes the kernel refuse the third write (the end trigger) by first
// installing a trigger that already defines the variable it needs.
const executeScript = `
T=/sys/kernel/tracing
Q='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
snap() { cat $T/dynamic_events; grep -v '^#' $T/events/sched/sched_waking/trigger $T/events/sched/sched_switch/trigger; ls $T/events/synthetic $T/events/sqlhist 2>/dev/null; }
snap > /tmp/s0
/work/sqlhist -e -n sqlhist_exec "$Q"; echo "@@apply $?"
echo "@@active"; grep -c sqlhist_exec $T/dynamic_events $T/events/sched/sched_switch/trigger
/work/sqlhist -e --teardown -n sqlhist_exec "$Q"; echo "@@teardown $?"
/work/sqlhist -e --teardown -n sqlhist_exec "$Q"; echo "@@teardown-again $?"
snap > /tmp/s1
echo "@@diff-teardown"; diff /tmp/s0 /tmp/s1
echo 'hist:keys=next_pid:sqlhist_exec_lat=next_prio' >> $T/events/sched/sched_switch/trigger
snap > /tmp/s2
/work/sqlhist -e -n sqlhist_exec "$Q" 2> /tmp/err; echo "@@fault $?"
echo "@@fault-stderr"; cat /tmp/err
snap > /tmp/s3
echo "@@diff-fault"; diff /tmp/s2 /tmp/s3
echo '!hist:keys=next_pid:sqlhist_exec_lat=next_prio' >> $T/events/sched/sched_switch/trigger
P='SELECT TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, dfd=$arg1:s32) AS start
JOIN kretprobe(sqlhist_no_such_function, ret=$retval:s64) AS end ON start.common_pid = end.common_pid'
snap > /tmp/s4
/work/sqlhist -e -n sqlhist_probe "$P" 2> /tmp/err; echo "@@probe-fault $?"
echo "@@probe-stderr"; cat /tmp/err
snap > /tmp/s5
echo "@@diff-probe"; diff /tmp/s4 /tmp/s5
echo "@@done"
`

// TestExecuteInKernels checks sqlhist -e in each kernel: applying, an
// idempotent teardown, and all-or-nothing when the kernel refuses a write.
func TestExecuteInKernels(t *testing.T) {
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 to boot real kernels (downloads Debian kernels on first use)")
	}
	bin := buildStatic(t)
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "6.1,6.12,7.2"), ",") {
		t.Run(kname, func(t *testing.T) {
			res := boot(t, kname, vm.Guest{Script: executeScript, CombinedOutput: true, Timeout: 4 * time.Minute,
				Files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: bin}}})
			sec := sections(res.Stdout)
			for _, want := range []string{"@@apply 0", "@@teardown 0", "@@teardown-again 0", "@@fault 1", "@@probe-fault 1", "@@done"} {
				if !strings.Contains(res.Stdout, want+"\n") {
					t.Errorf("want %q in the guest's output:\n%s", want, res.Stdout)
				}
			}
			if a := sec["active"]; !strings.Contains(a, "dynamic_events:1") || !strings.Contains(a, "trigger:1") {
				t.Errorf("after -e the synthetic event and end trigger are not there:\n%s", a)
			}
			if d := sec["diff-teardown"]; d != "" {
				t.Errorf("--teardown -e left tracefs different:\n%s", d)
			}
			if d := sec["diff-fault"]; d != "" {
				t.Errorf("a refused write left tracefs different (not all or nothing):\n%s", d)
			}
			errText := sec["fault-stderr"]
			for _, want := range []string{"Variable already defined", "<args>:1:", "the kernel refused the end trigger on sched/sched_switch"} {
				if !strings.Contains(errText, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, errText)
				}
			}
			t.Logf("%s: the kernel's refusal as sqlhist reports it:\n%s", kname, errText)
			// A probe on a function that does not exist: the kernel refuses
			// the kretprobe, sqlhist reports its error_log entry at the probe
			// call and removes the kprobe it had already created.
			if d := sec["diff-probe"]; d != "" {
				t.Errorf("a refused probe left tracefs different (not all or nothing):\n%s", d)
			}
			probeErr := sec["probe-stderr"]
			for _, want := range []string{"Invalid probed address or symbol", "<args>:2:", "the kernel refused the kretprobe sqlhist/sqlhist_no_such_function__return"} {
				if !strings.Contains(probeErr, want) {
					t.Errorf("the probe refusal does not say %q:\n%s", want, probeErr)
				}
			}
			t.Logf("%s: a probe on a missing function as sqlhist reports it:\n%s", kname, probeErr)
		})
	}
}
