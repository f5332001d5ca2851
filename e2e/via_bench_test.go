package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// TestViaBench measures --via (make bench-via; figures, not assertions
// on time): in one 6.1 guest that has sqlhist inside and a shell on a
// second line, the wakeup JOIN's -r -d 5 run in the guest against the same
// run from this machine through the line (wall time, bytes each way,
// requests), three rounds each; then SQLHIST_VIA_FLEET guests (default 8)
// at once: -r -d 5 of a system call count on one of them, then on all of
// them as a fleet.
func TestViaBench(t *testing.T) {
	if os.Getenv("SQLHIST_VIA_BENCH") == "" {
		t.Skip("set SQLHIST_VIA_BENCH=1 (make bench-via)")
	}
	needKernels(t)
	kname := envOr("SQLHIST_KERNELS", "6.1")
	k, err := vm.LookupKernel(kname)
	if err != nil {
		t.Fatal(err)
	}
	bin := hostSqlhist(t)
	sockcat(t)
	guestBin := buildStatic(t, k.DebArch())
	g, err := vm.StartVia(t.Context(), mustFetch(t, k), vm.Guest{CPUs: guestCPUs(), CombinedOutput: true,
		Files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: guestBin}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	via := viaCommandOf(g)
	shell := func(script string) string {
		out, err := viaSession(via, script, 3*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	shell(`( while :; do sleep 0.01; cat /proc/version > /dev/null; ls /proc > /dev/null; done ) </dev/null >/dev/null 2>&1 &`)
	q := viaSQL.join
	var lines []string
	for round := 1; round <= 3; round++ {
		// In the guest: its own clock, around the run.
		out := shell(`read a b < /proc/uptime; /work/sqlhist -r -d 5 -o json "` + q + `" > /tmp/o 2>/tmp/e; c=$?; read z b < /proc/uptime; echo "$a $z $c $(wc -c < /tmp/o)"`)
		f := strings.Fields(out)
		if len(f) != 4 || f[2] != "0" {
			t.Fatalf("the run in the guest: %q", out)
		}
		a, _ := strconv.ParseFloat(f[0], 64)
		z, _ := strconv.ParseFloat(f[1], 64)
		trace := filepath.Join(t.TempDir(), "trace")
		start := time.Now()
		vout, verr, code := sqlhistRun(bin, "--via", via, "--via-trace", trace, "-r", "-d", "5", "-o", "json", q)
		took := time.Since(start)
		if code != 0 {
			t.Fatalf("the run through --via: exit %d: %s", code, verr)
		}
		tr, _ := os.ReadFile(trace)
		m := regexp.MustCompile(`totals: (\d+) requests, (\d+) bytes sent, (\d+) bytes received`).FindStringSubmatch(string(tr))
		if m == nil {
			t.Fatalf("no totals in the trace:\n%s", lastLinesOf(string(tr), 3))
		}
		lines = append(lines, fmt.Sprintf("via-bench %s round %d: -r -d 5 in the guest %.2f s (%s bytes of JSON); through --via %.2f s, %s requests, %s bytes sent, %s bytes received (%d bytes of JSON)",
			kname, round, z-a, f[3], took.Seconds(), m[1], m[2], m[3], len(vout)))
	}
	fleet := 8
	if n, err := strconv.Atoi(os.Getenv("SQLHIST_VIA_FLEET")); err == nil && n > 0 {
		fleet = n
	}
	vias := []string{via}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 1; i < fleet; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := vm.StartVia(t.Context(), mustFetch(t, k), vm.Guest{CPUs: 1, CombinedOutput: true})
			if err != nil {
				t.Errorf("guest %d: %v", i, err)
				return
			}
			t.Cleanup(func() { g.Stop() })
			mu.Lock()
			vias = append(vias, viaCommandOf(g))
			mu.Unlock()
		}()
	}
	wg.Wait()
	one := time.Now()
	if _, errs, code := sqlhistRun(bin, "--via", vias[1], "-r", "-d", "5", "-o", "json", viaSQL.calls); code != 0 {
		t.Fatalf("one target: %s", errs)
	}
	oneTook := time.Since(one)
	args := []string{"-r", "-d", "5", "-o", "json", viaSQL.calls}
	for _, v := range vias {
		args = append(args, "--via", v)
	}
	all := time.Now()
	if _, errs, code := sqlhistRun(bin, args...); code != 0 {
		t.Fatalf("the fleet: %s", errs)
	}
	lines = append(lines, fmt.Sprintf("via-bench fleet: -r -d 5 on one target %.2f s, on %d targets at once %.2f s", oneTook.Seconds(), len(vias), time.Since(all).Seconds()))
	t.Log("\n" + strings.Join(lines, "\n"))
	fmt.Println(strings.Join(lines, "\n"))
}

func mustFetch(t *testing.T, k vm.Kernel) vm.Kernel {
	k, err := vm.Fetch(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
