package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// bpfSmokeScript runs each tool briefly as one would by hand, with only
// what /init sets up (proc, sysfs, devtmpfs, tracefs; no debugfs, no
// bpffs, memlock at busybox's default): e2e/FINDINGS.md has what they need.
const bpfSmokeScript = `ls -l /sys/kernel/btf/vmlinux
echo "@@memlock $(ulimit -l)"
echo "@@pmus $(ls /sys/bus/event_source/devices | tr '\n' ' ')"
load() { ( for i in 1 2 3 4 5 6; do sleep 0.2; cat /proc/version > /dev/null; done ) & }
load; /usr/sbin/syscount -d 2; echo "@@syscount-exit $?"
load; /usr/sbin/runqlat 1 1; echo "@@runqlat-exit $?"
load; /usr/sbin/funclatency -d 2 do_sys_openat2; echo "@@funclatency-exit $?"
wait
`

// TestBPFToolsGuest boots 6.1 and 6.1-arm64 (SQLHIST_KERNELS narrows)
// with libbpf-tools and runs syscount, runqlat and funclatency by hand,
// then the suite's agreement phase alone (agreePhase): the quick way to
// work on it without the rest of a kernel's job.
func TestBPFToolsGuest(t *testing.T) {
	needKernels(t)
	for _, kname := range strings.Split(envOr("SQLHIST_KERNELS", "6.1,6.1-arm64"), ",") {
		if !agreeKernels[kname] {
			continue
		}
		t.Run(kname, func(t *testing.T) {
			smoke := phase{name: "smoke", script: bpfSmokeScript, timeout: time.Minute,
				check: func(t *testing.T, out string) string {
					wantLines(t, out, "@@syscount-exit 0", "@@runqlat-exit 0", "@@funclatency-exit 0")
					if !strings.Contains(out, "SYSCALL") || !strings.Contains(out, "usecs") || !strings.Contains(out, "nsec") {
						t.Errorf("a tool printed no table:\n%s", out)
					}
					t.Logf("%s", out)
					return ""
				}}
			phases := []phase{smoke, *agreePhase(t, kname)}
			files := mergeFiles(phases)
			var timeout time.Duration
			for _, p := range phases {
				files = append(files, vm.File{Path: "/work/phases/" + p.name + ".sh", Data: []byte(p.script)})
				timeout += p.timeout
			}
			res := boot(t, kname, vm.Guest{Script: phaseScript(phases), Files: files, CombinedOutput: true, Timeout: timeout})
			outs := splitPhases(res.Stdout)
			for _, p := range phases {
				t.Run(p.name, func(t *testing.T) {
					o := outs[p.name]
					if o == nil || !o.done {
						t.Fatalf("the phase did not finish:\n%s", lastLines(res.Stdout, 40))
					}
					t.Logf("guest time %v: %s", o.took.Round(100*time.Millisecond), p.check(t, o.out))
				})
			}
		})
	}
}
