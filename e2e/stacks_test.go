package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// stackCountSQL is the blocking-stack count, which works on every kernel
// with hist triggers: sched_switch keyed by the stack of the task that
// goes to sleep.
const stackCountSQL = `SELECT STACKTRACE, COUNT(*) FROM sched_switch WHERE prev_state == 1`

// offCPUSQL is off-CPU time by stack (Linux 6.3 and later): the stack a
// task blocked in, carried through the JOIN to its switch-in, with how
// long it stayed off the CPU (testdata/queries/offcpu_stacks.txtar).
const offCPUSQL = `SELECT start.STACKTRACE AS stack, TIMESTAMP_DELTA_USECS AS offcpu FROM sched_switch AS start JOIN sched_switch AS end ON start.prev_pid = end.next_pid WHERE start.prev_state == 1 OR start.prev_state == 2`

// stackCountScript runs the count form while runScript's workload runs:
// as JSON (its rows against the kernel's entries and hits), and as folded
// stacks per interval (-i 1 -d 2.5: two whole intervals, a partial one and
// the total) whose values add up to the hits sqlhist reports. The
// markers carry the guest's uptime, to time what the stacks add.
const stackCountScript = `echo "@@stk-start"; cut -d' ' -f1 /proc/uptime
S='` + stackCountSQL + `'
/work/sqlhist -r --engine kernel -d 2 -o json "$S" > /tmp/out 2> /tmp/err; echo "@@stk-exit $?"
echo "@@stk-json"; cat /tmp/out
echo "@@stk-stderr"; cat /tmp/err
/work/sqlhist -r --engine kernel -i 1 -d 2.5 -o folded "$S" > /tmp/out 2> /tmp/err; echo "@@fold-exit $?"
echo "@@fold"; cat /tmp/out
echo "@@fold-stderr"; cat /tmp/err
`

// offCPUScript runs off-CPU time by stack as a pprof profile (once whole,
// once per interval) and as folded stacks; the profiles come back as
// base64.
const offCPUScript = `O='` + offCPUSQL + `'
/work/sqlhist -r --engine kernel -d 2 -o pprof --out /tmp/offcpu.pb.gz "$O" > /tmp/out 2> /tmp/err; echo "@@pprof-exit $?"
echo "@@pprof-stdout"; cat /tmp/out
echo "@@pprof-stderr"; cat /tmp/err
echo "@@pprof"; base64 /tmp/offcpu.pb.gz
/work/sqlhist -r --engine kernel -i 1 -d 2.5 -o pprof --out /tmp/iv.pb.gz "$O" 2> /tmp/err; echo "@@ivpprof-exit $?"
echo "@@ivpprof-stderr"; cat /tmp/err
for f in /tmp/iv.[0-9]*.pb.gz; do n=${f#/tmp/iv.}; echo "@@ivpprof-${n%.pb.gz}"; base64 $f; done
echo "@@ivpprof-total"; base64 /tmp/iv.pb.gz
echo "@@ivpprof-files"; ls /tmp/iv.*
`

// stackScript is what the run phase adds for stacks on kernel kname:
// the count form on 6.1, 6.12 and 7.2 (x86-64), off-CPU time by stack
// too on 6.12 and 7.2.
func stackScript(kname string) string {
	switch kname {
	case "6.1":
		return stackCountScript + stackEnd
	case "6.12", "7.2":
		return stackCountScript + offCPUScript + stackEnd
	}
	return ""
}

const stackEnd = `echo "@@stk-end"; cut -d' ' -f1 /proc/uptime
`

var foldedTotalsRE = regexp.MustCompile(`sched/sched_switch: hits (\d+), entries (\d+), dropped (\d+)`)

// checkStacks checks what stackScript printed on kernel kname, and with
// $SQLHIST_E2E_ARTIFACTS writes the off-CPU profile and the folded stacks
// of the total there (the README's flame graph is drawn from them).
func checkStacks(t *testing.T, kname, out string) {
	t.Helper()
	if stackScript(kname) == "" {
		return
	}
	sec := sections(out)
	start, _ := strconv.ParseFloat(firstField(sec["stk-start"]), 64)
	end, _ := strconv.ParseFloat(firstField(sec["stk-end"]), 64)
	t.Logf("%s: the stack runs took %.1f s of guest time", kname, end-start)
	wantLines(t, out, "@@stk-exit 0", "@@fold-exit 0")
	// Every stack is a row: as many as the kernel's entries, adding up
	// to its hits.
	if r, ok := parseResults(t, "stacks", sec["stk-json"], 1); ok {
		res := r[0]
		distinct := map[string]bool{}
		// The stack's column: common_stacktrace (stacktrace on 6.1).
		col := res.Columns[0]
		for _, row := range res.Rows {
			frames, _ := row[col].([]any)
			b, _ := json.Marshal(frames)
			if len(frames) < 2 {
				t.Errorf("stacks: row %v has no frames in %q", row, col)
			}
			distinct[string(b)] = true
		}
		// Drops only as the kernel's lost insert races (see
		// raceDrops): two CPUs switching out in one new stack at once.
		raceDrop := res.Totals.Dropped <= 2 && len(res.Rows) < 1024
		if len(res.Rows) < 3 || uint64(len(res.Rows)) != res.Totals.Entries || len(distinct) != len(res.Rows) ||
			res.sum("count") != res.Totals.Hits || (res.Totals.Dropped != 0 && !raceDrop) {
			t.Errorf("stacks: %d rows (%d distinct stacks) counting %d; the kernel: %d entries, %d hits, %d dropped",
				len(res.Rows), len(distinct), res.sum("count"), res.Totals.Entries, res.Totals.Hits, res.Totals.Dropped)
		}
		t.Logf("%s: %s: %d stacks, %d events", kname, stackCountSQL, len(res.Rows), res.Totals.Hits)
	}
	checkFoldedIntervals(t, sec["fold"], sec["fold-stderr"])
	if !strings.Contains(stackScript(kname), "pprof") {
		return // the count form only (6.1)
	}
	wantLines(t, out, "@@pprof-exit 0", "@@ivpprof-exit 0")
	if sec["pprof-stdout"] != "" {
		t.Errorf("-o pprof --out wrote to stdout: %q", firstLines(sec["pprof-stdout"], 3))
	}
	data := decodeProfile(t, "offcpu", sec["pprof"])
	p := parseProfile(t, "offcpu", data)
	if p != nil {
		hits := totalsHits(t, sec["pprof-stderr"])
		checkOffCPUProfile(t, kname, p, hits)
	}
	if d := os.Getenv("SQLHIST_E2E_ARTIFACTS"); d != "" && data != nil {
		os.WriteFile(filepath.Join(d, "offcpu-"+kname+".pb.gz"), data, 0o644)
	}
	// One profile per interval, adding up to the total's.
	// A guest starved of CPU may miss a tick: two intervals at least.
	var sum int64
	n := 0
	for ; sec["ivpprof-"+strconv.Itoa(n+1)] != ""; n++ {
		name := "interval " + strconv.Itoa(n+1)
		if ip := parseProfile(t, name, decodeProfile(t, name, sec["ivpprof-"+strconv.Itoa(n+1)])); ip != nil {
			sum += sampleSum(ip, 0)
		}
	}
	if n < 2 {
		t.Errorf("-i 1 -d 2.5 -o pprof: %d interval profiles; files:\n%s", n, sec["ivpprof-files"])
	}
	if tp := parseProfile(t, "intervals' total", decodeProfile(t, "total", sec["ivpprof-total"])); tp != nil {
		if total := sampleSum(tp, 0); total != sum || total == 0 {
			t.Errorf("-i 1 -o pprof: the intervals' profiles count %d events, the total's %d; files:\n%s", sum, total, sec["ivpprof-files"])
		}
	}
}

// checkFoldedIntervals: -i 1 -d 2.5 -o folded prints interval blocks
// (three, or two when a tick was missed) and the total; each line is root;…;leaf VALUE with the
// scheduler at the leaf; the total's values add up to the hits on
// stderr, and the intervals' to the total's.
func checkFoldedIntervals(t *testing.T, out, stderr string) {
	t.Helper()
	blocks := map[string]uint64{}
	cur := ""
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, "# "); ok {
			cur = h
			blocks[cur] += 0
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseUint(l[i+1:], 10, 64)
		if i < 0 {
			t.Errorf("-o folded: line %q (block %q)", l, cur)
			continue
		}
		frames := strings.Split(l[:i], ";")
		if err != nil || cur == "" || !strings.Contains(frames[len(frames)-1], "schedule") || strings.Contains(l, "+0x") {
			t.Errorf("-o folded: line %q (block %q)", l, cur)
			continue
		}
		blocks[cur] += v
	}
	var ivs uint64
	n := 0
	for h, v := range blocks {
		if strings.HasPrefix(h, "interval ") {
			ivs += v
			n++
		}
	}
	m := foldedTotalsRE.FindStringSubmatch(stderr)
	hits := uint64(0)
	if m != nil {
		hits, _ = strconv.ParseUint(m[1], 10, 64)
	}
	// A guest starved of CPU may miss a tick: two intervals at least.
	if n < 2 || blocks["total"] != hits || ivs != hits || hits == 0 {
		t.Errorf("-o folded -i 1 -d 2.5: %d interval blocks counting %d, the total %d, the kernel's hits %d:\n%s\n%s",
			n, ivs, blocks["total"], hits, firstLines(out, 20), stderr)
	}
}

// checkOffCPUProfile: the profile's sample types are the events and the
// off-CPU time in microseconds (the default), its events add up to the
// hits sqlhist reports, and the leaf of the heaviest stacks is the
// scheduler.
func checkOffCPUProfile(t *testing.T, kname string, p *profile.Profile, hits uint64) {
	t.Helper()
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "events" || p.SampleType[1].Type != "offcpu" ||
		p.SampleType[1].Unit != "microseconds" || p.DefaultSampleType != "offcpu" {
		t.Errorf("offcpu profile: sample types %v, default %q", p.SampleType, p.DefaultSampleType)
	}
	if ev := sampleSum(p, 0); uint64(ev) != hits || hits == 0 {
		t.Errorf("offcpu profile: %d events in the samples, the kernel's hits %d", ev, hits)
	}
	// The leaves by off-CPU time, the most first.
	byLeaf := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Location) > 0 && len(s.Value) > 1 {
			byLeaf[s.Location[0].Line[0].Function.Name] += s.Value[1]
		}
	}
	top, most := heaviestLeaf(byLeaf)
	if !isSchedulerLeaf(top) {
		t.Errorf("offcpu profile: the top leaf is %q, not the scheduler's (%v)", top, byLeaf)
	}
	t.Logf("%s: off-CPU profile: %d stacks, %d events, %d us; top leaf %s (%d us)", kname, len(p.Sample), sampleSum(p, 0), sampleSum(p, 1), top, most)
}

// heaviestLeaf is the leaf with the most off-CPU time and that time. Of
// leaves tied for the most, a scheduler's is taken if there is one, so
// that a tie never turns an answer whose heaviest stacks end in the
// scheduler into a failure (the order of names used to decide it:
// "__cond_resched" before "__schedule"); else the first by name.
func heaviestLeaf(byLeaf map[string]int64) (string, int64) {
	top, most := "", int64(-1)
	for f, v := range byLeaf {
		better := v > most
		if v == most {
			fs, ts := isSchedulerLeaf(f), isSchedulerLeaf(top)
			better = fs && !ts || fs == ts && f < top
		}
		if better {
			top, most = f, v
		}
	}
	return top, most
}

// isSchedulerLeaf reports whether a stack's leaf is the scheduler's
// (__schedule, schedule_hrtimeout_range …).
func isSchedulerLeaf(f string) bool { return strings.Contains(f, "schedule") }

func decodeProfile(t *testing.T, name, b64 string) []byte {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64), ""))
	if err != nil || len(data) == 0 {
		t.Errorf("%s: no profile came back (%v): %q", name, err, firstLines(b64, 2))
		return nil
	}
	return data
}

func parseProfile(t *testing.T, name string, data []byte) *profile.Profile {
	t.Helper()
	if data == nil {
		return nil
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err == nil {
		err = p.CheckValid()
	}
	if err != nil {
		t.Errorf("%s: the pprof package does not read the profile: %v", name, err)
		return nil
	}
	return p
}

func sampleSum(p *profile.Profile, i int) int64 {
	var n int64
	for _, s := range p.Sample {
		if i < len(s.Value) {
			n += s.Value[i]
		}
	}
	return n
}

func totalsHits(t *testing.T, stderr string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`synthetic/\S+: hits (\d+), entries`).FindStringSubmatch(stderr)
	if m == nil {
		t.Errorf("no totals on stderr:\n%s", stderr)
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
