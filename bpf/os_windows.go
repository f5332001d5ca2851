package bpf

import (
	"errors"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// On Windows sqlhist prints, plans and drives a target through --via; the
// BPF engine runs on Linux only. cilium/ebpf has no perf reader and no
// tracepoint links here: these stand in for os_unix.go's and fail.

var errNotHere = errors.New("the BPF engine runs on Linux: not on Windows")

// eventReader stands in for the perf reader; none is ever made.
type eventReader struct{}

func newEventReader(*ebpf.Map, int) (*eventReader, error) { return nil, errNotHere }

func (*eventReader) Flush() error { return errNotHere }
func (*eventReader) Close() error { return nil }

func (e *Engine) readEvents() { close(e.readDone) }

func attachTracing(*ebpf.Program) (link.Link, error) { return nil, errNotHere }

func attachRawTracepoint(string, *ebpf.Program) (link.Link, error) { return nil, errNotHere }

func attachTracepoint(string, string, *ebpf.Program) (link.Link, error) { return nil, errNotHere }

func closeFD(int) error { return errNotHere }

func errnoName(uint64) string { return "" }
