package bpf

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attachProbe opens the probe's perf event through the PMU (all
// processes, every CPU: a probe's program runs wherever the function
// runs) and attaches the program fd to it; the probe lives as long as
// the returned file descriptors: the perf event's, then, where the
// kernel has them (Linux 5.15), the BPF link's that attaches the program
// (elsewhere the program is set on the event itself).
func attachProbe(pi *probeInfo, prog int) ([]int, error) {
	kind, target := "kprobe", pi.p.Symbol
	if pi.p.Module != "" {
		target = pi.p.Module + ":" + target
	}
	if pi.user() {
		kind, target = "uprobe", pi.p.Path
	}
	typ, config, err := pmu(kind, pi.p.Return)
	if err != nil {
		return nil, err
	}
	name, err := unix.BytePtrFromString(target)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{Type: typ, Size: unix.PERF_ATTR_SIZE_VER1, Config: config,
		Ext1: uint64(uintptr(unsafe.Pointer(name))), Ext2: pi.p.Offset}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	runtime.KeepAlive(name)
	if err != nil {
		what := target
		if pi.user() {
			what = fmt.Sprintf("%s at file offset 0x%x", target, pi.p.Offset)
		} else if pi.p.Offset != 0 {
			what = fmt.Sprintf("%s+%d", target, pi.p.Offset)
		}
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL) && !pi.user():
			return nil, fmt.Errorf("the kernel has no function %s to probe (%v)", what, err)
		case errors.Is(err, unix.EILSEQ):
			return nil, fmt.Errorf("%s is not at an instruction's start (%v)", what, err)
		}
		return nil, fmt.Errorf("opening a perf %s on %s: %v", kind, what, err)
	}
	// A BPF link where the kernel makes one for a perf event: removing
	// the probe then costs the kernel a fifth less than removing one
	// whose event carries the program (6.1 under icount, a kprobe and a
	// kretprobe on one function: 4.06 against 5.06 ms of the process's
	// CPU, C or Go alike; docs/cost.md).
	lk, err := perfLink(prog, fd)
	if err != nil {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("attaching the program to the perf %s: %v", kind, err)
		}
	}
	fds := []int{fd}
	if lk >= 0 {
		fds = append(fds, lk)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("enabling the perf %s: %v", kind, err)
	}
	return fds, nil
}

// perfLink attaches prog to the perf event through a BPF link
// (BPF_LINK_CREATE, attach type BPF_PERF_EVENT): its fd, or -1 and the
// error where the kernel has no such links (before 5.15: EINVAL).
func perfLink(prog, perfFD int) (int, error) {
	const (
		bpfLinkCreate = 28 // BPF_LINK_CREATE
		bpfPerfEvent  = 41 // BPF_PERF_EVENT
	)
	// union bpf_attr's link_create: prog_fd, target_fd, attach_type,
	// flags, then fields this attach type leaves zero.
	var attr [16]uint32
	attr[0], attr[1], attr[2] = uint32(prog), uint32(perfFD), bpfPerfEvent
	fd, _, errno := unix.Syscall(unix.SYS_BPF, bpfLinkCreate, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
