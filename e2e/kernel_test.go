package e2e

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/internal/nohugepages"
)

//go:embed guest.sh
var guestScript string

// kernelCase is a golden case that compiles, as run in a kernel.
type kernelCase struct {
	name   string
	query  []byte
	args   []byte
	bounds map[string]string // field → "us" or "ns": latencies that must be plausible
	nofire string            // why the case cannot fire in the VM, if it cannot
	skip   string            // why the case is not run in kernels at all, if it is not
	wants  [][2]string       // field, value: some synthetic event line must carry field=value
	sums   [][]string        // total, parts...: on every line that has them, total = sum of parts
	sames  [][2]string       // a, b: on every line that has them, field a = field b
	hitsum bool              // each histogram on a synthetic event: its rows' counts add up to its hits
	histv  histChecks        // checks of the values the histograms hold (histcheck_test.go)
	ownELF bool              // the golden describes the binary its uprobes read (elf/ files)
	golden map[string]string // kernel → expected script (want/K/commands.sh, else want/commands.sh)
	exit   map[string]int    // kernel → expected exit code
	stderr map[string]string // kernel → expected stderr (want/K/stderr, else want/stderr)
	needs  []string          // the features its plan needs (want/plan.json's "needs")
}

// releaseGated names the features whose verdict sqlhist takes from a
// kernel's release rather than from its README or formats, with the audit
// gate that proves that verdict in each booted kernel: the stable releases
// of one version differ there (tracefs.valueDisplay61: Debian's 6.1.0-50
// refuses .percent and .graph on summed values, 6.1.0-56 and armhf's
// 6.1.0-57 take them). A golden records what the release of its embedded
// catalog does; the kernel Debian serves today may be a later release.
var releaseGated = map[string]string{"value-display": "percent-values"}

// gated returns the release-gated feature the case needs, or "".
func (c kernelCase) gated() string {
	for _, n := range c.needs {
		if _, ok := releaseGated[n]; ok {
			return n
		}
	}
	return ""
}

// expect returns the expected exit code and script of the case on kernel k.
func (c kernelCase) expect(k string) (int, string) {
	code, ok := c.exit[k]
	if !ok {
		code = c.exit[""]
	}
	script, ok := c.golden[k]
	if !ok {
		script = c.golden[""]
	}
	return code, script
}

// expectStderr returns the expected stderr of the case on kernel k.
func (c kernelCase) expectStderr(k string) string {
	if s, ok := c.stderr[k]; ok {
		return s
	}
	return c.stderr[""]
}

func loadCases(t *testing.T) []kernelCase {
	paths, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	var out []kernelCase
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := kernelCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar"), bounds: map[string]string{},
			golden: map[string]string{}, exit: map[string]int{}, stderr: map[string]string{}}
		ok := false
		for _, f := range a.Files {
			if k, file, found := strings.Cut(strings.TrimPrefix(f.Name, "want/"), "/"); strings.HasPrefix(f.Name, "want/") && found {
				switch file {
				case "commands.sh":
					c.golden[k] = string(f.Data)
				case "stderr":
					c.stderr[k] = string(f.Data)
				case "exit":
					c.exit[k], _ = strconv.Atoi(strings.TrimSpace(string(f.Data)))
					ok = ok || c.exit[k] == 0
				}
				continue
			}
			if strings.HasPrefix(f.Name, "elf/") {
				c.ownELF = true
			}
			switch f.Name {
			case "query.sql":
				c.query = f.Data
			case "args":
				c.args = f.Data
			case "want/commands.sh":
				c.golden[""] = string(f.Data)
			case "want/stderr":
				c.stderr[""] = string(f.Data)
			case "want/exit":
				c.exit[""], _ = strconv.Atoi(strings.TrimSpace(string(f.Data)))
				ok = ok || c.exit[""] == 0
			case "want/plan.json":
				var plan struct {
					Writes []struct{ Needs []string }
				}
				if err := json.Unmarshal(f.Data, &plan); err != nil {
					t.Fatalf("%s: want/plan.json: %v", p, err)
				}
				for _, w := range plan.Writes {
					for _, n := range w.Needs {
						if !slices.Contains(c.needs, n) {
							c.needs = append(c.needs, n)
						}
					}
				}
			case "e2e":
				for _, l := range strings.Split(string(f.Data), "\n") {
					w := strings.Fields(l)
					if c.histv.parse(w) {
						continue
					}
					switch {
					case len(w) == 3 && w[0] == "bound":
						c.bounds[w[1]] = w[2]
					case len(w) > 1 && w[0] == "nofire":
						c.nofire = strings.Join(w[1:], " ")
					case len(w) > 1 && w[0] == "skip":
						c.skip = strings.Join(w[1:], " ")
					case len(w) == 3 && w[0] == "want":
						c.wants = append(c.wants, [2]string{w[1], w[2]})
					case len(w) >= 4 && w[0] == "sum":
						c.sums = append(c.sums, w[1:])
					case len(w) == 3 && w[0] == "same":
						c.sames = append(c.sames, [2]string{w[1], w[2]})
					case len(w) == 1 && w[0] == "hitsum":
						c.hitsum = true
					}
				}
			}
		}
		if ok && c.skip == "" {
			out = append(out, c)
		}
		if ok && c.skip != "" {
			t.Logf("%s is not run in kernels: %s", c.name, c.skip)
		}
	}
	return out
}

// needKernels skips a test that boots kernels unless SQLHIST_E2E=1.
func needKernels(t *testing.T) {
	t.Helper()
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 to boot real kernels (downloads Debian kernels on first use)")
	}
}

// allKernels are the kernels the suite boots by default: Debian's x86-64
// 6.1, 6.12 and 7.2, the arm64 ones, 32-bit arm 6.1, and 5.10.262 built
// with hist triggers (5.10-hist, the golden cases' "5.10").
const allKernels = "6.1,6.12,7.2,6.1-arm64,6.12-arm64,7.2-arm64,6.1-armhf,5.10-hist"

// goldenKey is the key of a suite kernel's expected output in the golden
// cases (want/KEY/...): a kernel built from source is the version it is
// built from (5.10-hist is what --kernel 5.10 means), a Debian kernel of
// another architecture keeps its name (6.1-arm64).
func goldenKey(kname string) string {
	k, err := vm.LookupKernel(kname)
	if err != nil || !k.Built() {
		return kname
	}
	return k.ShortVersion()
}

// refusalKernels are Debian's kernels without hist triggers: each boots
// once in the suite, for the refusal of -e and -r with the stream engine (streamJob), Debian's 5.10 on
// x86-64 and trixie's riscv64 (RISC-V cannot have hist triggers).
var refusalKernels = []string{"5.10", "6.12-riscv64"}

// isRefusalKernel reports whether a kernel boots for the refusal alone.
func isRefusalKernel(kname string) bool { return slices.Contains(refusalKernels, kname) }

// kernelNames is the kernels the suite runs its phases in:
// $SQLHIST_KERNELS, else all. The kernels without hist triggers
// (refusalKernels) and the built 6.1-boot have jobs of their own (the
// refusal, boot-time tracing): naming them does not make them phase
// kernels too (SQLHIST_KERNELS=6.1-boot used to run every phase in the
// tinyconfig kernel as well, as 6.1-boot#01).
func kernelNames() []string {
	var out []string
	for _, k := range strings.Split(envOr("SQLHIST_KERNELS", allKernels), ",") {
		if !isRefusalKernel(k) && k != bootKernel {
			out = append(out, k)
		}
	}
	return out
}

// kernelArch is the Debian architecture of a kernel of the suite.
func kernelArch(t *testing.T, kname string) string {
	t.Helper()
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	return k.DebArch()
}

// wantLines checks that the guest printed each of these lines.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in the guest's output:\n%s", want, out)
		}
	}
}

// buildDemo builds the static program the uprobe cases probe, installed
// in the guests as /work/bin/demo, for a Debian architecture.
func buildDemo(t *testing.T, arch string) []byte { return goBuildStatic(t, "./testdata/demo", arch) }

// demoOffsetRE matches what depends on the demo binary the guest has (the
// golden cases describe a smaller one): uprobe file offsets.
var demoOffsetRE = regexp.MustCompile(`(/work/bin/demo:|/work/bin/demo is at file offset )0x[0-9a-f]+`)

// targetLineRE matches a script's first line, which names the catalog it
// was compiled from: the golden's is an embedded --kernel catalog, the
// guest's its own tracefs.
var targetLineRE = regexp.MustCompile(`(?m)^# sqlhist: compiled for .*$`)

// maskDemo replaces the demo binary's file offsets by OFFSET, and the
// target line by one without the catalog.
func maskDemo(script string) string {
	script = targetLineRE.ReplaceAllString(script, "# sqlhist: compiled for TARGET")
	return demoOffsetRE.ReplaceAllString(script, "${1}OFFSET")
}

// buildStatic builds sqlhist as the static binary the guests of a Debian
// architecture run.
func buildStatic(t *testing.T, arch string) []byte { return goBuildStatic(t, "../cmd/sqlhist", arch) }

// builds keeps the binaries built in this test process, by package and
// architecture: each is built once however many tests and kernels use it.
var (
	buildsMu sync.Mutex
	builds   = map[string][]byte{}
)

// goBuildStatic builds the Go package pkg with cgo off for a Debian
// architecture (amd64, arm64, armhf) and returns the binary.
func goBuildStatic(t *testing.T, pkg, arch string) []byte {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if b, ok := builds[pkg+" "+arch]; ok {
		return b
	}
	goarch, goarm := arch, ""
	if arch == "armhf" {
		goarch, goarm = "arm", "7"
	}
	dir, err := os.MkdirTemp("", "sqlhist-e2e-build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-ldflags="+nohugepages.LinkFlag, "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOARM="+goarm)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s for %s: %v\n%s", pkg, arch, err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	builds[pkg+" "+arch] = b
	return b
}

// forArch adapts a guest script's probe fetch arguments to a kernel:
// 32-bit arm has no $argN in kprobes (see FINDINGS), so the arguments are
// read from the registers that hold them at a function's entry.
func forArch(script, arch string) string {
	if arch != "armhf" {
		return script
	}
	return strings.NewReplacer("$arg1", "%r0", "$arg2", "%r1", "$arg3", "%r2").Replace(script)
}

// caseResult is what the guest reported for one case.
type caseResult struct {
	compile   int
	stderr    string
	commands  string
	setup     int
	setupLog  string
	elapsedUS uint64
	rounds    int // workload rounds it took to fire (at most 3)
	trace     []string
	hists     map[string]string
	teardown  int
	tearLog   string
	statediff string
	// The JSON plan replayed with --plan -e after the script's teardown:
	// exit statuses (with their output) and how the tracefs differed from
	// the script's (applied) and from the state before (torn down).
	planApply, planTeardown     int
	planLog, planDiff, planGone string
	nofireInfo                  string // the guest's state after the last round, when the case did not fire
	// A refused case: the exit of sqlhist -e, its stderr, and how the
	// whole tracefs differed after it (nothing may have been written).
	refuseExec            int
	refuseLog, refuseDiff string
	// What the fields of the synthetic events are checked against: the
	// guest's pid_max, and every task name it could know of (its tasks
	// after the workload, the kernel's saved comms, its programs and
	// busybox applets; nil when the guest did not say).
	pidMax uint64
	tasks  map[string]bool
}

// guestReport is everything the guest printed, by case.
type guestReport struct {
	kernel     string
	cases      map[string]*caseResult
	globalDiff string // the whole tracefs before the first case vs after the last
	done       bool
	pidMax     uint64          // /proc/sys/kernel/pid_max (0 if the guest did not say)
	applets    map[string]bool // busybox --list
	// overruns are the batches whose synthetic events overran the trace
	// buffer ("@@overrun" of each CPU after a batch's workload, when not 0).
	overruns []string
}

// parseGuest reads what guest.sh printed. A case's lines come in up to
// three blocks, each after "@@case NAME": its setup, its results (read
// after the workload of its batch), its teardown; a block after the
// first goes on with the same case. "@@tasks NAMES" lists the tasks the
// guest had after the workload of the batch of those cases.
func parseGuest(out string) guestReport {
	res := map[string]*caseResult{}
	rep := guestReport{cases: res, applets: map[string]bool{}}
	var cur *caseResult
	var tasks map[string]bool // the tasks section's set
	section := ""
	kernel := ""
	errlogs := map[*caseResult]int{}
	batch := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "@@"); ok {
			w := strings.Fields(rest)
			if len(w) == 0 {
				continue
			}
			switch w[0] {
			case "kernel":
				kernel = strings.Join(w[1:], " ")
			case "pidmax":
				if len(w) > 1 {
					rep.pidMax, _ = strconv.ParseUint(w[1], 10, 64)
				}
			case "applets":
				section = "applets"
			case "tasks":
				tasks = map[string]bool{}
				names := w[1:]
				if len(names) == 0 && cur != nil {
					cur.tasks = tasks
				}
				for _, n := range names {
					if c := res[n]; c != nil {
						c.tasks = tasks
					}
				}
				section = "tasks"
			case "batch":
				batch = strings.Join(w[1:], " ")
				section = ""
			case "overrun":
				for _, n := range w[1:] {
					if n != "0" {
						rep.overruns = append(rep.overruns, fmt.Sprintf("batch %s: overrun %s", batch, strings.Join(w[1:], " ")))
						break
					}
				}
				section = ""
			case "refuseexec":
				cur.refuseExec, _ = strconv.Atoi(w[1])
				section = "refuselog"
			case "refusediff":
				section = "refusediff"
			case "case":
				if cur = res[w[1]]; cur != nil {
					section = "" // a later block of the case
					continue
				}
				cur = &caseResult{compile: -1, setup: -1, teardown: -1, planApply: -1, planTeardown: -1, refuseExec: -1, hists: map[string]string{}}
				res[w[1]] = cur
				section = "compile"
			case "compile":
				cur.compile, _ = strconv.Atoi(w[1])
				section = "stderr"
			case "commands", "trace", "statediff":
				section = w[0]
			case "setup":
				cur.setup, _ = strconv.Atoi(w[1])
				section = ""
			case "teardown":
				cur.teardown, _ = strconv.Atoi(w[1])
				section = ""
			case "planapply":
				cur.planApply, _ = strconv.Atoi(w[1])
				section = ""
			case "planteardown":
				cur.planTeardown, _ = strconv.Atoi(w[1])
				section = ""
			case "plandiff", "planstatediff", "planlog":
				section = w[0]
			case "errorlog":
				errlogs[cur]++
				section = "errorlog" + strconv.Itoa(errlogs[cur])
			case "rounds":
				cur.rounds, _ = strconv.Atoi(w[1])
			case "elapsed_us":
				cur.elapsedUS, _ = strconv.ParseUint(w[1], 10, 64)
			case "hist":
				section = "hist " + w[1]
			case "nofire":
				section = "nofire"
			case "globaldiff":
				section = "globaldiff"
			case "done":
				rep.done = true
				section = ""
			case "end":
				section = ""
			}
			continue
		}
		if section == "globaldiff" {
			rep.globalDiff += line + "\n"
			continue
		}
		if section == "tasks" && tasks != nil {
			if n := strings.TrimRight(line, " "); n != "" {
				tasks[n] = true
			}
			continue
		}
		if section == "applets" {
			if a := strings.TrimSpace(line); a != "" {
				rep.applets[a] = true
			}
			continue
		}
		if cur == nil || section == "" {
			continue
		}
		switch {
		case section == "stderr":
			cur.stderr += line + "\n"
		case section == "commands":
			cur.commands += line + "\n"
		case section == "trace":
			if strings.TrimSpace(line) != "" {
				cur.trace = append(cur.trace, line)
			}
		case section == "errorlog1":
			cur.setupLog += line + "\n"
		case section == "errorlog2":
			cur.tearLog += line + "\n"
		case section == "statediff":
			cur.statediff += line + "\n"
		case section == "refuselog":
			cur.refuseLog += line + "\n"
		case section == "refusediff":
			cur.refuseDiff += line + "\n"
		case section == "planlog":
			cur.planLog += line + "\n"
		case section == "plandiff":
			cur.planDiff += line + "\n"
		case section == "planstatediff":
			cur.planGone += line + "\n"
		case section == "nofire":
			cur.nofireInfo += "  " + line + "\n"
		case strings.HasPrefix(section, "hist "):
			cur.hists[strings.TrimPrefix(section, "hist ")] += line + "\n"
		}
	}
	rep.kernel = kernel
	for _, c := range res {
		c.pidMax = rep.pidMax
		if c.tasks != nil {
			for a := range rep.applets {
				c.tasks[a] = true
			}
		}
	}
	return rep
}

var (
	synthLineRE = regexp.MustCompile(` ([A-Za-z0-9_]+): (.*)$`)
	fieldRE     = regexp.MustCompile(`([A-Za-z0-9_]+)=(\S+)`)
	hitsRE      = regexp.MustCompile(`(?m)^\s*Hits: (\d+)`)
	histLineRE  = regexp.MustCompile(`(?m)^(?:echo|printf '%s\\n') '(hist:[^']*)' >> (\S+)$`)
)

// verdict checks one case and returns what failed ("" if nothing), and
// whether it fired.
func verdict(c kernelCase, r *caseResult) (problems, outliers []string, accepted, fired, clean bool) {
	if r == nil {
		return []string{"the guest never reached this case"}, nil, false, false, false
	}
	if r.compile != 0 {
		return []string{fmt.Sprintf("sqlhist exit %d in the guest:\n%s", r.compile, r.stderr)}, nil, false, false, false
	}
	if r.setup != 0 || strings.TrimSpace(r.setupLog) != "" {
		problems = append(problems, fmt.Sprintf("setup exit %d; error_log:\n%s\nscript:\n%s", r.setup, r.setupLog, r.commands))
	} else {
		accepted = true
	}
	synths := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^echo 's:([A-Za-z0-9_]+) `).FindAllStringSubmatch(r.commands, -1) {
		synths[m[1]] = true
	}
	seen := map[string]int{}
	checked, implausible, negative := 0, []string{}, []string{}
	for _, l := range r.trace {
		m := synthLineRE.FindStringSubmatch(l)
		if m == nil || !synths[m[1]] {
			continue
		}
		seen[m[1]]++
		for _, f := range fieldRE.FindAllStringSubmatch(m[2], -1) {
			unit, ok := c.bounds[f[1]]
			if !ok {
				continue
			}
			v, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s=%s is not a number", m[1], f[1], f[2]))
				continue
			}
			limit := r.elapsedUS
			if unit == "ns" {
				limit *= 1000
			}
			checked++
			if v >= 1<<63 {
				// A negative latency wrapped to u64: the end stamped
				// before the start on another CPU (clock skew, which
				// -r reports apart). One such line among few must not
				// fail a case; a lowering bug wraps them throughout.
				negative = append(negative, fmt.Sprintf("%s=%d %s (negative: %d) on line %q", f[1], v, unit, int64(v), l))
				continue
			}
			if v > limit {
				implausible = append(implausible, fmt.Sprintf("%s=%d %s, but the triggers were installed for only %d µs (line %q)", f[1], v, unit, r.elapsedUS, l))
			}
		}
	}
	// A lowering bug gives wrong values throughout (same-trigger variable
	// chains gave absolute timestamps on every line); an isolated outlier
	// has been seen from the kernel itself (7.2 under qemu once stamped a
	// switch-in 13 ms before its wakeup). Fail on the first, report the
	// second.
	if n := len(implausible); n > 0 && (n == checked || n*10 > checked) {
		problems = append(problems, fmt.Sprintf("%d of %d latencies implausible, e.g. %s", n, checked, implausible[0]))
	} else {
		outliers = implausible
	}
	if n := len(negative); n > 1 && n*10 > checked || n > 0 && n == checked {
		problems = append(problems, fmt.Sprintf("%d of %d latencies negative, e.g. %s", n, checked, negative[0]))
	} else {
		outliers = append(outliers, negative...)
	}
	fired = true
	for s := range synths {
		if seen[s] == 0 {
			fired = false
		}
	}
	for _, path := range histogramTriggers(r.commands) {
		text := r.hists[strings.TrimSuffix(path, "trigger")+"hist"]
		if m := hitsRE.FindStringSubmatch(text); m == nil || m[1] == "0" {
			fired = false
		}
	}
	for _, w := range c.wants {
		found := false
		for _, l := range r.trace {
			if m := synthLineRE.FindStringSubmatch(l); m != nil && synths[m[1]] && strings.Contains(" "+m[2]+" ", " "+w[0]+"="+w[1]+" ") {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("no synthetic event line has %s=%s", w[0], w[1]))
		}
	}
	problems = append(problems, checkFields(r.commands, r.trace, r)...)
	problems = append(problems, checkSums(c, r.trace, synths)...)
	problems = append(problems, checkSames(c, r.trace, synths)...)
	if c.hitsum {
		problems = append(problems, checkHitSums(r.commands, r.hists)...)
	}
	if fired {
		problems = append(problems, c.histv.check(r, synths)...)
	}
	if !fired && c.nofire == "" {
		problems = append(problems, fmt.Sprintf("did not fire: synthetic lines %v, hists:\n%s  the guest, after the last round:\n%s", seen, histSummary(r.hists), r.nofireInfo))
	}
	if r.teardown != 0 || strings.TrimSpace(r.tearLog) != "" {
		problems = append(problems, fmt.Sprintf("teardown exit %d; error_log:\n%s", r.teardown, r.tearLog))
	}
	if strings.TrimSpace(r.statediff) != "" {
		problems = append(problems, "tracefs differs after teardown:\n"+r.statediff)
	} else if r.teardown == 0 {
		clean = true
	}
	problems = append(problems, checkPlan(r)...)
	return problems, outliers, accepted, fired, clean
}

// checkPlan checks the replay of the case's JSON plan: --plan -e applied
// it and left the tracefs as the script did, --plan --teardown -e removed
// all of it.
func checkPlan(r *caseResult) []string {
	var problems []string
	if r.planApply != 0 {
		problems = append(problems, fmt.Sprintf("--plan -e exit %d:\n%s", r.planApply, r.planLog))
	} else if strings.TrimSpace(r.planDiff) != "" {
		problems = append(problems, "the JSON plan applied with --plan -e left a different tracefs from the script's:\n"+r.planDiff)
	}
	if r.planTeardown != 0 {
		problems = append(problems, fmt.Sprintf("--plan --teardown -e exit %d:\n%s", r.planTeardown, r.planLog))
	} else if strings.TrimSpace(r.planGone) != "" {
		problems = append(problems, "tracefs differs after the plan's teardown:\n"+r.planGone)
	}
	return problems
}

// histogramTriggers returns the trigger files of the script's
// histogram-mode triggers: those that define no variables and run no
// handler. Join triggers are checked through the events they fire.
func histogramTriggers(commands string) []string {
	var out []string
	for _, m := range histLineRE.FindAllStringSubmatch(commands, -1) {
		spec, path := m[1], m[2]
		spec, _, _ = strings.Cut(spec, " if ")
		plain := true
		for _, part := range strings.Split(spec, ":")[1:] {
			k, _, hasEq := strings.Cut(part, "=")
			switch {
			case strings.HasPrefix(part, "on"):
				plain = false
			case hasEq && k != "keys" && k != "vals" && k != "sort" && k != "size" && k != "name":
				plain = false
			}
		}
		if plain {
			out = append(out, path)
		}
	}
	return out
}

func histSummary(h map[string]string) string {
	var b strings.Builder
	for k, v := range h {
		m := hitsRE.FindStringSubmatch(v)
		hits := "?"
		if m != nil {
			hits = m[1]
		}
		fmt.Fprintf(&b, "  %s: Hits %s\n", k, hits)
	}
	return b.String()
}

// queriesPhase runs every golden case that compiles in kernel kname
// (guest.sh): compiled against the live tracefs, applied, fired, checked
// field by field, torn down, replayed from its JSON plan; a case the
// kernel's catalog refuses is refused by -e too, with nothing written.
func queriesPhase(t *testing.T, kname string, allCases []kernelCase) phase {
	arch := kernelArch(t, kname)
	// A case whose golden describes its own binary (elf/) expects an
	// x86-64 one: the guests of other architectures have their own build
	// of the demo, so those cases run on x86-64 only.
	var cases []kernelCase
	for _, c := range allCases {
		if c.ownELF && arch != "amd64" {
			t.Logf("%s is not run on %s: its golden describes an x86-64 binary", c.name, kname)
			continue
		}
		cases = append(cases, c)
	}
	files := []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, arch)},
		{Path: "/work/bin/demo", Mode: 0o755, Data: buildDemo(t, arch)}}
	for _, c := range cases {
		files = append(files, vm.File{Path: "/work/cases/" + c.name + "/query.sql", Data: c.query})
		if len(c.args) > 0 {
			files = append(files, vm.File{Path: "/work/cases/" + c.name + "/args", Data: c.args})
		}
		if c.nofire != "" {
			files = append(files, vm.File{Path: "/work/cases/" + c.name + "/nofire", Data: []byte(c.nofire + "\n")})
		}
	}
	// The batches that share a workload (guest.sh), a line each.
	var batches strings.Builder
	for _, b := range planBatches(cases, goldenKey(kname)) {
		batches.WriteString(strings.Join(b, " ") + "\n")
	}
	files = append(files, vm.File{Path: "/work/batches", Data: []byte(batches.String())})
	return phase{name: "queries", script: guestScript, files: files, timeout: 15 * time.Minute,
		check: func(t *testing.T, out string) string { return checkQueries(t, kname, cases, out) }}
}

// checkQueries checks what guest.sh printed in kernel kname and returns
// the table's detail: cases run/accepted/fired/torn down clean, refused.
func checkQueries(t *testing.T, kname string, cases []kernelCase, out string) string {
	rep := parseGuest(out)
	results := rep.cases
	if !rep.done {
		t.Errorf("the guest script did not finish; last output:\n%s", lastLines(out, 30))
	}
	if strings.TrimSpace(rep.globalDiff) != "" {
		t.Errorf("tracefs as a whole differs after all cases:\n%s", rep.globalDiff)
	}
	for _, o := range rep.overruns {
		// Lines lost to the buffer can fail a case (a want, a field),
		// never pass one: said here, so that such a failure is read so.
		t.Logf("the trace buffer overran in %s", o)
	}
	var nRun, nAcc, nFired, nClean, nNoFire, nExtra, nRefused int
	for _, c := range cases {
		wantExit, wantScript := c.expect(goldenKey(kname))
		r := results[c.name]
		byRelease := false
		if g := c.gated(); g != "" && r != nil && r.compile != wantExit && (r.compile == 0 || r.compile == 1) {
			// The golden's catalog is another release than this
			// kernel's: the verdict is the kernel's own, which the
			// audit's gate proves against the kernel in this boot.
			t.Logf("%s on %s (%s): the golden's catalog says exit %d, sqlhist on this release exit %d (%s: the verdict by release; audit gate %s checks it against the kernel)",
				c.name, kname, rep.kernel, wantExit, r.compile, g, releaseGated[g])
			wantExit, byRelease = r.compile, true
			if wantExit == 0 {
				wantScript = c.golden[""]
			}
		}
		if wantExit != 0 {
			// The catalog of this kernel refuses the case: the guest
			// must refuse it too, print no script, and -e must write
			// nothing.
			nRefused++
			key := goldenKey(kname)
			if byRelease {
				// No golden diagnostic of this release to compare
				// (checkRefusal compares none for a key with a "-").
				key += "-release"
			}
			for _, p := range checkRefusal(c, key, wantExit, r) {
				t.Errorf("%s on %s: %s", c.name, kname, p)
			}
			if r != nil {
				t.Logf("%s on %s: refused: %s", c.name, kname, firstLines(r.stderr, 1))
			}
			continue
		}
		nRun++
		if r != nil && r.rounds > 1 {
			nExtra++
			t.Logf("%s on %s needed %d workload rounds to fire", c.name, kname, r.rounds)
		}
		problems, outliers, acc, fired, clean := verdict(c, r)
		for _, o := range outliers {
			t.Logf("%s on %s: an isolated implausible latency, reported not failed: %s", c.name, kname, o)
		}
		if r != nil && r.compile == 0 && maskDemo(r.commands) != maskDemo(wantScript) {
			problems = append(problems, fmt.Sprintf("the script compiled from the live tracefs differs from the golden for %s:\n--- golden\n%s--- guest\n%s", kname, wantScript, r.commands))
		}
		if acc {
			nAcc++
		}
		if fired {
			nFired++
		}
		if clean {
			nClean++
		}
		if !fired && c.nofire != "" {
			nNoFire++
		}
		for _, p := range problems {
			t.Errorf("%s on %s: %s", c.name, kname, p)
		}
	}
	t.Logf("%-5s %-28s cases %2d  accepted %2d  fired %2d (%d after extra workload, +%d cannot fire in a VM)  torn down clean %2d  refused %2d",
		kname, rep.kernel, nRun, nAcc, nFired, nExtra, nNoFire, nClean, nRefused)
	detail := fmt.Sprintf("%d/%d/%d/%d", nRun, nAcc, nFired, nClean)
	if nRefused > 0 {
		detail += fmt.Sprintf(", %d refused", nRefused)
	}
	return detail
}

// linuxVersionRE is how a refusal names the release a feature needs or
// that breaks it.
var linuxVersionRE = regexp.MustCompile(`Linux [0-9]+\.[0-9]+`)

// checkRefusal checks a case the kernel's catalog refuses: the guest's
// sqlhist refuses it with the same exit code, sqlhist -e too, and -e
// wrote nothing to the tracefs. On a version of x86-64 (key "5.10"), the
// diagnostic is the golden's, and a refusal of that kernel alone (the case
// compiles elsewhere) names a Linux version.
func checkRefusal(c kernelCase, key string, wantExit int, r *caseResult) []string {
	if r == nil {
		return []string{"the guest never reached this case"}
	}
	var problems []string
	if r.compile != wantExit {
		problems = append(problems, fmt.Sprintf("want exit %d from sqlhist in the guest, got %d:\n%s", wantExit, r.compile, r.stderr))
		return problems
	}
	if r.refuseExec != wantExit {
		problems = append(problems, fmt.Sprintf("sqlhist -e: want exit %d, got %d:\n%s", wantExit, r.refuseExec, r.refuseLog))
	}
	if strings.TrimSpace(r.refuseDiff) != "" {
		problems = append(problems, "sqlhist -e refused after writing to the tracefs:\n"+r.refuseDiff)
	}
	diag := firstLines(r.stderr, 1)
	if !strings.Contains(r.refuseLog, diag) {
		problems = append(problems, fmt.Sprintf("sqlhist -e refused with another diagnostic:\n%s\nthan the compile's:\n%s", r.refuseLog, diag))
	}
	if strings.Contains(key, "-") {
		return problems
	}
	if want := firstLines(c.expectStderr(key), 1); want != "" && maskRelease(diag) != maskRelease(want) {
		problems = append(problems, fmt.Sprintf("refused with\n%s\nthe golden's diagnostic for %s is\n%s", diag, key, want))
	}
	if c.exit[""] == 0 && !linuxVersionRE.MatchString(r.stderr) {
		problems = append(problems, "the refusal names no Linux version (\"Linux N.M\"):\n"+r.stderr)
	}
	return problems
}

// releaseRE is the release a diagnostic names its target by: the golden's
// is the embedded catalog's, the guest's the kernel Debian serves today
// (6.12.117 became 6.12.118): the version must match, not the package.
var releaseRE = regexp.MustCompile(`(this target is Linux [0-9]+\.[0-9]+) \([^)]*\)`)

// maskRelease replaces the release in parentheses after the version.
func maskRelease(diag string) string { return releaseRE.ReplaceAllString(diag, "$1 (RELEASE)") }

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// fetchTimeout bounds fetching a kernel, which builds a kernel of
// KernelBuild on a cache miss.
const fetchTimeout = 30 * time.Minute

// boot runs a guest on kernel kname, retrying an infrastructure failure
// once; a second one fails the test as INFRASTRUCTURE, never as a verdict.
// The console of a crashed guest is kept in $SQLHIST_E2E_LOG.
func boot(t *testing.T, kname string, g vm.Guest) vm.Result {
	t.Helper()
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	if g.CPUs == 0 {
		g.CPUs = guestCPUs()
	}
	// Fetch (download, or build from source) with room of its own: a cold
	// build of 6.1-boot takes about 7 min on 2 cores, of 5.10-hist about
	// 6, more than the guest's context below allows.
	cached, fstart := vm.Cached(k), time.Now()
	fctx, fcancel := context.WithTimeout(context.Background(), fetchTimeout)
	k, err = vm.Fetch(fctx, k)
	fcancel()
	noteFetch(kname, cached, time.Since(fstart))
	if err != nil {
		t.Fatalf("fetching or building kernel %s (not a test verdict): %v", kname, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.Timeout+5*time.Minute)
	defer cancel()
	res, err := vm.RunRetry(ctx, k, g)
	if err != nil {
		var ie *vm.InfraError
		if d := e2eLogDir(); errors.As(err, &ie) && d != "" {
			os.WriteFile(filepath.Join(d, "console-"+kname+".log"), []byte(ie.Console), 0o644)
		}
		if vm.IsInfra(err) {
			t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
		}
		t.Fatal(err)
	}
	noteBoot(kname, res)
	return res
}

// sections splits guest output into the text after each @@name marker,
// without blank lines.
func sections(out string) map[string]string {
	m := map[string]string{}
	name := ""
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@"); ok {
			name = strings.Fields(rest + " x")[0]
			continue
		}
		if name != "" && l != "" {
			m[name] += l + "\n"
		}
	}
	for k, v := range m {
		m[k] = strings.TrimSpace(v)
	}
	return m
}

// guestCPUs is the number of vCPUs of the guests (SQLHIST_E2E_CPUS, default
// the harness's).
func guestCPUs() int {
	n, _ := strconv.Atoi(os.Getenv("SQLHIST_E2E_CPUS"))
	return n
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// synthFields returns the fields of each line of the script's synthetic
// events in the trace, by name.
func synthFields(trace []string, synths map[string]bool) []map[string]string {
	var out []map[string]string
	for _, l := range trace {
		m := synthLineRE.FindStringSubmatch(l)
		if m == nil || !synths[m[1]] {
			continue
		}
		vals := map[string]string{"": l}
		for _, f := range fieldRE.FindAllStringSubmatch(m[2], -1) {
			vals[f[1]] = f[2]
		}
		out = append(out, vals)
	}
	return out
}

// checkSums checks the case's "sum total a b" lines: on every synthetic
// event line that carries the fields, total equals a + b exactly (a chain's
// end-to-end latency against its steps').
func checkSums(c kernelCase, trace []string, synths map[string]bool) []string {
	var problems []string
	lines := synthFields(trace, synths)
	for _, sum := range c.sums {
		checked := 0
		for _, vals := range lines {
			total, err := parseSum(vals[sum[0]])
			ok := err == nil
			var parts uint64
			for _, p := range sum[1:] {
				v, err := parseSum(vals[p])
				ok = ok && err == nil
				parts += v
			}
			if !ok {
				continue
			}
			checked++
			if total != parts {
				problems = append(problems, fmt.Sprintf("%s=%d but %s add up to %d: %q", sum[0], total, strings.Join(sum[1:], "+"), parts, vals[""]))
				break
			}
		}
		if checked == 0 {
			problems = append(problems, fmt.Sprintf("sum %s: no synthetic event line has all of these fields", strings.Join(sum, " ")))
		}
	}
	return problems
}

// checkSames checks the case's "same a b" lines: every synthetic event
// line that carries both fields has the same value in them (COMM at
// sched_switch is the task switched out, prev_comm).
func checkSames(c kernelCase, trace []string, synths map[string]bool) []string {
	var problems []string
	lines := synthFields(trace, synths)
	for _, pair := range c.sames {
		checked := 0
		for _, vals := range lines {
			a, okA := vals[pair[0]]
			b, okB := vals[pair[1]]
			if !okA || !okB {
				continue
			}
			checked++
			if a != b {
				problems = append(problems, fmt.Sprintf("%s=%s but %s=%s: %q", pair[0], a, pair[1], b, vals[""]))
				break
			}
		}
		if checked == 0 {
			problems = append(problems, fmt.Sprintf("same %s %s: no synthetic event line has both fields", pair[0], pair[1]))
		}
	}
	return problems
}

var hitcountRE = regexp.MustCompile(`hitcount:\s+(\d+)`)

// checkHitSums checks each histogram the script puts on a synthetic event
// (an aggregate over a JOIN): the counts of its rows add up to its hits,
// which is every event the JOIN fired, none dropped, and there is at least
// one. The kernel prints a hist file's rows from a sorted copy of the map
// and reads Hits after them: an event that fires while the file is printed
// is in Hits and not in the rows (seen on 7.2: 458 rows, 459 hits; the
// triggers of a synthetic event keep running after its enable is
// cleared). So Hits may exceed the rows by hitSlack, never fall short.
const hitSlack = 3

func checkHitSums(commands string, hists map[string]string) []string {
	var problems []string
	found := false
	for _, path := range histogramTriggers(commands) {
		if !strings.Contains(path, "/events/synthetic/") {
			continue
		}
		found = true
		text := hists[strings.TrimSuffix(path, "trigger")+"hist"]
		var rows uint64
		for _, m := range hitcountRE.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			rows += n
		}
		hits := hitsRE.FindStringSubmatch(text)
		var nhits uint64
		if hits != nil {
			nhits, _ = strconv.ParseUint(hits[1], 10, 64)
		}
		dropped := regexp.MustCompile(`(?m)^\s*Dropped: (\d+)`).FindStringSubmatch(text)
		switch {
		case hits == nil:
			problems = append(problems, fmt.Sprintf("%s: no Totals in the hist file:\n%s", path, text))
		case hits[1] == "0":
			problems = append(problems, fmt.Sprintf("%s: the histogram counted no event", path))
		case nhits < rows || nhits > rows+hitSlack:
			problems = append(problems, fmt.Sprintf("%s: rows count %d events, the histogram's hits are %s", path, rows, hits[1]))
		case dropped == nil:
			problems = append(problems, fmt.Sprintf("%s: no Dropped in the Totals:\n%s", path, text))
		case dropped[1] != "0" && !raceDrops(text, nhits, dropped[1]):
			problems = append(problems, fmt.Sprintf("%s: entries dropped:\n%s", path, text))
		}
	}
	if !found {
		problems = append(problems, "hitsum: the script puts no histogram on a synthetic event")
	}
	return problems
}

// raceDrops reports whether a histogram's drops can only be the kernel's
// lost races, not a full map: its entries fill less than half of its
// size= (2048 by default) and the drops are at most 1% of the hits. Two
// CPUs inserting the same new key at once make one of them wait for the
// other's element; the waiter gives up after map_size tries and counts a
// drop (tracing_map.c, __tracing_map_insert). Under TCG with three guests
// on two host cores a vCPU can be descheduled in the middle of its insert:
// 6.1-armhf dropped 2 of 479 events in a map of 26 entries.
func raceDrops(text string, hits uint64, dropped string) bool {
	n, err := strconv.ParseUint(dropped, 10, 64)
	if err != nil {
		return false
	}
	size := uint64(2048)
	if m := regexp.MustCompile(`:size=(\d+)`).FindStringSubmatch(text); m != nil {
		size, _ = strconv.ParseUint(m[1], 10, 64)
	}
	entries := regexp.MustCompile(`(?m)^\s*Entries: (\d+)`).FindStringSubmatch(text)
	if entries == nil {
		return false
	}
	e, _ := strconv.ParseUint(entries[1], 10, 64)
	return e*2 < size && n*100 <= hits+n
}

// parseSum reads a field of a sum check: unsigned, or signed (an int
// field: prio differences) as its two's complement, so that sums compare
// modulo 2^64 either way.
func parseSum(s string) (uint64, error) {
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return uint64(v), err
}
