package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// A run's own time (make bench-run; issue 45, item 4): in a guest of
// SQLHIST_KERNELS (default 6.1) with a busy loop beside, the wall time by
// the guest's clock of `-r -d 1` of the wakeup JOIN with each engine
// (auto, bpf, kernel, stream), of `-e` and of `--teardown -e`, each
// RUNTIME_ROUNDS times (default 5), interleaved, each engine first in
// turn; the medians and ranges
// are printed (RUNTIME_BIN: another static build's, to compare;
// RUNTIME_BASE: an older static build timed beside this one, its -r
// with its own default engine, and the ratios of the medians). Figures, not assertions: the guest's clock runs with the
// host's, which other work slows. Every run must succeed, and auto must
// say which engine it took.
//
// RUNTIME_BUSY says where the busy loop runs: "guest" (the default), a
// shell loop in the guest, which takes half of the vCPUs' host thread;
// "host", a loop on this machine beside qemu (one core of two), the guest
// itself idle; "none", no loop.

// runTimeScript runs the rounds; $J is the wakeup JOIN.
const runTimeScript = `J='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
BUSY=
[ GUESTBUSY = 1 ] && { ( while :; do :; done ) & BUSY=$!; }
now() { read u x < /proc/uptime; echo $u; }
r=1
while [ $r -le ROUNDS ]; do
  # The engines in turn first: the first run of a round follows the
  # last round's --teardown -e, whose freeing the kernel may still do.
  case $((r % 4)) in
  1) order='auto bpf kernel stream' ;; 2) order='bpf kernel stream auto' ;;
  3) order='kernel stream auto bpf' ;; *) order='stream auto bpf kernel' ;;
  esac
  for e in $order; do
    a=$(now); /work/sqlhist -r --engine $e -d 1 -o json "$J" > /tmp/rt.out 2> /tmp/rt.err; x=$?; b=$(now)
    echo "@@rt $e $r $x $a $b $(sed -n 's/^  "engine": "\(.*\)",/\1/p' /tmp/rt.out | head -n 1)"
    [ $x = 0 ] || { echo "@@rt-err $e"; cat /tmp/rt.err; }
  done
  if [ -x /work/base ]; then
    # RUNTIME_BASE: an older build's -r (its default engine), -e and
    # --teardown -e, in the same rounds.
    a=$(now); /work/base -r -d 1 "$J" > /dev/null 2> /tmp/rt.err; x=$?; b=$(now); echo "@@rt base-run $r $x $a $b"
    [ $x = 0 ] || { echo "@@rt-err base-run"; cat /tmp/rt.err; }
    a=$(now); /work/base -e -n rtwl "$J" > /dev/null 2> /tmp/rt.err; x=$?; b=$(now); echo "@@rt base-apply $r $x $a $b"
    [ $x = 0 ] || { echo "@@rt-err base-apply"; cat /tmp/rt.err; }
    a=$(now); /work/base --teardown -e -n rtwl "$J" > /dev/null 2> /tmp/rt.err; x=$?; b=$(now); echo "@@rt base-teardown $r $x $a $b"
    [ $x = 0 ] || { echo "@@rt-err base-teardown"; cat /tmp/rt.err; }
  fi
  a=$(now); /work/sqlhist -e -n rtwl "$J" > /dev/null 2> /tmp/rt.err; x=$?; b=$(now); echo "@@rt apply $r $x $a $b"
  [ $x = 0 ] || { echo "@@rt-err apply"; cat /tmp/rt.err; }
  a=$(now); /work/sqlhist --teardown -e -n rtwl "$J" > /dev/null 2> /tmp/rt.err; x=$?; b=$(now); echo "@@rt teardown $r $x $a $b"
  [ $x = 0 ] || { echo "@@rt-err teardown"; cat /tmp/rt.err; }
  r=$((r + 1))
done
[ -n "$BUSY" ] && kill $BUSY
echo "@@rt-done"
`

var runTimeRE = regexp.MustCompile(`(?m)^@@rt (\S+) (\d+) (\d+) ([\d.]+) ([\d.]+) ?(\S*)$`)

// TestRunTime measures a run's own time in a guest (make bench-run).
func TestRunTime(t *testing.T) {
	if os.Getenv("SQLHIST_BENCH_RUN") != "1" {
		t.Skip("set SQLHIST_BENCH_RUN=1 (make bench-run) to time runs in a guest")
	}
	needKernels(t)
	rounds := envInt("RUNTIME_ROUNDS", 5)
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "6.1"), ",") {
		t.Run(kname, func(t *testing.T) {
			arch := kernelArch(t, kname)
			script := strings.ReplaceAll(runTimeScript, "ROUNDS", strconv.Itoa(rounds))
			busy := envOr("RUNTIME_BUSY", "guest")
			switch busy {
			case "guest":
				script = strings.ReplaceAll(script, "GUESTBUSY", "1")
			case "host":
				// A loop on one of this machine's cores while the guest
				// runs, ended with the test.
				loop := exec.Command("sh", "-c", "while :; do :; done")
				if err := loop.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { loop.Process.Kill(); loop.Wait() }()
				script = strings.ReplaceAll(script, "GUESTBUSY", "0")
			case "none":
				script = strings.ReplaceAll(script, "GUESTBUSY", "0")
			default:
				t.Fatalf("RUNTIME_BUSY=%q: want guest, host or none", busy)
			}
			bin := buildStatic(t, arch)
			if p := os.Getenv("RUNTIME_BIN"); p != "" {
				// Another build's time (a static binary of the
				// kernel's architecture): before and after a change.
				var err error
				if bin, err = os.ReadFile(p); err != nil {
					t.Fatal(err)
				}
			}
			files := []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: bin}}
			whats := []string{"auto", "bpf", "kernel", "stream", "apply", "teardown"}
			if p := os.Getenv("RUNTIME_BASE"); p != "" {
				// An older build (a static binary of the kernel's
				// architecture, e.g. the commit an issue measured at)
				// timed beside this one in the same boot: a ratio the
				// host's load does not move as it moves the times.
				base, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, vm.File{Path: "/work/base", Mode: 0o755, Data: base})
				whats = append(whats, "base-run", "base-apply", "base-teardown")
			}
			res := boot(t, kname, vm.Guest{Script: script, CombinedOutput: true, Timeout: 20 * time.Minute, Cmdline: vm.CostCmdline, Files: files})
			out := res.Stdout
			if !strings.Contains(out, "@@rt-done") || strings.Contains(out, "@@rt-err") {
				t.Fatalf("a run failed or the rounds did not end:\n%s", lastLines(out, 40))
			}
			times := map[string][]float64{}
			byRound := map[string]map[string]float64{} // what -> round -> time
			took := map[string]string{}
			for _, m := range runTimeRE.FindAllStringSubmatch(out, -1) {
				a, _ := strconv.ParseFloat(m[4], 64)
				b, _ := strconv.ParseFloat(m[5], 64)
				times[m[1]] = append(times[m[1]], b-a)
				if byRound[m[1]] == nil {
					byRound[m[1]] = map[string]float64{}
				}
				byRound[m[1]][m[2]] = b - a
				if m[1] == "auto" {
					took[m[6]] = m[6]
				}
			}
			var b strings.Builder
			where := map[string]string{"guest": "a busy loop beside in the guest", "host": "a busy loop beside qemu on the host", "none": "no busy loop"}[busy]
			fmt.Fprintf(&b, "%s (%s), %s, %d rounds, guest clock:\n", kname, res.Kernel.Release, where, rounds)
			medians := map[string]float64{}
			for _, what := range whats {
				ts := times[what]
				if len(ts) != rounds {
					t.Fatalf("%s: %d runs of %d", what, len(ts), rounds)
				}
				slices.Sort(ts)
				medians[what] = ts[len(ts)/2]
				label := map[string]string{"apply": "-e", "teardown": "--teardown -e",
					"base-run": "base: -r -d 1", "base-apply": "base: -e", "base-teardown": "base: --teardown -e"}[what]
				if label == "" {
					label = "-r -d 1 --engine " + what
				}
				fmt.Fprintf(&b, "  %-26s median %.2f s (%.2f–%.2f)\n", label, ts[len(ts)/2], ts[0], ts[len(ts)-1])
			}
			fmt.Fprintf(&b, "  auto ran: %s\n", strings.Join(mapsKeys(took), ", "))
			if medians["base-run"] > 0 {
				fmt.Fprintf(&b, "  against the base build: -r -d 1 auto %.2f of its time, -e %.2f, --teardown -e %.2f\n",
					medians["auto"]/medians["base-run"], medians["apply"]/medians["base-apply"], medians["teardown"]/medians["base-teardown"])
				// Each round's own ratio (the two ran a moment apart, under
				// the same load), and their median: steadier than the
				// medians' ratio when the host's load moves from round to
				// round.
				for _, p := range [][2]string{{"auto", "base-run"}, {"apply", "base-apply"}, {"teardown", "base-teardown"}} {
					var rs []float64
					for round, t := range byRound[p[0]] {
						if bt := byRound[p[1]][round]; bt > 0 {
							rs = append(rs, t/bt)
						}
					}
					slices.Sort(rs)
					if len(rs) > 0 {
						fmt.Fprintf(&b, "  %s against the base's in the same round: median ratio %.2f (%.2f–%.2f)\n", p[0], rs[len(rs)/2], rs[0], rs[len(rs)-1])
					}
				}
			}
			t.Log(b.String())
		})
	}
}

func mapsKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		if k == "" {
			k = "kernel"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
