package cli

import (
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// StartCPUProfile writes a CPU profile of this process to the file
// SQLHIST_CPUPROFILE names (read with getenv), at 1000 samples a second (make bench-kernel's
// SQLHIST_COST_PROFILE: a stream run in the guest takes a few hundred ms
// of CPU); the function returned ends it.
func StartCPUProfile(getenv func(string) string) func() {
	path := getenv("SQLHIST_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	runtime.SetCPUProfileRate(1000)
	// StartCPUProfile then complains on stderr that the rate is set
	// already: not on the stderr of the run.
	saved, _ := syscall.Dup(2)
	if null, err := syscall.Open("/dev/null", syscall.O_WRONLY, 0); err == nil {
		syscall.Dup3(null, 2, 0)
		syscall.Close(null)
	}
	err = pprof.StartCPUProfile(f)
	syscall.Dup3(saved, 2, 0)
	syscall.Close(saved)
	if err != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
