// Package stream is sqlhist's second engine: it computes a plan's hist
// triggers and synthetic events from a stream of trace events, for
// kernels that have tracefs, events and filters but no hist triggers
// (every RISC-V, MIPS and LoongArch kernel, and vendor kernels built
// without CONFIG_HIST_TRIGGERS).
//
// A [Machine] is built from the triggers a plan writes (planner.Hist and
// planner.Synth: the same specs the kernel would be given) and fed the
// events in timestamp order with [Machine.Feed]. It keeps each trigger's
// map as the kernel's tracing_map does: a JOIN's start trigger sets its
// variables in the entry of its key, the end trigger reads them once
// (a read clears them, so one end consumes one start), an onmatch action
// fires the synthetic event into the triggers on it at once, onmax and
// onchange track their value per entry, and a full map drops inserts and
// counts them. [Machine.Hist] prints a trigger's histogram in the
// kernel's hist file format, so that everything that reads hist files
// (tables, intervals, JSON, merges) reads the stream's answers unchanged.
//
// The package's API is not stable: it serves the sqlhist command.
package stream
