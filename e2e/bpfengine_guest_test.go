package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// bpfEngineScript runs package bpf's tests in the guest, as root, with
// tracefs mounted by /init: the sample programs and every planned query
// of testdata/queries through the guest kernel's verifier, and the
// wakeup JOIN and syscall count attached to its tracepoints.
const bpfEngineScript = `mkdir -p /work/bpf && cd /work/bpf
echo "@@memlock $(ulimit -l)"
/work/bpf.test -test.v -test.count=1 -test.run 'TestVerifier|TestQueries|TestHostJoin|TestRefusals|TestKillLeavesNothing|TestHostStacks|TestStacksAgainstHist|TestJoinAgainstHist|TestHostScratch|TestHostEvents' 2>&1
echo "@@exit $?"
`

// TestBPFEngineGuest boots x86-64 and arm64 kernels with BPF
// (SQLHIST_KERNELS narrows; default 5.10 (bullseye's, no hist triggers)
// and 6.1) and runs
// the BPF engine's tests there: the programs through the kernel's own
// verifier, and the wakeup JOIN on its own tracepoints.
func TestBPFEngineGuest(t *testing.T) {
	needKernels(t)
	dir := t.TempDir()
	bins := map[string][]byte{}
	binary := func(t *testing.T, goarch string) []byte {
		t.Helper()
		if b, ok := bins[goarch]; ok {
			return b
		}
		bin := filepath.Join(dir, "bpf.test."+goarch)
		cmd := exec.Command("go", "test", "-c", "-vet=off", "-o", bin, "../bpf")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the bpf tests for %s: %v\n%s", goarch, err, out)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bins[goarch] = data
		return data
	}
	var files []vm.File
	queries, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(queries) == 0 {
		t.Fatalf("no queries: %v", err)
	}
	for _, q := range queries {
		b, err := os.ReadFile(q)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, vm.File{Path: "/work/testdata/queries/" + filepath.Base(q), Data: b})
	}
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "5.10,6.1"), ",") {
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
			t.Logf("%s: %s is not built for; skipped", kname, k.Arch)
			continue
		}
		t.Run(kname, func(t *testing.T) {
			fs := append([]vm.File{{Path: "/work/bpf.test", Mode: 0o755, Data: binary(t, goarch)}}, files...)
			res := boot(t, kname, vm.Guest{Script: bpfEngineScript, Files: fs, CombinedOutput: true, Timeout: 10 * time.Minute})
			out := res.Stdout
			t.Logf("%s", out)
			wantLines(t, out, "@@exit 0")
			for _, want := range []string{"--- PASS: TestVerifier", "--- PASS: TestQueries", "--- PASS: TestHostJoin", "--- PASS: TestRefusals", "--- PASS: TestKillLeavesNothing", "--- PASS: TestHostStacks", "--- PASS: TestHostScratch", "--- PASS: TestHostEvents"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q", want)
				}
			}
			// The stacks are compared with the kernel's hist triggers
			// where it has them.
			for _, name := range []string{"TestStacksAgainstHist", "TestJoinAgainstHist"} {
				if k.HistTriggers && !strings.Contains(out, "--- PASS: "+name) {
					t.Errorf("no PASS of %s on a kernel with hist triggers", name)
				}
			}
			rest := strings.NewReplacer("--- SKIP: TestStacksAgainstHist", "", "--- SKIP: TestJoinAgainstHist", "").Replace(out)
			if k.HistTriggers {
				rest = out
			}
			if strings.Contains(rest, "--- SKIP") {
				t.Errorf("a test skipped in the guest")
			}
		})
	}
}
