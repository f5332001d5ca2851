package bpf

import "github.com/cilium/ebpf"

// linkedTracepoints: no links are listed on Windows.
func linkedTracepoints(map[ebpf.ProgramID]string) (map[ebpf.ProgramID][]string, map[ebpf.ProgramID]bool, bool) {
	return nil, nil, false
}
