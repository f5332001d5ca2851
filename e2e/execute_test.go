package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// executeScript applies a query with sqlhist -e, tears it down twice, and
// then makes the kernel refuse each of the query's three writes in turn:
//
//  1. the synthetic event: one of that name already exists in the kernel
//     but not in the catalog sqlhist compiles against (a shadow tracefs
//     whose events/ holds only sched/, and whose control files are
//     symlinks to the real ones), so only the kernel can refuse it;
//  2. the start trigger: a trigger on sched_waking already defines the
//     variable it needs;
//  3. the end trigger: likewise on sched_switch.
//
// After each refusal tracefs must be exactly as before.
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
echo "@@diff-teardown"; diff /tmp/s0 /tmp/s1 | sed "s/^@@/ @@/"
for e in sched_waking sched_switch; do
	mkdir -p /tmp/tfs/events/sched/$e
	for f in format trigger; do ln -s $T/events/sched/$e/$f /tmp/tfs/events/sched/$e/$f; done
done
for f in dynamic_events error_log README trace_clock; do ln -s $T/$f /tmp/tfs/$f; done
fault() {
	echo "$2" >> $T/$1
	snap > /tmp/before
	/work/sqlhist -e -t "$3" -n sqlhist_exec "$Q" 2> /tmp/err; echo "@@fault$4 $?"
	echo "@@fault$4-stderr"; cat /tmp/err
	snap > /tmp/after
	echo "@@diff-fault$4"; diff /tmp/before /tmp/after | sed "s/^@@/ @@/"
	echo "$5" >> $T/$1
}
fault dynamic_events 's:sqlhist_exec u64 other' /tmp/tfs 1 '-:sqlhist_exec'
fault events/sched/sched_waking/trigger 'hist:keys=common_pid:sqlhist_exec_ts_us=common_timestamp' $T 2 '!hist:keys=common_pid:sqlhist_exec_ts_us=common_timestamp'
fault events/sched/sched_switch/trigger 'hist:keys=next_pid:sqlhist_exec_lat=next_prio' $T 3 '!hist:keys=next_pid:sqlhist_exec_lat=next_prio'
snap > /tmp/s2
echo "@@diff-end"; diff /tmp/s0 /tmp/s2 | sed "s/^@@/ @@/"
# -e -B: a missing instance is created with the rest; --teardown leaves it.
/work/sqlhist -e -B sqlhist_eb -n sqlhist_eb "$Q" 2> /tmp/err; echo "@@instance-apply $?"
echo "@@instance-trigger"; grep -c sqlhist_eb $T/instances/sqlhist_eb/events/sched/sched_switch/trigger
/work/sqlhist -e --teardown -B sqlhist_eb -n sqlhist_eb "$Q"; echo "@@instance-teardown $?"
echo "@@instance-left"; grep -v '^#' $T/instances/sqlhist_eb/events/sched/sched_switch/trigger; ls -d $T/instances/sqlhist_eb
rmdir $T/instances/sqlhist_eb
snap > /tmp/s3
echo "@@diff-instance"; diff /tmp/s0 /tmp/s3 | sed "s/^@@/ @@/"
P='SELECT TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, dfd=$arg1:s32) AS start
JOIN kretprobe(sqlhist_no_such_function, ret=$retval:s64) AS end ON start.common_pid = end.common_pid'
snap > /tmp/s4
# Through the shadow tracefs, which has no available_filter_functions:
# sqlhist cannot check the function (a warning says so), the kernel
# refuses it. On $T sqlhist itself refuses it before any write.
/work/sqlhist -e -t /tmp/tfs -n sqlhist_probe "$P" 2> /tmp/err; echo "@@probe-fault $?"
echo "@@probe-stderr"; cat /tmp/err
snap > /tmp/s5
echo "@@diff-probe"; diff /tmp/s4 /tmp/s5 | sed "s/^@@/ @@/"
echo "@@done"
`

// teardownScript is the part of executeScript that 6.1 and 7.2 run
// (teardownKernels): teardowns after a killed -e and of an enabled
// synthetic event (checkTeardowns). About 3.5 s of guest time each.
const teardownScript = `
# Teardowns that always work. An -e killed after its Nth write (made
# here by the first N lines of the printed script): --teardown -e
# removes what is there, names what it skipped, exits 0.
read t0 x < /proc/uptime
snap > /tmp/s6
/work/sqlhist -n sqlhist_kill "$Q" | grep -v '^#' > /tmp/full.sh
for n in 1 2; do
	head -n $n /tmp/full.sh > /tmp/part.sh
	sh -e /tmp/part.sh; echo "@@part$n-apply $?"
	# What the kernel says to the removal of the end trigger that is not there.
	sed -n 3p /tmp/full.sh | sed "s/^echo '/echo '!/" > /tmp/rm.sh
	sh /tmp/rm.sh 2> /tmp/err; echo "@@part$n-rm-end $? $(cat /tmp/err)"
	/work/sqlhist -e --teardown -n sqlhist_kill "$Q" 2> /tmp/err; echo "@@part$n-teardown $?"
	echo "@@part$n-stderr"; cat /tmp/err
	snap > /tmp/s7
	echo "@@diff-part$n"; diff /tmp/s6 /tmp/s7 | sed "s/^@@/ @@/"
done
# A synthetic event someone enabled. The teardown before disables (the
# printed one without its disable line) fails on the removal: EBUSY.
/work/sqlhist -e -n sqlhist_en "$Q"; echo "@@en-apply $?"
echo 1 > $T/events/synthetic/sqlhist_en/enable
/work/sqlhist --teardown -n sqlhist_en "$Q" > /tmp/td.sh
grep -v '/enable$' /tmp/td.sh > /tmp/old.sh
sh /tmp/old.sh 2> /tmp/err; echo "@@en-old $?"
echo "@@en-old-stderr"; cat /tmp/err
echo "@@en-old-left"; grep -c sqlhist_en $T/dynamic_events; cat $T/events/synthetic/sqlhist_en/enable
# --teardown -e then disables it and removes it (the triggers are gone:
# their removals are noted as skipped).
/work/sqlhist -e --teardown -n sqlhist_en "$Q" 2> /tmp/err; echo "@@en-teardown $?"
echo "@@en-teardown-stderr"; cat /tmp/err
snap > /tmp/s8
echo "@@diff-en"; diff /tmp/s6 /tmp/s8 | sed "s/^@@/ @@/"
# The printed teardown under sh -e, of an enabled event and of one that
# is not (0 to a disabled event's enable is accepted).
for state in 1 0; do
	/work/sqlhist -e -n sqlhist_en "$Q"; echo "@@en$state-apply $?"
	echo $state > $T/events/synthetic/sqlhist_en/enable
	sh -e /tmp/td.sh; echo "@@en$state-script $?"
	snap > /tmp/s9
	echo "@@diff-en$state-script"; diff /tmp/s6 /tmp/s9 | sed "s/^@@/ @@/"
done
read t1 x < /proc/uptime
echo "@@teardowns-seconds $t0 $t1"
`

// teardownKernels run teardownScript in their execute phase.
var teardownKernels = map[string]bool{"6.1": true, "7.2": true}

// executePhase proves -e in kernel kname: a JOIN applied and torn down
// (twice), a write the kernel refuses at each step leaving tracefs as it
// was with the kernel's error_log in the diagnostic, -e -B, and a refused
// probe; in manPageKernels, libtracefs's man page example of -T as well.
func executePhase(t *testing.T, kname string) phase {
	arch := kernelArch(t, kname)
	script := forArch(executeScript, arch)
	q := "SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
	if stringJoinsRefused(kname) {
		script, q = withoutStrings.Replace(script), withoutStrings.Replace(q)
	}
	manPage := manPageKernels[kname]
	if manPage {
		script += manPageScript
	}
	if teardownKernels[kname] {
		script = strings.Replace(script, "echo \"@@done\"\n", teardownScript+"echo \"@@done\"\n", 1)
	}
	return phase{name: "execute", script: script, timeout: 4 * time.Minute,
		files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, arch)}},
		check: func(t *testing.T, out string) string {
			checkExecute(t, kname, q, out)
			if manPage {
				return fmt.Sprintf("man page -T snapshot %.1fs", checkManPage(t, kname, out))
			}
			return ""
		}}
}

// checkExecute checks what executeScript printed.
func checkExecute(t *testing.T, kname, q, out string) {
	sec := sections(out)
	wantLines(t, out, "@@apply 0", "@@teardown 0", "@@teardown-again 0", "@@fault1 1", "@@fault2 1", "@@fault3 1", "@@probe-fault 1", "@@instance-apply 0", "@@instance-teardown 0", "@@done")
	if a := sec["active"]; !strings.Contains(a, "dynamic_events:1") || !strings.Contains(a, "trigger:1") {
		t.Errorf("after -e the synthetic event and end trigger are not there:\n%s", a)
	}
	if sec["instance-trigger"] != "1" || sec["instance-left"] != "/sys/kernel/tracing/instances/sqlhist_eb" {
		t.Errorf("-e -B: trigger in the instance %q, after --teardown %q (want only the instance left)", sec["instance-trigger"], sec["instance-left"])
	}
	for _, d := range []string{"diff-teardown", "diff-fault1", "diff-fault2", "diff-fault3", "diff-end", "diff-instance"} {
		if sec[d] != "" {
			t.Errorf("%s: tracefs is not as before (not all or nothing):\n%s", d, sec[d])
		}
	}
	// Each refusal is the kernel's, at the SQL that produced the
	// refused write: the caret column is where that text starts.
	for _, f := range []struct {
		sec, what, kernel, at string
	}{
		{"fault1-stderr", "the kernel refused the synthetic event sqlhist_exec", "", "JOIN"},
		{"fault2-stderr", "the kernel refused the start trigger on sched/sched_waking", "Variable already defined", "sched_waking"},
		{"fault3-stderr", "the kernel refused the end trigger on sched/sched_switch", "Variable already defined", "sched_switch"},
	} {
		errText := sec[f.sec]
		if !strings.Contains(errText, f.what) || !strings.Contains(errText, f.kernel) || !strings.Contains(errText, "the kernel's error_log:") {
			t.Errorf("%s: want %q with the kernel's %q from error_log:\n%s", f.sec, f.what, f.kernel, errText)
		}
		if f.at != "" {
			pos := "<args>:1:" + strconv.Itoa(strings.Index(q, f.at)+1) + ":"
			if !strings.Contains(errText, pos) {
				t.Errorf("%s: not positioned at %q (%s):\n%s", f.sec, f.at, pos, errText)
			}
		}
		t.Logf("%s: %s:\n%s", kname, f.sec, errText)
	}
	// A probe on a function that does not exist, compiled where sqlhist
	// cannot check it (a shadow tracefs without available_filter_functions):
	// the kernel refuses the kretprobe, sqlhist reports its error_log
	// entry at the probe call and removes the kprobe it had already
	// created.
	if d := sec["diff-probe"]; d != "" {
		t.Errorf("a refused probe left tracefs different (not all or nothing):\n%s", d)
	}
	probeErr := sec["probe-stderr"]
	for _, want := range []string{"the functions of kprobes are not checked", "Invalid probed address or symbol", "<args>:2:", "the kernel refused the kretprobe sqlhist/sqlhist_no_such_function__return"} {
		if !strings.Contains(probeErr, want) {
			t.Errorf("the probe refusal does not say %q:\n%s", want, probeErr)
		}
	}
	t.Logf("%s: a probe on a missing function as sqlhist reports it:\n%s", kname, probeErr)
	if teardownKernels[kname] {
		checkTeardowns(t, kname, sec, lineValues(out))
	}
}

// lineValues maps NAME to REST for each "@@NAME REST" line of out (an
// exit status, a count).
func lineValues(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@"); ok {
			name, v, _ := strings.Cut(rest, " ")
			m[name] = strings.TrimSpace(v)
		}
	}
	return m
}

// checkTeardowns checks the teardowns of executeScript: after an -e
// killed after one write and after two, --teardown -e exits 0, names
// what it skipped and leaves tracefs as before; an enabled synthetic
// event is refused by the kernel (EBUSY) to a teardown that does not
// disable it, and removed by --teardown -e and by the printed teardown
// under sh -e, which also runs clean when the event is not enabled.
func checkTeardowns(t *testing.T, kname string, sec, val map[string]string) {
	for _, p := range []struct{ n, skipped string }{
		{"1", "2 of the 3 removals found nothing to remove (never made, or removed already), skipped: end trigger on sched/sched_switch; start trigger on sched/sched_waking"},
		{"2", "1 of the 3 removals found nothing to remove (never made, or removed already), skipped: end trigger on sched/sched_switch"},
	} {
		if val["part"+p.n+"-apply"] != "0" || val["part"+p.n+"-teardown"] != "0" {
			t.Errorf("%s: -e killed after %s writes: apply exit %q, --teardown -e exit %q:\n%s", kname, p.n, val["part"+p.n+"-apply"], val["part"+p.n+"-teardown"], sec["part"+p.n+"-stderr"])
		}
		if got := sec["part"+p.n+"-stderr"]; got != "sqlhist: note: "+p.skipped {
			t.Errorf("%s: -e killed after %s writes: --teardown -e said %q, want the note %q", kname, p.n, got, p.skipped)
		}
		t.Logf("%s: after %s writes, the kernel's answer to removing the end trigger that is not there: exit %s", kname, p.n, val["part"+p.n+"-rm-end"])
		if d := sec["diff-part"+p.n]; d != "" {
			t.Errorf("%s: -e killed after %s writes, then --teardown -e: tracefs is not as before:\n%s", kname, p.n, d)
		}
	}
	if val["en-apply"] != "0" || val["en-old"] == "0" || !strings.Contains(sec["en-old-stderr"], "busy") || sec["en-old-left"] != "1\n1" {
		t.Errorf("%s: the teardown without a disable of an enabled synthetic event: exit %q, stderr %q, left %q; want a failure with EBUSY and the event left, enabled",
			kname, val["en-old"], sec["en-old-stderr"], sec["en-old-left"])
	}
	t.Logf("%s: an enabled synthetic event, removed without a disable: %s", kname, sec["en-old-stderr"])
	if val["en-teardown"] != "0" || sec["diff-en"] != "" {
		t.Errorf("%s: --teardown -e of an enabled synthetic event: exit %q, stderr %q, tracefs after:\n%s", kname, val["en-teardown"], sec["en-teardown-stderr"], sec["diff-en"])
	}
	for _, state := range []string{"1", "0"} {
		if val["en"+state+"-apply"] != "0" || val["en"+state+"-script"] != "0" || sec["diff-en"+state+"-script"] != "" {
			t.Errorf("%s: the printed teardown under sh -e with the event's enable at %s: apply %q, script exit %q, tracefs after:\n%s",
				kname, state, val["en"+state+"-apply"], val["en"+state+"-script"], sec["diff-en"+state+"-script"])
		}
	}
	var t0, t1 float64
	fmt.Sscan(val["teardowns-seconds"], &t0, &t1)
	t.Logf("%s: the teardown checks took %.2f s of the guest", kname, t1-t0)
}
