package e2e

// A real Prometheus scrapes sqlhist (issue 35, item 6): the via job's two
// guests as a fleet, `-r --metrics` on a loopback address, Debian's
// prometheus (native histograms on) scraping it every second on
// loopback; its HTTP API's answers must equal sqlhist's own JSON answer
// of the same run: each target's system call counts, its wakeup
// latencies' count and sum, the p50 and p99 buckets of
// histogram_quantile, the sum over the fleet against the merged total;
// and after Ctrl-C each guest's tracefs is as before.
//
// The queries count only a workload's task (its comm, promComm: a
// script's name), which ends well before the run, so that the answer
// stops growing and the scrape and the final reading see the same
// counts. The workload waits in the guest for the run's synthetic event
// to exist (the one line is the run's while it runs), then a few seconds
// for the rest of the apply.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

const promComm = "promwl"

// promSQL is the wakeup JOIN and a system call count, of promComm alone.
var promSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_comm = '` + promComm + `';
SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter WHERE COMM = '` + promComm + `'`

// promWakeups is the workload's polls: each sleeps 3 ms and is woken by
// its timer (one wakeup).
const promWakeups = 150

// promWorkload makes the workload in a guest and starts it in the
// background: it waits for the run's synthetic event, then 8 s, then
// polls promWakeups times.
var promWorkload = `rm -f /tmp/promidle /tmp/` + promComm + `; mkfifo /tmp/promidle
cat > /tmp/` + promComm + ` <<'EOF'
#!/bin/sh
exec 3<>/tmp/promidle
i=0
while [ $i -lt ` + strconv.Itoa(promWakeups) + ` ]; do read -t 0.003 x <&3; i=$((i+1)); done
EOF
chmod +x /tmp/` + promComm + `
( n=0; until ls -d /sys/kernel/tracing/events/synthetic/sched_waking_to_sched_switch_* >/dev/null 2>&1 || [ $n -ge 600 ]; do sleep 0.2; n=$((n+1)); done
  sleep 8; /tmp/` + promComm + ` ) </dev/null >/dev/null 2>&1 &
echo started
`

const (
	promLatency = "sqlhist_sched_waking_to_sched_switch_lat_microseconds"
	promCalls   = "sqlhist_sys_enter_events_total"
)

func viaPromChecks(t *testing.T, vias []string, bin string) {
	prom, err := vm.EnsurePrometheus()
	if err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	gstate := func(via string) string {
		out, err := viaSession(via, "T=/sys/kernel/tracing\n"+gstateShell+"gstate", 2*time.Minute)
		if err != nil {
			t.Fatalf("the via shell: %v", err)
		}
		return out
	}
	var before []string
	for _, v := range vias {
		before = append(before, gstate(v))
		if out, err := viaSession(v, promWorkload, time.Minute); err != nil || !strings.Contains(out, "started") {
			t.Fatalf("starting the workload: %v %q", err, out)
		}
	}

	// Prometheus, scraping an address sqlhist will serve.
	addr, papi := loopbackAddr(t), loopbackAddr(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sqlhist
    static_configs:
      - targets: ['%s']
`, addr)), 0o644)
	var plog syncBuffer
	pcmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+papi, "--enable-feature=native-histograms")
	pcmd.Stdout, pcmd.Stderr = &plog, &plog
	if err := pcmd.Start(); err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): starting prometheus: %v", err)
	}
	defer func() {
		pcmd.Process.Signal(syscall.SIGTERM)
		pcmd.Wait()
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", lastLinesOf(plog.String(), 30))
		}
	}()
	waitFor(t, time.Minute, "prometheus ready", func() bool {
		resp, err := http.Get("http://" + papi + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// sqlhist: the fleet, serving until interrupted.
	args := []string{"-r", "-d", "120", "-o", "json", "--metrics", addr, promSQL}
	for _, v := range vias {
		args = append(args, "--via", v)
	}
	var out, errs syncBuffer
	cmd := exec.Command(bin, viaArgs(args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()
	waitFor(t, 2*time.Minute, "both targets collecting", func() bool {
		return strings.Count(errs.String(), "collecting") >= len(vias)
	})
	collecting := time.Since(start)

	// The answer is final once each target's count has stood still over
	// two of sqlhist's readings (5 s apart): query everything at one
	// instant then.
	q := promQuerier{t: t, base: "http://" + papi}
	var at float64
	last := map[string]float64{}
	stable := time.Time{}
	waitFor(t, 2*time.Minute, "the workloads' counts to stand still in prometheus", func() bool {
		now := float64(time.Now().UnixMilli()) / 1000
		got := map[string]float64{}
		for _, s := range q.vector("sum by (target) ("+promCalls+")", now) {
			got[s.Metric["target"]] = s.value()
		}
		if len(got) != len(vias) || fmt.Sprint(got) != fmt.Sprint(last) {
			t.Logf("%.1fs: system calls of %s by target in prometheus: %v", time.Since(start).Seconds(), promComm, got)
			last, stable = got, time.Now()
			return false
		}
		for _, v := range got {
			if v < promWakeups {
				return false
			}
		}
		at = now
		return time.Since(stable) > 11*time.Second
	})
	calls := map[string]map[string]float64{} // target → call → count
	for _, s := range q.vector(promCalls, at) {
		if calls[s.Metric["target"]] == nil {
			calls[s.Metric["target"]] = map[string]float64{}
		}
		calls[s.Metric["target"]][s.Metric["call"]] = s.value()
	}
	native := q.vector(promLatency, at)
	if page, err := http.Get("http://" + addr + "/metrics"); err == nil {
		b, _ := io.ReadAll(page.Body)
		page.Body.Close()
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, promLatency) {
				lines = append(lines, l)
			}
		}
		defer func() {
			if t.Failed() {
				t.Logf("sqlhist's page at the answer's time (%s):\n%s", promLatency, strings.Join(lines, "\n"))
			}
		}()
	}
	counts, sums := map[string]float64{}, map[string]float64{}
	for _, s := range q.vector("histogram_count("+promLatency+`{comm="`+promComm+`"})`, at) {
		counts[s.Metric["target"]] = s.value()
	}
	for _, s := range q.vector("histogram_sum("+promLatency+`{comm="`+promComm+`"})`, at) {
		sums[s.Metric["target"]] = s.value()
	}
	quantiles := map[string][2]float64{}
	for i, p := range []string{"0.5", "0.99"} {
		for _, s := range q.vector("histogram_quantile("+p+", "+promLatency+`{comm="`+promComm+`"})`, at) {
			v := quantiles[s.Metric["target"]]
			v[i] = s.value()
			quantiles[s.Metric["target"]] = v
		}
	}
	fleetSum := q.vector("sum("+promCalls+")", at)
	ups := q.vector("sqlhist_up", at)

	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sqlhist: %v\n%s%s", err, out.String(), lastLinesOf(errs.String(), 40))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("sqlhist did not end within 2 minutes of SIGINT:\n%s", lastLinesOf(errs.String(), 40))
	}
	took := time.Since(start)

	// sqlhist's own answer.
	var doc struct {
		Targets []struct {
			Label   string
			Error   string
			Results []runResult
		}
		Merged struct{ Results []runResult }
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil || len(doc.Targets) != len(vias) || len(doc.Merged.Results) != 2 {
		t.Fatalf("the fleet's JSON (%v):\n%s\n%s", err, out.String(), lastLinesOf(errs.String(), 40))
	}
	if len(native) != len(vias) || !native[0].isHistogram() {
		t.Errorf("prometheus holds %d series of %s (want %d native histograms): %v", len(native), promLatency, len(vias), native)
	}
	if len(ups) != len(vias) {
		t.Errorf("sqlhist_up: %d target series, want %d: %v", len(ups), len(vias), ups)
	}
	var report []string
	var merged float64
	for i, tg := range doc.Targets {
		label := vias[i]
		if tg.Label != label || tg.Error != "" || len(tg.Results) != 2 {
			t.Errorf("target %d: label %q, error %q, %d results", i, tg.Label, tg.Error, len(tg.Results))
			continue
		}
		join, hist := tg.Results[0], tg.Results[1]
		// System calls: every call's count, exactly.
		own := map[string]float64{}
		for _, row := range hist.Rows {
			n, _ := row["n"].(float64)
			own[fmt.Sprint(row["call"])] = n
			merged += n
		}
		if fmt.Sprint(own) != fmt.Sprint(calls[label]) {
			t.Errorf("target %d: system calls: sqlhist %v, prometheus %v", i, own, calls[label])
		}
		// Wakeups: the count, the sum, the quantiles' buckets.
		var row map[string]any
		for _, r := range join.Rows {
			if r["comm"] == promComm {
				row = r
			}
		}
		if row == nil {
			t.Errorf("target %d: no %s row in sqlhist's JOIN: %v", i, promComm, join.Rows)
			continue
		}
		n, _ := row["count"].(float64)
		lat, _ := row["lat"].(map[string]any)
		sum, _ := lat["sum"].(float64)
		dist := jsonDistribution(lat["distribution"])
		if n < promWakeups*0.9 || counts[label] != n || sums[label] != sum {
			t.Errorf("target %d: wakeups: sqlhist %v (sum %v us), prometheus %v (sum %v); want the same, at least %d", i, n, sum, counts[label], sums[label], promWakeups*9/10)
		}
		for k, p := range []float64{0.5, 0.99} {
			lo, hi := quantileBucket(dist, p)
			if v := quantiles[label][k]; !(v > float64(lo) && v <= float64(hi)) && !(lo == 0 && v >= 0 && v <= float64(hi)) {
				t.Errorf("target %d: histogram_quantile(%v) = %v, outside sqlhist's bucket (%d, %d] (distribution %v)", i, p, v, lo, hi, dist)
			}
		}
		report = append(report, fmt.Sprintf("target %d: %v calls, %v wakeups (sum %v us), p50 %.1f us, p99 %.1f us", i, sumOf(own), n, sum, quantiles[label][0], quantiles[label][1]))
	}
	if len(fleetSum) != 1 || fleetSum[0].value() != merged || doc.Merged.Results[1].sum("n") != uint64(merged) {
		t.Errorf("the fleet: prometheus's sum %v, the targets' %v, sqlhist's merged %d", fleetSum, merged, doc.Merged.Results[1].sum("n"))
	}
	for i, v := range vias {
		if after := gstate(v); after != before[i] {
			t.Errorf("target %d: tracefs after the run differs:\nbefore:\n%s\nafter:\n%s", i, before[i], after)
		}
	}
	t.Logf("prometheus (native histograms) scraping sqlhist --metrics of %d targets: collecting after %v, the answer read at %v, ended %v after the start; %s; fleet %v calls",
		len(vias), collecting.Round(100*time.Millisecond), time.Duration((at-float64(start.UnixMilli())/1000)*float64(time.Second)).Round(time.Second),
		took.Round(100*time.Millisecond), strings.Join(report, "; "), merged)
}

// loopbackAddr is a loopback address with a free port.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(time.Second)
	}
}

// promQuerier asks a Prometheus's HTTP API.
type promQuerier struct {
	t    *testing.T
	base string
}

// promSample is one series of an instant vector: a value or a native
// histogram.
type promSample struct {
	Metric    map[string]string
	Value     []any
	Histogram []any
}

func (s promSample) isHistogram() bool { return s.Histogram != nil }

func (s promSample) value() float64 {
	if len(s.Value) != 2 {
		return math.NaN()
	}
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// vector evaluates an instant query at a Unix time.
func (q promQuerier) vector(expr string, at float64) []promSample {
	q.t.Helper()
	u := q.base + "/api/v1/query?" + url.Values{"query": {expr}, "time": {strconv.FormatFloat(at, 'f', 3, 64)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		q.t.Fatalf("prometheus: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []promSample
		}
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		q.t.Fatalf("prometheus: %s: %v %s", expr, err, body)
	}
	sort.Slice(r.Data.Result, func(i, j int) bool {
		return fmt.Sprint(r.Data.Result[i].Metric) < fmt.Sprint(r.Data.Result[j].Metric)
	})
	return r.Data.Result
}

// jsonDistribution reads a row's latency distribution from sqlhist's JSON:
// upper bound → count.
func jsonDistribution(v any) map[uint64]uint64 {
	out := map[uint64]uint64{}
	list, _ := v.([]any)
	for _, b := range list {
		m, _ := b.(map[string]any)
		hi, _ := m["high"].(float64)
		n, _ := m["count"].(float64)
		out[uint64(hi)] += uint64(n)
	}
	return out
}

// quantileBucket is the log2 bucket (lo, hi] holding the q-quantile of a
// distribution: the first whose cumulative count reaches q of the total,
// as histogram_quantile ranks.
func quantileBucket(dist map[uint64]uint64, q float64) (lo, hi uint64) {
	var bounds []uint64
	var total uint64
	for b, n := range dist {
		bounds = append(bounds, b)
		total += n
	}
	sort.Slice(bounds, func(i, j int) bool { return bounds[i] < bounds[j] })
	rank := q * float64(total)
	var cum uint64
	for _, b := range bounds {
		cum += dist[b]
		if float64(cum) >= rank {
			if b <= 1 {
				return 0, 1
			}
			return b / 2, b
		}
	}
	return 0, 0
}

func sumOf(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}
