package main

import (
	"io/fs"
	"strings"
	"testing"
)

// Printing with no readable tracefs and no --kernel or --formats says on
// stderr which embedded catalog it compiled for, and the script's first
// line names it; with --kernel nothing is said.
func TestDefaultCatalogIsNamed(t *testing.T) {
	e, stdout, stderr := testEnv(nil, "")
	e.Dir = func(string) (fs.FS, error) { return nil, fs.ErrNotExist }
	if code := run([]string{"SELECT common_pid, COUNT(*) FROM sched_switch"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "sqlhist: no tracefs at /sys/kernel/tracing (not mounted there): compiling for the embedded catalog of Linux ") ||
		!strings.Contains(stderr.String(), "--kernel VERSION") {
		t.Errorf("stderr does not name the catalog: %q", stderr)
	}
	if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.HasPrefix(first, "# sqlhist: compiled for Linux ") || !strings.HasSuffix(first, "(event formats: embedded (default))") {
		t.Errorf("first line %q", first)
	}
	e, _, stderr = testEnv(nil, "")
	e.Dir = func(string) (fs.FS, error) { return nil, fs.ErrNotExist }
	if code := run([]string{"--kernel", "6.1", "SELECT common_pid, COUNT(*) FROM sched_switch"}, e); code != exitOK || stderr.Len() != 0 {
		t.Errorf("--kernel 6.1: exit %d, stderr %q", code, stderr)
	}
}

// --via to a target without a readable tracefs refuses to print (it
// used to list or compile against the embedded catalog in silence), and
// says how to print without it.
func TestViaRefusesNoTracefs(t *testing.T) {
	e, stdout, stderr := viaEnvFor(t)
	missing := t.TempDir() + "/no-tracefs"
	code := run([]string{"--via", "dash", "-t", missing, "--list-events", "sched_sw*"}, e)
	if code != exitQuery || stdout.Len() != 0 || !strings.Contains(stderr.String(), "on the target (--via dash): no tracefs at "+missing+": it is not mounted") ||
		!strings.Contains(stderr.String(), "hint: to print without the target's tracefs, name its kernel with --kernel VERSION") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
