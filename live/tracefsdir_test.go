package live

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestTracefsDir: the host's tracefs directory reads a file whole in
// chunks, whether it says its size or not (a /proc file says 0, as
// tracefs files do), and is os.DirFS in everything else.
func TestTracefsDir(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("sched:sched_waking\n"), 3*readChunk/19+7)
	if err := os.WriteFile(filepath.Join(dir, "available_events"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "events"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newTracefsDir(dir)
	got, err := fs.ReadFile(d, "available_events")
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("a file of %d bytes read as %d bytes, %v", len(big), len(got), err)
	}
	if _, err := fs.ReadFile(d, "nothing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want not exist", err)
	}
	if st, err := fs.Stat(d, "events"); err != nil || !st.IsDir() {
		t.Errorf("Stat(events) = %v, %v", st, err)
	}
	if ents, err := fs.ReadDir(d, "."); err != nil || len(ents) != 2 || ents[0].Name() != "available_events" {
		t.Errorf("ReadDir(.) = %v, %v", ents, err)
	}
	want, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skipf("no /proc/self/cmdline to read: %v", err)
	}
	if st, err := os.Stat("/proc/self/cmdline"); err != nil || st.Size() != 0 {
		t.Fatalf("/proc/self/cmdline says %v bytes (%v): not a file of no size", st.Size(), err)
	}
	got, err = fs.ReadFile(newTracefsDir("/proc/self"), "cmdline")
	if err != nil || len(got) == 0 || !bytes.Equal(got, want) {
		t.Errorf("/proc/self/cmdline (no size) read as %q, %v; os.ReadFile read %q", got, err, want)
	}
}
