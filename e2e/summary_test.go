package e2e

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// suite collects, per kernel, what each phase of the kernel suite found
// and how long it took, for the table TestMain prints at the end of a run.
var suite = struct {
	sync.Mutex
	kernels map[string]*kernelRow
	start   time.Time     // when the first job started
	wall    time.Duration // from the first job's start to the last one's end
	guests  int           // guests run at once
}{kernels: map[string]*kernelRow{}}

type kernelRow struct {
	release string
	fetch   string // "cached", or what fetching it did and how long it took
	boots   []time.Duration
	cpu     time.Duration            // qemu's user and system time over its boots
	busy    map[string]time.Duration // phase → the guest's vCPUs busy in it
	parts   map[string]string        // phase → verdict and time
	why     map[string]string        // phase → the first failure, for a FAIL
	total   time.Duration            // the kernel's job, fetch and boots included
}

func row(kname string) *kernelRow {
	r := suite.kernels[kname]
	if r == nil {
		r = &kernelRow{parts: map[string]string{}, why: map[string]string{}, busy: map[string]time.Duration{}}
		suite.kernels[kname] = r
	}
	return r
}

// noteFetch records how the kernel was had: from the cache, or downloaded
// or built, and how long that took (a kernel the suite's builder made is
// in the cache when its job boots it: the build is what the table shows).
func noteFetch(kname string, cached bool, d time.Duration) {
	suite.Lock()
	defer suite.Unlock()
	r := row(kname)
	if cached {
		if r.fetch == "" {
			r.fetch = "cached"
		}
	} else {
		r.fetch = d.Round(time.Second).String()
	}
}

// noteBoot records a boot of a kernel: its release, boot time and what its
// qemu cost the host (res.CPU).
func noteBoot(kname string, res vm.Result) {
	suite.Lock()
	defer suite.Unlock()
	r := row(kname)
	r.release = res.Kernel.Release
	r.boots = append(r.boots, res.BootTime)
	r.cpu += res.CPU
}

// notePhase records a phase's outcome on a kernel: the verdict of t (read
// when called: defer it), the time the phase took, and a detail.
func notePhase(t *testing.T, kname, part string, d time.Duration, detail *string) {
	verdict := "pass"
	if t.Failed() {
		verdict = "FAIL"
	} else if t.Skipped() {
		verdict = "skip"
	}
	if detail != nil && *detail != "" {
		verdict += " (" + *detail + ")"
	}
	suite.Lock()
	defer suite.Unlock()
	row(kname).parts[part] = fmt.Sprintf("%s %s", verdict, d.Round(time.Second))
}

// notePhaseBusy records how long the guest's vCPUs were busy in a phase
// (its /proc/stat), printed under the table: what each phase costs the
// host's cores, where the table's times count its waits too.
func notePhaseBusy(kname, part string, busy time.Duration) {
	if busy <= 0 {
		return
	}
	suite.Lock()
	defer suite.Unlock()
	row(kname).busy[part] += busy
}

// noteWhy records the first failure of a phase on a kernel, printed
// under the table: CI shows the table and the output's last lines, where
// a phase's own log may not be.
func noteWhy(kname, part, msg string) {
	suite.Lock()
	defer suite.Unlock()
	if r := row(kname); r.why[part] == "" {
		r.why[part] = clipWhy(msg)
	}
}

// clipWhy keeps a failure's first line, at most 400 bytes of it.
func clipWhy(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	return msg
}

// noteJob records a kernel's job: its whole time, and the suite's wall
// time so far.
func noteJob(kname string, start time.Time) {
	suite.Lock()
	defer suite.Unlock()
	row(kname).total += time.Since(start)
	if suite.start.IsZero() || start.Before(suite.start) {
		suite.start = start
	}
	if w := time.Since(suite.start); w > suite.wall {
		suite.wall = w
	}
}

// partOrder is the table's phases in the order a kernel's boot runs them;
// refusal (Debian's 5.10 and riscv64 6.12) and bootconfig (6.1-boot) boot
// kernels of their own.
var partOrder = []string{"agree", "differ", "audit", "execute", "queries", "run", "kill", "bpf", "onecpu", "via", "refusal", "stream", "bootconfig"}

// summaryTable renders the per-kernel table: every kernel that ran, in
// the suite's order, with how it was fetched, its mean boot time, each
// phase's verdict and time, and its total; then the suite's wall time
// beside the sum of the totals.
func summaryTable() string {
	suite.Lock()
	defer suite.Unlock()
	if len(suite.kernels) == 0 {
		return ""
	}
	var names []string
	for k := range suite.kernels {
		names = append(names, k)
	}
	order := map[string]int{}
	for i, k := range strings.Split(allKernels+","+strings.Join(refusalKernels, ",")+","+bootKernel, ",") {
		order[k] = i + 1
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := order[names[i]], order[names[j]]
		if a == 0 || b == 0 || a == b {
			return names[i] < names[j]
		}
		return a < b
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "kernel\trelease\tfetch\tboot")
	for _, p := range partOrder {
		fmt.Fprint(w, "\t"+p)
	}
	fmt.Fprintln(w, "\ttotal")
	var sum time.Duration
	for _, k := range names {
		r := suite.kernels[k]
		boot := "-"
		if len(r.boots) > 0 {
			var sum time.Duration
			for _, d := range r.boots {
				sum += d
			}
			boot = (sum / time.Duration(len(r.boots))).Round(100 * time.Millisecond).String()
		}
		fetch := r.fetch
		if fetch == "" {
			fetch = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s", k, r.release, fetch, boot)
		for _, p := range partOrder {
			v := r.parts[p]
			if v == "" {
				v = "-"
			}
			fmt.Fprint(w, "\t"+v)
		}
		fmt.Fprintf(w, "\t%s\n", r.total.Round(time.Second))
		sum += r.total
	}
	w.Flush()
	for _, k := range names {
		r := suite.kernels[k]
		for _, p := range partOrder {
			if why := r.why[p]; why != "" {
				fmt.Fprintf(&b, "%s %s failed: %s\n", k, p, why)
			}
		}
	}
	// What each kernel's guests cost the host's cores: the suite's wall is
	// about their sum over the cores (docs/testing.md).
	var cpus []string
	var cpuSum time.Duration
	for _, k := range names {
		if c := suite.kernels[k].cpu; c > 0 {
			cpus = append(cpus, k+" "+c.Round(time.Second).String())
			cpuSum += c
		}
	}
	if len(cpus) > 0 {
		fmt.Fprintf(&b, "qemu's CPU (user and system) by kernel: %s; %s in all\n", strings.Join(cpus, ", "), cpuSum.Round(time.Second))
	}
	var busy []string
	for _, k := range names {
		r := suite.kernels[k]
		var ps []string
		for _, p := range partOrder {
			if d := r.busy[p]; d > 0 {
				ps = append(ps, p+" "+d.Round(time.Second).String())
			}
		}
		if len(ps) > 0 {
			busy = append(busy, k+": "+strings.Join(ps, ", "))
		}
	}
	if len(busy) > 0 {
		fmt.Fprintf(&b, "the guests' vCPUs busy by phase (their /proc/stat): %s\n", strings.Join(busy, "; "))
	}
	fmt.Fprintf(&b, "suite: %s wall time with up to %d guests at once; the kernels' totals add up to %s\n",
		suite.wall.Round(time.Second), suite.guests, sum.Round(time.Second))
	return b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if s := summaryTable(); s != "" {
		fmt.Printf("\nkernel suite summary (fetch: download or build, else cached; boot: mean time to the guest script; each phase: verdict and time in the guest; total: the kernel's whole job):\n%s", s)
	}
	os.Exit(code)
}

// TestSummaryCPU: the table's last lines give each kernel's qemu CPU,
// summed over its boots, in the table's order, and their total.
func TestSummaryCPU(t *testing.T) {
	suite.Lock()
	saved := suite.kernels
	suite.kernels = map[string]*kernelRow{}
	suite.Unlock()
	defer func() {
		suite.Lock()
		suite.kernels = saved
		suite.Unlock()
	}()
	noteBoot("6.1", vm.Result{Kernel: vm.Kernel{Release: "6.1.0-57"}, BootTime: time.Second, CPU: 90 * time.Second})
	noteBoot("6.1", vm.Result{Kernel: vm.Kernel{Release: "6.1.0-57"}, BootTime: 3 * time.Second, CPU: 30 * time.Second})
	noteBoot("5.10", vm.Result{Kernel: vm.Kernel{Release: "5.10.0-46"}, BootTime: time.Second, CPU: 61 * time.Second})
	notePhaseBusy("6.1", "run", 75*time.Second)
	notePhaseBusy("6.1", "queries", 50*time.Second)
	notePhaseBusy("5.10", "stream", 0)
	s := summaryTable()
	want := "qemu's CPU (user and system) by kernel: 6.1 2m0s, 5.10 1m1s; 3m1s in all\n"
	if !strings.Contains(s, want) {
		t.Errorf("summary without %q:\n%s", want, s)
	}
	if want := "the guests' vCPUs busy by phase (their /proc/stat): 6.1: queries 50s, run 1m15s\n"; !strings.Contains(s, want) {
		t.Errorf("summary without %q:\n%s", want, s)
	}
	if !strings.Contains(s, "6.1.0-57") || !strings.Contains(s, "2s") {
		t.Errorf("summary without 6.1's release or its mean boot of 2s:\n%s", s)
	}
}
