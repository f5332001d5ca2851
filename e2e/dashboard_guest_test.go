package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// dashSQL are the queries of the dashboard check: the wakeup JOIN (a
// latency: heatmap, quantiles, rate, maximum), every system call (a
// count) and the sizes asked of read (a log2 key).
var dashSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid;
SELECT CAST(id AS SYSCALL) AS call FROM sys_enter;
SELECT CAST(count AS LOG2) AS size, COUNT(*) FROM sys_enter_read`

// viaDashboardChecks runs -r --metrics --metrics-dashboard on a guest
// through --via, Debian's prometheus (native histograms on) scraping it
// every second, and queries every panel of the dashboard sqlhist wrote
// ($job and $__rate_interval substituted) once the guest's counts have
// been read a few times: each must return series of the run (native
// histograms for the heatmaps).
func viaDashboardChecks(t *testing.T, via, bin string) {
	prom, err := vm.EnsurePrometheus()
	if err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	addr, papi := loopbackAddr(t), loopbackAddr(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: sqlhist\n    static_configs:\n      - targets: ['%s']\n", addr)), 0o644)
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

	dash := filepath.Join(dir, "dashboard.json")
	var out, errs syncBuffer
	cmd := exec.Command(bin, viaArgs("--via", via, "-r", "-d", "120", "--metrics", addr, "--metrics-dashboard", dash, dashSQL)...)
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
	// Readings every 5 s: wait for five in prometheus.
	q := promQuerier{t: t, base: "http://" + papi}
	waitFor(t, 3*time.Minute, "five readings of the guest's results scraped", func() bool {
		v := q.vector(`count_over_time(sqlhist_reads_total{job="sqlhist"}[2m])`, float64(time.Now().UnixMilli())/1000)
		r := q.vector(`sqlhist_reads_total{job="sqlhist"}`, float64(time.Now().UnixMilli())/1000)
		return len(v) > 0 && len(r) > 0 && r[0].value() >= 5
	})
	at := float64(time.Now().UnixMilli()) / 1000
	var d struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr string }
		}
	}
	data, err := os.ReadFile(dash)
	if err != nil || json.Unmarshal(data, &d) != nil || len(d.Panels) == 0 {
		t.Fatalf("the dashboard: %v\n%.2000s", err, data)
	}
	subst := strings.NewReplacer("$job", "sqlhist", "$__rate_interval", "30s")
	exprs := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs++
			expr := subst.Replace(tg.Expr)
			got := q.vector(expr, at)
			switch {
			case len(got) == 0:
				t.Errorf("%s: %s returns no series", p.Title, expr)
			case p.Type == "heatmap" && !got[0].isHistogram():
				t.Errorf("%s: %s returns %v, not a native histogram", p.Title, expr, got[0])
			default:
				t.Logf("%s: %s: %d series", p.Title, expr, len(got))
			}
		}
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("sqlhist: %v\n%s", err, lastLinesOf(errs.String(), 40))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("sqlhist did not end within 2 minutes of SIGINT:\n%s", lastLinesOf(errs.String(), 40))
	}
	t.Logf("the dashboard of a guest's run: %d panels, %d queries checked against prometheus; %v", len(d.Panels), exprs, time.Since(start).Round(100*time.Millisecond))
}
