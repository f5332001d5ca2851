package nohugepages

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The package's init has run in this test binary: the kernel says the
// process has huge pages off, and a child it starts inherits that.
func TestDisabled(t *testing.T) {
	if !Disabled() {
		t.Fatal("PR_GET_THP_DISABLE says transparent huge pages are on for this process")
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	if !strings.Contains(string(status), "THP_enabled:") {
		return // before Linux 5.0 the status file does not say
	}
	if !strings.Contains(string(status), "THP_enabled:\t0\n") {
		t.Errorf("/proc/self/status does not say THP_enabled: 0:\n%s", status)
	}
	out, err := exec.Command("cat", "/proc/self/status").Output()
	if err != nil {
		t.Skipf("no cat to start: %v", err)
	}
	if !strings.Contains(string(out), "THP_enabled:\t0\n") {
		t.Errorf("a child's status does not say THP_enabled: 0:\n%s", out)
	}
}
