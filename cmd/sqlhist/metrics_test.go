package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/cmd/sqlhist/internal/cli"
)

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// getMetrics reads /metrics until it holds want (the server starts and
// reads on its own time), or fails after a few seconds.
func getMetrics(t *testing.T, addr, want string) string {
	t.Helper()
	var last string
	for i := 0; i < 100; i++ {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if strings.Contains(last, want) {
				return last
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %q in /metrics:\n%s", want, last)
	return ""
}

// -r --metrics serves the cumulative counts read at each tick (without
// -i nothing is printed per interval), until Ctrl-C, which tears down
// and prints the total as -r does; the address is free again after.
func TestRunMetrics(t *testing.T) {
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {
		syscallHist(10, 1), syscallHist(25, 3), syscallHist(30, 3)}}
	ticks := make(chan time.Time)
	e, stdout, stderr := liveEnv(f)
	e.Tick = func(d time.Duration) (<-chan time.Time, func()) {
		if d != cli.MetricsEvery {
			t.Errorf("reads every %v, want %v", d, cli.MetricsEvery)
		}
		return ticks, func() {}
	}
	addr := freeAddr(t)
	done := make(chan int)
	go func() {
		done <- run([]string{"-r", "--metrics", addr, "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"}, e)
	}()
	ticks <- time.Time{}
	getMetrics(t, addr, `sqlhist_sys_enter_events_total{call="sys_read"} 10`)
	ticks <- time.Time{}
	m := getMetrics(t, addr, `sqlhist_sys_enter_events_total{call="sys_read"} 25`)
	for _, want := range []string{`sqlhist_sys_enter_events_total{call="sys_close"} 3`, `sqlhist_up 1`, `sqlhist_reads_total 2`, "process_resident_memory_bytes"} {
		if !strings.Contains(m, want) {
			t.Errorf("no %q in /metrics:\n%s", want, m)
		}
	}
	// A lone run has no target to name: no series has a target label
	// (a fleet's have target=its --via).
	if strings.Contains(m, "target=") {
		t.Errorf("a lone run's series carry a target label:\n%s", m)
	}
	f.sigs <- os.Interrupt
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout.String(), "interval") || !strings.Contains(stdout.String(), "sys_read") {
		t.Errorf("want the total alone on stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr.String(), "serving metrics on http://"+addr+"/metrics") {
		t.Errorf("stderr does not say where the metrics are:\n%s", stderr)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the address still answers after the run")
	}
}

// --metrics is refused where it cannot serve: without -r, beside
// --events, on an address taken (before anything is applied).
func TestRunMetricsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--metrics", "127.0.0.1:9101", "SELECT id FROM sys_enter"}, exitUsage, "--metrics goes with --run"},
		{[]string{"-r", "--events", "--metrics", "127.0.0.1:9101", "SELECT id FROM sys_enter"}, exitUsage, "--metrics serves the results; --events streams"},
	} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		if code := run(c.args, e); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f := newLiveFake(t, 0)
	e, _, stderr := liveEnv(f)
	if code := run([]string{"-r", "--metrics", l.Addr().String(), "SELECT id FROM sys_enter"}, e); code != exitQuery || !strings.Contains(stderr.String(), "--metrics "+l.Addr().String()) {
		t.Errorf("an address taken: exit %d, stderr %q", code, stderr)
	}
	if len(f.Writes) != 0 || len(f.lease) != 0 {
		t.Errorf("writes before the address was refused: %q %q", f.Writes, f.lease)
	}
}

// The recording rules docs/metrics.md gives for seconds turn the
// kernel's microseconds into seconds: promtool test rules evaluates them
// over series in microseconds (half the events in (4, 8], half in
// (8, 16], 10 us on average, 1500 us at most).
func TestSecondsRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool (Debian package prometheus) to check the rules of docs/metrics.md")
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "**Seconds.**")
	_, block, _ := strings.Cut(after, "```yaml\n")
	rules, _, ok := strings.Cut(block, "```")
	if !ok || !strings.Contains(rules, "/ 1e6") {
		t.Fatalf("no rules block after **Seconds.** in docs/metrics.md")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(rules), 0o644)
	const series = "sqlhist_wakeup_lat_lat_microseconds"
	test := `rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {series: '` + series + `_bucket{comm="sh",le="8"}', values: '0+60x10'}
      - {series: '` + series + `_bucket{comm="sh",le="16"}', values: '0+120x10'}
      - {series: '` + series + `_bucket{comm="sh",le="+Inf"}', values: '0+120x10'}
      - {series: '` + series + `_sum{comm="sh"}', values: '0+1200x10'}
      - {series: '` + series + `_count{comm="sh"}', values: '0+120x10'}
      - {series: '` + series + `_max{comm="sh"}', values: '1500x10'}
    promql_expr_test:
      - expr: comm:sqlhist_wakeup_lat_lat_seconds:p99_5m
        eval_time: 10m
        exp_samples: [{labels: 'comm:sqlhist_wakeup_lat_lat_seconds:p99_5m{comm="sh"}', value: 1.584e-05}]
      - expr: comm:sqlhist_wakeup_lat_lat_seconds:avg_5m
        eval_time: 10m
        exp_samples: [{labels: 'comm:sqlhist_wakeup_lat_lat_seconds:avg_5m{comm="sh"}', value: 1e-05}]
      - expr: sqlhist_wakeup_lat_lat_seconds_max
        eval_time: 10m
        exp_samples: [{labels: 'sqlhist_wakeup_lat_lat_seconds_max{comm="sh"}', value: 0.0015}]
`
	os.WriteFile(filepath.Join(dir, "test.yml"), []byte(test), 0o644)
	cmd := exec.Command(promtool, "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v:\n%s", err, out)
	}
}
