package cli

import "runtime/debug"

// gcPercent is the garbage collector's target for sqlhist, unless GOGC
// says otherwise. A run allocates a few MB and ends: with Go's default
// (100, a first collection at a 4 MB heap) an -r of the wakeup JOIN
// collected once, while printing its table, and that collection's mark
// phase took 67 ms of a Debian 6.1 guest under qemu's emulation, where
// the two CPUs share one host thread. At 400 the first collection comes
// at 16 MB, and a long run's heap stays within five times what it holds.
const gcPercent = 400

// serveGCPercent is the collector's target while --metrics serves: a
// run that keeps going for hours is a server, and at 400 its resident
// memory kept growing for four minutes of the soak (make soak: 37 MB
// at one minute, 42 MB from 3.5 minutes in the guest, 40 to 53 MB
// through --via) before it stood still.
const serveGCPercent = 100

// TuneGC sets the collector's target to gcPercent (serveGCPercent when
// serving) when the environment (getenv) does not set GOGC.
func TuneGC(getenv func(string) string, serving bool) {
	if getenv("GOGC") != "" {
		return
	}
	if serving {
		debug.SetGCPercent(serveGCPercent)
		return
	}
	debug.SetGCPercent(gcPercent)
}
