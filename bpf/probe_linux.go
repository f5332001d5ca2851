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
// the returned file descriptor.
func attachProbe(pi *probeInfo, prog int) (int, error) {
	kind, target := "kprobe", pi.p.Symbol
	if pi.p.Module != "" {
		target = pi.p.Module + ":" + target
	}
	if pi.user() {
		kind, target = "uprobe", pi.p.Path
	}
	typ, config, err := pmu(kind, pi.p.Return)
	if err != nil {
		return -1, err
	}
	name, err := unix.BytePtrFromString(target)
	if err != nil {
		return -1, err
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
			return -1, fmt.Errorf("the kernel has no function %s to probe (%v)", what, err)
		case errors.Is(err, unix.EILSEQ):
			return -1, fmt.Errorf("%s is not at an instruction's start (%v)", what, err)
		}
		return -1, fmt.Errorf("opening a perf %s on %s: %v", kind, what, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("attaching the program to the perf %s: %v", kind, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("enabling the perf %s: %v", kind, err)
	}
	return fd, nil
}
