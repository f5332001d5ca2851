package tracefs

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestEmbeddedKernels(t *testing.T) {
	want := []string{"5.10", "6.1", "6.12", "7.2"}
	if diff := cmp.Diff(want, EmbeddedKernels()); diff != "" {
		t.Errorf("EmbeddedKernels (-want +got):\n%s", diff)
	}
}

func TestEmbedded(t *testing.T) {
	tests := []struct {
		version     string
		wantRelease string // prefix of VERSION's first line
	}{
		{"", "7.2."}, // the newest
		{"5.10", "5.10."},
		{"6.1", "6.1."},
		{"6.12", "6.12."},
		{"7.2", "7.2."},
	}
	for _, tt := range tests {
		fsys, err := Embedded(tt.version)
		if err != nil {
			t.Errorf("Embedded(%q): %v", tt.version, err)
			continue
		}
		data, err := fs.ReadFile(fsys, "VERSION")
		if err != nil {
			t.Errorf("Embedded(%q): %v", tt.version, err)
			continue
		}
		if !strings.HasPrefix(string(data), tt.wantRelease) {
			t.Errorf("Embedded(%q) VERSION = %q, want it to start with %q", tt.version, data, tt.wantRelease)
		}
		if _, err := fs.Stat(fsys, "events/sched/sched_switch/format"); err != nil {
			t.Errorf("Embedded(%q): %v", tt.version, err)
		}
	}
}

func TestEmbeddedUnknown(t *testing.T) {
	for _, v := range []string{"9.9", "6", "6.1.0", "linux-6.1", "6.1.zip"} {
		fsys, err := Embedded(v)
		if err == nil {
			t.Errorf("Embedded(%q) = %v, want an error", v, fsys)
			continue
		}
		want := `no embedded catalog for kernel "` + v + `" (have 5.10, 6.1, 6.12, 7.2)`
		if err.Error() != want {
			t.Errorf("Embedded(%q) error %q, want %q", v, err, want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int // sign
	}{
		{"5.10", "6.1", -1},
		{"6.1", "6.12", -1},
		{"6.2", "6.12", -1}, // numeric, not lexical
		{"6.12", "7.2", -1},
		{"6.1", "6.1", 0},
		{"6", "6.1", -1},
		{"7.2", "6.12", 1},
		{"10.0", "9.9", 1},
	}
	for _, tt := range tests {
		got := compareVersions(tt.a, tt.b)
		if sign(got) != tt.want {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// The catalogs of other architectures are chosen with their Arch; a
// missing one is refused with every catalog there is.
func TestEmbeddedOfArch(t *testing.T) {
	arm64, _ := LookupArch("arm64")
	arm, _ := LookupArch("arm")
	if got := EmbeddedKernelsOf(arm64); !cmp.Equal(got, []string{"6.1", "6.12", "7.2"}) {
		t.Errorf("arm64 catalogs: %v", got)
	}
	fsys, err := EmbeddedOf("6.1", arm)
	if err != nil {
		t.Fatal(err)
	}
	if a, how := Open(fsys).Arch(); a != arm || how != "the catalog's ARCH" {
		t.Errorf("6.1 armhf catalog: %s (%s)", a.Name, how)
	}
	_, err = EmbeddedOf("7.2", arm)
	want := `no embedded catalog for kernel "7.2" on arm (have ` + EmbeddedSummary() + ")"
	if err == nil || err.Error() != want {
		t.Errorf("EmbeddedOf(7.2, arm) = %v, want %q", err, want)
	}
	if s := EmbeddedSummary(); s != "5.10, 6.1, 6.12, 7.2 (x86_64); 6.1, 6.12, 7.2 (arm64); 6.1 (arm); 6.12 (riscv64)" {
		t.Errorf("EmbeddedSummary = %q", s)
	}
	// riscv64 6.12 (Debian trixie): no hist triggers, and the ring
	// buffer's headers captured beside the formats.
	riscv64, _ := LookupArch("riscv64")
	fsys, err = EmbeddedOf("6.12", riscv64)
	if err != nil {
		t.Fatal(err)
	}
	if a, how := Open(fsys).Arch(); a != riscv64 || how != "the catalog's ARCH" {
		t.Errorf("6.12 riscv64 catalog: %s (%s)", a.Name, how)
	}
	if readme, err := fs.ReadFile(fsys, "README"); err != nil || strings.Contains(string(readme), "hist:keys") {
		t.Errorf("6.12 riscv64 README: hist:keys there, or %v", err)
	}
	for _, f := range []string{"events/header_page", "events/header_event"} {
		if b, err := fs.ReadFile(fsys, f); err != nil || len(b) == 0 {
			t.Errorf("6.12 riscv64 %s: %d bytes, %v", f, len(b), err)
		}
	}
	if got := ArchesWithEvent("syscalls", "sys_enter_arch_prctl", arm64); !cmp.Equal(got, []string{"x86_64"}) {
		t.Errorf("ArchesWithEvent(sys_enter_arch_prctl) = %v", got)
	}
}

// zipOf writes a zip of the files, in the order given.
func zipOf(t *testing.T, files [][2]string) *zip.Reader {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, f := range files {
		fw, err := w.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(f[1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The embedded catalogs' file system finds a file by a binary search of
// the zip's sorted names (a map when they are not sorted) and leaves
// directories to the zip.Reader: it must behave as a file system
// (fstest.TestFS) and read what the zip.Reader reads.
func TestZipFS(t *testing.T) {
	files := [][2]string{
		{"README", "readme\n"}, {"events/sched/sched_switch/format", "name: sched_switch\n"},
		{"events/sched/sched_waking/format", "name: sched_waking\n"}, {"events/sched_ext/x/format", "name: x\n"},
		{"events/schedz", "a file beside the directories\n"}, {"events/syscalls/sys_enter_read/format", "name: sys_enter_read\n"},
	}
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	for _, order := range [][][2]string{files, reversed} {
		r := zipOf(t, order)
		z := newZipFS(r)
		if sorted := z.index == nil; sorted != (order[0][0] == "README") {
			t.Errorf("a zip whose first name is %s taken as sorted: %v", order[0][0], sorted)
		}
		if err := fstest.TestFS(z, "README", "events/sched/sched_switch/format", "events/schedz", "events/sched_ext/x/format"); err != nil {
			t.Errorf("first %s: %v", order[0][0], err)
		}
		for _, f := range files {
			got, err := fs.ReadFile(z, f[0])
			if err != nil || string(got) != f[1] {
				t.Errorf("%s: %q, %v", f[0], got, err)
			}
		}
		for _, name := range []string{"events/sched/sched_switch", "events/sched/nope/format", "REA", "READMEX", "events/sched_", "zzz", "/README", "events/../README"} {
			want, werr := fs.ReadFile(r, name)
			got, gerr := fs.ReadFile(z, name)
			if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) || werr != nil && errors.Is(werr, fs.ErrNotExist) != errors.Is(gerr, fs.ErrNotExist) {
				t.Errorf("%s: %q, %v; the zip.Reader: %q, %v", name, got, gerr, want, werr)
			}
			_, werr = fs.Stat(r, name)
			_, gerr = fs.Stat(z, name)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("stat %s: %v; the zip.Reader: %v", name, gerr, werr)
			}
		}
		names, err := fs.ReadDir(z, "events/sched")
		if err != nil || len(names) != 2 || names[0].Name() != "sched_switch" {
			t.Errorf("events/sched: %v, %v", names, err)
		}
	}
}

// Every embedded catalog's names are sorted: each is found without an
// index.
func TestEmbeddedZipsSorted(t *testing.T) {
	for _, a := range Arches {
		for _, v := range EmbeddedKernelsOf(a) {
			fsys, err := EmbeddedOf(v, a)
			if err != nil {
				t.Fatal(err)
			}
			if z := fsys.(*zipFS); z.index != nil {
				t.Errorf("the catalog of %s on %s is not sorted by name", v, a.Name)
			}
		}
	}
}

// BenchmarkEmbeddedOpen opens an embedded catalog's zip and reads what
// printing the wakeup JOIN reads first (its README and two formats), as
// a process does once.
func BenchmarkEmbeddedOpen(b *testing.B) {
	data, err := catalogs.ReadFile("catalogs/linux-6.1.zip")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		z := newZipFS(r)
		for _, f := range []string{"README", "events/sched/sched_waking/format", "events/sched/sched_switch/format"} {
			if _, err := fs.ReadFile(z, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}
