package bpf

import "syscall"

// liftMemlock lifts RLIMIT_MEMLOCK, which kernels before 5.11 charge BPF
// maps and programs to (busybox's default is 64 KiB); where memory
// cgroups account for them it changes nothing. A failure (not permitted)
// is left to the load, whose error then says what was refused. Done here
// rather than with cilium/ebpf's rlimit package, whose init probes the
// kernel with a bpf() call in every process that links it, printing ones
// too.
func liftMemlock() {
	const rlimitMemlock = 8 // RLIMIT_MEMLOCK on every Linux architecture
	unlimited := &syscall.Rlimit{Cur: ^uint64(0), Max: ^uint64(0)}
	syscall.Setrlimit(rlimitMemlock, unlimited)
}
