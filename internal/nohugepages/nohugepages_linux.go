package nohugepages

import "syscall"

// The prctl options, from linux/prctl.h (not in package syscall).
const (
	prSetTHPDisable = 41
	prGetTHPDisable = 42
)

func init() {
	// An old kernel (before 3.15) refuses the option: huge pages then
	// stay as they are, which is only a cost.
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetTHPDisable, 1, 0, 0, 0, 0)
}

// Disabled reports whether the process runs without transparent huge
// pages, as the kernel says.
func Disabled() bool {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prGetTHPDisable, 0, 0, 0, 0, 0)
	return errno == 0 && r == 1
}
