//go:build !linux

package live

// machine knows nothing off Linux: there is no tracefs to trace anyway.
func machine() (release, mach string) { return "", "" }

// isTracefs says whether dir is a mounted tracefs: never, off Linux.
func isTracefs(dir string) bool { return false }
