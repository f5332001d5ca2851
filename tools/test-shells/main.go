// Command test-shells installs the shells emit's unit tests run printed
// scripts under (dash, mksh, busybox-static, bash), and the other programs
// of vm.TestShells (awks, chromium, prometheus), when one is missing,
// with apt-get as root or through passwordless sudo. make unit runs it
// first. When it cannot install them it fails under CI=true (where the
// tests would fail on the missing shell anyway) and otherwise only warns:
// the tests then skip those shells and say why.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func main() {
	if err := vm.EnsureTestShells(); err != nil {
		fmt.Fprintln(os.Stderr, "test-shells:", err)
		if os.Getenv("CI") == "true" {
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "test-shells: going on; TestScriptsUnderShells skips the missing shells")
		return
	}
	var bins []string
	for _, s := range vm.TestShells {
		bins = append(bins, s.Bin)
	}
	fmt.Println("test-shells:", strings.Join(bins, ", "), "are present")
}
