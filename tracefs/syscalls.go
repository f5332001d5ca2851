package tracefs

import (
	"strconv"
	"strings"
)

// SyscallNamer returns the function that names a system call number as
// the kernel's .syscall hist modifier does ("sys_openat"), for the
// architecture arch (Arches' names). has reports whether the kernel has a
// syscalls event (events/syscalls/sys_enter_NAME): the kernel names a call
// from the metadata its events are made from, and a few calls are defined
// under another name than their number's ("newfstatat", "newuname"), so
// the name is the first of NAME and newNAME the kernel has. A number the
// kernel has no event for is "" (the kernel prints unknown_syscall).
//
// The architecture's table is read when the first number is named: most
// runs name none.
func SyscallNamer(arch string, has func(name string) bool) func(nr uint64) string {
	var table map[uint64][]string
	names := map[uint64]string{}
	return func(nr uint64) string {
		if n, ok := names[nr]; ok {
			return n
		}
		if table == nil {
			table = map[uint64][]string{}
			for _, l := range strings.Split(syscallNumbers[arch], "\n") {
				f := strings.Fields(l)
				if len(f) < 2 {
					continue
				}
				n, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					table[n] = f[1:]
				}
			}
		}
		name := ""
	find:
		for _, n := range table[nr] {
			for _, c := range []string{n, "new" + n} {
				if has(c) {
					name = "sys_" + c
					break find
				}
			}
		}
		names[nr] = name
		return name
	}
}
