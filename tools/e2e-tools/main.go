// Command e2e-tools installs the host tools the e2e harness needs
// (qemu-system-x86 and busybox-static) when they are missing.
package main

import (
	"fmt"
	"os"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func main() {
	if err := vm.EnsureHostTools(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-tools:", err)
		os.Exit(1)
	}
	bb, _ := vm.StaticBusybox()
	fmt.Println("e2e-tools: qemu-system-x86_64 and", bb, "are present")
}
