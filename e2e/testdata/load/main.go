// Command load is the fixed workload of the kernel cost benchmark: a
// number of system calls, then a number of wakeups (a ping-pong over two
// pipes with a child process, each message waking the other side). It
// prints the nanoseconds each part took.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		child()
		return
	}
	calls, wakeups := 200000, 5000
	if len(os.Args) > 2 {
		calls, _ = strconv.Atoi(os.Args[1])
		wakeups, _ = strconv.Atoi(os.Args[2])
	}
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		syscall.Getppid()
	}
	t1 := time.Now()
	// The pipes are plain blocking file descriptors (not the runtime's
	// poller), closed on exec but for the two the child gets: every
	// read sleeps in the kernel until the other side writes.
	var ab, ba [2]int
	if err := syscall.Pipe2(ab[:], syscall.O_CLOEXEC); err != nil {
		panic(err)
	}
	if err := syscall.Pipe2(ba[:], syscall.O_CLOEXEC); err != nil {
		panic(err)
	}
	cmd := exec.Command("/proc/self/exe", "child")
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(ab[0]), "ab"), os.NewFile(uintptr(ba[1]), "ba")}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	buf := []byte{0}
	t2 := time.Now()
	for i := 0; i < wakeups; i++ {
		syscall.Write(ab[1], buf)
		syscall.Read(ba[0], buf)
	}
	t3 := time.Now()
	syscall.Close(ab[1])
	cmd.Wait()
	fmt.Printf("syscalls %d %d wakeups %d %d\n", calls, t1.Sub(t0).Nanoseconds(), wakeups, t3.Sub(t2).Nanoseconds())
}

// child echoes every byte back until the pipe closes.
func child() {
	buf := []byte{0}
	for {
		n, _ := syscall.Read(3, buf)
		if n <= 0 {
			return
		}
		syscall.Write(4, buf)
	}
}
