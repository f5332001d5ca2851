package vm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBoot really boots every kernel. It runs only with SQLHIST_E2E=1: the
// first run installs qemu-system-x86 and busybox-static if missing and
// downloads about 100 MB of kernel packages into ~/.cache/sqlhist/kernels.
// SQLHIST_E2E_KERNELS=6.1,6.12 limits the kernels. Built kernels (6.1-boot,
// 5.10-hist) boot only when named there or with SQLHIST_E2E_BUILD=1: a
// cold build takes many minutes.
func TestBoot(t *testing.T) {
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 to boot real kernels under qemu")
	}
	old := Logf
	Logf = t.Logf
	t.Cleanup(func() { Logf = old })
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("SQLHIST_E2E_KERNELS"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	for _, k := range Kernels {
		if len(only) > 0 && !only[k.Name] || !builtSelected(k, only) {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			if k.Built() {
				k = fetchForTest(t, k)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			g := Guest{
				Script: `uname -r
test -f $TRACEFS/README && echo tracefs-ok
cat /work/data.txt
cp /work/data.txt /tmp/out/copy.txt
echo to-stderr >&2
exit 7
`,
				Files:   []File{{Path: "/work/data.txt", Data: []byte("payload\n")}, {Path: "/tmp/out/.keep"}},
				Collect: []string{"/tmp/out"},
				Timeout: 3 * time.Minute,
			}
			g.Script = "mkdir -p /tmp/out\n" + g.Script
			res, err := RunRetry(ctx, k, g)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s (%s): boot %v", res.Kernel.Package, res.Kernel.Version, res.Kernel.Release, res.BootTime)
			want := res.Kernel.Release + "\ntracefs-ok\npayload\n"
			if res.Stdout != want {
				t.Errorf("stdout = %q, want %q", res.Stdout, want)
			}
			if res.Stderr != "to-stderr\n" {
				t.Errorf("stderr = %q", res.Stderr)
			}
			if res.ExitStatus != 7 {
				t.Errorf("exit status = %d, want 7", res.ExitStatus)
			}
			if string(res.Files["tmp/out/copy.txt"]) != "payload\n" {
				t.Errorf("files = %v", res.Files)
			}
		})
	}
}

// TestBootTimeout checks that a hung guest is an infrastructure error.
func TestBootTimeout(t *testing.T) {
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 to boot real kernels under qemu")
	}
	k, _ := LookupKernel("6.1")
	_, err := Run(context.Background(), k, Guest{Script: "sleep 1000", Timeout: 20 * time.Second})
	if !IsInfra(err) {
		t.Fatalf("hung guest: err = %v, want *InfraError", err)
	}
}
