// Package fuzzguard gives fuzz targets the per-input time limit that Go's
// fuzzer lacks. Without one, an input that makes the code under test run
// for minutes looks like a quiet pass: the execs counter stops and the
// fuzz step still succeeds when its time is up.
package fuzzguard

import (
	"fmt"
	"runtime/debug"
	"time"
)

// Limit is the per-input bound the project's fuzz targets use: thousands
// of times the normal cost of compiling a query (tens to hundreds of
// microseconds), so a slow shared machine does not trip it, yet short
// enough that a stall is caught within one fuzz step.
const Limit = time.Second

// Run calls fn and, if fn has not returned within d, crashes the process
// with every goroutine's stack and the input quoted. A crash (not a test
// failure) is what stops a goroutine that never returns: the fuzzer
// records the input that crashed its worker under testdata/fuzz, and the
// stacks show where the time went.
func Run(d time.Duration, input string, fn func()) {
	t := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("fuzzguard: input still running after %v (a stall): %q", d, input))
	})
	defer t.Stop()
	fn()
}
