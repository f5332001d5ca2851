// Package execfile writes a file that a test then executes, without the
// race that makes exec fail with "text file busy" (ETXTBSY).
//
// A test process that writes an executable with os.WriteFile holds a
// writable descriptor to it for the length of the write. If another
// goroutine forks in that moment (to start qemu, a shell, anything), the
// child inherits the descriptor and keeps it until its own exec closes
// it (close-on-exec). An exec of the new file in that window fails with
// ETXTBSY: the kernel refuses to run a file open for writing. The suites
// start processes from many goroutines at once, so the window is hit
// now and then (a riscv64 stream job failed on it in CI).
//
// Write hands the writing to a child process (cat): the writable
// descriptor exists only in that child, which forks nothing, so no
// process of the test can inherit it.
package execfile

import (
	"bytes"
	"fmt"
	"os/exec"
)

// Write writes data to path, mode 0755, through a child process.
func Write(path string, data []byte) error {
	cmd := exec.Command("sh", "-c", `umask 022 && cat > "$1" && chmod 755 "$1"`, "sh", path)
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("writing %s: %v: %s", path, err, out)
	}
	return nil
}
