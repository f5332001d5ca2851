//go:build !linux

package bpf

import "errors"

// attachProbe needs Linux's perf_event_open: elsewhere sqlhist prints and
// plans, and the BPF engine loads nothing.
func attachProbe(pi *probeInfo, prog int) ([]int, error) {
	return nil, errors.New("probes are attached through Linux's perf_event_open: not on this system")
}
