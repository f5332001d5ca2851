package tracefs

import (
	"io/fs"
	"strings"
	"testing"

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
