// Command bpfempty attaches programs that do nothing to sched_waking and
// sched_switch, as classic tracepoint programs (tp: the kernel builds
// each event's record, then runs the program on it, as the BPF engine's
// programs are run) or as raw tracepoint programs (rawtp: the program is
// given the tracepoint's arguments, no record is built, as runqlat's
// tp_btf programs are), and sleeps in clock_nanosleep until a signal
// ends it. The cost benchmark (e2e/cost_test.go) runs the wakeup
// workload under each: the difference is what building the record costs
// a wakeup.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func init() { runtime.LockOSThread() } // main sleeps on the main thread

func main() {
	if len(os.Args) != 2 || os.Args[1] != "tp" && os.Args[1] != "rawtp" {
		fmt.Fprintln(os.Stderr, "usage: bpfempty tp|rawtp")
		os.Exit(2)
	}
	unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	typ := ebpf.TracePoint
	if os.Args[1] == "rawtp" {
		typ = ebpf.RawTracepoint
	}
	var links []link.Link
	for _, ev := range []string{"sched_waking", "sched_switch"} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "empty", Type: typ, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "bpfempty: loading: %v\n", err)
			os.Exit(1)
		}
		var l link.Link
		if typ == ebpf.TracePoint {
			l, err = link.Tracepoint("sched", ev, prog, nil)
		} else {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: ev, Program: prog})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bpfempty: attaching to %s: %v\n", ev, err)
			os.Exit(1)
		}
		links = append(links, l)
	}
	fmt.Printf("bpfempty: %s programs attached to sched_waking and sched_switch\n", os.Args[1])
	// SIGINT and SIGTERM end the process, the kernel closing the links
	// with it: handled, since a shell's background job starts with
	// SIGINT ignored.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGINT, unix.SIGTERM)
	go func() { <-sig; os.Exit(0) }()
	ts := unix.NsecToTimespec(int64(time.Hour))
	for {
		unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil)
	}
}
