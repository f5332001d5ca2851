package main

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// noHistFS is the tracefs of a kernel built without CONFIG_HIST_TRIGGERS:
// the 6.1 catalog's events, without the catalog's VERSION, with a README that has no "hist:keys" (as on
// the 6.18 machines this project is built on).
type noHistFS struct{ base fs.FS }

func (f noHistFS) Open(name string) (fs.File, error) {
	if name == "VERSION" {
		return nil, fs.ErrNotExist // a catalog's, not a tracefs's
	}
	if name == "README" {
		readme := "tracing mini-HOWTO:\n\n  trigger\t\t- If set, a command to perform when event is hit\n"
		return fstest.MapFS{"README": &fstest.MapFile{Data: []byte(readme)}}.Open(name)
	}
	return f.base.Open(name)
}

// TestNoHistTriggersSaysHowToPrintElsewhere: printing on a machine whose
// kernel has no hist triggers, with no flag choosing the catalog, is
// refused (the machine's tracefs is the catalog) with a hint naming
// --kernel and its versions and --formats. With -e the hint is left out:
// the machine's kernel is the target then.
func TestNoHistTriggersSaysHowToPrintElsewhere(t *testing.T) {
	base, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	saved := live.Machine
	live.Machine = func() (string, string) { return "6.18.44-test", "x86_64" }
	defer func() { live.Machine = saved }()
	const root = "/sys/kernel/tracing"
	mounts := "tracefs " + root + " tracefs rw,nosuid,nodev,noexec,relatime 0 0\n"
	refusal := `sqlhist: the kernel behind this catalog has no hist triggers: it was built without CONFIG_HIST_TRIGGERS (in Linux since 4.7), and its tracefs README has no "hist:keys"; the in-kernel engine (printed scripts, -e) needs them: on that kernel, sqlhist -r answers from the events (the stream engine), and --engine stream prints a script whose awk computes the query; this target is Linux 6.18 (6.18.44-test)` + "\n"
	hint := "hint: the event formats came from this machine's tracefs (/sys/kernel/tracing), read because neither --kernel nor --formats was given; " +
		"to print for another machine, name its kernel with --kernel VERSION (embedded: " + tracefs.EmbeddedSummary() + ") or read a copy of its tracefs with --formats DIR\n"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"print", []string{wakeupSQL}, refusal + hint},
		{"execute", []string{"-e", wakeupSQL}, refusal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, stdout, stderr := testEnv(&tracefs.Recorder{}, "")
			e.Dir = func(p string) (fs.FS, error) {
				if p == root {
					return noHistFS{base}, nil
				}
				return nil, fs.ErrNotExist
			}
			e.Mounts = func() ([]byte, error) { return []byte(mounts), nil }
			if code := run(tt.args, e); code != exitQuery {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitQuery, stderr)
			}
			if stdout.Len() > 0 {
				t.Errorf("printed a script:\n%s", stdout)
			}
			if d := cmp.Diff(tt.want, stderr.String()); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
			if !strings.Contains(tt.want, "--kernel VERSION") == (tt.name == "print") {
				t.Fatal("the test's own expectation is wrong")
			}
		})
	}
}
