package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Supported says whether this machine loads tracepoint programs for this
// process: nil when it does, else why not (no bpf() system call, not
// permitted, a kernel without BPF_EVENTS).
func Supported() error {
	if err := features.HaveProgramType(ebpf.TracePoint); err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("this kernel loads no tracepoint programs: %v", err)
		}
		return fmt.Errorf("loading a BPF program: %v", err)
	}
	return nil
}

// Detach detaches the programs from their events and keeps the maps: what
// Read gives after it is final.
func (e *Engine) Detach() error {
	var err error
	for _, l := range e.links {
		err = errors.Join(err, l.Close())
	}
	e.links = nil
	return errors.Join(err, e.closeProbes())
}

// closeProbes closes the probes' perf events: the kernel removes the
// probes with them.
func (e *Engine) closeProbes() error {
	var err error
	for _, fd := range e.probeFDs {
		err = errors.Join(err, unix.Close(fd))
	}
	e.probeFDs = nil
	return err
}

// Skipped is the program runs the kernel skipped so far (another BPF
// program ran on the CPU), where the kernel counts them.
func (e *Engine) Skipped() uint64 {
	st, err := e.Stats()
	if err != nil {
		return 0
	}
	var n uint64
	for _, s := range st {
		n += s.RecursionMisses
	}
	return n
}
