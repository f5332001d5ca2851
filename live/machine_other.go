//go:build !linux

package live

// machine knows nothing off Linux: there is no tracefs to trace anyway.
func machine() (release, mach string) { return "", "" }
