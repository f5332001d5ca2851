//go:build !windows

package bpf

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// linkedTracepoints says where the kernel's links put the programs of
// progs: the tracepoints a perf event link names (named), the programs
// with a link that names none (unnamed), and whether every link was
// listed.
func linkedTracepoints(progs map[ebpf.ProgramID]string) (named map[ebpf.ProgramID][]string, unnamed map[ebpf.ProgramID]bool, listed bool) {
	named, unnamed = map[ebpf.ProgramID][]string{}, map[ebpf.ProgramID]bool{}
	it := new(link.Iterator)
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			continue
		}
		if _, ok := progs[info.Program]; !ok {
			continue
		}
		if pe := info.PerfEvent(); pe != nil && pe.Tracepoint() != nil && pe.Tracepoint().Tracepoint != "" {
			named[info.Program] = append(named[info.Program], pe.Tracepoint().Tracepoint)
		} else {
			unnamed[info.Program] = true
		}
	}
	it.Close()
	return named, unnamed, it.Err() == nil
}
