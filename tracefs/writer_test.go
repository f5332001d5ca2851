package tracefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDirWriterAppends(t *testing.T) {
	root := t.TempDir()
	trigger := filepath.Join(root, "events", "sched", "sched_switch", "trigger")
	if err := os.MkdirAll(filepath.Dir(trigger), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trigger, []byte("# existing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := DirWriter{Root: root}
	for _, line := range []string{"hist:keys=next_pid", "hist:keys=prev_pid if prev_pid != 0"} {
		if err := w.Append("events/sched/sched_switch/trigger", line); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(trigger)
	if err != nil {
		t.Fatal(err)
	}
	want := "# existing\nhist:keys=next_pid\nhist:keys=prev_pid if prev_pid != 0\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("file content (-want +got):\n%s", diff)
	}
}

// DirWriter never creates a file: a missing tracefs file is an error.
func TestDirWriterMissingFile(t *testing.T) {
	root := t.TempDir()
	err := DirWriter{Root: root}.Append("dynamic_events", "s:x u64 a")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append error %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(root, "dynamic_events")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append created dynamic_events (stat error %v)", err)
	}
}

func TestRecorder(t *testing.T) {
	tests := []struct {
		name       string
		failAt     int
		wantWrites []string
		wantErrAt  int // index of the Append call that fails; -1 none
	}{
		{"never fails", 0, []string{"a: 1", "b: 2", "c: 3"}, -1},
		{"first write fails", 1, []string{"b: 2", "c: 3"}, 0},
		{"second write fails once", 2, []string{"a: 1", "c: 3"}, 1},
		{"beyond the writes", 5, []string{"a: 1", "b: 2", "c: 3"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Recorder{FailAt: tt.failAt}
			errAt := -1
			for i, w := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}} {
				if err := r.Append(w[0], w[1]); err != nil {
					if errAt >= 0 {
						t.Errorf("write %d failed too: %v", i, err)
					}
					errAt = i
					if want := "write " + w[0] + ": injected failure"; err.Error() != want {
						t.Errorf("error %q, want %q", err, want)
					}
				}
			}
			if errAt != tt.wantErrAt {
				t.Errorf("failing write %d, want %d", errAt, tt.wantErrAt)
			}
			if diff := cmp.Diff(tt.wantWrites, r.Writes); diff != "" {
				t.Errorf("Writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecorderString(t *testing.T) {
	r := &Recorder{}
	if got := r.String(); got != "" {
		t.Errorf("empty Recorder String() = %q", got)
	}
	_ = r.Append("dynamic_events", "s:lat u64 lat")
	_ = r.Append("events/sched/sched_switch/trigger", "hist:keys=next_pid")
	want := "dynamic_events: s:lat u64 lat\nevents/sched/sched_switch/trigger: hist:keys=next_pid"
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

var _ Writer = DirWriter{}
var _ Writer = (*Recorder)(nil)

func TestDirWriterMkdirRmdir(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "instances"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := DirWriter{Root: root}
	if err := w.Mkdir("instances/run1"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(root, "instances", "run1")); err != nil || !st.IsDir() {
		t.Fatalf("instance not created: %v", err)
	}
	if err := w.Mkdir("instances/run1"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Mkdir: %v, want fs.ErrExist", err)
	}
	if err := w.Rmdir("instances/run1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Rmdir("instances/run1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Rmdir: %v, want fs.ErrNotExist", err)
	}
}
