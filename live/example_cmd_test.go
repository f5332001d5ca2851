package live_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
)

// Print a query as sqlhist does: the catalog a Place chooses (here an embedded one), the compile, and the Script
// with its target line, the JOIN's fields and how to read the answer.
func ExampleNewScript() {
	p := live.Place{Root: "/sys/kernel/tracing", Kernel: "6.1"}
	cat, err := p.Catalog(live.Host{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	src := source.NewSource("wakeup.sql", wakeup)
	plan, diags := live.Compile(src, cat, planner.Options{Name: "wl"})
	if plan == nil {
		fmt.Print(diags.Render(src))
		return
	}
	s := live.NewScript(src, plan, cat, live.ScriptOptions{Root: p.Root, Catalog: p.CatalogName()})
	s.Write(os.Stdout)
	// Output:
	// # sqlhist: compiled for Linux 6.1.0-57-cloud-amd64 x86_64 (event formats: embedded --kernel 6.1)
	// # synthetic event wl: char comm[16], u64 lat (us)
	// echo 's:wl char comm[16]; u64 lat' >> /sys/kernel/tracing/dynamic_events
	// echo 'hist:keys=pid:wl_ts_us=common_timestamp.usecs' >> /sys/kernel/tracing/events/sched/sched_waking/trigger
	// echo 'hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_comm,$wl_lat)' >> /sys/kernel/tracing/events/sched/sched_switch/trigger
	// # to read what it measures, once applied:
	// # each wl event: echo 1 > '/sys/kernel/tracing/events/synthetic/wl/enable'; cat '/sys/kernel/tracing/trace'
}

// The --via commands of a fleet: those given, then a file's lines
// without comments; each target's work runs under RunFleet (not run
// here: it needs the targets).
func ExampleViaCommands() {
	cmds, err := live.ViaCommands([]string{"ssh root@board1"}, "# the lab\nssh root@board2\n\nadb shell su 0 sh\n")
	fmt.Println(strings.Join(cmds, " | "), err)
	_, err = live.ViaCommands([]string{"ssh root@board1", "ssh root@board1"}, "")
	fmt.Println(err)
	// Output:
	// ssh root@board1 | ssh root@board2 | adb shell su 0 sh <nil>
	// --via ssh root@board1: the same target twice
}
