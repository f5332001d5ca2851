package main

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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/tracefs"
)

// dashSQL are statements of every kind of metric: a JOIN's latency (a
// native histogram and its maximum), a count, and a log2 key with a sum
// and a maximum.
var dashSQL = wakeupSQL + `;
SELECT CAST(id AS SYSCALL) AS call FROM sys_enter;
SELECT comm, CAST(runtime AS LOG2) AS rt, SUM(runtime) AS total, MAX(runtime) AS top FROM sched_stat_runtime`

// runtimeHist is the kernel's hist of the third statement, its counts
// times k.
func runtimeHist(k int) string {
	return fmt.Sprintf(`# event histogram
#
# trigger info: hist:keys=comm,runtime.log2:vals=hitcount,runtime:max_runtime_4242=runtime:sort=hitcount:size=2048:onmax($max_runtime_4242).save(runtime) [active]
#

{ comm: sh                                                 , runtime: ~ 2^10 } hitcount:          %d  runtime:       %d
	max:        900  runtime:        900
{ comm: cat                                                , runtime: ~ 2^14 } hitcount:          %d  runtime:      %d
	max:      16000  runtime:      16000

Totals:
    Hits: %d
    Entries: 2
    Dropped: 0
`, 3*k, 2000*k, k, 9000*k, 4*k)
}

// scaled is a hist's text with its counts and sums times k.
func scaled(hist string, k int) string {
	re := regexp.MustCompile(`(hitcount|lat|Hits):(\s+)([0-9]+)`)
	return re.ReplaceAllStringFunc(hist, func(s string) string {
		m := re.FindStringSubmatch(s)
		n, _ := strconv.Atoi(m[3])
		return m[1] + ":" + m[2] + strconv.Itoa(n*k)
	})
}

// TestDashboardInPrometheus: -r --metrics --metrics-dashboard FILE
// writes a Grafana dashboard whose every panel's PromQL, its variables
// substituted, returns series from Debian's prometheus (native histograms
// on) scraping that run (a fake tracefs whose counts grow at each
// reading).
func TestDashboardInPrometheus(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus is not installed (Debian package prometheus): make test-shells installs it")
		}
		t.Skipf("prometheus is not installed (Debian package prometheus; make test-shells installs it)")
	}
	began := time.Now()
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	addr, papi := free(), free()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: dashtest\n    static_configs:\n      - targets: ['%s']\n", addr)), 0o644)
	var plog strings.Builder
	var pmu sync.Mutex
	pcmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+papi, "--enable-feature=native-histograms")
	pw := writerFunc(func(b []byte) (int, error) { pmu.Lock(); defer pmu.Unlock(); return plog.Write(b) })
	pcmd.Stdout, pcmd.Stderr = pw, pw
	if err := pcmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	defer func() {
		pcmd.Process.Signal(syscall.SIGTERM)
		pcmd.Wait()
		if t.Failed() {
			pmu.Lock()
			t.Logf("prometheus's log:\n%s", plog.String())
			pmu.Unlock()
		}
	}()

	// The run: readings at ticks the test gives, its counts growing.
	f := newLiveFake(t, 0)
	var join, calls, runtime []string
	for k := 1; k <= 40; k++ {
		join = append(join, scaled(runHist, k), scaled(runHist, k)) // the results, then the negatives
		calls = append(calls, syscallHist(10*k, k))
		runtime = append(runtime, runtimeHist(k))
	}
	f.versions = map[string][]string{
		runRes + "events/synthetic/" + runSynth + "/hist": join,
		runInst + "events/raw_syscalls/sys_enter/hist":    calls,
		runInst + "events/sched/sched_stat_runtime/hist":  runtime,
	}
	ticks := make(chan time.Time)
	e, _, stderr := liveEnv(f)
	// The run's instances are there when its watch looks (every second).
	e.Writer = func(string) tracefs.Writer { return dirFake{f} }
	e.Tick = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	var dash []byte
	e.ReplaceFile = func(p string, b []byte) error {
		if p != "dash.json" {
			return fmt.Errorf("wrote %s", p)
		}
		dash = b
		return nil
	}
	exited := make(chan int, 1)
	go func() {
		exited <- run([]string{"-r", "--metrics", addr, "--metrics-dashboard", "dash.json", dashSQL}, e)
	}()
	stop := make(chan struct{})
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		for {
			select {
			case ticks <- time.Time{}:
			case <-stop:
				return
			}
			select {
			case <-time.After(700 * time.Millisecond):
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-tickDone
		f.sigs <- os.Interrupt
		if code := <-exited; code != exitOK {
			t.Errorf("the run: exit %d: %s", code, stderr)
		}
	}()

	// The dashboard, written before the run applies anything.
	var d struct {
		Templating struct{ List []struct{ Name, Type string } }
		Panels     []struct {
			Type, Title string
			Targets     []struct{ Expr, RefID string }
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for dash == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		t.Fatalf("the dashboard: %v\n%s", err, dash)
	}
	if len(d.Templating.List) != 2 || d.Templating.List[0].Name != "datasource" || d.Templating.List[1].Name != "job" {
		t.Errorf("variables %v, want datasource and job", d.Templating.List)
	}

	// Each panel's queries, $job and $__rate_interval substituted, once
	// Prometheus has scraped the run a few times.
	query := func(expr string) ([]map[string]any, error) {
		resp, err := http.Get("http://" + papi + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r struct {
			Status, Error string
			Data          struct{ Result []map[string]any }
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
			return nil, fmt.Errorf("%v %s", err, body)
		}
		return r.Data.Result, nil
	}
	subst := strings.NewReplacer(`$job`, "dashtest", `$__rate_interval`, "10s")
	waitUntil := time.Now().Add(60 * time.Second)
	for {
		got, err := query(`count_over_time(sqlhist_sys_enter_events_total{job="dashtest"}[10s]) >= 6`)
		if err == nil && len(got) > 0 {
			break
		}
		if time.Now().After(waitUntil) {
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Logf("metrics:\n%.3000s", b)
			} else {
				t.Logf("metrics: %v", err)
			}
			up, err := query("up")
			t.Logf("up: %v %v", up, err)
			t.Fatalf("prometheus has not scraped the run's results 6 times in 60 s: %v %v", got, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	exprs, kinds := 0, map[string]int{}
	for _, p := range d.Panels {
		kinds[p.Type]++
		for _, tg := range p.Targets {
			exprs++
			expr := subst.Replace(tg.Expr)
			got, err := query(expr)
			switch {
			case err != nil:
				t.Errorf("%s: %s: %v", p.Title, expr, err)
			case len(got) == 0:
				t.Errorf("%s: %s returns no series", p.Title, expr)
			case p.Type == "heatmap" && got[0]["histogram"] == nil:
				t.Errorf("%s: %s returns %v, not a native histogram", p.Title, expr, got[0])
			case p.Type != "heatmap" && !finite(got[0]["value"]):
				t.Errorf("%s: %s returns %v, not a number", p.Title, expr, got[0])
			default:
				t.Logf("%s: %s: %d series, first %v", p.Title, expr, len(got), got[0])
			}
		}
	}
	if kinds["heatmap"] != 2 || exprs < 17 {
		t.Errorf("%d heatmaps (want 2: the latency, the log2 key), %d queries in %d panels", kinds["heatmap"], exprs, len(d.Panels))
	}
	for _, c := range [][]string{{"-r", "--metrics-dashboard", "d.json", wakeupSQL}, {"--metrics-dashboard", "d.json", wakeupSQL}} {
		e, _, stderr := testEnv(nil, "")
		if code := run(c, e); code != exitUsage || !strings.Contains(stderr.String(), "--metrics-dashboard FILE writes the Grafana dashboard of a --metrics run") {
			t.Errorf("%q: exit %d: %s", c, code, stderr)
		}
	}
	t.Logf("%d panels, %d queries checked against prometheus in %v", len(d.Panels), exprs, time.Since(began).Round(100*time.Millisecond))
}

// finite says whether a sample's [time, "value"] holds a number.
func finite(v any) bool {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return false
	}
	s, _ := pair[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// dirFake is a liveFake whose instances are there (fs.Stat) once made.
type dirFake struct{ *liveFake }

func (d dirFake) Mkdir(dir string) error {
	err := d.liveFake.Mkdir(dir)
	if err == nil {
		d.files[dir] = ""
	}
	return err
}

func (d dirFake) Rmdir(dir string) error {
	delete(d.files, dir)
	return d.liveFake.Rmdir(dir)
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }
