package nohugepages

import (
	"os"
	"os/exec"
	"strconv"
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

// A program built with LinkFlag marks its heap's mappings no-huge-page
// from the start (the runtime's disablethp), where one built without it
// marks fewer (the runtime marks some of its metadata itself): the flag still reaches the runtime with this toolchain
// and this module's go.mod.
func TestLinkFlag(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command: %v", err)
	}
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	dir := t.TempDir()
	count := func(flags ...string) int {
		bin := dir + "/probe"
		args := append(append([]string{"build"}, flags...), "-o", bin, "./testdata/probe")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "GODEBUG=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("%s printed %q", bin, out)
		}
		return n
	}
	with, without := count("-ldflags="+LinkFlag), count()
	if with <= without {
		t.Errorf("built with %s, %d mappings are marked nh; without it, %d: the flag does not reach the runtime", LinkFlag, with, without)
	}
	t.Logf("mappings marked nh: %d with the flag, %d without", with, without)
}

// make build passes LinkFlag: the Makefile's LDFLAGS is it, and the
// build line uses LDFLAGS.
func TestMakefileLinkFlag(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	if !strings.Contains(mk, "\nLDFLAGS ?= "+LinkFlag+"\n") {
		t.Errorf("the Makefile's LDFLAGS is not %s", LinkFlag)
	}
	if !strings.Contains(mk, "build -ldflags='$(LDFLAGS)' -o sqlhist ./cmd/sqlhist") {
		t.Error("make build does not pass LDFLAGS")
	}
}
