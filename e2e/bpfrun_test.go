package e2e

// The BPF engine in the run phase (issue 43, item 6): on every kernel
// of the run phase, the JOIN, the syscall histogram and the log2
// aggregate run with --engine bpf, and -r without --engine (auto) runs
// the histogram; the kernel is asked whether it has the bpf() system
// call (CONFIG_BPF_SYSCALL makes /proc/sys/kernel/unprivileged_bpf_disabled),
// not its release. Where it has, the answers are the BPF engine's,
// plausible and whole, and auto picked BPF; where it has not (the
// kernels the suite builds), --engine bpf is refused before anything
// is written, with the reason, and auto answers with the hist triggers
// saying why not BPF. Either way tracefs is left as it was (the phase's
// state checks), and a BPF run killed with SIGKILL while it collects
// leaves its programs nowhere (bpf's TestKillLeavesNothing, in
// bpfengine_guest_test.go, looks them up by id).

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// bpfRunScript runs the BPF engine's part of the run phase; $J and $H
// are the phase's JOIN and histogram.
const bpfRunScript = `# The BPF engine (bpfrun_test.go).
if [ -e /proc/sys/kernel/unprivileged_bpf_disabled ]; then echo "@@bpf-syscall yes"; else echo "@@bpf-syscall no"; fi
if [ -e /sys/kernel/btf/vmlinux ]; then echo "@@btf yes"; else echo "@@btf no"; fi
BA='SELECT CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY lat ORDER BY n DESC'
/work/sqlhist -r --engine bpf -d 2 -o json "$J" > /tmp/out 2> /tmp/err; echo "@@bpfjoin-exit $?"
echo "@@bpfjoin-json"; cat /tmp/out; echo "@@bpfjoin-stderr"; cat /tmp/err
/work/sqlhist -r --engine bpf -d 1 -o json "$H" > /tmp/out 2> /tmp/err; echo "@@bpfhist-exit $?"
echo "@@bpfhist-json"; cat /tmp/out; echo "@@bpfhist-stderr"; cat /tmp/err
/work/sqlhist -r --engine bpf -d 2 -o json "$BA" > /tmp/out 2> /tmp/err; echo "@@bpfagg-exit $?"
echo "@@bpfagg-json"; cat /tmp/out; echo "@@bpfagg-stderr"; cat /tmp/err
/work/sqlhist -r --engine bpf --events -d 1 "$J" > /tmp/out 2> /tmp/err; echo "@@bpfev-exit $?"
echo "@@bpfev-count $(wc -l < /tmp/out)"; echo "@@bpfev-stderr"; cat /tmp/err
/work/sqlhist -r -d 1 -o json "$H" > /tmp/out 2> /tmp/err; echo "@@autohist-exit $?"
echo "@@autohist-json"; cat /tmp/out; echo "@@autohist-stderr"; cat /tmp/err
# A function's latency: on the perf kprobe PMU for a run until -d, as
# fentry/fexit (where the kernel takes them) for a run serving metrics.
F='SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) AS n FROM kprobe(do_sys_openat2) AS start JOIN kretprobe(do_sys_openat2) AS end ON start.common_pid = end.common_pid GROUP BY ns'
/work/sqlhist -r --engine bpf -d 1 -o json "$F" > /tmp/out 2> /tmp/err; echo "@@bpffunc-exit $?"
echo "@@bpffunc-json"; cat /tmp/out; echo "@@bpffunc-stderr"; cat /tmp/err
/work/sqlhist -r --engine bpf --metrics 127.0.0.1:0 -d 1 "$F" > /dev/null 2> /tmp/err; echo "@@bpffuncm-exit $?"
echo "@@bpffuncm-stderr"; cat /tmp/err
echo "@@bpf-done"
`

// withBPFRun puts the BPF engine's part into a run phase's script before
// its workload stops.
func withBPFRun(script string) string {
	return strings.Replace(script, "kill $W\nwait $W\n", bpfRunScript+"kill $W\nwait $W\n", 1)
}

// bpfEngineJSON is what the checks read of a -o json document.
type bpfEngineJSON struct {
	Engine string `json:"engine"`
	Reason string `json:"engine_reason"`
	Lost   int    `json:"lost"`
}

// checkBPFRun checks the BPF engine's part of a run phase. It returns a
// note for the table.
func checkBPFRun(t *testing.T, kname, out string) string {
	t.Helper()
	sec := sections(out)
	if !strings.Contains(out, "@@bpf-done\n") {
		t.Errorf("%s: the BPF part did not end:\n%s", kname, lastLines(out, 20))
		return ""
	}
	has := strings.Contains(out, "@@bpf-syscall yes\n")
	engineOf := func(name string) bpfEngineJSON {
		var e bpfEngineJSON
		if err := json.Unmarshal([]byte(sec[name+"-json"]), &e); err != nil {
			t.Errorf("%s: %s: %v:\n%s\nstderr:\n%s", kname, name, err, sec[name+"-json"], sec[name+"-stderr"])
		}
		return e
	}
	if !has {
		// Refused before anything is written, saying why; auto takes the
		// kernel's hist triggers and says why not BPF.
		for _, q := range []string{"bpfjoin", "bpfhist", "bpfagg", "bpfev"} {
			if !strings.Contains(out, "@@"+q+"-exit 1\n") || !strings.Contains(sec[q+"-stderr"], "bpf") || sec[q+"-json"] != "" {
				t.Errorf("%s: %s without the bpf() system call: want exit 1 and the reason, got:\n%s\n%s", kname, q, sec[q+"-json"], sec[q+"-stderr"])
			}
		}
		wantLines(t, out, "@@autohist-exit 0")
		checkHist(t, sec["autohist-json"])
		// The kernel's JSON names no engine (it is the default).
		if e := engineOf("autohist"); e.Engine != "" {
			t.Errorf("%s: auto without the bpf() system call ran %q, want the kernel's hist triggers", kname, e.Engine)
		}
		return "bpf: refused (no bpf() system call), auto: hist triggers"
	}
	wantLines(t, out, "@@bpfjoin-exit 0", "@@bpfhist-exit 0", "@@bpfagg-exit 0", "@@bpfev-exit 0", "@@autohist-exit 0")
	// --events: the programs' synthetic events through their perf
	// buffer, as many lines as the JOIN's results counted.
	if m := regexp.MustCompile(`@@bpfev-count (\d+)`).FindStringSubmatch(out); m == nil {
		t.Errorf("%s: bpf --events: no line count; stderr:\n%s", kname, sec["bpfev-stderr"])
	} else if n, _ := strconv.Atoi(m[1]); streamProblem(sec["bpfev-stderr"], n) != "" {
		t.Errorf("%s: bpf --events: %s; stderr:\n%s", kname, streamProblem(sec["bpfev-stderr"], n), sec["bpfev-stderr"])
	}
	checkJoin(t, "bpf join", sec["bpfjoin-json"])
	checkHist(t, sec["bpfhist-json"])
	checkHist(t, sec["autohist-json"])
	checkAggregate(t, sec["bpfagg-json"], "lat")
	for _, q := range []string{"bpfjoin", "bpfhist", "bpfagg", "autohist"} {
		e := engineOf(q)
		if e.Engine != "bpf" {
			t.Errorf("%s: %s ran engine %q (%s), want bpf:\n%s", kname, q, e.Engine, e.Reason, sec[q+"-stderr"])
		}
		// A program the kernel skipped is an event lost: a few at most
		// (an interrupt's wakeup during another BPF program).
		if e.Lost > 10 {
			t.Errorf("%s: %s: %d program runs skipped", kname, q, e.Lost)
		}
	}
	if e := engineOf("autohist"); !strings.HasPrefix(e.Reason, "auto: BPF") {
		t.Errorf("%s: auto's reason %q", kname, e.Reason)
	}
	// A function's latency: its probes on the kprobe PMU until -d, as
	// fentry/fexit under --metrics where the kernel's BTF describes the
	// function and it attaches them (x86-64; 6.1 on arm64 has no
	// trampolines: the PMU then too).
	var funcNote string
	if arch := kernelArch(t, kname); arch != "amd64" && arch != "arm64" {
		// The engine compiles probes for x86-64 and arm64 only, and
		// kprobes record nothing on riscv64: refused at the SQL, with
		// the reason.
		why := "the BPF engine compiles probes' fetch arguments for x86_64 and arm64"
		if arch == "riscv64" {
			why = "kprobes record nothing on riscv64"
		}
		for _, q := range []string{"bpffunc", "bpffuncm"} {
			if !strings.Contains(out, "@@"+q+"-exit 1\n") || !strings.Contains(sec[q+"-stderr"], why) || !strings.Contains(sec[q+"-stderr"], "<args>:1:") {
				t.Errorf("%s: %s on %s: want the refusal at the SQL (%s):\n%s", kname, q, arch, why, sec[q+"-stderr"])
			}
		}
		funcNote = "funclatency refused (" + why + ")"
	} else {
		funcNote = checkBPFFunc(t, kname, out, sec)
	}
	// Where the kernel has BTF, the JOIN's programs run as raw
	// tracepoints (bpf/rawtp.go): their fields are members of the tasks
	// the tracepoints' arguments point to; the system calls' histogram
	// stays on its classic tracepoint. The run says so as it starts
	// collecting.
	if !strings.Contains(out, "@@btf yes\n") {
		return "bpf: join, hist, aggregate, --events, auto (no BTF: classic tracepoints), " + funcNote
	}
	for _, ev := range []string{"sched/sched_waking", "sched/sched_switch"} {
		if !strings.Contains(sec["bpfjoin-stderr"], ev+" (raw tracepoint)") {
			t.Errorf("%s: bpfjoin: %s is not on a raw tracepoint, though the kernel has BTF:\n%s", kname, ev, sec["bpfjoin-stderr"])
		}
	}
	if strings.Contains(sec["bpfhist-stderr"], "(raw tracepoint)") {
		t.Errorf("%s: bpfhist: the system calls on a raw tracepoint:\n%s", kname, sec["bpfhist-stderr"])
	}
	return "bpf: join, hist, aggregate, --events, auto (raw tracepoints), " + funcNote
}

// checkBPFFunc checks a function's latency by the BPF engine (x86-64 and
// arm64): plausible log2 buckets counting every hit, its probes on the
// kprobe PMU until -d, and as fentry/fexit under --metrics where the
// kernel's BTF describes the function and it attaches them (x86-64; 6.1
// on arm64 has no trampolines: the PMU then too). It returns a note for
// the table.
func checkBPFFunc(t *testing.T, kname, out string, sec map[string]string) string {
	t.Helper()
	wantLines(t, out, "@@bpffunc-exit 0", "@@bpffuncm-exit 0")
	if r, ok := parseResults(t, "bpffunc", sec["bpffunc-json"], 1); ok {
		res := r[0]
		if sum := res.sum("n"); len(res.Rows) == 0 || sum == 0 || sum != res.Totals.Hits || res.Totals.Dropped != 0 {
			t.Errorf("%s: bpffunc: %d rows counting %d, hits %d, dropped %d:\n%s", kname, len(res.Rows), sum, res.Totals.Hits, res.Totals.Dropped, sec["bpffunc-json"])
		}
		for _, row := range res.Rows {
			// An open takes from a microsecond to a few
			// milliseconds under emulation: a log2 bucket of ns
			// from 2^8 to 2^26.
			if ns, _ := row["ns"].(float64); ns < 1<<8 || ns > 1<<26 {
				t.Errorf("%s: bpffunc: a latency bucket of %v ns", kname, row["ns"])
			}
		}
	}
	if n := strings.Count(sec["bpffunc-stderr"], "(kprobe PMU)"); n != 2 {
		t.Errorf("%s: bpffunc: %d of its 2 probes on the kprobe PMU, want both:\n%s", kname, n, sec["bpffunc-stderr"])
	}
	fentry := strings.Contains(sec["bpffuncm-stderr"], "(fentry)") && strings.Contains(sec["bpffuncm-stderr"], "(fexit)")
	pmu := strings.Count(sec["bpffuncm-stderr"], "(kprobe PMU)") == 2
	if !fentry && !pmu || kernelArch(t, kname) == "amd64" && strings.Contains(out, "@@btf yes\n") && !fentry {
		t.Errorf("%s: bpffunc under --metrics: want fentry/fexit (x86-64 with BTF) or the PMU:\n%s", kname, sec["bpffuncm-stderr"])
	}
	if fentry {
		return "funclatency on the PMU (--metrics: fentry/fexit)"
	}
	return "funclatency on the PMU (--metrics: the PMU)"
}
