// Command demo is the binary the kernel suite's uprobe cases probe: a
// static Go program whose main.work the guest's workload calls with
// n = 10, 20, 30, 40, 50 (in register AX, Go's first integer argument, on
// x86-64). It also reads /etc/passwd: Go opens files with openat on every
// architecture, where busybox on 32-bit arm calls open, so the cases that
// trace sys_enter_openat see that file everywhere.
package main

import "os"

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	return s
}

func main() {
	t := 0
	for i := 1; i <= 5; i++ {
		t += work(i * 10)
	}
	if t != 2675 {
		panic("work is wrong")
	}
	os.ReadFile("/etc/passwd")
}
