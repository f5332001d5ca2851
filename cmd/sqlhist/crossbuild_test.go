package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBuildsElsewhere: sqlhist builds for Windows and macOS, where a user
// prints commands for a target, plans, reads saved results and drives a
// Linux target through --via (the engines that need a local kernel fail
// there at run time, with the reason). Windows lacks what Unix gives
// (process groups, kill(2), cilium/ebpf's perf reader and tracepoint
// links): live, live/remote and bpf keep those calls in files of their
// own (sys_unix.go, proc_unix.go, os_unix.go) with Windows' stand-ins
// beside them. The first build for a system compiles every package for
// it (about 40 s of two cores); later ones come from the build cache.
func TestBuildsElsewhere(t *testing.T) {
	for _, goos := range []string{"windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "sqlhist"), ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s go build: %v\n%s", goos, err, out)
			}
		})
	}
}
