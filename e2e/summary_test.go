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
)

// suite collects, per kernel, what each test of the kernel suite found and
// how long it took, for the table TestMain prints at the end of a run.
var suite = struct {
	sync.Mutex
	kernels map[string]*kernelRow
}{kernels: map[string]*kernelRow{}}

type kernelRow struct {
	release string
	boots   []time.Duration
	parts   map[string]string // test → verdict and time
	total   time.Duration
}

func row(kname string) *kernelRow {
	r := suite.kernels[kname]
	if r == nil {
		r = &kernelRow{parts: map[string]string{}}
		suite.kernels[kname] = r
	}
	return r
}

// noteBoot records a boot of a kernel: its release and boot time.
func noteBoot(kname, release string, boot time.Duration) {
	suite.Lock()
	defer suite.Unlock()
	r := row(kname)
	r.release = release
	r.boots = append(r.boots, boot)
}

// notePart records a test's outcome on a kernel; call it deferred, with
// the time the subtest started: the verdict is read when it ends.
func notePart(t *testing.T, kname, part string, start time.Time, detail *string) {
	d := time.Since(start)
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
	r := row(kname)
	r.parts[part] = fmt.Sprintf("%s %s", verdict, d.Round(time.Second))
	r.total += d
}

var partOrder = []string{"queries", "execute", "run", "refusal", "boot"}

// summaryTable renders the per-kernel table.
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
	for i, k := range strings.Split(allKernels, ",") {
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
	fmt.Fprint(w, "kernel\trelease\tboot")
	for _, p := range partOrder {
		fmt.Fprint(w, "\t"+p)
	}
	fmt.Fprintln(w, "\ttotal")
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
		fmt.Fprintf(w, "%s\t%s\t%s", k, r.release, boot)
		for _, p := range partOrder {
			v := r.parts[p]
			if v == "" {
				v = "-"
			}
			fmt.Fprint(w, "\t"+v)
		}
		fmt.Fprintf(w, "\t%s\n", r.total.Round(time.Second))
	}
	w.Flush()
	return b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if s := summaryTable(); s != "" {
		fmt.Printf("\nkernel suite summary (boot: mean time to the guest script; each test: verdict and time):\n%s", s)
	}
	os.Exit(code)
}
