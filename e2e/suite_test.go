package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
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
	// expedite runs the phase with RCU's grace periods expedited
	// (/sys/kernel/rcu_expedited): removing a trigger, an event or an
	// instance waits for grace periods, several a case, and expedited
	// ones are far shorter under TCG (the queries phase of 6.12 took 68 s
	// instead of 107). Not for the phases that time the kernel against
	// another tool.
	expedite bool
}

// phaseScript runs the phases one after another in one guest, each
// between markers that carry the guest's uptime, so the host can split
// the output and time each phase.
func phaseScript(phases []phase) string {
	var b strings.Builder
	b.WriteString("rcu=\n[ -w /sys/kernel/rcu_expedited ] && read rcu < /sys/kernel/rcu_expedited\n")
	// The guest's busy time so far, in /proc/stat's ticks (1/100 s), all
	// vCPUs: what a phase cost the host, more nearly than its wall.
	b.WriteString("busy() { read c u n s i w q sq st x < /proc/stat; echo $((u + n + s + q + sq + st)); }\n")
	for _, p := range phases {
		fmt.Fprintf(&b, "echo \"@@@phase %s $(cut -d' ' -f1 /proc/uptime) $(busy)\"\n", p.name)
		if p.expedite {
			b.WriteString("[ -n \"$rcu\" ] && echo 1 > /sys/kernel/rcu_expedited\n")
		}
		fmt.Fprintf(&b, "( cd /work && sh /work/phases/%s.sh ) 2>&1\n", p.name)
		fmt.Fprintf(&b, "echo \"@@@endphase %s $? $(cut -d' ' -f1 /proc/uptime) $(busy)\"\n", p.name)
		if p.expedite {
			b.WriteString("[ -n \"$rcu\" ] && echo $rcu > /sys/kernel/rcu_expedited\n")
		}
	}
	return b.String()
}

// phaseOutput is what one phase printed and how long it took in the guest.
type phaseOutput struct {
	out  string
	took time.Duration
	busy time.Duration // the guest's vCPUs busy (from /proc/stat), when its markers say
	done bool          // its end marker came
}

// splitPhases splits a guest's output at phaseScript's markers.
func splitPhases(out string) map[string]*phaseOutput {
	m := map[string]*phaseOutput{}
	var cur *phaseOutput
	var start float64
	startBusy := int64(-1)
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		w := strings.Fields(line)
		switch {
		case (len(w) == 3 || len(w) == 4) && w[0] == "@@@phase":
			cur = &phaseOutput{}
			m[w[1]] = cur
			start, _ = strconv.ParseFloat(w[2], 64)
			startBusy = -1
			if len(w) == 4 {
				if n, err := strconv.ParseInt(w[3], 10, 64); err == nil {
					startBusy = n
				}
			}
			b.Reset()
		case (len(w) == 4 || len(w) == 5) && w[0] == "@@@endphase" && cur != nil && m[w[1]] == cur:
			end, _ := strconv.ParseFloat(w[3], 64)
			cur.out, cur.done = b.String(), true
			cur.took = time.Duration((end - start) * float64(time.Second))
			if len(w) == 5 && startBusy >= 0 {
				if n, err := strconv.ParseInt(w[4], 10, 64); err == nil && n >= startBusy {
					cur.busy = time.Duration(n-startBusy) * 10 * time.Millisecond
				}
			}
			cur = nil
		case cur != nil:
			b.WriteString(line)
		}
	}
	if cur != nil {
		cur.out = b.String() // the output ended inside this phase
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

// kernelJob boots kernel kname once and runs every phase there: the
// refusal audit, -e, the golden queries, --run, and on some kernels the
// kill points of --run (killPhase); on 6.1 and 6.1-arm64 the agreement
// with libbpf-tools (agreePhase) comes first. Each phase is a subtest
// with its own verdict. Only the phases $SQLHIST_PHASES names are made
// and run (phaseSelected).
func kernelJob(t *testing.T, kname string, cases []kernelCase) {
	var phases []phase
	add := func(name string, mk func() *phase) {
		if phaseSelected(name) {
			if p := mk(); p != nil {
				phases = append(phases, *p)
			}
		}
	}
	// First, before a loaded host makes the guest's TSC unstable
	// (agree_test.go: its latencies need the TSC as clocksource).
	add("agree", func() *phase { return agreePhase(t, kname) })
	// The two engines over one window (differ_test.go).
	add("differ", func() *phase { return differPhase(t, kname) })
	// The kernel's word on each of sqlhist's version gates and kernel
	// rules (audit_test.go), in a tracefs no phase has touched.
	add("audit", func() *phase { p := auditPhase(t, kname); p.expedite = true; return &p })
	add("execute", func() *phase { p := executePhase(t, kname); p.expedite = true; return &p })
	add("queries", func() *phase { p := queriesPhase(t, kname, cases); p.expedite = true; return &p })
	add("run", func() *phase { p := runPhase(t, kname); p.expedite = true; return &p })
	add("kill", func() *phase {
		p := killPhase(t, kname)
		if p != nil {
			p.expedite = true
		}
		return p
	})
	// The BPF engine's own tests against the kernel's verifier and
	// tracepoints (bpfengine_guest_test.go), last: they write hist
	// triggers of their own.
	add("bpf", func() *phase { return bpfEnginePhase(t, kname) })
	// The stream engine with one CPU online (onecpu_test.go): last, as
	// it takes a CPU offline for a while.
	add("onecpu", func() *phase { return onecpuPhase(t, kname) })
	if len(phases) == 0 {
		t.Skipf("SQLHIST_PHASES=%s names no phase of %s", os.Getenv("SQLHIST_PHASES"), kname)
	}
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
	if d := e2eLogDir(); d != "" {
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
			notePhaseBusy(kname, p.name, o.busy)
			if !o.done {
				noteWhy(kname, p.name, "the guest did not finish this phase")
				t.Errorf("the guest did not finish this phase; the boot's last output:\n%s", lastLines(res.Stdout, 30))
			}
			// A guest's bounded wait that ran out says so on a line of
			// its own (@@timeout WHAT), whatever the phase: the checks
			// that follow would fail on its consequences, not its cause.
			for _, m := range guestTimeoutRE.FindAllStringSubmatch(o.out, -1) {
				t.Errorf("in the guest: %s", m[1])
			}
			detail = p.check(t, o.out)
		})
	}
}

// guestTimeoutRE is the line a guest script prints when a bounded wait
// ran out.
var guestTimeoutRE = regexp.MustCompile(`(?m)^@@timeout (.*)$`)

// job is one boot's worth of the suite: a kernel, the guest time it is
// expected to take (the longest start first, so that the guests running at
// once end together), and whether its kernel must be built first.
type job struct {
	kernel string
	cost   time.Duration
	build  bool
	run    func(t *testing.T)
}

// schedule runs jobs with at most slots of them at once, a slot being a
// core's worth of work: a TCG guest keeps one host thread busy, and a
// kernel build (make -j on every core) counts as two. The builds come
// first, one after another, in a builder that holds two slots for all of
// them; the rest take one slot each, the longest job whose kernel is
// ready first (a job waiting for its build is passed over until the
// builder has made its kernel). build is called for each kernel a job
// needs built, run for each job; schedule returns when all are done.
func schedule(jobs []job, slots int, build func(kernel string), run func(j job)) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	free := slots
	built := map[string]bool{}
	var builds []string
	for _, j := range jobs {
		if j.build {
			builds = append(builds, j.kernel)
		}
	}
	var wg sync.WaitGroup
	if len(builds) > 0 {
		hold := min(2, slots)
		free -= hold
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range builds {
				build(k)
				mu.Lock()
				built[k] = true
				cond.Broadcast()
				mu.Unlock()
			}
			mu.Lock()
			free += hold
			cond.Broadcast()
			mu.Unlock()
		}()
	}
	pending := append([]job(nil), jobs...)
	sort.SliceStable(pending, func(a, b int) bool { return pending[a].cost > pending[b].cost })
	for len(pending) > 0 {
		mu.Lock()
		i := -1
		for {
			if free > 0 {
				for k, j := range pending {
					if !j.build || built[j.kernel] {
						i = k
						break
					}
				}
			}
			if i >= 0 {
				break
			}
			cond.Wait()
		}
		free--
		j := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				free++
				cond.Broadcast()
				mu.Unlock()
			}()
			run(j)
		}()
	}
	wg.Wait()
}

// jobWalls are the jobs' own times in two fresh clones' suites (fc13
// and fc14 of 2026-12-06: two cores, TCG, three guests at once; a via
// target's time is the via job's, not its kernel's). The longest start
// first, so that the last to run are the short ones and the cores stay
// busy to the end: with the older estimates (6.1 8.5 min, 6.1-arm64 4.5,
// 7.2-arm64 4.5, 5.10 6) 7.2-arm64 started last and ran alone for 2.4
// minutes, one core idle.
var jobWalls = map[string]time.Duration{
	"6.1":          12 * time.Minute,
	"7.2":          10 * time.Minute,
	"6.12-riscv64": 10 * time.Minute,
	"6.1-arm64":    7 * time.Minute,
	"6.12":         6*time.Minute + 30*time.Second,
	"6.1-armhf":    5*time.Minute + 30*time.Second,
	"5.10-hist":    4 * time.Minute,
	"6.12-arm64":   3*time.Minute + 45*time.Second,
	"5.10":         3 * time.Minute,
	"7.2-arm64":    3 * time.Minute,
	bootKernel:     10 * time.Second,
}

// viaJobWall is the via job's time in the same suites (8m45s, 7m49s).
const viaJobWall = 8*time.Minute + 30*time.Second

// jobCost is a kernel's job as jobWalls measured it, else an estimate
// from the kind of job (x86-64 6.5 min, armhf 5.5, arm64 4, riscv64's
// stream job 10, another stream job 3, 5.10-hist 4, a boot seconds); a
// kernel built from source is built first, by the builder (schedule).
func jobCost(kname string) time.Duration {
	if d, ok := jobWalls[kname]; ok {
		return d
	}
	k, err := vm.LookupKernel(kname)
	if err != nil {
		return 0
	}
	switch {
	case isRefusalKernel(kname) && k.DebArch() == "riscv64":
		return 10 * time.Minute
	case isRefusalKernel(kname):
		return 3 * time.Minute
	case kname == bootKernel:
		return 10 * time.Second
	case kname == "5.10-hist":
		return 4 * time.Minute
	case k.DebArch() == "amd64":
		return 6*time.Minute + 30*time.Second
	case k.DebArch() == "armhf":
		return 5*time.Minute + 30*time.Second
	}
	return 4 * time.Minute
}

// needsBuild reports whether the kernel is built from source and not in
// the cache yet.
func needsBuild(kname string) bool {
	k, err := vm.LookupKernel(kname)
	return err == nil && k.Built() && !vm.Cached(k)
}

// guestsAtOnce is how many guests the suite runs at once:
// $SQLHIST_E2E_GUESTS, else one more than the host's CPUs. A TCG guest
// keeps one host thread busy but waits now and then (its sleeps, the
// console): two guests on two cores kept them 79% busy, and the suite
// took 21m0s; three took 15m43s, each guest about a fifth slower.
func guestsAtOnce() int {
	if n, err := strconv.Atoi(os.Getenv("SQLHIST_E2E_GUESTS")); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU() + 1
}

// e2eLogDir is $SQLHIST_E2E_LOG, the directory the suite keeps the
// guests' logs and the --via traces in, made when it is missing (a fresh
// clone's run given a new directory once lost every --via trace, and the
// restarting line's runs with them); "" when unset.
func e2eLogDir() string {
	d := os.Getenv("SQLHIST_E2E_LOG")
	if d != "" {
		os.MkdirAll(d, 0o755)
	}
	return d
}

// phaseSelected reports whether $SQLHIST_PHASES, a comma-separated list
// of phases (agree, differ, audit, execute, queries, run, kill; stream
// and bootconfig, the jobs of one phase; via, the --via job), names the
// phase; unset or empty, every phase is selected. SQLHIST_KERNELS=6.1
// SQLHIST_PHASES=queries runs 6.1's golden cases alone.
func phaseSelected(name string) bool {
	v := os.Getenv("SQLHIST_PHASES")
	return v == "" || slices.Contains(strings.Split(v, ","), name)
}

// TestKernels is the kernel suite: every kernel of SQLHIST_KERNELS (all
// by default) booted once for -e, every golden case and --run; Debian's
// 5.10 and riscv64 6.12 for the refusal without hist triggers; the built 6.1-boot for
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
		jobs = append(jobs, job{kname, jobCost(kname), needsBuild(kname), func(t *testing.T) { kernelJob(t, kname, cases) }})
	}
	for _, kname := range refusalKernels {
		if selected(kname) && phaseSelected("stream") {
			jobs = append(jobs, job{kname, jobCost(kname), needsBuild(kname), func(t *testing.T) { streamJob(t, kname) }})
		}
	}
	if selected(bootKernel) && phaseSelected("bootconfig") {
		jobs = append(jobs, job{bootKernel, jobCost(bootKernel), needsBuild(bootKernel), bootconfigJob})
	}
	if len(viaKernelsOf()) > 0 && phaseSelected("via") {
		// The --via guests (via_checks_test.go): booted at once, mostly
		// waiting on this machine's sqlhist, so one slot. The x86-64
		// one's checks end with the restarting line's (about 2 minutes).
		jobs = append(jobs, job{"via", viaJobWall, false, viaJobRun})
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].cost > jobs[b].cost })
	n := guestsAtOnce()
	suite.Lock()
	suite.guests = n
	suite.Unlock()
	var order []string
	for _, j := range jobs {
		order = append(order, fmt.Sprintf("%s (~%s%s)", j.kernel, j.cost, map[bool]string{true: " after its build"}[j.build]))
	}
	t.Logf("%d jobs, %d slots (a guest takes one, a kernel build two), builds first, then the longest ready job: %s",
		len(jobs), n, strings.Join(order, ", "))
	schedule(jobs, n, func(kname string) {
		// A failed build is logged here and tried again, and reported,
		// by the job that boots the kernel.
		k, err := vm.LookupKernel(kname)
		if err != nil {
			t.Errorf("%v", err)
			return
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		if _, err := vm.Fetch(ctx, k); err != nil {
			t.Logf("building %s: %v", kname, err)
			return
		}
		noteFetch(kname, false, time.Since(start))
	}, func(j job) {
		t.Run(j.kernel, func(t *testing.T) {
			defer noteJob(j.kernel, time.Now())
			j.run(t)
		})
	})
}

// TestKernelNames: the kernels named in SQLHIST_KERNELS that have jobs of
// their own (Debian's 5.10 and riscv64 6.12, the built 6.1-boot) are not
// phase kernels.
func TestKernelNames(t *testing.T) {
	t.Setenv("SQLHIST_KERNELS", "6.1,"+bootKernel+",5.10,5.10-hist,6.12-riscv64")
	if got := strings.Join(kernelNames(), ","); got != "6.1,5.10-hist" {
		t.Errorf("kernelNames() = %s, want 6.1,5.10-hist", got)
	}
	if !selected(bootKernel) || !selected("5.10") || !selected("6.12-riscv64") {
		t.Errorf("%s, 5.10 and 6.12-riscv64 are not selected for their own jobs", bootKernel)
	}
	for _, kname := range refusalKernels {
		k, err := vm.LookupKernel(kname)
		if err != nil {
			t.Fatal(err)
		}
		if k.HistTriggers || k.Built() {
			t.Errorf("refusal kernel %s: HistTriggers %v, built %v: want Debian's, without hist triggers", kname, k.HistTriggers, k.Built())
		}
	}
	t.Setenv("SQLHIST_KERNELS", "")
	if got := strings.Join(kernelNames(), ","); got != allKernels {
		t.Errorf("kernelNames() without SQLHIST_KERNELS = %s, want %s", got, allKernels)
	}
}

// TestPhaseSelected: SQLHIST_PHASES names the phases run; unset, all.
func TestPhaseSelected(t *testing.T) {
	t.Setenv("SQLHIST_PHASES", "")
	if !phaseSelected("queries") || !phaseSelected("via") {
		t.Errorf("without SQLHIST_PHASES a phase is not selected")
	}
	t.Setenv("SQLHIST_PHASES", "queries,kill")
	for name, want := range map[string]bool{"queries": true, "kill": true, "run": false, "via": false, "quer": false} {
		if got := phaseSelected(name); got != want {
			t.Errorf("SQLHIST_PHASES=queries,kill: phaseSelected(%s) = %v", name, got)
		}
	}
}
