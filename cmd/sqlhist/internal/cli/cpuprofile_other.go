//go:build !linux

package cli

// StartCPUProfile is a no-op here: profiles are written on Linux only.
func StartCPUProfile(getenv func(string) string) func() { return func() {} }
