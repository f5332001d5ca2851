package bpf

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
)

// TracepointPrograms names the BPF programs of the classic tracepoint
// type (BPF_PROG_TYPE_TRACEPOINT) loaded in the kernel now, as "id N
// (name)". Such a program runs in a tracepoint's perf handler before any
// perf event of the tracepoint records: where it returns 0 the kernel
// records nothing for any of them, and while one is attached the record
// perf events get starts with a pointer where the event's common fields
// were (perf_trace_run_bpf_submit). A kernel without the bpf() system
// call has none; any other failure to list them is returned.
func TracepointPrograms() ([]string, error) {
	var out []string
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return out, nil
		case errors.Is(err, syscall.ENOSYS), errors.Is(err, ebpf.ErrNotSupported):
			return nil, nil
		case err != nil:
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
		out = append(out, name)
	}
}
