package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A stalled reader (issue 45): a stream run whose process is stopped
// (SIGSTOP) while a known number of events, stallExecs execs of one
// binary, flows into a small buffer (4 KiB a CPU: a page or two)
// reports as lost exactly what the kernel's per-CPU stats of its
// instance say (overrun and dropped events, read while it is stopped),
// in each output (table, JSON, CSV: the count, and the loss on stderr
// for CSV), and its count plus its loss is the workload. The instance is
// the script's (-B, with a 4 KiB buffer a CPU): a run that makes its own
// reads perf events where they serve, whose stall is checked after. Run
// in 6.1's run phase, the workload stopped.

// stallExecs is the execs made while the reader is stopped.
const stallExecs = 1000

// stallScript is the run phase's part (the workload stopped).
var stallScript = `mkdir -p /tmp/stall; ln -sf /bin/busybox /tmp/stall/true
S='SELECT filename, COUNT(*) AS n FROM sched_process_exec WHERE filename == "/tmp/stall/true"'
for fmt in table json csv; do
	: > /tmp/stallerr
	mkdir $T/instances/stall_$fmt; echo 4 > $T/instances/stall_$fmt/buffer_size_kb
	/work/sqlhist -r -d 1 --engine stream -B stall_$fmt -o $fmt "$S" > /tmp/stallout 2> /tmp/stallerr &
	P=$!
	i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/stallerr; do sleep 0.05; i=$((i + 1)); done
	kill -STOP $P
	i=0; while [ $i -lt ` + strconv.Itoa(stallExecs) + ` ]; do /tmp/stall/true; i=$((i + 1)); done
	sleep 3
	I=$(sed -n 's/.* in instance \([^;]*\);.*/\1/p' /tmp/stallerr)
	o=0; d=0
	for f in $T/instances/$I/per_cpu/cpu*/stats; do
		while read -r k v; do
			case "$k $v" in "overrun: "*) o=$((o + ${v#* })) ;; esac
		done < $f
		v=$(grep '^dropped events:' $f); v=${v##* }; d=$((d + ${v:-0}))
	done
	echo "@@stall-$fmt-stats $o $d $(ls $T/instances/$I/per_cpu | wc -l)"
	kill -CONT $P
	wait $P; echo "@@stall-$fmt-exit $?"
	rmdir $T/instances/stall_$fmt
	echo "@@stall-$fmt"; cat /tmp/stallout; echo "@@stall-$fmt-stderr"; cat /tmp/stallerr
done
: > /tmp/stallerr
/work/sqlhist -r -d 1 --engine stream --buffer-kb 4 -o json "$S" > /tmp/stallout 2> /tmp/stallerr &
P=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/stallerr; do sleep 0.05; i=$((i + 1)); done
kill -STOP $P
i=0; while [ $i -lt ` + strconv.Itoa(stallExecs) + ` ]; do /tmp/stall/true; i=$((i + 1)); done
sleep 1
kill -CONT $P
wait $P; echo "@@stall-perf-exit $?"
echo "@@stall-perf"; cat /tmp/stallout; echo "@@stall-perf-stderr"; cat /tmp/stallerr
`

var (
	stallStatsRE = regexp.MustCompile(`@@stall-(\w+)-stats (\d+) (\d+) (\d+)`)
	stallTableRE = regexp.MustCompile(`engine: stream \([^)]*\), (\d+) events lost`)
	stallWarnRE  = regexp.MustCompile(`the stream engine lost (\d+) events`)
)

// checkStall checks what stallScript printed: per output, the loss it
// reports, the kernel's, and the count.
func checkStall(t *testing.T, kname, out string) string {
	sec := sections(out)
	var detail []string
	for _, fm := range []string{"table", "json", "csv"} {
		if !strings.Contains(out, "@@stall-"+fm+"-exit 0\n") {
			t.Errorf("the stalled stream run (-o %s) failed:\n%s", fm, sec["stall-"+fm+"-stderr"])
			continue
		}
		var overrun, dropped, cpus int
		for _, m := range stallStatsRE.FindAllStringSubmatch(out, -1) {
			if m[1] == fm {
				overrun, _ = strconv.Atoi(m[2])
				dropped, _ = strconv.Atoi(m[3])
				cpus, _ = strconv.Atoi(m[4])
			}
		}
		kernel := overrun + dropped
		body, stderr := sec["stall-"+fm], sec["stall-"+fm+"-stderr"]
		lost, count := -1, -1
		switch fm {
		case "table":
			if m := stallTableRE.FindStringSubmatch(body); m != nil {
				lost, _ = strconv.Atoi(m[1])
			}
			// The count is the last number of the file's row.
			count = 0
			for _, l := range strings.Split(body, "\n") {
				if !strings.Contains(l, "/tmp/stall/true") {
					continue
				}
				for _, w := range strings.Fields(l) {
					if n, err := strconv.Atoi(strings.Trim(w, "|")); err == nil {
						count = n
					}
				}
			}
		case "json":
			var r streamRunJSON
			if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Results) != 1 {
				t.Errorf("-o json of the stalled run: %v:\n%s", err, body)
				continue
			}
			lost = r.Lost
			if rows := r.Results[0].Rows; len(rows) == 1 {
				if n, ok := rows[0]["n"].(float64); ok {
					count = int(n)
				}
			} else if len(rows) == 0 {
				count = 0
			}
		case "csv":
			lines := strings.Split(strings.TrimSpace(body), "\n")
			if len(lines) == 2 && lines[0] == "filename,n" {
				count, _ = strconv.Atoi(strings.TrimPrefix(lines[1], "/tmp/stall/true,"))
			} else if len(lines) == 1 && lines[0] == "filename,n" {
				count = 0
			}
		}
		// Every output's stderr says the loss too (CSV's only there).
		if m := stallWarnRE.FindStringSubmatch(stderr); m != nil {
			w, _ := strconv.Atoi(m[1])
			if fm == "csv" {
				lost = w
			} else if w != lost {
				t.Errorf("-o %s: stderr says %d lost, the output %d", fm, w, lost)
			}
		} else if kernel > 0 {
			t.Errorf("-o %s: no warning of the loss on stderr:\n%s", fm, stderr)
		}
		t.Logf("%s: stalled stream run, -o %s: count %d, lost %d as reported; the kernel's stats (%d CPUs): overrun %d, dropped %d; the workload %d", kname, fm, count, lost, cpus, overrun, dropped, stallExecs)
		switch {
		case kernel == 0 || cpus == 0:
			t.Errorf("-o %s: the kernel lost nothing (%d CPUs read): the stall proves nothing:\n%s", fm, cpus, out)
		case lost != kernel:
			t.Errorf("-o %s: %d events lost as reported, the kernel's stats say %d (overrun %d, dropped %d)", fm, lost, kernel, overrun, dropped)
		case count+lost != stallExecs:
			t.Errorf("-o %s: count %d + lost %d = %d, the workload made %d", fm, count, lost, count+lost, stallExecs)
		}
		detail = append(detail, fmt.Sprintf("%s %d+%d", fm, count, lost))
	}
	// The same stall on perf events (no instance; a ring of one page a
	// CPU): the kernel's PERF_RECORD_LOST counts are the loss, and the
	// count plus the loss is the workload.
	body, stderr := sec["stall-perf"], sec["stall-perf-stderr"]
	var r streamRunJSON
	switch {
	case !strings.Contains(out, "@@stall-perf-exit 0\n"):
		t.Errorf("the stalled stream run on perf events failed:\n%s", stderr)
	case !strings.Contains(stderr, "from perf events on"):
		t.Errorf("the stalled stream run did not read perf events:\n%s", stderr)
	case json.Unmarshal([]byte(body), &r) != nil || len(r.Results) != 1:
		t.Errorf("-o json of the stalled run on perf events:\n%s", body)
	default:
		count := 0
		if rows := r.Results[0].Rows; len(rows) == 1 {
			n, _ := rows[0]["n"].(float64)
			count = int(n)
		}
		m := stallWarnRE.FindStringSubmatch(stderr)
		t.Logf("%s: stalled stream run on perf events: count %d, lost %d as reported; the workload %d", kname, count, r.Lost, stallExecs)
		switch {
		case r.Lost == 0:
			t.Errorf("the stalled run on perf events lost nothing: the stall proves nothing:\n%s", stderr)
		case m == nil || m[1] != strconv.Itoa(r.Lost):
			t.Errorf("the stalled run on perf events: stderr does not say the %d lost:\n%s", r.Lost, stderr)
		case count+r.Lost != stallExecs:
			t.Errorf("the stalled run on perf events: count %d + lost %d = %d, the workload made %d", count, r.Lost, count+r.Lost, stallExecs)
		}
		detail = append(detail, fmt.Sprintf("perf %d+%d", count, r.Lost))
	}
	return "stall " + strings.Join(detail, ", ")
}
