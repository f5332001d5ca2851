package vm

import (
	"os"

	"github.com/sqlhist/sqlhist/emit"
)

// AppendBootconfig appends a bootconfig to the initrd file at path, in the
// layout the kernel reads back (emit.AttachBootconfig: the text, a NUL,
// padding to a multiple of 4 bytes, size and checksum, "#BOOTCONFIG\n"),
// for tests and tools that boot a hand-written bootconfig. The kernel
// reads it when its command line has "bootconfig".
func AppendBootconfig(path, text string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, emit.AttachBootconfig(data, text), 0o644)
}
