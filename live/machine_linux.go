package live

import "syscall"

// machine reads uname: the release and the machine of the running kernel.
func machine() (release, mach string) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "", ""
	}
	return cstring(u.Release[:]), cstring(u.Machine[:])
}

// cstring reads a NUL-terminated utsname field (int8 on some
// architectures, uint8 on others).
func cstring[T int8 | uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// isTracefs says whether dir is a mounted tracefs (or debugfs's tracing
// directory, where older systems mount it).
func isTracefs(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	const tracefsMagic, debugfsMagic = 0x74726163, 0x64626720
	return st.Type == tracefsMagic || st.Type == debugfsMagic
}
