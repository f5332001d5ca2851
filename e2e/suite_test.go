package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// phase is one part of a kernel's single boot: a script the guest runs in
// a shell of its own (sh /work/phases/NAME.sh, in /work), the files it
// needs, the guest time it may take, and the checks of what it printed,
// which return the table's detail.
type phase struct {
	name    string
	script  string
	files   []vm.File
	timeout time.Duration
	check   func(t *testing.T, out string) string
}

// phaseScript runs the phases one after another in one guest, each
// between markers that carry the guest's uptime, so the host can split
// the output and time each phase.
func phaseScript(phases []phase) string {
	var names []string
	for _, p := range phases {
		names = append(names, p.name)
	}
	return `for p in ` + strings.Join(names, " ") + `; do
	echo "@@@phase $p $(cut -d' ' -f1 /proc/uptime)"
	( cd /work && sh /work/phases/$p.sh ) 2>&1
	echo "@@@endphase $p $? $(cut -d' ' -f1 /proc/uptime)"
done
`
}

// phaseOutput is what one phase printed and how long it took in the guest.
type phaseOutput struct {
	out  string
	took time.Duration
	done bool // its end marker came
}

// splitPhases splits a guest's output at phaseScript's markers.
func splitPhases(out string) map[string]*phaseOutput {
	m := map[string]*phaseOutput{}
	var cur *phaseOutput
	var start float64
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		w := strings.Fields(line)
		switch {
		case len(w) == 3 && w[0] == "@@@phase":
			cur = &phaseOutput{}
			m[w[1]] = cur
			start, _ = strconv.ParseFloat(w[2], 64)
			b.Reset()
		case len(w) == 4 && w[0] == "@@@endphase" && cur != nil && m[w[1]] == cur:
			end, _ := strconv.ParseFloat(w[3], 64)
			cur.out, cur.done = b.String(), true
			cur.took = time.Duration((end - start) * float64(time.Second))
			cur = nil
		case cur != nil:
			b.WriteString(line)
			cur.out = b.String()
		}
	}
	return m
}

// mergeFiles lists each guest path once (phases share the binaries).
func mergeFiles(phases []phase) []vm.File {
	seen := map[string]bool{}
	var files []vm.File
	for _, p := range phases {
		for _, f := range p.files {
			if !seen[f.Path] {
				seen[f.Path] = true
				files = append(files, f)
			}
		}
	}
	return files
}

// kernelJob boots kernel kname once and runs every phase there: -e, the
// golden queries, --run. Each phase is a subtest with its own verdict.
func kernelJob(t *testing.T, kname string, cases []kernelCase) {
	phases := []phase{executePhase(t, kname), queriesPhase(t, kname, cases), runPhase(t, kname)}
	files := mergeFiles(phases)
	var timeout time.Duration
	for _, p := range phases {
		files = append(files, vm.File{Path: "/work/phases/" + p.name + ".sh", Data: []byte(p.script)})
		timeout += p.timeout
	}
	noted := false
	defer func() {
		// A boot that failed (infrastructure, or a build) fails every phase.
		if !noted {
			for _, p := range phases {
				notePhase(t, kname, p.name, 0, nil)
			}
		}
	}()
	res := boot(t, kname, vm.Guest{Script: phaseScript(phases), Files: files, CombinedOutput: true, Timeout: timeout})
	if d := os.Getenv("SQLHIST_E2E_LOG"); d != "" {
		os.WriteFile(filepath.Join(d, "guest-"+kname+".log"), []byte(res.Stdout), 0o644)
	}
	outs := splitPhases(res.Stdout)
	noted = true
	for _, p := range phases {
		t.Run(p.name, func(t *testing.T) {
			o := outs[p.name]
			if o == nil {
				o = &phaseOutput{}
			}
			var detail string
			defer notePhase(t, kname, p.name, o.took, &detail)
			if !o.done {
				t.Errorf("the guest did not finish this phase; the boot's last output:\n%s", lastLines(res.Stdout, 30))
			}
			detail = p.check(t, o.out)
		})
	}
}

// job is one boot's worth of the suite, with what it is expected to cost
// (guest time, and a build when its kernel is not cached): the longest
// start first, so that the guests running at once end together.
type job struct {
	kernel string
	cost   time.Duration
	run    func(t *testing.T)
}

// jobCost estimates a kernel's job from the suite's own table (2 cores,
// TCG, both busy): the x86-64 kernels run the most cases and --run's
// longest form, the other architectures --run's arch part.
func jobCost(kname string) time.Duration {
	k, err := vm.LookupKernel(kname)
	if err != nil {
		return 0
	}
	cost := 5 * time.Minute
	switch {
	case kname == "5.10":
		cost = 20 * time.Second
	case kname == bootKernel:
		cost = time.Minute
	case kname == "5.10-hist":
		cost = 6 * time.Minute
	case k.DebArch() == "amd64":
		cost = 9 * time.Minute
	case k.DebArch() == "armhf":
		cost = 6 * time.Minute
	}
	if k.Built() && !vm.Cached(k) {
		cost += 7 * time.Minute
	}
	return cost
}

// guestsAtOnce is how many guests the suite runs at once:
// $SQLHIST_E2E_GUESTS, else one per host CPU (each TCG guest keeps one
// host thread busy).
func guestsAtOnce() int {
	if n, err := strconv.Atoi(os.Getenv("SQLHIST_E2E_GUESTS")); err == nil && n > 0 {
		return n
	}
	return max(1, runtime.NumCPU())
}

// TestKernels is the kernel suite: every kernel of SQLHIST_KERNELS (all
// by default) booted once for -e, every golden case and --run; Debian's
// 5.10 for the refusal without hist triggers; the built 6.1-boot for
// boot-time tracing. Up to guestsAtOnce guests run at once, the longest
// jobs first; TestMain prints the table of every kernel's phases.
func TestKernels(t *testing.T) {
	needKernels(t)
	old := vm.Logf
	vm.Logf = t.Logf // downloads, builds, boots and infrastructure retries show in -v
	t.Cleanup(func() { vm.Logf = old })
	if err := vm.EnsureHostTools(); err != nil {
		t.Fatal(err)
	}
	cases := loadCases(t)
	var jobs []job
	for _, kname := range kernelNames() {
		jobs = append(jobs, job{kname, jobCost(kname), func(t *testing.T) { kernelJob(t, kname, cases) }})
	}
	if selected("5.10") {
		jobs = append(jobs, job{"5.10", jobCost("5.10"), refusalJob})
	}
	if selected(bootKernel) {
		jobs = append(jobs, job{bootKernel, jobCost(bootKernel), bootconfigJob})
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })
	n := min(guestsAtOnce(), len(jobs))
	suite.Lock()
	suite.guests = n
	suite.Unlock()
	var order []string
	for _, j := range jobs {
		order = append(order, fmt.Sprintf("%s (~%s)", j.kernel, j.cost))
	}
	t.Logf("%d jobs, %d guests at once, longest first: %s", len(jobs), n, strings.Join(order, ", "))
	queue := make(chan job)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				t.Run(j.kernel, func(t *testing.T) {
					defer noteJob(j.kernel, time.Now())
					j.run(t)
				})
			}
		}()
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
}
