//go:build !linux

package bpf

// liftMemlock does nothing off Linux: there is no bpf() to charge.
func liftMemlock() {}
