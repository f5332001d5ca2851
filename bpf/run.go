package bpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
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
	err := closeLinks(e.links)
	e.links = nil
	return errors.Join(err, e.closeProbes())
}

// closeProbes closes the probes' perf events: the kernel removes the
// probes with them.
func (e *Engine) closeProbes() error {
	var err error
	for _, fds := range e.probeFDs {
		for _, fd := range fds {
			err = errors.Join(err, closeFD(fd))
		}
	}
	e.probeFDs = nil
	return err
}

// closeLinks closes the links at once, each in its own goroutine: the
// kernel waits for a grace period as each perf event leaves its
// tracepoint (tracepoint_synchronize_unregister), 10–50 ms on a quiet
// machine and more under emulation, and closes made together share the
// waits where closes one after the other add them up.
func closeLinks(ls []link.Link) error {
	if len(ls) == 1 {
		return ls[0].Close()
	}
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Unwritten is the synthetic events' records the programs could not
// write so far (their perf ring was full: --events' reader lagged); Stop
// counts them among the run's lost events.
func (e *Engine) Unwritten() uint64 {
	if e.coll == nil {
		return 0
	}
	c, err := e.counters()
	if err != nil {
		return 0
	}
	return c.unwritten
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
