package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// killScript kills sqlhist -r at every step and checks that --cleanup
// restores the tracefs exactly. For each query, a whole run first counts
// its tracefs writes (SQLHIST_TEST_KILL_AFTER_WRITE logs them); then for
// every third N from $KFIRST (1, 2 or 3: the three kernels share the
// writes out, so that together they kill at each, in a third of the guest
// time) the run SIGKILLs itself right after its Nth write (the lease,
// its records, the apply, the pauses, the end marker, the teardown),
// --cleanup runs and the state (kstate) must equal the one before; then
// once more killed with kill -9 while it collects; then the same query
// runs to its end. Each run after a kill is the same query again, so
// leftovers in its way would show as an exit 1 before its Nth write. The
// whole loop runs in the guest: no host round trip per kill point.
const killScript = `
T=/sys/kernel/tracing
J='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
K='SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid'
A='SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat ORDER BY n DESC'
H='SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC'
cat > /tmp/kchain.sql <<'EOF'
CREATE VIEW ksysname AS
  SELECT start.id, end.prev_pid FROM sys_enter AS start
  JOIN sched_switch AS end ON start.common_pid = end.prev_pid
  WHERE end.prev_state == 2;
CREATE VIEW koffcpu AS
  SELECT start.id, end.next_comm AS comm, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
  FROM ksysname AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid;
SELECT CAST(id AS SYSCALL) AS call, comm, COUNT(*) AS n, SUM(lat) FROM koffcpu;
EOF
# kstate is the state compared after each kill: the definitions, the
# triggers of the event systems a run of these queries writes to (sched,
# raw_syscalls, synthetic, its probe groups), at the top level and in
# every instance, the enabled synthetic events and the instances.
# kstateall adds every other trigger file: compared once per query.
kstate() {
	cat $T/dynamic_events $T/kprobe_events $T/uprobe_events 2>/dev/null
	for d in $T $T/instances/*; do
		grep -H '^[^#]' $d/events/sched/*/trigger $d/events/raw_syscalls/*/trigger $d/events/synthetic/*/trigger $d/events/sqlhist*/*/trigger 2>/dev/null
	done
	grep -l 1 $T/events/synthetic/*/enable $T/instances/*/events/synthetic/*/enable 2>/dev/null
	ls $T/instances
}
kstateall() {
	kstate
	grep -H '^[^#]' $T/events/*/*/trigger $T/instances/*/events/*/*/trigger 2>/dev/null
}
kfail() { echo "@@kp-fail $*"; bad=$((bad + 1)); }
kclean() {
	/work/sqlhist --cleanup > /tmp/kco 2> /tmp/kce || { kfail "$1 cleanup exit $?"; cat /tmp/kce; }
	kstate > /tmp/k1
	cmp -s /tmp/k0 /tmp/k1 || { kfail "$1 state"; cat /tmp/kco; diff /tmp/k0 /tmp/k1 | sed "s/^@@/ @@/"; }
}
kp() {
	name=$1; shift
	bad=0
	SQLHIST_TEST_KILL_AFTER_WRITE=0 /work/sqlhist -r --engine kernel -d 0.2 "$@" > /dev/null 2> /tmp/kw || { kfail "$name whole run exit $?"; tail -5 /tmp/kw; }
	total=$(grep -c '^sqlhist: test: write' /tmp/kw)
	n=$KFIRST
	points=0
	while [ $n -le $total ]; do
		points=$((points + 1))
		SQLHIST_TEST_KILL_AFTER_WRITE=$n /work/sqlhist -r --engine kernel -d 0.2 "$@" > /dev/null 2> /tmp/kw
		rc=$?
		[ $rc = 137 ] || { kfail "$name $n exit $rc"; tail -3 /tmp/kw; }
		kclean "$name $n"
		n=$((n + 3))
	done
	# Each poll's file is emptied first: the run before left "collecting"
	# in it (or a new file is not there yet when the poll starts).
	: > /tmp/kw
	/work/sqlhist -r --engine kernel "$@" > /dev/null 2> /tmp/kw &
	P=$!
	i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/kw; do sleep 0.05; i=$((i + 1)); done
	[ $i -lt 600 ] || echo "@@timeout waiting 30 s for $name to collect"
	sleep 0.3
	kill -KILL $P; wait $P
	kclean "$name collecting"
	/work/sqlhist -r --engine kernel -d 0.2 "$@" > /dev/null 2> /tmp/kw || { kfail "$name again exit $?"; tail -3 /tmp/kw; }
	kstateall > /tmp/k1
	cmp -s /tmp/kall0 /tmp/k1 || { kfail "$name every trigger"; diff /tmp/kall0 /tmp/k1 | sed "s/^@@/ @@/"; }
	echo "@@kp $name $((points + 1)) bad=$bad $(cut -d' ' -f1 /proc/uptime) of $total writes"
}
# kpb kills a run on the BPF engine after each of its steps (it writes
# nothing to tracefs: its steps are counted as writes), then once while
# it collects: tracefs stays as it was, --cleanup finds nothing of it, and
# the same run then answers. Only where KBPF is yes.
kpb() {
	[ $KBPF = yes ] || return 0
	name=$1; shift
	bad=0
	SQLHIST_TEST_KILL_AFTER_WRITE=0 /work/sqlhist -r --engine bpf -d 0.2 "$@" > /dev/null 2> /tmp/kw || { kfail "$name whole run exit $?"; tail -5 /tmp/kw; }
	total=$(grep -c '^sqlhist: test: write' /tmp/kw)
	other=$(grep '^sqlhist: test: write' /tmp/kw | grep -vc ': bpf: ')
	steps=$(grep '^sqlhist: test: write' /tmp/kw | sed 's/.*: bpf: //' | tr ' \n' '_,')
	[ "$other" = 0 ] || kfail "$name wrote $other times to tracefs"
	n=1
	while [ $n -le $total ]; do
		SQLHIST_TEST_KILL_AFTER_WRITE=$n /work/sqlhist -r --engine bpf -d 0.2 "$@" > /dev/null 2> /tmp/kw
		rc=$?
		[ $rc = 137 ] || { kfail "$name $n exit $rc"; tail -3 /tmp/kw; }
		kstate > /tmp/k1
		cmp -s /tmp/k0 /tmp/k1 || { kfail "$name $n left"; diff /tmp/k0 /tmp/k1 | sed "s/^@@/ @@/"; }
		kclean "$name $n"
		n=$((n + 1))
	done
	: > /tmp/kw
	/work/sqlhist -r --engine bpf "$@" > /dev/null 2> /tmp/kw &
	P=$!
	i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/kw; do sleep 0.05; i=$((i + 1)); done
	[ $i -lt 600 ] || echo "@@timeout waiting 30 s for $name on the BPF engine to collect"
	sleep 0.3
	kill -KILL $P; wait $P
	kclean "$name collecting"
	/work/sqlhist -r --engine bpf -d 0.2 "$@" > /dev/null 2> /tmp/kw || { kfail "$name again exit $?"; tail -3 /tmp/kw; }
	kstateall > /tmp/k1
	cmp -s /tmp/kall0 /tmp/k1 || { kfail "$name every trigger"; diff /tmp/kall0 /tmp/k1 | sed "s/^@@/ @@/"; }
	echo "@@kpb $name $((total + 1)) bad=$bad steps $steps"
}
mkdir $T/instances/sqlhist_kb
kstate > /tmp/k0
kstateall > /tmp/kall0
k0=$(cut -d' ' -f1 /proc/uptime)
# The BPF engine's kill points: on the kernel that kills first (6.1), where
# the kernel has the bpf() system call.
KBPF=no
[ "$KFIRST" = 1 ] && [ -e /proc/sys/kernel/unprivileged_bpf_disabled ] && KBPF=yes
echo "@@kbpf $KBPF"
kp join "$J"
kp chain -f /tmp/kchain.sql
kp kprobe-n -n kk "$K"
kp aggregate-n-B-new -n ka -B sqlhist_kbnew "$A"
kp hist-B -B sqlhist_kb "$H LIMIT 3"
kpb bpf-join "$J"
kpb bpf-aggregate "$A"
kpb bpf-hist "$H LIMIT 3"
k1=$(cut -d' ' -f1 /proc/uptime)
echo "@@kp-seconds $k0 $k1"
# The BPF engine on the kprobe JOIN: its kprobe and kretprobe are
# fentry/fexit links or perf events of the kernel's kprobe PMU, file
# descriptors of the process; nothing is in tracefs while it collects,
# and nothing is left after a SIGKILL (no probe event, no perf event or
# BPF link of any process).
if [ -e /sys/bus/event_source/devices/kprobe/type ] && [ -e /proc/sys/kernel/unprivileged_bpf_disabled ]; then
	: > /tmp/kw
	/work/sqlhist -r --engine bpf "$K" > /dev/null 2> /tmp/kw &
	P=$!
	i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/kw; do sleep 0.05; i=$((i + 1)); done
	[ $i -lt 600 ] || { echo "@@timeout waiting 30 s for the bpf run to collect"; cat /tmp/kw; }
	pe=$(ls -l /proc/$P/fd 2>/dev/null | grep -c -E 'perf_event|bpf_link')
	kstateall > /tmp/k1
	cmp -s /tmp/kall0 /tmp/k1 && echo "@@bpf-during same" || { echo "@@bpf-during changed"; diff /tmp/kall0 /tmp/k1 | sed "s/^@@/ @@/"; }
	kill -KILL $P; wait $P
	kstateall > /tmp/k1
	cmp -s /tmp/kall0 /tmp/k1 && echo "@@bpf-after same" || { echo "@@bpf-after changed"; diff /tmp/kall0 /tmp/k1 | sed "s/^@@/ @@/"; }
	left=$(ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c -E 'perf_event|bpf_link')
	echo "@@bpf-kill perf=$pe left=$left"
else
	echo "@@bpf-kill none"
fi
# Two runs at once with the same -n: the second is refused before any
# write, the first answers. The first collects until the second is done
# and it is sent SIGINT (with -d 4 a slow second run found it gone).
: > /tmp/s1e
/work/sqlhist -r --engine kernel -o json -n same "$J" > /tmp/s1 2> /tmp/s1e &
P=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/s1e; do sleep 0.05; i=$((i + 1)); done
[ $i -lt 600 ] || echo "@@timeout waiting 30 s for the first same -n run to collect"
SQLHIST_TEST_KILL_AFTER_WRITE=0 /work/sqlhist -r --engine kernel -d 1 -n same "$J" > /dev/null 2> /tmp/s2e; echo "@@same2-exit $?"
echo "@@same2-writes $(grep -c '^sqlhist: test: write' /tmp/s2e)"
echo "@@same2-stderr"; grep -v '^sqlhist: test: write' /tmp/s2e
kill -INT $P
wait $P; echo "@@same1-exit $?"
echo "@@same1"; cat /tmp/s1
kstate > /tmp/k1; cmp -s /tmp/k0 /tmp/k1 || { echo "@@same-state"; diff /tmp/k0 /tmp/k1 | sed "s/^@@/ @@/"; }
# Someone removes a trigger of a run that collects until Ctrl-C: the run
# says so, ends by itself with exit 1, and removes the rest.
: > /tmp/c1e
/work/sqlhist -r --engine kernel "$J" > /dev/null 2> /tmp/c1e &
P=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/c1e; do sleep 0.05; i=$((i + 1)); done
[ $i -lt 600 ] || echo "@@timeout waiting 30 s for the run whose trigger is removed to collect"
# The end trigger: the kernel refuses to remove the start trigger while
# the end trigger reads its variable.
f=$T/instances/sqlhist_$P/events/sched/sched_switch/trigger
echo "!$(grep '^hist:' $f | sed 's/ \[[a-z]*\]$//')" >> $f
i=0; while [ $i -lt 100 ] && kill -0 $P 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $P 2>/dev/null && echo "@@changed-hung"
wait $P; echo "@@changed-exit $?"
echo "@@changed-stderr"; cat /tmp/c1e
kstate > /tmp/k1; cmp -s /tmp/k0 /tmp/k1 || { echo "@@changed-state"; diff /tmp/k0 /tmp/k1 | sed "s/^@@/ @@/"; }
rmdir $T/instances/sqlhist_kb
echo "@@kdone"
`

// killKernels are the kernels the kill phase runs on (by golden key):
// the oldest and newest with hist triggers, and Debian's stable, each
// with the first write it kills after (then every third).
var killKernels = map[string]int{"6.1": 1, "7.2": 2, "5.10": 3}

// killNames are the queries of killScript.
var killNames = []string{"join", "chain", "kprobe-n", "aggregate-n-B-new", "hist-B"}

// killPhase is the kill phase of an x86-64 kernel of killKernels, in the
// kernel's one boot; nil elsewhere.
func killPhase(t *testing.T, kname string) *phase {
	first := killKernels[goldenKey(kname)]
	if first == 0 || kernelArch(t, kname) != "amd64" {
		return nil
	}
	script := "KFIRST=" + strconv.Itoa(first) + "\n" + killScript
	if stringJoinsRefused(kname) {
		script = withoutStrings.Replace(script)
	}
	return &phase{name: "kill", script: script, timeout: 5 * time.Minute,
		files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")}},
		check: func(t *testing.T, out string) string { return checkKills(t, kname, out) }}
}

var (
	kpRE  = regexp.MustCompile(`(?m)^@@kp (\S+) (\d+) bad=(\d+) `)
	kpbRE = regexp.MustCompile(`(?m)^@@kpb (\S+) (\d+) bad=(\d+) steps (\S*)$`)
)

// checkKills checks what killScript printed and returns the count of
// kill points for the suite's table.
func checkKills(t *testing.T, kname, out string) string {
	wantLines(t, out, "@@kdone", "@@same2-exit 1", "@@same2-writes 0", "@@same1-exit 0", "@@changed-exit 1")
	if strings.Contains(out, "@@kp-fail") || strings.Contains(out, "@@same-state") || strings.Contains(out, "@@changed-state") || strings.Contains(out, "@@changed-hung") {
		t.Errorf("kill points not recovered:\n%s", out)
	}
	points, seen := 0, map[string]bool{}
	for _, m := range kpRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		if n < 2 || m[3] != "0" {
			t.Errorf("%s: %s kill points, %s not recovered", m[1], m[2], m[3])
		}
		points += n
		seen[m[1]] = true
	}
	for _, q := range killNames {
		if !seen[q] {
			t.Errorf("no kill points for %s", q)
		}
	}
	// The BPF engine's steps, where the kernel has the bpf() system call
	// (not the built 5.10-hist).
	bpfPoints := 0
	for _, m := range kpbRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		// loaded, attached, detached, read, closed, and while collecting.
		if n < 6 || m[3] != "0" {
			t.Errorf("%s: %s kill points (steps %s), %s not recovered", m[1], m[2], m[4], m[3])
		}
		bpfPoints += n
		seen[m[1]] = true
	}
	if bpfKill := []string{"bpf-join", "bpf-aggregate", "bpf-hist"}; strings.Contains(out, "@@kbpf yes") {
		for _, q := range bpfKill {
			if !seen[q] {
				t.Errorf("no kill points for %s", q)
			}
		}
	}
	points += bpfPoints
	// The BPF engine's kprobe JOIN, killed while it collects.
	if !strings.Contains(out, "@@bpf-kill none") {
		wantLines(t, out, "@@bpf-during same", "@@bpf-after same")
		var pe, left int
		if _, err := fmt.Sscanf(firstLine(out, "@@bpf-kill "), "@@bpf-kill perf=%d left=%d", &pe, &left); err != nil || pe < 2 || left != 0 {
			t.Errorf("the BPF engine's kprobe JOIN: %q (%v): want its kprobe and kretprobe as perf events or BPF links of the process while it collects, and none left after its SIGKILL", firstLine(out, "@@bpf-kill "), err)
		}
	}
	sec := sections(out)
	if s := sec["same2-stderr"]; !strings.Contains(s, "already exists") && !strings.Contains(s, "in use by the sqlhist run") {
		t.Errorf("the second run with the same -n: %s", s)
	}
	checkJoin(t, "the first run with the same -n", sec["same1"])
	if s := sec["changed-stderr"]; !strings.Contains(s, "was removed while the run collected") {
		t.Errorf("a trigger removed under a run: %s", s)
	}
	var secs string
	if f := strings.Fields(strings.TrimPrefix(firstLine(out, "@@kp-seconds "), "@@kp-seconds ")); len(f) == 2 {
		a, _ := strconv.ParseFloat(f[0], 64)
		b, _ := strconv.ParseFloat(f[1], 64)
		secs = strconv.FormatFloat(b-a, 'f', 0, 64) + " s"
	}
	t.Logf("%s: %d kill points over %d queries, all recovered (%s); same -n at once: %s; a trigger removed: %s; the BPF engine's kprobe JOIN killed: %s", kname, points, len(seen), secs,
		firstLines(sec["same2-stderr"], 1), firstLines(sec["changed-stderr"], 3), firstLine(out, "@@bpf-kill "))
	if bpfPoints > 0 {
		return fmt.Sprintf("%d kill points (%d of them BPF's)", points, bpfPoints)
	}
	return strconv.Itoa(points) + " kill points"
}

// firstLine is the first line of out that starts with prefix.
func firstLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
