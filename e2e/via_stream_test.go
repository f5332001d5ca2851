package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// The stream engine through --via (issue 31): a kernel without hist
// triggers, with no sqlhist inside, reached only through a shell on a
// serial line, answers the run phase's questions; this machine's sqlhist
// computes them from the pages of the target's ring buffers, which cross
// the line compressed (live/remote's ReadRaw). The checks share the boot
// of streamJob's kernels: their guest runs its own script first, then
// waits for this machine (streamViaBoot).

// viaStreamScriptDone is the file a stream guest's script creates once it
// has run, so that the checks through the via channel start after it.
const viaStreamScriptDone = "/tmp/sqlhist-script-done"

// streamViaBoot boots kname like boot (g's script and files) with a via
// channel (vm.StartVia). Once g's script has run, this machine's sqlhist
// runs viaStreamChecks through the channel; then the guest is ended. It
// returns the guest's result, whose Stdout is what g's script printed,
// and the checks' summary. A boot that fails is INFRASTRUCTURE.
func streamViaBoot(t *testing.T, kname string, g vm.Guest) (vm.Result, string) {
	t.Helper()
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	if g.CPUs == 0 {
		g.CPUs = guestCPUs()
	}
	cached, fstart := vm.Cached(k), time.Now()
	fctx, fcancel := context.WithTimeout(context.Background(), fetchTimeout)
	k, err = vm.Fetch(fctx, k)
	fcancel()
	noteFetch(kname, cached, time.Since(fstart))
	if err != nil {
		t.Fatalf("fetching kernel %s (not a test verdict): %v", kname, err)
	}
	// The guest waits for the host at most its own time less a minute.
	g.Timeout += 5 * time.Minute
	g.Script += "\ntouch " + viaStreamScriptDone + "\n" + vm.ViaWaitScript(g.Timeout-time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), g.Timeout+5*time.Minute)
	defer cancel()
	vg, err := vm.StartVia(ctx, k, g)
	if err != nil && vm.IsInfra(err) {
		vm.Logf("via: retrying after: %v", strings.SplitN(err.Error(), "\n", 2)[0])
		vg, err = vm.StartVia(ctx, k, g)
	}
	if err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			vg.Stop()
		}
	}()
	bin := hostSqlhist(t)
	via := viaCommand(t, vg)
	// Wait for the script, through the channel.
	if out, err := viaSession(via, fmt.Sprintf("while [ ! -e %s ]; do sleep 0.5; done; echo script-done", viaStreamScriptDone), g.Timeout); err != nil || !strings.Contains(out, "script-done") {
		t.Fatalf("waiting for the guest's script: %v %q", err, out)
	}
	detail := viaStreamChecks(t, kname, via, bin)
	res, err := vg.Stop()
	stopped = true
	if err != nil {
		t.Fatalf("ending the guest: %v", err)
	}
	noteBoot(kname, res)
	return res, detail
}

// viaStreamSnap prints what a run must leave as it was: probes, triggers
// and filters, enabled events, instances.
const viaStreamSnap = `T=/sys/kernel/tracing
cat $T/dynamic_events
grep -H '^[^#]' $T/events/*/*/trigger $T/events/*/*/filter 2>/dev/null
grep -l 1 $T/events/*/*/enable 2>/dev/null
ls $T/instances
`

// viaStreamChecks runs the run phase's queries with -r -o json through
// --via on a kernel without hist triggers (the stream engine, auto): the
// wakeup JOIN with the system call histogram in one run, the aggregate
// over the JOIN with the kprobe JOIN in another (the kprobe refused on
// riscv64, where kprobes record nothing), and the chain of three with
// -i, whose intervals must add up. Each answer but -i's says engine
// stream and no event lost; the tracefs is as before afterwards. It
// returns a summary of the runs for the phase table.
func viaStreamChecks(t *testing.T, kname, via, bin string) string {
	q := viaSQL
	arch := kernelArch(t, kname)
	shell := func(script string) string {
		out, err := viaSession(via, script, 2*time.Minute)
		if err != nil {
			t.Fatalf("the via shell: %v", err)
		}
		return out
	}
	// A workload: wakeups, system calls and opens, a few hundred a second
	// (what the line carries is in FINDINGS.md).
	wpid := strings.TrimSpace(shell(`( while :; do sleep 0.02; cat /proc/version > /dev/null; done ) </dev/null >/dev/null 2>&1 & echo $!`))
	if _, err := strconv.Atoi(wpid); err != nil {
		t.Fatalf("starting the workload: %q", wpid)
	}
	defer shell("kill " + wpid)
	before := shell(viaStreamSnap)

	var notes []string
	trace := filepath.Join(t.TempDir(), "via-trace")
	run := func(name string, n int, args ...string) []runResult {
		start := time.Now()
		base := []string{"--via", via, "--via-trace", trace, "-r", "-o", "json"}
		var out, errs string
		var code int
		if len(args) > 1 && args[0] == "--interrupt-after" {
			after, _ := time.ParseDuration(args[1])
			out, errs, code = sqlhistInterrupted(bin, after, append(base, args[2:]...)...)
		} else {
			out, errs, code = sqlhistRun(bin, append(base, args...)...)
		}
		took := time.Since(start)
		var doc struct {
			Engine  string
			Lost    int
			Results []runResult
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Results) != n {
			t.Errorf("%s: exit %d, want %d results:\n%s%s", name, code, n, out, errs)
			return nil
		}
		// Without -i and --engine stream, the target's awk computes the
		// answer where a query lets it (the awk engine, issue 34).
		want := "awk"
		if slices.Contains(args, "stream") || name == "agg+probe" {
			want = "stream"
		}
		if doc.Engine != want || doc.Lost != 0 {
			t.Errorf("%s: engine %q, %d events lost; want %s (no hist triggers), none lost\n%s", name, doc.Engine, doc.Lost, want, errs)
		}
		hits := make([]string, len(doc.Results))
		for i, r := range doc.Results {
			hits[i] = strconv.FormatUint(r.Totals.Hits, 10)
		}
		total, data := traceBytes(trace)
		notes = append(notes, fmt.Sprintf("%s %s %s in %.0fs, %d bytes back (%d of events or results)", name, doc.Engine, strings.Join(hits, "+"), took.Seconds(), total, data))
		return doc.Results
	}
	one := func(r runResult) string {
		b, _ := json.Marshal(map[string]any{"results": []runResult{r}})
		return string(b)
	}
	// Three runs, so that the line's setup and drains are paid three
	// times, not six: a run may hold queries whose synthetic events
	// differ (not the JOIN with its aggregate: one pair, one name).
	dir := t.TempDir()
	file := func(name string, sql ...string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(strings.Join(sql, ";\n")+";\n"), 0o644)
		return p
	}
	// The events cross the line (--engine stream: sqlhist computes here).
	if r := run("join+hist", 2, "-d", "3", "--engine", "stream", "-f", file("join-hist.sql", q.join, q.hist)); r != nil {
		checkJoin(t, "via stream JOIN", one(r[0]))
		checkHist(t, one(r[1]))
	}
	// The JOIN computed by the target's awk (auto), only its answer
	// crossing: not the syscall histogram, whose every system call the
	// riscv64 guest's awk under qemu reads slower than they come (over 3
	// minutes for -d 3 with the host loaded; FINDINGS.md).
	// On riscv64 with -d 3 (one request); elsewhere without -d, until
	// stopped as Ctrl-C does: the script in the background, the end
	// marker written at SIGINT, its instance gone at once (the tracefs
	// is compared with its state before at the end).
	joinArgs := []string{"-d", "3", q.join}
	if arch != "riscv64" {
		joinArgs = []string{"--interrupt-after", "3s", q.join}
	}
	if r := run("join", 1, joinArgs...); r != nil {
		checkJoin(t, "via awk JOIN", one(r[0]))
	}
	// -i through the target's awk: its script in the background, each
	// interval's histograms read from its output file as they come.
	ivTrace := filepath.Join(t.TempDir(), "via-trace-iv")
	ivStart := time.Now()
	ivOut, ivErrs, ivCode := sqlhistRun(bin, "--via", via, "--via-trace", ivTrace, "-r", "-i", "1", "-d", "2", "-o", "json", q.join)
	ivTook := time.Since(ivStart).Seconds()
	if ivCode != 0 || !strings.Contains(ivErrs, "with the target's awk") {
		t.Errorf("-i through the target's awk: exit %d:\n%s%s", ivCode, ivOut, ivErrs)
	} else {
		checkViaIntervals(t, ivOut)
		var counts []string
		// (An interval's JSON names no engine: stderr said it.)
		for _, l := range strings.Split(strings.TrimSpace(ivOut), "\n") {
			var v struct{ Results []runResult }
			if json.Unmarshal([]byte(l), &v) == nil && len(v.Results) == 1 {
				counts = append(counts, strconv.FormatUint(v.Results[0].sum("count"), 10))
			}
		}
		total, data := traceBytes(ivTrace)
		notes = append(notes, fmt.Sprintf("join awk -i 1 -d 2 %s in %.0fs, %d bytes back (%d of results: %.0f B/s)", strings.Join(counts, "/"), ivTook, total, data, float64(data)/ivTook))
	}
	switch arch {
	case "riscv64":
		// Kprobes record nothing there: refused with the reason.
		_, errs, code := sqlhistRun(bin, "--via", via, "-r", "-d", "3", "-o", "json", q.probe)
		if code != 1 || !strings.Contains(errs, "kprobes record nothing on riscv64") {
			t.Errorf("a kprobe JOIN on riscv64 through --via: exit %d, want 1 and the reason:\n%s", code, errs)
		}
		if r := run("agg", 1, "-d", "3", q.agg); r != nil {
			checkAggregate(t, one(r[0]), "comm")
		}
	default:
		// The aggregate over the wakeup JOIN, and a kprobe/kretprobe
		// JOIN on the file each open names.
		if r := run("agg+probe", 2, "-d", "3", "-f", file("agg-probe.sql", q.agg, q.probe)); r != nil {
			checkAggregate(t, one(r[0]), "comm")
			checkJoin(t, "via stream kprobe JOIN", one(r[1]))
		}
	}
	// The chain of three with -i: intervals (the last partial) that add
	// up to the total, whose answer is the chain's.
	// It serves --metrics too (issue 35): the stream engine's answers and
	// health, its lost events labelled engine="stream".
	start := time.Now()
	maddr := loopbackAddr(t)
	pages := make(chan string, 1)
	stopScrape := make(chan struct{})
	go func() {
		served := ""
		defer func() { pages <- served }()
		for {
			select {
			case <-stopScrape:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if resp, err := http.Get("http://" + maddr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), "sqlhist_events_lost_total") {
					served = string(b)
				}
			}
		}
	}()
	out, errs, code := sqlhistRun(bin, "--via", via, "-r", "-i", "2", "-d", "5", "-o", "json", "--metrics", maddr, q.chain3)
	close(stopScrape)
	if code != 0 {
		t.Errorf("-i through --via: exit %d:\n%s%s", code, out, errs)
	}
	if page := <-pages; !strings.Contains(page, `sqlhist_events_lost_total{engine="stream"} 0`) || !strings.Contains(page, `sqlhist_up 1`) {
		t.Errorf("--metrics of the stream engine through --via: the last page served:\n%s", page)
	}
	checkViaIntervals(t, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	checkJoin(t, "via stream chain of three (-i's total)", lines[len(lines)-1])
	var counts []string
	for _, l := range lines {
		var v struct{ Results []runResult }
		if json.Unmarshal([]byte(l), &v) == nil && len(v.Results) == 1 {
			counts = append(counts, strconv.FormatUint(v.Results[0].sum("count"), 10))
		}
	}
	notes = append(notes, fmt.Sprintf("chain3 -i 2 -d 5 %s in %.0fs", strings.Join(counts, "/"), time.Since(start).Seconds()))

	if after := shell(viaStreamSnap); after != before {
		t.Errorf("the tracefs after the stream runs through --via:\n%s\nbefore:\n%s", after, before)
	}
	summary := "via: " + strings.Join(notes, ", ")
	t.Logf("%s: the stream engine through --via: %s", kname, summary)
	return summary
}

// traceBytes adds up the bytes of the answers a --via-trace file lists
// ("HH:MM:SS.mmm < N status S, B bytes, T"), and of those that carried
// the events or the answer: the ring buffers' pages, or what the
// target's awk printed (the rest is the catalog, the setup, the checks).
func traceBytes(file string) (total, data int) {
	text, _ := os.ReadFile(file)
	steps := map[int]string{}
	for _, l := range strings.Split(string(text), "\n") {
		if _, rest, ok := strings.Cut(l, " > "); ok {
			var seq int
			if _, err := fmt.Sscanf(rest, "%d", &seq); err == nil {
				_, step, _ := strings.Cut(rest, " ")
				steps[seq] = step
			}
			continue
		}
		if _, rest, ok := strings.Cut(l, " < "); ok {
			var seq, status, n int
			if _, err := fmt.Sscanf(rest, "%d status %d, %d bytes", &seq, &status, &n); err == nil {
				total += n
				if st := steps[seq]; strings.HasPrefix(st, "reading the ring buffers") || strings.HasPrefix(st, "running the awk engine's script") || strings.HasPrefix(st, "reading the awk engine's output") {
					data += n
				}
			}
		}
	}
	return total, data
}
