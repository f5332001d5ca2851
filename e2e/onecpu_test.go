package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// The stream engine on one CPU: with one CPU online a run on perf events
// reads one ring, decodes each record where the ring holds it and feeds
// it as read (live's readPerfDirect), where with more it keeps and orders
// the records of every ring. The onecpu phase takes the guest's second
// CPU offline (as a board with one core has) and runs the wakeup JOIN of
// a busybox shell that waits on a FIFO for a go and then sleeps N times
// (differ_test.go's workload, its opens left out) through the kernel's
// hist triggers and through the stream engine on perf events at once,
// both filtered on the shell (-p): they read the same events, so they
// count the same wakeups, task by task. The CPU is brought back online
// at the end.
const onecpuScript = `
C=/sys/devices/system/cpu/cpu1/online
echo "@@onecpu-cpus $(nproc)"
if [ -w $C ]; then echo 0 > $C; fi
echo "@@onecpu-online $(cat /sys/devices/system/cpu/online)"
mkfifo /tmp/o-go /tmp/o-idle
printf '%s\n' 'read g < /tmp/o-go' 'exec 3<>/tmp/o-idle' 'i=0' \
  'while [ $i -lt $N ]; do read -t 0.003 x <&3; i=$((i+1)); done' > /tmp/o-wl.sh
N=$N sh /tmp/o-wl.sh &
WL=$!
Q='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
PIDS=
for e in kernel stream; do
  /work/sqlhist -r -o json --engine $e -p $WL "$Q" > /tmp/o-$e.json 2> /tmp/o-$e.err &
  PIDS="$PIDS $!"
done
for e in kernel stream; do
  i=0; while [ $i -lt 300 ] && ! grep -q collecting /tmp/o-$e.err 2> /dev/null; do sleep 0.1; i=$((i+1)); done
done
echo go > /tmp/o-go
wait $WL; echo "@@onecpu-workload-exit $?"
kill -INT $PIDS
for p in $PIDS; do wait $p; echo "@@onecpu-exit $?"; done
if [ -w $C ]; then echo 1 > $C; fi
echo "@@onecpu-back $(cat /sys/devices/system/cpu/online)"
for e in kernel stream; do
  echo "@@onecpu-$e-json"; cat /tmp/o-$e.json; echo "@@onecpu-$e-err"; cat /tmp/o-$e.err
done
echo "@@onecpu-end"
`

// onecpuN is the workload's sleeps.
const onecpuN = 200

// onecpuPhase is the one-CPU phase of kname's boot: Debian's x86-64 6.1,
// nil on the other kernels.
func onecpuPhase(t *testing.T, kname string) *phase {
	if kname != "6.1" {
		return nil
	}
	return &phase{name: "onecpu", script: fmt.Sprintf("N=%d\n", onecpuN) + onecpuScript, timeout: 2 * time.Minute,
		files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")}},
		check: func(t *testing.T, out string) string { return checkOnecpu(t, out) }}
}

// checkOnecpu compares the two engines' answers on one CPU.
func checkOnecpu(t checker, out string) string {
	sec := sections(out)
	if got := firstLine(out, "@@onecpu-online "); got != "@@onecpu-online 0" {
		t.Errorf("the guest's second CPU did not go offline (%s, %s): the kernel has no CPU hotplug here", firstLine(out, "@@onecpu-cpus "), got)
		return ""
	}
	if got := firstLine(out, "@@onecpu-back "); got != "@@onecpu-back 0-1" {
		t.Errorf("the guest's second CPU did not come back online: %s", got)
	}
	if n := strings.Count(out, "@@onecpu-exit 0\n"); n != 2 || !strings.Contains(out, "@@onecpu-workload-exit 0\n") {
		t.Errorf("a run or the workload failed (%d runs ended well):\n%s\n%s", n, sec["onecpu-kernel-err"], sec["onecpu-stream-err"])
	}
	if !strings.Contains(sec["onecpu-stream-err"], "from perf events on") {
		t.Errorf("the stream engine did not read perf events:\n%s", sec["onecpu-stream-err"])
	}
	counts := map[string]map[string]uint64{}
	for _, e := range []string{"kernel", "stream"} {
		var r differRun
		if err := json.Unmarshal([]byte(sec["onecpu-"+e+"-json"]), &r); err != nil || len(r.Results) != 1 {
			t.Errorf("%s: %v; output:\n%s\nstderr:\n%s", e, err, sec["onecpu-"+e+"-json"], sec["onecpu-"+e+"-err"])
			return ""
		}
		if r.Lost != 0 {
			t.Errorf("%s lost %d events", e, r.Lost)
		}
		counts[e] = map[string]uint64{"": r.Results[0].Totals.Hits}
		for _, row := range r.Results[0].Rows {
			comm, _ := row["comm"].(string)
			n, _ := row["count"].(float64)
			counts[e][comm] += uint64(n)
		}
	}
	k, s := counts["kernel"], counts["stream"]
	if k[""] < onecpuN/2 {
		t.Errorf("the kernel counted %d of the shell's %d sleeps' wakeups", k[""], onecpuN)
	}
	if fmt.Sprint(k) != fmt.Sprint(s) {
		t.Errorf("one CPU: the kernel's hist triggers counted %v, the stream engine on perf events %v", k, s)
	}
	return fmt.Sprintf("one CPU online: wakeups %d/%d (kernel/stream on perf)", k[""], s[""])
}
