package e2e

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/internal/execfile"
)

// archRunScript is --run on the kernels of other architectures than
// x86-64, the part that depends on the architecture: the wakeup JOIN (JSON
// and table), a syscall histogram, a kprobe/kretprobe JOIN reading a
// function's arguments, a uprobe on a Go binary of the guest's
// architecture, and a script printed on the x86-64 host for this kernel
// (--kernel V --arch A) applied with sh, fired and removed. The whole
// tracefs state is compared before and after.
const archRunScript = `
T=/sys/kernel/tracing
J='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
H='SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC'
K='SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid'
U="SELECT n, COUNT(*) AS c FROM uprobe('/work/bin/demo', main.work, n=$DEMO_ARG) ORDER BY n"
` + gstateShell + `gstate > /tmp/g0
( while :; do sleep 0.2; dd if=/proc/version of=/dev/null bs=32; cat /proc/cpuinfo; ls /proc; /work/bin/demo; done ) > /dev/null 2>&1 &
W=$!
/work/sqlhist -r --engine kernel -d 2 -o json "$J" > /tmp/out 2> /tmp/err; echo "@@join-exit $?"
echo "@@join-json"; cat /tmp/out
echo "@@join-stderr"; cat /tmp/err
/work/sqlhist -r --engine kernel -d 2s "$J" > /tmp/out 2> /tmp/err; echo "@@table-exit $?"
echo "@@table"; cat /tmp/out
/work/sqlhist -r --engine kernel -d 1 -o json "$H" > /tmp/out 2> /tmp/err; echo "@@hist-exit $?"
echo "@@hist-json"; cat /tmp/out
echo "@@hist-stderr"; cat /tmp/err
/work/sqlhist -r --engine kernel -d 2 -o json "$K" > /tmp/out 2> /tmp/err; echo "@@probe-exit $?"
echo "@@probe-json"; cat /tmp/out
echo "@@probe-stderr"; cat /tmp/err
/work/sqlhist -r --engine kernel -d 2 -o json "$U" > /tmp/out 2> /tmp/err; echo "@@uprobe-exit $?"
echo "@@uprobe-json"; cat /tmp/out
echo "@@uprobe-stderr"; cat /tmp/err
echo > $T/error_log
sh -e /work/host.sh > /tmp/err 2>&1; echo "@@host-apply $?"
cat /tmp/err
echo 1 > $T/events/synthetic/hostlat/enable
i=0; while [ $i -lt 20 ]; do cat /etc/passwd /proc/version > /dev/null; i=$((i + 1)); done
sleep 0.5
echo 0 > $T/events/synthetic/hostlat/enable
echo "@@host-trace"; grep ' hostlat: ' $T/trace | head -5
echo "@@host-errorlog"; cat $T/error_log
sh -e /work/host-teardown.sh > /tmp/err 2>&1; echo "@@host-teardown $?"
cat /tmp/err
echo > $T/trace
kill $W
wait $W
gstate > /tmp/g1
echo "@@gdiff"; diff /tmp/g0 /tmp/g1 | sed "s/^@@/ @@/"
echo "@@done"
`

// hostQuery is the kprobe latency query the host prints for an arm kernel.
const hostQuery = `SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid`

// demoArg is where Go's first integer argument is at main.work's entry:
// the first register of Go's register ABI on arm64 (R0); 32-bit arm has no
// register ABI, the argument is on the stack above the return address.
var demoArg = map[string]string{"amd64": "%ax:s64", "arm64": "%x0:s64", "armhf": "+4(%sp):s32"}

// archName is the --arch name of a Debian architecture.
var archName = map[string]string{"amd64": "x86_64", "arm64": "arm64", "armhf": "arm"}

// archRunPhase proves --run on a kernel of another architecture.
func archRunPhase(t *testing.T, kname, arch string) phase {
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	// The host (x86-64) prints the script for this kernel from the
	// embedded catalog, as a user does for a board.
	host := filepath.Join(t.TempDir(), "sqlhist")
	if err := writeExec(host, buildStatic(t, "amd64")); err != nil {
		t.Fatal(err)
	}
	q := forArch(hostQuery, arch)
	hostArgs := []string{"--kernel", k.ShortVersion(), "--arch", archName[arch], "-n", "hostlat", q}
	script, herr := runHost(host, hostArgs...)
	if herr != "" {
		t.Fatalf("sqlhist %s on the host: %s", strings.Join(hostArgs, " "), herr)
	}
	teardown, herr := runHost(host, append([]string{"--teardown"}, hostArgs...)...)
	if herr != "" {
		t.Fatalf("sqlhist --teardown on the host: %s", herr)
	}
	guest := withBPFRun(strings.ReplaceAll(forArch(archRunScript, arch), "$DEMO_ARG", demoArg[arch]))
	files := []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, arch)},
		{Path: "/work/bin/demo", Mode: 0o755, Data: buildDemo(t, arch)},
		{Path: "/work/host.sh", Data: []byte(script)}, {Path: "/work/host-teardown.sh", Data: []byte(teardown)}}
	return phase{name: "run", script: guest, files: files, timeout: 6 * time.Minute,
		check: func(t *testing.T, out string) string {
			checkArchRun(t, kname, arch, k.ShortVersion(), script, out)
			return checkBPFRun(t, kname, out)
		}}
}

// checkArchRun checks what archRunScript printed; hostScript is what the
// host printed for the kernel (--kernel version --arch).
func checkArchRun(t *testing.T, kname, arch, version, script, out string) {
	sec := sections(out)
	wantLines(t, out, "@@join-exit 0", "@@table-exit 0", "@@hist-exit 0", "@@probe-exit 0", "@@uprobe-exit 0",
		"@@host-apply 0", "@@host-teardown 0", "@@done")
	checkJoin(t, "join", sec["join-json"])
	if !strings.Contains(sec["table"], "avg lat (us)") || !strings.Contains(sec["table"], "|@") {
		t.Errorf("the table has no latency columns or distribution:\n%s", sec["table"])
	}
	checkHist(t, sec["hist-json"])
	checkJoinRows(t, "probe", sec["probe-json"], "filename", "/proc/version")
	checkUprobe(t, sec["uprobe-json"])
	// The printed script: accepted (no error_log entry), fired with
	// plausible values, removed.
	if e := strings.TrimSpace(sec["host-errorlog"]); e != "" {
		t.Errorf("the host's script for %s left error_log entries:\n%s", kname, e)
	}
	checkHostTrace(t, sec["host-trace"])
	if d := sec["gdiff"]; d != "" {
		t.Errorf("tracefs differs after the runs:\n%s", d)
	}
	t.Logf("%s: the host printed (--kernel %s --arch %s):\n%s", kname, version, archName[arch], script)
	t.Logf("%s: its events:\n%s", kname, sec["host-trace"])
	t.Logf("%s: uprobe on a %s Go binary:\n%s", kname, arch, sec["uprobe-json"])
	t.Logf("%s: kprobe/kretprobe JOIN (JSON):\n%s", kname, sec["probe-json"])
}

// runHost runs the host's sqlhist; the error is its stderr when it failed.
func runHost(bin string, args ...string) (string, string) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", err.Error() + ": " + errb.String()
	}
	return out.String(), ""
}

// checkUprobe: the demo calls main.work with n = 10, 20, 30, 40, 50 each
// time it runs; the uprobe read every n right, each as often.
func checkUprobe(t *testing.T, out string) {
	t.Helper()
	r, ok := parseResults(t, "uprobe", out, 1)
	if !ok {
		return
	}
	if p := uprobeProblem(r[0].Rows); p != "" {
		t.Errorf("uprobe on main.work: %s:\n%s", p, out)
	}
}

// uprobeProblem checks the rows of the uprobe on the demo's main.work:
// each run of the demo calls it with 10 to 50 in turn, and the collection
// may start after a run's first calls and end before another's last, so
// every n is counted once per whole run, give or take one.
func uprobeProblem(rows []map[string]any) string {
	var ns []string
	lo, hi := math.Inf(1), 0.0
	for _, row := range rows {
		n, _ := row["n"].(float64)
		c, _ := row["c"].(float64)
		ns = append(ns, strconv.FormatFloat(n, 'f', -1, 64))
		lo, hi = min(lo, c), max(hi, c)
	}
	if got := strings.Join(ns, ","); got != "10,20,30,40,50" || lo < 1 || hi-lo > 1 {
		return fmt.Sprintf("n values %s counted %v to %v times, want 10,20,30,40,50 each as often, give or take the runs the collection cut", got, lo, hi)
	}
	return ""
}

var hostLatRE = regexp.MustCompile(` hostlat: filename=(\S+) lat=(\d+)`)

// checkHostTrace: the printed script's synthetic event fired with a file
// name and a latency below 10 s.
func checkHostTrace(t *testing.T, trace string) {
	t.Helper()
	ms := hostLatRE.FindAllStringSubmatch(trace, -1)
	if len(ms) == 0 {
		t.Errorf("the host's script never fired hostlat:\n%s", trace)
		return
	}
	for _, m := range ms {
		if !strings.HasPrefix(m[1], "/") || len(m[2]) > 7 {
			t.Errorf("hostlat: implausible filename or latency: %q", m[0])
		}
	}
}

// writeExec writes an executable the test then runs (execfile: no
// "text file busy" when another goroutine forks meanwhile).
func writeExec(path string, data []byte) error { return execfile.Write(path, data) }
