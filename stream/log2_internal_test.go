package stream

import "testing"

// TestLog2Bucket: the kernel's .log2 (ilog2(roundup_pow_of_two(v)), 0
// for 0 and 1) at and around every power of two, against the doubling
// it is defined by.
func TestLog2Bucket(t *testing.T) {
	slow := func(v uint64) uint64 {
		n := uint64(0)
		for p := uint64(1); p < v && n < 64; p <<= 1 {
			n++
		}
		return n
	}
	check := func(v uint64) {
		if got, want := log2Bucket(v), slow(v); got != want {
			t.Errorf("log2Bucket(%d) = %d, want %d", v, got, want)
		}
	}
	for v := uint64(0); v < 5000; v++ {
		check(v)
	}
	for e := 2; e < 64; e++ {
		p := uint64(1) << e
		check(p - 1)
		check(p)
		check(p + 1)
	}
	check(^uint64(0))
	check(1<<63 + 12345)
}
