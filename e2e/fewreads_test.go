package e2e

import (
	"strings"
	"testing"
)

// fewReadsApart tells a few events read far apart (a vCPU descheduled
// between the BPF program's read and the kernel's stamp) from a shift of
// every event, which the differential phase's mean bound alone cannot.
func TestFewReadsApart(t *testing.T) {
	// 2026-12-06, a fresh clone's 6.1 differential phase (the wakeup
	// latency histogram of the same window: 12 events moved a bucket
	// down on the BPF side).
	kern := map[int]uint64{5: 3, 6: 53, 7: 58, 8: 49, 9: 22, 10: 4, 11: 5, 12: 1, 13: 5, 15: 1}
	bpf := map[int]uint64{5: 15, 6: 56, 7: 51, 8: 47, 9: 17, 10: 4, 11: 4, 12: 1, 13: 5, 15: 1}
	if ok, how := fewReadsApart(kern, bpf); !ok {
		t.Errorf("the same window's wakeups: %s", how)
	}
	// Six of 201 events 2^5 longer on the kernel's side (milliseconds).
	far := map[int]uint64{}
	for e, c := range bpf {
		far[e] = c
	}
	far[6] -= 6
	far[11] += 6
	if ok, how := fewReadsApart(far, bpf); !ok {
		t.Errorf("six events of 201 far apart: %s", how)
	}
	// Every event a bucket longer: a clock's unit or a rule off by one.
	shifted := map[int]uint64{}
	for e, c := range bpf {
		shifted[e+1] = c
	}
	if ok, how := fewReadsApart(shifted, bpf); ok || !strings.Contains(how, "1.00 bucket steps") {
		t.Errorf("every event a bucket over passed: %s", how)
	}
	// A tenth of the events 2^5 longer (a pairing that takes a later
	// end): more than the few the host's scheduling moves.
	tenth := map[int]uint64{}
	for e, c := range bpf {
		tenth[e] = c
	}
	tenth[6] -= 20
	tenth[11] += 20
	if ok, how := fewReadsApart(tenth, bpf); ok {
		t.Errorf("a tenth two buckets over passed: %s", how)
	}
	if ok, _ := fewReadsApart(nil, bpf); ok {
		t.Error("no kernel distribution passed")
	}
}
