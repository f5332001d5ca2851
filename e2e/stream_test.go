package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// The stream engine (issue 31) where hist triggers are missing: the run
// phase's questions answered by sqlhist -r reading the events, with the
// tracefs exactly as before afterwards.

// streamScript runs the run phase's queries with the stream engine (auto:
// the kernel has no hist triggers) while a workload makes wakeups,
// system calls and opens.
const streamScript = `
T=/sys/kernel/tracing
J='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
H='SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC'
A='SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat ORDER BY n DESC'
C3='SELECT sw.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS w JOIN sched_wakeup AS wk ON w.pid = wk.pid JOIN sched_switch AS sw ON sw.next_pid = wk.pid'
K='SELECT start.filename, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid'
snap() {
	cat $T/dynamic_events
	grep -H '^[^#]' $T/events/*/*/trigger $T/events/*/*/filter 2>/dev/null
	grep -l 1 $T/events/*/*/enable 2>/dev/null
	ls $T/instances
}
snap > /tmp/before
( while :; do sleep 0.2; dd if=/proc/version of=/dev/null bs=32 2>/dev/null; cat /proc/cpuinfo; ls /proc; done ) > /dev/null 2>&1 &
W=$!
/work/sqlhist -r --engine stream -d 3 -o json "$J" > /tmp/out 2> /tmp/err; echo "@@join-exit $?"
echo "@@join-json"; cat /tmp/out; echo "@@join-stderr"; cat /tmp/err
/work/sqlhist -r -d 2 --engine stream "$J" > /tmp/out 2> /tmp/err; echo "@@table-exit $?"
echo "@@table"; cat /tmp/out; echo "@@table-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 -o json "$H" > /tmp/out 2> /tmp/err; echo "@@hist-exit $?"
echo "@@hist-json"; cat /tmp/out; echo "@@hist-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 -o json "$A" > /tmp/out 2> /tmp/err; echo "@@agg-exit $?"
echo "@@agg-json"; cat /tmp/out; echo "@@agg-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 -o json "$C3" > /tmp/out 2> /tmp/err; echo "@@chain3-exit $?"
echo "@@chain3-json"; cat /tmp/out; echo "@@chain3-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 --events -o json "$A" > /tmp/out 2> /tmp/err; echo "@@aggev-exit $?"
echo "@@aggev-count $(grep -c '"event"' /tmp/out)"; echo "@@aggev-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 -o json "$K" > /tmp/out 2> /tmp/err; echo "@@probe-exit $?"
echo "@@probe-json"; cat /tmp/out; echo "@@probe-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -i 1 -d 3.5 -o json "$J" > /tmp/out 2> /tmp/err; echo "@@iv-exit $?"
echo "@@iv"; cat /tmp/out; echo "@@iv-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream -d 2 -o folded 'SELECT STACKTRACE, COUNT(*) FROM sched_switch WHERE prev_state == 1' > /tmp/out 2> /tmp/err; echo "@@fold-exit $?"
echo "@@fold"; head -5 /tmp/out; echo "@@fold-lines $(grep -c ';' /tmp/out)"; echo "@@fold-stderr"; cat /tmp/err
/work/sqlhist -r --engine stream "$J" > /dev/null 2> /tmp/kerr &
K1=$!
i=0; while [ $i -lt 300 ] && ! grep -q collecting /tmp/kerr; do sleep 0.1; i=$((i+1)); done
[ $i -lt 300 ] || echo "@@timeout waiting 30 s for the stream run to be killed to collect"
kill -9 $K1; wait $K1 2>/dev/null
echo "@@perfkilled-left $(ls $T/instances | grep -c sqlhist_) enabled $(grep -l 1 $T/events/*/*/enable 2>/dev/null | wc -l)"
echo "@@perfkilled-stderr"; cat /tmp/kerr
F='SELECT STACKTRACE, COUNT(*) FROM sched_switch WHERE prev_state == 1'
: > /tmp/kerr2
/work/sqlhist -r --engine stream "$F" > /dev/null 2> /tmp/kerr2 &
K1=$!
i=0; while [ $i -lt 300 ] && ! grep -q collecting /tmp/kerr2; do sleep 0.1; i=$((i+1)); done
[ $i -lt 300 ] || echo "@@timeout waiting 30 s for the stream run to be killed to collect"
kill -9 $K1; wait $K1 2>/dev/null
echo "@@killed-left $(ls $T/instances | grep -c sqlhist_) snapshot $(ls $T/snapshot 2>/dev/null | wc -l)"
echo "@@killed-stderr"; cat /tmp/kerr2
/work/sqlhist --cleanup > /tmp/out 2>&1; echo "@@cleanup-exit $?"
echo "@@cleanup"; cat /tmp/out
kill $W
wait $W 2>/dev/null
snap > /tmp/after
echo "@@diff"; diff /tmp/before /tmp/after | sed "s/^@@/ @@/"
echo "@@done"
`

// streamRunJSON is sqlhist -o json's output with the engine that
// answered.
type streamRunJSON struct {
	Engine  string
	Lost    int
	Results []runResult
}

// checkStreamRun checks what streamScript printed on a kernel without
// hist triggers.
func checkStreamRun(t *testing.T, kname, out string) string {
	sec := sections(out)
	wantLines(t, out, "@@join-exit 0", "@@table-exit 0", "@@hist-exit 0", "@@agg-exit 0", "@@chain3-exit 0", "@@aggev-exit 0",
		"@@iv-exit 0", "@@fold-exit 0", "@@cleanup-exit 0", "@@done")
	// -i: intervals that add up to the total.
	if p := intervalsProblem(sec["iv"], 3); p != "" {
		t.Errorf("stream -i 1 -d 3.5: %s\nstderr:\n%s", p, sec["iv-stderr"])
	}
	// --events: as many lines as the results histogram counted.
	aggCount := regexp.MustCompile(`@@aggev-count (\d+)`).FindStringSubmatch(out)
	if aggCount == nil {
		t.Errorf("stream --events: no line count; stderr:\n%s", sec["aggev-stderr"])
	} else if n, _ := strconv.Atoi(aggCount[1]); streamProblem(sec["aggev-stderr"], n) != "" {
		t.Errorf("stream --events: %s; stderr:\n%s", streamProblem(sec["aggev-stderr"], n), sec["aggev-stderr"])
	}
	// Stacks: the stacktrace trigger's kernel_stack records, folded.
	if n := firstLine(out, "@@fold-lines "); n == "@@fold-lines 0" || n == "" {
		t.Errorf("stream -o folded: no stacks:\n%s\nstderr:\n%s", sec["fold"], sec["fold-stderr"])
	}
	// The wakeup JOIN reads perf events (no instance, nothing written to
	// tracefs): killed with SIGKILL, it leaves nothing.
	if !strings.Contains(sec["join-stderr"], "from perf events on") || !strings.Contains(sec["perfkilled-stderr"], "from perf events on") {
		t.Errorf("the stream engine did not read the wakeup JOIN's events from perf events:\n%s", sec["join-stderr"])
	}
	if l := firstLine(out, "@@perfkilled-left "); l != "@@perfkilled-left 0 enabled 0" {
		t.Errorf("a SIGKILLed stream run on perf events: %q, want nothing left", l)
	}
	// A run whose stacks only an instance records (the stacktrace
	// trigger), killed with SIGKILL, left its lease, which is its instance
	// where the kernel has snapshot buffers (else its instance and its
	// lease); --cleanup removed it (the diff below: tracefs as before).
	if l := firstLine(out, "@@killed-left "); l != "@@killed-left 1 snapshot 1" && l != "@@killed-left 2 snapshot 0" {
		t.Errorf("a SIGKILLed stream run: %q, want its lease left for --cleanup (and its instance, without snapshot buffers); its stderr:\n%s", l, sec["killed-stderr"])
	}
	if !strings.Contains(sec["cleanup"], "sqlhist_") {
		t.Errorf("--cleanup after a killed stream run removed nothing:\n%s", sec["cleanup"])
	}
	var notes []string
	for _, q := range []struct{ name, what string }{{"join", "wakeup JOIN"}, {"hist", "syscall histogram"}, {"agg", "aggregate over a JOIN"}, {"chain3", "chain of three"}} {
		var r streamRunJSON
		if err := json.Unmarshal([]byte(sec[q.name+"-json"]), &r); err != nil {
			t.Errorf("%s: -o json: %v\n%s\nstderr:\n%s", q.what, err, sec[q.name+"-json"], sec[q.name+"-stderr"])
			continue
		}
		if r.Engine != "stream" {
			t.Errorf("%s: engine %q, want stream (the kernel has no hist triggers)", q.what, r.Engine)
		}
		if len(r.Results) != 1 || r.Results[0].Totals.Hits == 0 || len(r.Results[0].Rows) == 0 {
			t.Errorf("%s: want one result with events; got %+v\nstderr:\n%s", q.what, r.Results, sec[q.name+"-stderr"])
			continue
		}
		notes = append(notes, fmt.Sprintf("%s %d", q.name, r.Results[0].Totals.Hits))
	}
	checkJoin(t, "stream wakeup JOIN", sec["join-json"])
	checkJoin(t, "stream chain of three", sec["chain3-json"])
	checkAggregate(t, sec["agg-json"], "comm")
	if !strings.Contains(sec["table"], "engine: stream") || !strings.Contains(sec["table"], "read from perf events, no tracefs instance") {
		t.Errorf("the table does not say which engine answered, and from where:\n%s", sec["table"])
	}
	switch kernelArch(t, kname) {
	case "amd64":
		// A kprobe/kretprobe JOIN on the file each open names.
		checkJoin(t, "stream kprobe JOIN", sec["probe-json"])
	case "riscv64":
		// Kprobes record nothing there: refused with the reason.
		if !strings.Contains(out, "@@probe-exit 1\n") || !strings.Contains(sec["probe-stderr"], "kprobes record nothing on riscv64") {
			t.Errorf("a kprobe JOIN on riscv64: want exit 1 and the reason:\n%s", sec["probe-stderr"])
		}
	}
	if s := sec["diff"]; s != "" {
		t.Errorf("tracefs changed:\n%s", s)
	}
	t.Logf("%s: stream engine: %s; table:\n%s", kname, strings.Join(notes, ", "), sec["table"])
	return strings.Join(notes, ", ")
}

// streamJob boots a kernel without hist triggers with the static sqlhist
// of its architecture: -e is refused naming the missing feature
// (checkNoHistRefusal), and -r answers the run phase's questions with
// the stream engine, in the guest and through its serial line with no
// sqlhist inside (--via, viaStreamChecks).
func streamJob(t *testing.T, kname string) {
	start := time.Now()
	var detail string
	defer func() { notePhase(t, kname, "stream", time.Since(start), &detail) }()
	bin := buildStatic(t, kernelArch(t, kname))
	// The guest's own sqlhist first, then this machine's through the
	// guest's serial line (via_stream_test.go).
	// The awk engine's scripts run while the workload does, before it
	// stops (awk_test.go).
	script := strings.Replace(streamScript, "kill $W\n", awkScript+awkKillScript+bpfRunScript+"kill $W\n", 1)
	// Then, the workload stopped, the awk script and the stream engine
	// in the same window (samewindow_test.go).
	version, aname := "5.10", "x86_64"
	if kernelArch(t, kname) == "riscv64" {
		version, aname = "6.12", "riscv64"
	}
	swFile, swInst := sameWindowFile(t, version, aname, "stream")
	script = strings.Replace(script, "kill $W\nwait $W 2>/dev/null\n", "kill $W\nwait $W 2>/dev/null\n"+sameWindowScript("stream", swInst)+bpfStreamWindowScript, 1)
	res, viaDetail := streamViaBoot(t, kname, vm.Guest{
		Script: refuseScript + script, CombinedOutput: true, Timeout: 6*time.Minute + awkTime,
		Files: append([]vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: bin}, swFile}, awkFiles(t, kname)...),
	})
	if d := e2eLogDir(); d != "" {
		os.WriteFile(d+"/guest-"+kname+"-stream.log", []byte(res.Stdout), 0o644)
	}
	out, rest, _ := strings.Cut(res.Stdout, "@@done")
	checkNoHistRefusal(t, kname, res.Kernel.Release, out+"@@done\n")
	detail = checkStreamRun(t, kname, rest) + "; " + checkBPFRun(t, kname, rest) + "; " + checkAwkRuns(t, kname, rest) + "; " + checkAwkKills(t, kname, rest) + "; " + checkSameWindow(t, kname, "stream", version, aname, rest) + "; " + checkBPFStreamWindow(t, kname, rest) + "; " + viaDetail
}

// TestDifferGuest boots the kernels of SQLHIST_KERNELS (default 6.1) with
// the differential phase alone (differ_test.go).
func TestDifferGuest(t *testing.T) {
	needKernels(t)
	names := []string{"6.1"}
	if k := os.Getenv("SQLHIST_KERNELS"); k != "" {
		names = strings.Split(k, ",")
	}
	for _, kname := range names {
		t.Run(kname, func(t *testing.T) {
			differKernels[kname] = true
			p := differPhase(t, kname)
			files := append(mergeFiles([]phase{*p}), vm.File{Path: "/work/phases/" + p.name + ".sh", Data: []byte(p.script)})
			res := boot(t, kname, vm.Guest{Script: phaseScript([]phase{*p}), Files: files, CombinedOutput: true, Timeout: p.timeout})
			o := splitPhases(res.Stdout)[p.name]
			if o == nil || !o.done {
				t.Fatalf("the phase did not finish:\n%s", lastLines(res.Stdout, 40))
			}
			p.check(t, o.out)
		})
	}
}

// TestStreamGuest boots the kernels of SQLHIST_KERNELS (default: Debian's
// 5.10, which has no hist triggers) and runs streamJob there.
func TestStreamGuest(t *testing.T) {
	needKernels(t)
	names := []string{"5.10"}
	if k := os.Getenv("SQLHIST_KERNELS"); k != "" {
		names = strings.Split(k, ",")
	}
	for _, kname := range names {
		t.Run(kname, func(t *testing.T) { streamJob(t, kname) })
	}
}
