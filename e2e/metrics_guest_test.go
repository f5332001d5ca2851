package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricsScript (in the x86-64 run phase, while its workload runs):
// sqlhist inside the guest serves -r --metrics on the guest's own
// loopback, read there with busybox wget (issue 35): a syscall count
// read every second, the page fetched once it has been read twice, then
// Ctrl-C.
const metricsScript = `# Issue 35 (metrics_guest_test.go): --metrics on the guest's loopback.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
/work/sqlhist -r --engine kernel --metrics 127.0.0.1:9101 -i 1 -o csv "$H" > /tmp/mout 2> /tmp/merr &
P=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/merr; do sleep 0.05; i=$((i + 1)); done
[ $i -lt 600 ] || echo "@@timeout waiting 30 s for collecting"
# The page is read until it has two readings (a loaded guest reads later
# than every second: a fixed 2.5 s once found one), for 60 s at most.
i=0
while :; do
	wget -q -O /tmp/mpage http://127.0.0.1:9101/metrics; rc=$?
	grep -Eq '^sqlhist_reads_total(\{[^}]*\})? ([2-9]|[1-9][0-9]+)$' /tmp/mpage && break
	i=$((i + 1)); [ $i -lt 120 ] || { echo "@@timeout waiting 60 s for two readings on the page"; break; }
	sleep 0.5
done
echo "@@metrics-wget $rc"
kill -INT $P
wait $P; echo "@@metrics-exit $?"
wget -q -O /dev/null http://127.0.0.1:9101/metrics 2>/dev/null; echo "@@metrics-after $?"
echo "@@metrics-page"; grep -E '^(sqlhist_|process_resident)' /tmp/mpage
echo "@@metrics-csv"; grep '^total,' /tmp/mout
echo "@@metrics-stderr"; cat /tmp/merr
`

var metricsCallRE = regexp.MustCompile(`^sqlhist_sys_enter_events_total\{call="([^"]+)"\} (\d+)$`)

// checkMetricsGuest: the page served in the guest has every call's count
// (at most the final total's, which was read later), sqlhist_up 1, two
// readings or more, the process's memory; the run ended on SIGINT with
// its total, and the address was closed with it.
func checkMetricsGuest(t *testing.T, kname string, sec map[string]string, out string) {
	wantLines(t, out, "@@metrics-wget 0", "@@metrics-exit 0")
	if strings.Contains(out, "@@metrics-after 0\n") {
		t.Errorf("%s: /metrics still answered after the run ended", kname)
	}
	final := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(sec["metrics-csv"]), "\n") {
		f := strings.Split(l, ",")
		if len(f) == 3 {
			n, _ := strconv.ParseUint(f[2], 10, 64)
			final[f[1]] = n
		}
	}
	served, calls := uint64(0), 0
	page := sec["metrics-page"]
	for _, l := range strings.Split(page, "\n") {
		m := metricsCallRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.ParseUint(m[2], 10, 64)
		served += n
		calls++
		if f, ok := final[m[1]]; !ok || n > f {
			t.Errorf("%s: /metrics served %s = %d, the final total has %d (%v)", kname, m[1], n, f, ok)
		}
	}
	reads := 0
	if m := regexp.MustCompile(`(?m)^sqlhist_reads_total (\d+)$`).FindStringSubmatch(page); m != nil {
		reads, _ = strconv.Atoi(m[1])
	}
	if calls == 0 || served == 0 || !strings.Contains(page, `sqlhist_up 1`) || reads < 2 ||
		!strings.Contains(page, "process_resident_memory_bytes") {
		t.Errorf("%s: the page served in the guest (%d calls, %d events, reads %v):\n%s\nstderr:\n%s", kname, calls, served, reads, page, sec["metrics-stderr"])
		return
	}
	t.Logf("%s: --metrics in the guest, read with busybox wget: %d calls, %d events served after %d readings; the final total %d calls", kname, calls, served, reads, len(final))
}
