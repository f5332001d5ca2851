package e2e

// The BPF engine against the stream engine in one window (issue 43,
// item 4), where the kernel has no hist triggers to compare it with
// (bullseye's 5.10 and trixie's riscv64 6.12, in the stream job): both
// run the run phase's wakeup JOIN at once, each collecting before a
// bounded workload (sqlwl, 40 sleeps of 20 ms) starts and stopped by
// SIGTERM after it ends. The workload's row must count the same wakeups
// in both, less the program runs the BPF engine says the kernel skipped
// (it counts them on 6.12, not on 5.10: there the counts must be equal),
// and the same distribution bucket by bucket but for the wakeups whose
// two reads of the clock fall on two sides of a bucket's edge
// (sameWindowBuckets). The two read different clocks: a BPF program
// reads bpf_ktime_get_ns as it runs, the stream engine the ring
// buffer's stamp of the record; the averages' difference is told.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bpfStreamWindowScript runs the BPF and stream engines at once around
// the workload; it needs /tmp/TASK, which sameWindowScript writes.
const bpfStreamWindowScript = `# The BPF and stream engines in one window (samewindow_bpf_test.go).
if [ -e /proc/sys/kernel/unprivileged_bpf_disabled ]; then
/work/sqlhist -r --engine bpf -o json '` + sameWindowSQL + `' > /tmp/bsw-bpf 2> /tmp/bsw-bpferr &
B=$!
/work/sqlhist -r --engine stream -o json '` + sameWindowSQL + `' > /tmp/bsw-stream 2> /tmp/bsw-streamerr &
S=$!
i=0; while [ $i -lt 400 ] && ! { grep -q collecting /tmp/bsw-bpferr && grep -q collecting /tmp/bsw-streamerr; }; do sleep 0.05; i=$((i + 1)); done
[ $i -lt 400 ] || echo "@@timeout bpf and stream collecting"
/tmp/` + sameWindowTask + `
kill -TERM $B $S
wait $B; echo "@@bsw-bpf-exit $?"
wait $S; echo "@@bsw-stream-exit $?"
echo "@@bsw-bpf"; cat /tmp/bsw-bpf; echo "@@bsw-bpferr"; cat /tmp/bsw-bpferr
echo "@@bsw-stream"; cat /tmp/bsw-stream; echo "@@bsw-streamerr"; cat /tmp/bsw-streamerr
fi
echo "@@bsw-end"
`

// checkBPFStreamWindow checks what bpfStreamWindowScript printed. It
// returns a note for the phase table.
func checkBPFStreamWindow(t *testing.T, kname, out string) string {
	t.Helper()
	if !strings.Contains(out, "@@bsw-end\n") {
		t.Errorf("%s: bpf = stream in one window: the part did not end:\n%s", kname, lastLines(out, 20))
		return "bpf = stream: FAIL"
	}
	if !strings.Contains(out, "@@bpf-syscall yes\n") {
		// The run phase's BPF part checked the refusal.
		return "bpf = stream: no bpf() system call"
	}
	sec := sections(out)
	if !strings.Contains(out, "@@bsw-bpf-exit 0\n") || !strings.Contains(out, "@@bsw-stream-exit 0\n") {
		t.Errorf("%s: bpf = stream in one window: exits %q and %q\nbpf's stderr:\n%s\nstream's stderr:\n%s", kname,
			firstLine(out, "@@bsw-bpf-exit"), firstLine(out, "@@bsw-stream-exit"), sec["bsw-bpferr"], sec["bsw-streamerr"])
		return "bpf = stream: FAIL"
	}
	var b, s swDoc
	if err := json.Unmarshal([]byte(sec["bsw-bpf"]), &b); err != nil || len(b.Results) != 1 {
		t.Errorf("%s: bpf = stream: the BPF engine's JSON: %v\n%s\nstderr:\n%s", kname, err, sec["bsw-bpf"], sec["bsw-bpferr"])
		return "bpf = stream: FAIL"
	}
	if err := json.Unmarshal([]byte(sec["bsw-stream"]), &s); err != nil || len(s.Results) != 1 {
		t.Errorf("%s: bpf = stream: the stream engine's JSON: %v\n%s\nstderr:\n%s", kname, err, sec["bsw-stream"], sec["bsw-streamerr"])
		return "bpf = stream: FAIL"
	}
	if b.Engine != "bpf" || s.Engine != "stream" || s.Lost != 0 {
		t.Errorf("%s: bpf = stream: engines %q and %q, the stream lost %d; want bpf, stream and none lost", kname, b.Engine, s.Engine, s.Lost)
	}
	row := func(d swDoc) map[string]any {
		for _, r := range d.Results[0].Rows {
			if r["comm"] == sameWindowTask {
				return r
			}
		}
		return nil
	}
	br, sr := row(b), row(s)
	if br == nil || sr == nil {
		t.Errorf("%s: bpf = stream: no row of %s (bpf %v, stream %v):\n%s\n%s", kname, sameWindowTask, br != nil, sr != nil, sec["bsw-bpf"], sec["bsw-stream"])
		return "bpf = stream: FAIL"
	}
	bn, _ := br["count"].(float64)
	sn, _ := sr["count"].(float64)
	// A program run the kernel skipped is a wakeup the BPF engine did
	// not see: the counts may differ by those it reports, no more.
	if bn > sn || bn+float64(b.Lost) < sn {
		t.Errorf("%s: bpf = stream: %s's wakeups: bpf %v (%d program runs skipped), stream %v", kname, sameWindowTask, bn, b.Lost, sn)
		return "bpf = stream: FAIL"
	}
	if bn != sn {
		// The distributions are compared on equal counts only.
		note := fmt.Sprintf("bpf = stream: %s %v and %v wakeups (%d runs skipped)", sameWindowTask, bn, sn, b.Lost)
		t.Logf("%s: %s", kname, note)
		return note
	}
	moved, buckets, dmean, err := sameWindowBuckets(br, sr)
	if err != nil {
		bj, _ := json.Marshal(br)
		sj, _ := json.Marshal(sr)
		t.Errorf("%s: bpf = stream: the row of %s: %v\nbpf:    %s\nstream: %s", kname, sameWindowTask, err, bj, sj)
		return "bpf = stream: FAIL"
	}
	same := fmt.Sprintf("%d buckets equal, averages %+.1f µs apart", buckets, dmean)
	if moved > 0 {
		same = fmt.Sprintf("%d buckets, %d wakeups in another, averages %+.1f µs apart (bpf less stream)", buckets, moved, dmean)
	}
	note := fmt.Sprintf("bpf = stream: %s %v wakeups, %s", sameWindowTask, bn, same)
	t.Logf("%s: %s", kname, note)
	return note
}
