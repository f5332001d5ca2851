//go:build !windows

package bpf

import (
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/sqlhist/sqlhist/stream"
)

// What the engine asks of the system where cilium/ebpf has it all (Linux;
// elsewhere the calls fail at run time, as bpf() does): the synthetic
// events' perf reader, the links of fentry/fexit programs and of
// tracepoints, closing a probe's perf event, an errno's name. Windows has
// none of them (os_windows.go).

// eventReader reads the synthetic events' perf buffer (--events).
type eventReader = perf.Reader

func newEventReader(m *ebpf.Map, size int) (*eventReader, error) { return perf.NewReader(m, size) }

// readEvents reads the synthetic events' records until the reader is
// closed, and gives each to OnSynth.
func (e *Engine) readEvents() {
	defer close(e.readDone)
	ev := &stream.Event{}
	for {
		rec, err := e.reader.Read()
		if err != nil {
			return // flushed (Stop: every record read) or closed
		}
		if rec.LostSamples > 0 {
			// The programs count each record the ring had no room
			// for (statsMap); the kernel's own count of them comes
			// only with a later record, if any.
			continue
		}
		if e.decodeEvent(rec.RawSample, ev) {
			e.opt.OnSynth(ev)
		}
	}
}

func attachTracing(p *ebpf.Program) (link.Link, error) {
	return link.AttachTracing(link.TracingOptions{Program: p})
}

func attachRawTracepoint(event string, p *ebpf.Program) (link.Link, error) {
	return link.AttachRawTracepoint(link.RawTracepointOptions{Name: event, Program: p})
}

func attachTracepoint(system, event string, p *ebpf.Program) (link.Link, error) {
	return link.Tracepoint(system, event, p, nil)
}

func closeFD(fd int) error { return unix.Close(fd) }

// errnoName is the errno's name ("E2BIG"), or "" for an unknown one.
func errnoName(code uint64) string { return unix.ErrnoName(syscall.Errno(code)) }
