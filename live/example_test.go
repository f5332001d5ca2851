package live_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

const wakeup = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`

// Compile a query against the event catalog of Debian's Linux 6.1 that
// sqlhist embeds, and print the script that sets it up.
func ExampleCompile() {
	fsys, _ := tracefs.Embedded("6.1")
	src := source.NewSource("wakeup.sql", wakeup)
	plan, diags := live.Compile(src, tracefs.Open(fsys), planner.Options{Name: "wakeup_lat"})
	if plan == nil {
		fmt.Print(diags.Render(src))
		return
	}
	emit.Print(os.Stdout, emit.Commands(plan, emit.Options{}), emit.PrintOptions{Root: "/sys/kernel/tracing"})
	// Output:
	// echo 's:wakeup_lat char comm[16]; u64 lat' >> /sys/kernel/tracing/dynamic_events
	// echo 'hist:keys=pid:wakeup_lat_ts_us=common_timestamp.usecs' >> /sys/kernel/tracing/events/sched/sched_waking/trigger
	// echo 'hist:keys=next_pid:wakeup_lat_lat=common_timestamp.usecs-$wakeup_lat_ts_us:onmatch(sched.sched_waking).trace(wakeup_lat,next_comm,$wakeup_lat_lat)' >> /sys/kernel/tracing/events/sched/sched_switch/trigger
}

// A diagnostic is positioned in the SQL and rendered with the line and a
// caret.
func ExampleCompile_error() {
	fsys, _ := tracefs.Embedded("6.1")
	src := source.NewSource("q.sql", "SELECT next_comm, prev_pidd FROM sched_switch")
	_, diags := live.Compile(src, tracefs.Open(fsys), planner.Options{})
	fmt.Print(diags.Render(src))
	// Output:
	// q.sql:1:19: unknown field "prev_pidd" in event sched/sched_switch; did you mean "prev_pid"?
	//   1 | SELECT next_comm, prev_pidd FROM sched_switch
	//     |                   ^~~~~~~~~
}

// Run a query for a while and read its rows. Here the tracefs is a fake
// that holds what a kernel would have counted; on a machine it is
// live.Dir("/sys/kernel/tracing") (as root).
func ExampleRun() {
	t := newFake()
	t.Files["instances/sqlhist_7_own/events/synthetic/sched_waking_to_sched_switch_7/hist"] = wakeupHist
	target := &live.Target{Root: "/sys/kernel/tracing", FS: t, W: t}

	fsys, _ := tracefs.Embedded("6.1")
	src := source.NewSource("wakeup.sql", wakeup)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 7))
	if plan == nil {
		fmt.Print(diags.Render(src))
		return
	}
	rep, err := live.Run(context.Background(), target, plan, live.Options{Duration: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range rep.Results {
		fmt.Println(res.Title, "hits:", res.Totals().Hits)
		for _, row := range res.Rows {
			p50 := row.Percentile(50)
			fmt.Printf("%-12s %d events, avg %.1f µs, max %d, p50 ~%.0f in (%d, %d]\n", row.Cells[0].Text, row.Count, row.Avg(), row.Stats.Max, p50.Value, p50.Low, p50.High)
		}
	}
	fmt.Println(len(t.Writes), "writes, the last:", t.Writes[len(t.Writes)-1])
	// Output:
	// synthetic/sched_waking_to_sched_switch_7 hits: 6
	// sh           4 events, avg 34.0 µs, max 100, p50 ~12 in (8, 16]
	// kworker/0:1  2 events, avg 5.0 µs, max 5, p50 ~5 in (4, 5]
	// 17 writes, the last: rmdir: instances/sqlhist_7_own
}

// A refused write undoes the writes before it and says why, with the
// kernel's error_log entry, at the SQL that produced the command.
func ExampleApply() {
	t := newFake()
	t.Refuse = "onmatch"
	target := &live.Target{Root: "/sys/kernel/tracing", FS: t, W: t}

	fsys, _ := tracefs.Embedded("6.1")
	src := source.NewSource("wakeup.sql", wakeup)
	plan, _ := live.Compile(src, tracefs.Open(fsys), planner.Options{Name: "wakeup_lat"})
	err := live.Apply(target, emit.Commands(plan, emit.Options{}))

	var ae *live.ApplyError
	if errors.As(err, &ae) {
		fmt.Print(source.Diags{ae.Diag()}.Render(src))
	}
	fmt.Println("writes:")
	fmt.Println(t.String())
	// Output:
	// wakeup.sql:2:33: the kernel refused the end trigger on sched/sched_switch: Couldn't find field
	//   2 | FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
	//     |                                 ^~~~~~~~~~~~
	// hint: the kernel's error_log:
	//   hist:sched:sched_switch: error: Couldn't find field
	//     Command: hist:keys=next_pid:wakeup_lat_lat=common_timestamp.usecs-$wakeup_lat_ts_us:onmatch(sched.sched_waking).trace(wakeup_lat,next_comm,$wakeup_lat_lat)
	//                ^
	// writes:
	// dynamic_events: s:wakeup_lat char comm[16]; u64 lat
	// events/sched/sched_waking/trigger: hist:keys=pid:wakeup_lat_ts_us=common_timestamp.usecs
	// events/sched/sched_waking/trigger: !hist:keys=pid:wakeup_lat_ts_us=common_timestamp.usecs
	// dynamic_events: -:wakeup_lat
}
