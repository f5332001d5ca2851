package bpf

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/cilium/ebpf"
)

// TracepointPrograms names, as "id N (name)", the BPF programs of the
// classic tracepoint type (BPF_PROG_TYPE_TRACEPOINT) loaded in the kernel
// now that may be attached to one of the tracepoints named (their names
// without the system: "sched_switch"). Such a program runs in a
// tracepoint's perf handler before any perf event of the tracepoint
// records: where it returns 0 the kernel records nothing for any of them,
// and while one is attached the record perf events get starts with a
// pointer where the event's common fields were
// (perf_trace_run_bpf_submit).
//
// A program is left out only when the kernel names where each of its
// attachments is: every one a perf event link whose tracepoint the link's
// info names (Linux 6.6), none of them one of these. One attached through
// the perf event's ioctl has no link, and before 6.6 a link does not say
// its tracepoint: those are named. A kernel without the bpf() system call
// has none; any other failure to list them is returned.
func TracepointPrograms(tracepoints []string) ([]string, error) {
	progs := map[ebpf.ProgramID]string{}
	var order []ebpf.ProgramID
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing the kernel's BPF programs: %v", err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(next)
		if err != nil {
			continue // unloaded since
		}
		info, err := p.Info()
		p.Close()
		if err != nil || info.Type != ebpf.TracePoint {
			continue
		}
		name := fmt.Sprintf("id %d", next)
		if info.Name != "" {
			name += " (" + info.Name + ")"
		}
		progs[next] = name
		order = append(order, next)
	}
	if len(progs) == 0 {
		return nil, nil
	}
	named, unnamed, listed := linkedTracepoints(progs)
	var out []string
	for _, p := range order {
		elsewhere := listed && !unnamed[p] && len(named[p]) > 0 &&
			!slices.ContainsFunc(named[p], func(tp string) bool { return slices.Contains(tracepoints, tp) })
		if !elsewhere {
			out = append(out, progs[p])
		}
	}
	return out, nil
}
