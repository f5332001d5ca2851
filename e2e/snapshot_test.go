package e2e

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// manPageScript is libtracefs's sqlhist man page example as a user runs
// it: -e -n wakeup_lat -T -m lat, then the synthetic event enabled, some
// wakeups, and the snapshot buffer read. -T is trace and snapshot, so each
// new maximum of lat fires wakeup_lat and then swaps the buffers: the
// snapshot holds the line of the maximum that took it. As in the man page
// (next_comm == "cyclictest") only one program's wakeups count, here
// sleep's, which run only once wakeup_lat is enabled: a maximum taken
// before (sqlhist's own writes and the enable wait for RCU, tens of ms)
// would fire a line the disabled event drops. The end trigger is paused
// before anything is read, so that no later maximum swaps the buffers.
const manPageScript = `
T=/sys/kernel/tracing
M='SELECT end.next_comm AS comm, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_prio < 140 && end.next_comm == "sleep"'
echo "@@manpage-at"; cut -d' ' -f1 /proc/uptime
snap > /tmp/m0
echo > $T/trace
/work/sqlhist -e -n wakeup_lat -T -m lat "$M" > /dev/null; echo "@@manpage-apply $?"
echo 1 > $T/events/synthetic/wakeup_lat/enable
for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done
end=$(/work/sqlhist -n wakeup_lat -T -m lat "$M" | sed -n "s|^echo '\\(hist:keys=next_pid:.*\\)' >> .*/sched_switch/trigger\$|\\1|p")
echo "$end" | sed 's/ if /:pause if /' >> $T/events/sched/sched_switch/trigger; echo "@@manpage-pause $?"
echo "@@manpage-snapshot"; grep ' wakeup_lat: ' $T/snapshot
echo "@@manpage-trace"; grep ' wakeup_lat: ' $T/trace
echo "@@manpage-hist"; cat $T/events/sched/sched_switch/hist
/work/sqlhist -e --teardown -n wakeup_lat -T -m lat "$M"; echo "@@manpage-teardown $?"
echo 0 > $T/snapshot
snap > /tmp/m1
echo "@@manpage-diff"; diff /tmp/m0 /tmp/m1 | sed "s/^@@/ @@/"
echo "@@manpage-end"; cut -d' ' -f1 /proc/uptime
`

// manPageKernels are the kernels whose execute phase runs manPageScript.
var manPageKernels = map[string]bool{"6.12": true, "7.2": true}

var latRE = regexp.MustCompile(` wakeup_lat: .*\blat=(\d+)`)

// checkManPage checks what manPageScript printed: the snapshot buffer
// holds a wakeup_lat line whose lat is the value that took the snapshot
// (the end trigger's "Snapshot taken" block), and no wakeup_lat line in
// either buffer has a larger lat (a larger one would have taken another
// snapshot). It returns the guest seconds the script took.
func checkManPage(t *testing.T, kname, out string) float64 {
	sec := sections(out)
	wantLines(t, out, "@@manpage-apply 0", "@@manpage-pause 0", "@@manpage-teardown 0")
	if d := sec["manpage-diff"]; d != "" {
		t.Errorf("the man page example left tracefs different after --teardown:\n%s", d)
	}
	hists, err := tracefs.ParseHist(sec["manpage-hist"])
	var taken *tracefs.HistSnapshot
	for _, h := range hists {
		if h.Snapshot != nil {
			taken = h.Snapshot
		}
	}
	if err != nil || taken == nil {
		t.Fatalf("%s: the end trigger's hist shows no snapshot taken (%v):\n%s", kname, err, sec["manpage-hist"])
	}
	lats := func(s string) []uint64 {
		var out []uint64
		for _, m := range latRE.FindAllStringSubmatch(s, -1) {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			out = append(out, v)
		}
		return out
	}
	inSnap, inTrace := lats(sec["manpage-snapshot"]), lats(sec["manpage-trace"])
	found := false
	for _, v := range inSnap {
		found = found || v == taken.Value
	}
	if !found {
		t.Errorf("%s: the snapshot buffer has no wakeup_lat line with lat=%d, the value that took it (%s); its lines:\n%s", kname, taken.Value, taken.Handler, sec["manpage-snapshot"])
	}
	for _, v := range append(inSnap, inTrace...) {
		if v > taken.Value {
			t.Errorf("%s: a wakeup_lat line has lat=%d, above the maximum %d that took the last snapshot", kname, v, taken.Value)
		}
	}
	at, _ := strconv.ParseFloat(sec["manpage-at"], 64)
	end, _ := strconv.ParseFloat(sec["manpage-end"], 64)
	t.Logf("%s: man page example (-e -T -m lat): snapshot taken at lat=%d by %s, %d wakeup_lat lines in snapshot, %d in trace; %.2f guest seconds",
		kname, taken.Value, taken.Handler, len(inSnap), len(inTrace), end-at)
	return end - at
}
