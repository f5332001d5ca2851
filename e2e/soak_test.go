package e2e

// The soak (issue 35, item 5; `make soak`, not in CI): sqlhist serves the
// wakeup JOIN and a system call count with -r --metrics for
// SQLHIST_SOAK (default 10m) under a busy workload, twice at once: inside
// a 6.1 guest (read there with busybox wget) and on this machine through
// --via into another 6.1 guest. Every 30 s the served page and sqlhist's
// resident memory are sampled. It must hold: the memory flat after the
// first minute (the largest sample at most 10% and 4 MiB over the one
// at one minute), the counters only growing, no event lost that the
// kernel did not report (the final answer's rows add up to its hits, its
// drops are the kernel's), and tracefs as before afterwards.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// soakSQL: the wakeup JOIN and a system call count, every task's.
var soakSQL = viaSQL.join + ";\n" + viaSQL.calls

// soakSample is one sample: seconds since the collection began, the
// resident memory (KiB), and the served counters summed.
type soakSample struct {
	at            float64
	rssKiB        uint64
	hits, dropped uint64
	calls         uint64
}

var (
	soakRSSRE     = regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`)
	soakMetricRE  = regexp.MustCompile(`(?m)^(sqlhist_map_hits_total|sqlhist_map_dropped_total|sqlhist_sys_enter_events_total)\{[^}]*\} (\S+)$`)
	soakSectionRE = regexp.MustCompile(`(?m)^@@sample (\d+)$`)
)

// parseSoakPage sums a served page's map hits, drops and system calls.
func parseSoakPage(page string, s *soakSample) {
	for _, m := range soakMetricRE.FindAllStringSubmatch(page, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		switch m[1] {
		case "sqlhist_map_hits_total":
			s.hits += uint64(v)
		case "sqlhist_map_dropped_total":
			s.dropped += uint64(v)
		default:
			s.calls += uint64(v)
		}
	}
}

func soakDuration(t *testing.T) time.Duration {
	d := 10 * time.Minute
	if v := os.Getenv("SQLHIST_SOAK"); v != "" && v != "1" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SQLHIST_SOAK=%q: %v", v, err)
		}
	}
	return d
}

func TestSoak(t *testing.T) {
	if os.Getenv("SQLHIST_SOAK") == "" {
		t.Skip("the soak runs with make soak (SQLHIST_SOAK=1, or a duration)")
	}
	needKernels(t)
	if err := vm.EnsureHostTools(); err != nil {
		t.Fatal(err)
	}
	d := soakDuration(t)
	t.Run("guest", func(t *testing.T) { t.Parallel(); soakGuest(t, d) })
	t.Run("via", func(t *testing.T) { t.Parallel(); soakVia(t, d) })
}

// soakWorkload keeps a guest busy: wakeups, opens, reads, forks.
const soakWorkload = `( while :; do sleep 0.005; cat /proc/version > /dev/null; ls /proc > /dev/null; done ) </dev/null >/dev/null 2>&1 &`

func soakGuest(t *testing.T, d time.Duration) {
	secs := int(d.Seconds())
	script := `T=/sys/kernel/tracing
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
` + gstateShell + `gstate > /tmp/g0
` + soakWorkload + `
W=$!
cat > /tmp/q.sql <<'EOF'
` + soakSQL + `
EOF
/work/sqlhist -r --engine kernel --metrics 127.0.0.1:9101 -d ` + strconv.Itoa(secs) + ` -o json -f /tmp/q.sql > /tmp/out 2> /tmp/err &
P=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/err; do sleep 0.1; i=$((i + 1)); done
s=0
while kill -0 $P 2>/dev/null; do
  echo "@@sample $s"; grep VmRSS /proc/$P/status
  wget -q -O - http://127.0.0.1:9101/metrics 2>/dev/null | grep -E '^(sqlhist_map|sqlhist_sys_enter|sqlhist_events_lost)'
  i=0; while [ $i -lt 30 ] && kill -0 $P 2>/dev/null; do sleep 1; i=$((i + 1)); done
  s=$((s + 30))
done
wait $P; echo "@@exit $?"
kill $W; wait $W 2>/dev/null
gstate > /tmp/g1
echo "@@gdiff"; diff /tmp/g0 /tmp/g1 && echo same
echo "@@json"; cat /tmp/out
echo "@@stderr"; cat /tmp/err
`
	res := boot(t, "6.1", vm.Guest{Script: script, CombinedOutput: true, Timeout: d + 5*time.Minute,
		Files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")}}})
	out := res.Stdout
	var samples []soakSample
	parts := soakSectionRE.Split(out, -1)
	heads := soakSectionRE.FindAllStringSubmatch(out, -1)
	for i, h := range heads {
		body := parts[i+1]
		if j := strings.Index(body, "@@"); j >= 0 {
			body = body[:j]
		}
		var s soakSample
		s.at, _ = strconv.ParseFloat(h[1], 64)
		if m := soakRSSRE.FindStringSubmatch(body); m != nil {
			s.rssKiB, _ = strconv.ParseUint(m[1], 10, 64)
		}
		parseSoakPage(body, &s)
		samples = append(samples, s)
	}
	sec := sections(out)
	wantLines(t, out, "@@exit 0")
	if strings.TrimSpace(sec["gdiff"]) != "same" {
		t.Errorf("guest: tracefs after the soak differs:\n%s", sec["gdiff"])
	}
	checkSoak(t, "guest", d, samples, sec["json"], sec["stderr"])
}

func soakVia(t *testing.T, d time.Duration) {
	bin := hostSqlhist(t)
	sockcat(t)
	g, err := startVia("6.1")
	if err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	defer g.Stop()
	via := viaCommandOf(g)
	shell := func(script string) string {
		out, err := viaSession(via, script, 2*time.Minute)
		if err != nil {
			t.Fatalf("the via shell: %v", err)
		}
		return out
	}
	gstate := func() string { return shell("T=/sys/kernel/tracing\n" + gstateShell + "gstate") }
	before := gstate()
	wpid := strings.TrimSpace(shell(soakWorkload + " echo $!"))
	addr := loopbackAddr(t)
	var out, errs syncBuffer
	cmd := exec.Command(bin, viaArgs("-r", "-d", d.String(), "-o", "json", "--metrics", addr, "--via", via, soakSQL)...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor(t, 3*time.Minute, "collecting", func() bool { return strings.Contains(errs.String(), "collecting") })
	start := time.Now()
	var samples []soakSample
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	sample := func() {
		s := soakSample{at: time.Since(start).Seconds()}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
			if m := soakRSSRE.FindSubmatch(b); m != nil {
				s.rssKiB, _ = strconv.ParseUint(string(m[1]), 10, 64)
			}
		}
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			parseSoakPage(string(b), &s)
		}
		samples = append(samples, s)
	}
	sample()
	var werr error
loop:
	for {
		select {
		case werr = <-exited:
			break loop
		case <-tick.C:
			sample()
		}
	}
	if werr != nil {
		t.Errorf("via: sqlhist: %v\n%s", werr, lastLinesOf(errs.String(), 30))
	}
	shell("kill " + wpid)
	if after := gstate(); after != before {
		t.Errorf("via: tracefs after the soak differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	checkSoak(t, "via", d, samples, out.String(), errs.String())
}

// checkSoak checks a soak's samples and final answer.
func checkSoak(t *testing.T, where string, d time.Duration, samples []soakSample, jsonOut, stderr string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s soak of %v: %8s %10s %12s %8s %12s\n", where, d, "at", "rss KiB", "map hits", "dropped", "sys_enter")
	for _, s := range samples {
		fmt.Fprintf(&b, "%30.0fs %10d %12d %8d %12d\n", s.at, s.rssKiB, s.hits, s.dropped, s.calls)
	}
	t.Log(b.String())
	if len(samples) < int(d/(30*time.Second))-1 {
		t.Errorf("%s: %d samples over %v", where, len(samples), d)
		return
	}
	// Memory: flat after the first minute.
	var base, top uint64
	for _, s := range samples {
		if s.at >= 60 && base == 0 {
			base = s.rssKiB
		}
		if s.at >= 60 {
			top = max(top, s.rssKiB)
		}
	}
	if base == 0 || top > base+base/10 && top > base+4096 {
		t.Errorf("%s: resident memory %d KiB at one minute, up to %d KiB after", where, base, top)
	}
	// Counters only grow.
	for i := 1; i < len(samples); i++ {
		p, s := samples[i-1], samples[i]
		if s.hits == 0 && s.calls == 0 {
			continue // the last sample may find the run ended
		}
		if s.hits < p.hits || s.calls < p.calls || s.dropped < p.dropped {
			t.Errorf("%s: a counter went down from %+v to %+v", where, p, s)
		}
	}
	// The final answer: rows adding up to the kernel's hits, drops the
	// kernel's own (a warning when any).
	var doc struct{ Results []runResult }
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil || len(doc.Results) != 2 {
		t.Errorf("%s: the final answer (%v):\n%s\n%s", where, err, jsonOut, lastLinesOf(stderr, 20))
		return
	}
	for i, col := range []string{"count", "n"} {
		r := doc.Results[i]
		if r.sum(col) != r.Totals.Hits || r.Totals.Hits == 0 {
			t.Errorf("%s: result %d: rows add up to %d, the kernel's hits %d", where, i, r.sum(col), r.Totals.Hits)
		}
		if r.Totals.Dropped > 0 && !strings.Contains(stderr, "dropped") {
			t.Errorf("%s: result %d: %d dropped without a word on stderr", where, i, r.Totals.Dropped)
		}
	}
	last := samples[len(samples)-1]
	if last.hits == 0 {
		last = samples[len(samples)-2]
	}
	if last.calls > doc.Results[1].Totals.Hits {
		t.Errorf("%s: the last page served %d system calls, the final answer %d", where, last.calls, doc.Results[1].Totals.Hits)
	}
	t.Logf("%s: final: wakeups %d (dropped %d), system calls %d (dropped %d); memory %d KiB at 1 min, at most %d KiB after",
		where, doc.Results[0].Totals.Hits, doc.Results[0].Totals.Dropped, doc.Results[1].Totals.Hits, doc.Results[1].Totals.Dropped, base, top)
}
