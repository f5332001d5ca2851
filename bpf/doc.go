// Package bpf is the BPF engine: it compiles the typed hist-trigger plan
// (the triggers the kernel's hist engine and the stream engine run) into
// BPF programs and maps, built in Go with cilium/ebpf's assembler (no
// LLVM, no BTF), loads them through the bpf() system call, attaches one
// program to each traced event's tracepoint or probe, and reads the maps
// back into the histograms a hist file gives ([tracefs.Histogram]), so
// that every reader of results works unchanged.
//
// A tracepoint program reads its event's record at the offsets of the
// event's format file: the same formats every other engine reads. Where
// the fields it reads are members of the tasks the tracepoint's
// arguments point to (pids and names of the scheduler's events), and
// the running kernel's BTF gives
// the members' offsets, it runs as a raw tracepoint program instead: no
// record is built for it, and its prologue copies just those fields
// into a record of the same layout on its frame (rawtp.go; cheaper by
// the record's cost, and Options.NoRaw forces the classic kind). The
// record's first 8 bytes are not readable (the kernel keeps a pointer
// there): common_pid comes from bpf_get_current_pid_tgid, the time from
// bpf_ktime_get_ns (CLOCK_MONOTONIC, where hist triggers read the ring
// buffer's clock), the CPU from bpf_get_smp_processor_id, the task name
// from bpf_get_current_comm; common_flags and common_preempt_count are
// refused. Loads are aligned to their size; a __data_loc string is read
// with bpf_probe_read_kernel_str from the record's address plus
// loc&0xffff.
//
// The semantics are the kernel's hist triggers, as package stream
// implements them: the triggers of an event run in the order written; a
// trigger's filter, then its key, then the other triggers' variables it
// reads (looked up by its key in their maps; all must be set, a variable
// read as an operand is cleared by the read, and the first one missing
// ends the trigger for that event), then its entry (a full map counts a
// drop and ends the trigger), its count, sums and variables, then its
// actions. onmatch(...).trace(synth, params) fires the synthetic event:
// its triggers run inline, in the same program, on a record built in the
// program's frame (the BPF stack, or a per-CPU scratch map when keys and
// records exceed its 512 bytes). A map never frees an entry; its size is
// size= rounded up to a power of two, as the kernel's tracing_map sizes
// it. Strings and stack traces in variables are bytes of the start's
// entry, read by the end through their address.
//
// Stack trace keys are the event's kernel stack (bpf_get_stack: 16
// return addresses, as the kernel's hist keys hold), read from the
// traced function on: the tracepoint's own frames some kernels put on
// top (6.1: __traceiter_sched_switch) are dropped when read, so the
// frames are the kernel's hist stacks' (checked on 6.1).
//
// The plan's kprobes, kretprobes, uprobes and uretprobes
// (Options.Probes) are attached without a probe event: a program of type
// kprobe on a perf event of the kernel's kprobe or uprobe PMU
// (perf_event_open with the PMU's type from
// /sys/bus/event_source/devices; the program attached through a BPF link,
// BPF_LINK_CREATE, where the kernel makes one for a perf event, else with
// PERF_EVENT_IOC_SET_BPF), a probe that lives as long as its file
// descriptors. Without the PMU (or its
// retprobe bit) the probe is refused before anything is attached:
// nothing is ever written to kprobe_events or uprobe_events
// (cilium/ebpf's link.Kprobe falls back to them, and is not called). The
// program first computes the probe's record, the fields of the probe
// event as the planner typed it (planner.ProbeFormat), from struct
// pt_regs and memory as the kernel's fetch arguments read them, for
// x86-64 and arm64 (probe.go): registers, $argN (the kernel's
// regs_get_kernel_argument), $retval, $stack, $stackN, $comm,
// immediates, dereferences (bpf_probe_read_kernel, or _user for a
// uprobe's memory and +u), strings (the _str variants; a kprobe's
// :string at a user address from user memory, as the kernel's), sizes
// and signedness of the probe types; the triggers then read it as a
// fired synthetic event's fields. A kprobe or kretprobe at a function's
// entry whose fetches are its arguments and return value, and whose
// triggers read no stack, runs as fentry/fexit instead (progDef.alt: the
// arguments read from the context's u64s, the return value after them,
// their count from the kernel's BTF) where the kernel loads and
// attaches those programs, else on the PMU (Options.NoFentry forces it).
//
// Refused, with the expression: stack traces of the record's own array
// fields, globs other than a prefix (text*), a snapshot, variables in
// keys, values or filters, string or stack values used as numbers;
// eprobes, a probe's arrays, @SYMBOL and @+FILE_OFFSET fetches, $argN in
// a return probe, __probe_ip/__probe_func/__probe_ret_ip, probes on
// other architectures than x86-64 and arm64 (Error.Probe names the
// probe).
//
// Everything the engine makes lives as file descriptors of the process
// (programs, maps, perf-event links, the probes' perf events): nothing
// is pinned and nothing is written to tracefs, so a process killed at
// any point leaves nothing behind. Attaching a tracepoint needs the
// event's id, which cilium/ebpf reads from tracefs (or debugfs): it must
// be mounted.
//
// A run uses it as it uses the stream engine: the plan's triggers in
// the order a run writes them (emit.RunCommands, as live's planHists),
// then
//
//	e, err := bpf.New(bpf.FromHists(hists), synths, format, bpf.Options{Syscall: …, Sym: …})
//	// a refusal is an *Error: hists[err.Trigger].Pos is where in the SQL
//	err = e.Start()           // load (verifier), attach
//	hs, err := e.ReadFiles()  // by Hist.HistFile(), as often as wanted
//	lost, err := e.Stop()     // close everything
//
// format reads the target's formats (events/<system>/<event>/format);
// the embedded catalogs serve for New alone (Check).
//
// Only the instructions every kernel from 5.10 on accepts are emitted:
// atomic adds (no compare-and-exchange, no fetch), no bpf_loop, no
// bounded loops, no sign-extending loads (the sign is extended with
// shifts).
package bpf
