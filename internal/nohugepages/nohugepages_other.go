//go:build !linux

package nohugepages

// Disabled reports whether the process runs without transparent huge
// pages: elsewhere than Linux the package changes nothing.
func Disabled() bool { return false }
