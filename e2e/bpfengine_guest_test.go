package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// bpfEngineScript runs package bpf's tests in the guest, as root, with
// tracefs mounted by /init: the sample programs and every planned query
// of testdata/queries through the guest kernel's verifier, and the
// wakeup JOIN and syscall count attached to its tracepoints.
const bpfEngineScript = `if [ ! -e /proc/sys/kernel/unprivileged_bpf_disabled ]; then echo "@@bpf-syscall no"; echo "@@exit 0"; exit 0; fi
mkdir -p /work/bpf && cd /work/bpf
echo "@@memlock $(ulimit -l)"
/work/bpf.test -test.v -test.count=1 -test.run 'TestVerifier|TestQueries|TestHostJoin|TestRefusals|TestKillLeavesNothing|TestHostStacks|TestStacksAgainstHist|TestJoinAgainstHist|TestHostScratch|TestHostEvents|TestProbePrograms|TestProbeRefusals|TestProbeNoPMU|TestHostKprobes|TestProbesAgainstHist|TestRawArgs' 2>&1
echo "@@exit $?"
`

// TestBPFEngineGuest boots x86-64 and arm64 kernels with BPF
// (SQLHIST_KERNELS narrows; default 5.10 (bullseye's, no hist triggers)
// and 6.1) and runs
// the BPF engine's tests there: the programs through the kernel's own
// verifier, and the wakeup JOIN on its own tracepoints.
func TestBPFEngineGuest(t *testing.T) {
	needKernels(t)
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "5.10,6.1"), ",") {
		t.Run(kname, func(t *testing.T) {
			p := bpfEnginePhase(t, kname)
			if p == nil {
				t.Skipf("%s: the bpf tests are not built for its architecture", kname)
			}
			res := boot(t, kname, vm.Guest{Script: p.script, Files: p.files, CombinedOutput: true, Timeout: p.timeout})
			t.Logf("%s", p.check(t, res.Stdout))
		})
	}
}

// bpfTestBins holds package bpf's test binary by GOARCH, built once.
var (
	bpfTestMu   sync.Mutex
	bpfTestBins = map[string][]byte{}
)

// bpfTestBinary builds package bpf's tests for goarch.
func bpfTestBinary(t *testing.T, goarch string) []byte {
	t.Helper()
	bpfTestMu.Lock()
	defer bpfTestMu.Unlock()
	if b, ok := bpfTestBins[goarch]; ok {
		return b
	}
	bin := filepath.Join(t.TempDir(), "bpf.test."+goarch)
	cmd := exec.Command("go", "test", "-c", "-vet=off", "-o", bin, "../bpf")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the bpf tests for %s: %v\n%s", goarch, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	bpfTestBins[goarch] = data
	return data
}

// bpfEnginePhase is the bpf phase of kname's boot (nil where the tests are
// not built: 32-bit arm): package bpf's tests in the guest, where the
// kernel has the bpf() system call (the guest is asked): the programs of
// every planned query through the kernel's own verifier, the wakeup JOIN
// and the stacks on its tracepoints (against its hist triggers where it
// has them), a SIGKILLed run's programs and maps gone.
func bpfEnginePhase(t *testing.T, kname string) *phase {
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	goarch := k.Arch
	switch goarch {
	case "", "amd64":
		goarch = "amd64"
	case "arm64":
	default:
		return nil
	}
	queries, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(queries) == 0 {
		t.Fatalf("no queries: %v", err)
	}
	files := []vm.File{{Path: "/work/bpf.test", Mode: 0o755, Data: bpfTestBinary(t, goarch)}}
	for _, q := range queries {
		b, err := os.ReadFile(q)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, vm.File{Path: "/work/testdata/queries/" + filepath.Base(q), Data: b})
	}
	return &phase{name: "bpf", script: bpfEngineScript, files: files, timeout: 4 * time.Minute,
		check: func(t *testing.T, out string) string { return checkBPFEngine(t, kname, k.HistTriggers, out) }}
}

// checkBPFEngine checks what bpfEngineScript printed.
func checkBPFEngine(t *testing.T, kname string, hist bool, out string) string {
	t.Helper()
	wantLines(t, out, "@@exit 0")
	if strings.Contains(out, "@@bpf-syscall no\n") {
		return "no bpf() system call in this kernel: nothing to load"
	}
	for _, want := range []string{"--- PASS: TestVerifier", "--- PASS: TestQueries", "--- PASS: TestHostJoin", "--- PASS: TestRefusals", "--- PASS: TestKillLeavesNothing", "--- PASS: TestHostStacks", "--- PASS: TestHostScratch", "--- PASS: TestHostEvents",
		"--- PASS: TestProbePrograms", "--- PASS: TestProbeRefusals", "--- PASS: TestProbeNoPMU", "--- PASS: TestHostKprobes"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s: no %q:\n%s", kname, want, lastLines(out, 40))
		}
	}
	// The stacks and the JOIN are compared with the kernel's hist
	// triggers where it has them.
	for _, name := range []string{"TestStacksAgainstHist", "TestJoinAgainstHist", "TestProbesAgainstHist"} {
		if hist && !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("%s: no PASS of %s on a kernel with hist triggers", kname, name)
		}
	}
	// The probes' figures, for the log: how they were attached, what the
	// kernel's own triggers counted beside them.
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "kprobe_test.go") && (strings.Contains(l, "joined:") || strings.Contains(l, "median bucket") ||
			strings.Contains(l, "names:") || strings.Contains(l, "attached:") || strings.Contains(l, "calls")) {
			t.Logf("%s: %s", kname, strings.TrimSpace(l))
		}
	}
	rest := strings.NewReplacer("--- SKIP: TestStacksAgainstHist", "", "--- SKIP: TestJoinAgainstHist", "", "--- SKIP: TestProbesAgainstHist", "").Replace(out)
	if hist {
		rest = out
	}
	if k, err := vm.LookupKernel(kname); err == nil && k.Arch == "arm64" {
		// Debian's arm64 6.1 loads fentry/fexit programs and has no BPF
		// trampolines to attach them (the probes then go on the PMU,
		// checked beside): those rounds say so and skip.
		rest = strings.NewReplacer("--- SKIP: TestHostKprobes/fentry", "", "--- SKIP: TestProbesAgainstHist/fentry", "").Replace(rest)
	}
	if strings.Contains(rest, "--- SKIP") {
		t.Errorf("%s: a test skipped in the guest", kname)
	}
	return "verifier: every planned query, JOIN, stacks and probes against the hist triggers, kprobes counted, a SIGKILLed run (its probes too) left nothing"
}
