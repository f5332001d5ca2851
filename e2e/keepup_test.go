package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// keepupSQL is issue 41's question: the wakeup JOIN of the load's task.
const keepupSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_comm == "pace"`

// TestAwkKeepsUp (issue 41 item 4) runs, in Debian's 6.1 on one vCPU with
// instruction-counted time (-icount shift=0,sleep=off), the printed awk
// script of keepupSQL (-d 30, busybox sh and awk) while
// e2e/testdata/pace makes 20,000 wakeups (sched_yield and a 100 µs
// nanosleep each, about 3 s): the script's answer loses no event and
// counts every wakeup. (The awk falls behind and the instance's buffer
// holds the events until it catches up; the start's pushed name term
// keeps the awk's own wakeups out.)
func TestAwkKeepsUp(t *testing.T) {
	needKernels(t)
	const n = 20000
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	src := source.NewSource("keepup.sql", keepupSQL)
	plan, diags := live.Compile(src, cat, live.AwkPrepare(planner.Options{}))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	ap, err := live.NewAwkPlan(plan, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	if err := live.WriteAwkScript(&script, ap, live.AwkScriptOptions{Source: src, Duration: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	guest := `T=/sys/kernel/tracing
reads() {
	for f in /proc/[0-9]*/fd/0; do
		case $(readlink $f 2>/dev/null) in */instances/sqlawk_*/trace_pipe) return 0 ;; esac
	done
	return 1
}
read u0 x < /proc/uptime
sh /work/keepup.sh > /tmp/k.out 2> /tmp/k.err &
P=$!
i=0; until reads; do i=$((i + 1)); [ $i -lt 600 ] || { echo "@@timeout waiting for the script's awk"; break; }; sleep 0.05; done
echo "@@pace $(/work/pace ` + strconv.Itoa(n) + `)"
read u1 x < /proc/uptime
wait $P; echo "@@script-exit $?"
read u2 x < /proc/uptime
echo "@@uptime $u0 $u1 $u2"
echo "@@out"; cat /tmp/k.out; echo "@@err"; cat /tmp/k.err
echo "@@errorlog $(cat $T/error_log | wc -l)"
`
	res := boot(t, "6.1", vm.Guest{Script: guest, CombinedOutput: true, Timeout: 20 * time.Minute, CPUs: 1,
		QemuArgs: []string{"-icount", "shift=0,sleep=off"},
		Files: []vm.File{{Path: "/work/pace", Mode: 0o755, Data: cBuildStatic(t, "testdata/pace/pace.c")},
			{Path: "/work/keepup.sh", Mode: 0o644, Data: []byte(script.String())}}})
	out := res.Stdout
	t.Logf("guest:\n%s", out)
	for _, w := range []string{fmt.Sprintf("@@pace paced %d ", n), "@@script-exit 0", "@@errorlog 0"} {
		if !strings.Contains(out, w) {
			t.Fatalf("no %q in the guest's output", w)
		}
	}
	end := regexp.MustCompile(`(?m)^==> end: lost (\d+), unread (\d+) <==$`).FindStringSubmatch(out)
	if end == nil {
		t.Fatal("the script printed no end line")
	}
	if end[1] != "0" {
		t.Errorf("the awk script lost %s events", end[1])
	}
	hits := 0
	for _, m := range regexp.MustCompile(`(?m)^\{ comm: pace +, lat: [^}]*\} hitcount: +(\d+)`).FindAllStringSubmatch(out, -1) {
		h, _ := strconv.Atoi(m[1])
		hits += h
	}
	if hits < n {
		t.Errorf("the awk script counted %d wakeups of pace, want at least %d", hits, n)
	}
}
