package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// builtSelected reports whether a test boots kernel k: every Debian image,
// and a built kernel only when SQLHIST_E2E_KERNELS names it or
// SQLHIST_E2E_BUILD=1 (a cold build takes many minutes).
func builtSelected(k Kernel, only map[string]bool) bool {
	return !k.Built() || only[k.Name] || os.Getenv("SQLHIST_E2E_BUILD") == "1"
}

// fetchForTest builds (or finds in the cache) a built kernel with room for
// a cold build, logging the build's progress.
func fetchForTest(t *testing.T, k Kernel) Kernel {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := Fetch(ctx, k)
	if err != nil {
		t.Fatalf("INFRASTRUCTURE (not a test verdict): %v", err)
	}
	t.Logf("%s: %s %s, release %s, key %s (make bzImage took %s), Fetch took %v",
		k.Name, got.Package, got.Version, got.Release, got.BuildKey, got.BuildTime, time.Since(start).Round(time.Millisecond))
	return got
}

// builtBootconfig turns on an initcall event and a hist trigger on it at
// boot, and leaves a key of its own in /proc/bootconfig.
const builtBootconfig = `sqlhist.test = "boot"
ftrace.event.initcall.initcall_finish {
	enable
	actions = "hist:keys=ret"
}
`

// builtScript checks what the boot-time and hist tests need of a built
// kernel, and that busybox applets and a static Go program find the
// system calls they use (a missing one leaves a message in dmesg, e.g.
// "attempted a POSIX timer syscall while CONFIG_POSIX_TIMERS is not set").
const builtScript = `T=$TRACEFS
ifconfig lo 127.0.0.1 up
echo "@@release $(uname -r)"
grep -q " $T tracefs " /proc/mounts && echo "@@tracefs"
grep -q 'hist:keys' $T/README && echo "@@readme hist:keys"
grep -q 'trace(<synthetic_event>' $T/README && echo "@@readme trace(<synthetic_event>"
for e in initcall/initcall_start initcall/initcall_finish sched/sched_waking sched/sched_switch syscalls/sys_enter_openat syscalls/sys_exit_openat; do
	[ -f $T/events/$e/format ] && echo "@@event $e"
done
[ -f $T/error_log ] && echo "@@error_log"
grep -q 'sqlhist.test = "boot"' /proc/bootconfig && echo "@@bootconfig"
grep -q ' bootconfig' /proc/cmdline && echo "@@cmdline"
# 1, or 1* where a trigger holds the event in soft mode (5.10).
echo "@@boot enable $(cut -c1 $T/events/initcall/initcall_finish/enable)"
n=$(grep -c ' initcall_finish: ' $T/trace); [ "$n" -gt 0 ] && echo "@@boot events"
grep -q 'Hits: [1-9]' $T/events/initcall/initcall_finish/hist && echo "@@boot hist"
echo 0 > $T/events/initcall/initcall_finish/enable
echo > $T/trace

# kprobe and kretprobe on a common function.
echo 'p:sqlhist_kp do_sys_openat2 dfd=$arg1' >> $T/kprobe_events && echo "@@kprobe"
echo 'r:sqlhist_kr do_sys_openat2 ret=$retval' >> $T/kprobe_events && echo "@@kretprobe"
echo 1 > $T/events/kprobes/enable
cat /proc/version /etc/hostname > /dev/null 2>&1
echo 0 > $T/events/kprobes/enable
grep -q ' sqlhist_kp: ' $T/trace && grep -q ' sqlhist_kr: ' $T/trace && echo "@@probes fired"
echo '-:sqlhist_kp' >> $T/kprobe_events && echo '-:sqlhist_kr' >> $T/kprobe_events && echo "@@probes removed"
echo > $T/trace

# The wakeup-latency JOIN: a synthetic event fired from hist triggers.
echo 's:sqlhist_wl pid_t pid; u64 lat' >> $T/dynamic_events && echo "@@synthetic"
echo 'hist:keys=pid:wl_ts=common_timestamp.usecs' >> $T/events/sched/sched_waking/trigger &&
echo 'hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts:onmatch(sched.sched_waking).trace(sqlhist_wl,next_pid,$wl_lat)' >> $T/events/sched/sched_switch/trigger && echo "@@triggers"
echo 1 > $T/events/synthetic/sqlhist_wl/enable
i=0; while [ $i -lt 20 ]; do sleep 0.01; i=$((i + 1)); done
echo 0 > $T/events/synthetic/sqlhist_wl/enable
grep -q ' sqlhist_wl: pid=[0-9]* lat=[0-9]' $T/trace && echo "@@join fired"
echo '!hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts:onmatch(sched.sched_waking).trace(sqlhist_wl,next_pid,$wl_lat)' >> $T/events/sched/sched_switch/trigger &&
echo '!hist:keys=pid:wl_ts=common_timestamp.usecs' >> $T/events/sched/sched_waking/trigger &&
echo '-:sqlhist_wl' >> $T/dynamic_events && echo "@@join removed"
grep -q . $T/error_log && { echo "@@error_log not empty"; cat $T/error_log; }

# Busybox workloads.
ping -c 1 -W 5 127.0.0.1 > /dev/null && echo "@@ping"
timeout 1 sleep 5; [ $? -ne 0 ] && echo "@@timeout"
sleep 0.05 && echo "@@sleep"
( sleep 10 ) & p=$!; kill $p; wait $p; [ $? -ne 0 ] && echo "@@kill"
dd if=/proc/version of=/dev/null bs=32 2>/dev/null && echo "@@dd"
i=0; while [ $i -lt 20 ]; do ls / /proc/self > /dev/null; cat /proc/uptime > /dev/null; i=$((i + 1)); done; echo "@@loop"
/work/goprobe
echo "@@goprobe $?"
dmesg | grep -E 'CONFIG_|is not set|attempted .* syscall' | sed 's/^/@@dmesg /'
echo "@@done"
`

// TestBuiltKernels builds (or finds in the cache) each built kernel and
// boots it with "bootconfig" on its command line and a bootconfig
// appended to its initrd by the Initrd hook. It runs with SQLHIST_E2E=1
// and SQLHIST_E2E_BUILD=1, or with the kernels named in
// SQLHIST_E2E_KERNELS.
func TestBuiltKernels(t *testing.T) {
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 (and SQLHIST_E2E_BUILD=1) to build and boot kernels")
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
	probe := filepath.Join(t.TempDir(), "goprobe")
	build := exec.Command("go", "build", "-o", probe, "./testdata/goprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building goprobe: %v\n%s", err, out)
	}
	probeBin, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, k := range Kernels {
		if !k.Built() || !builtSelected(k, only) || len(only) > 0 && !only[k.Name] {
			continue
		}
		ran++
		t.Run(k.Name, func(t *testing.T) {
			k := fetchForTest(t, k)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			hooked := false
			res, err := RunRetry(ctx, k, Guest{
				Script:         builtScript,
				Files:          []File{{Path: "/work/goprobe", Mode: 0o755, Data: probeBin}},
				CombinedOutput: true,
				Timeout:        4 * time.Minute,
				Cmdline:        "bootconfig",
				Initrd: func(path string) error {
					hooked = true
					return AppendBootconfig(path, builtBootconfig)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !hooked {
				t.Error("the Initrd hook was not called")
			}
			t.Logf("%s (%s): boot %v, total %v", k.Name, res.Kernel.Release, res.BootTime.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
			out := res.Stdout
			want := []string{"@@release " + res.Kernel.Release, "@@tracefs", "@@readme hist:keys", "@@readme trace(<synthetic_event>"}
			for _, e := range []string{"initcall/initcall_start", "initcall/initcall_finish", "sched/sched_waking", "sched/sched_switch",
				"syscalls/sys_enter_openat", "syscalls/sys_exit_openat"} {
				want = append(want, "@@event "+e)
			}
			want = append(want, "@@error_log", "@@bootconfig", "@@cmdline", "@@boot enable 1", "@@boot events", "@@boot hist",
				"@@kprobe", "@@kretprobe", "@@probes fired", "@@probes removed",
				"@@synthetic", "@@triggers", "@@join fired", "@@join removed",
				"@@ping", "@@timeout", "@@sleep", "@@kill", "@@dd", "@@loop", "@@goprobe 0", "@@done")
			for _, w := range want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("%s: no %q", k.Name, w)
				}
			}
			for _, bad := range regexp.MustCompile(`(?m)^(@@error_log not empty|@@dmesg .*|goprobe: .*FAILED.*)$`).FindAllString(out, -1) {
				t.Errorf("%s: %s", k.Name, bad)
			}
			if t.Failed() {
				t.Logf("guest output:\n%s", out)
			}
		})
	}
	if ran == 0 {
		t.Skip("no built kernel selected (SQLHIST_E2E_BUILD=1, or SQLHIST_E2E_KERNELS=6.1-boot,5.10-hist)")
	}
}
