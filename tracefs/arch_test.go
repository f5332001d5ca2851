package tracefs

import (
	"io/fs"
	"slices"
	"strconv"
	"testing"
	"testing/fstest"
)

func TestLookupArch(t *testing.T) {
	for name, want := range map[string]string{"amd64": "x86_64", "x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64",
		"armhf": "arm", "armv7l": "arm", "ARM": "arm", "riscv64": "riscv64"} {
		a, err := LookupArch(name)
		if err != nil || a.Name != want {
			t.Errorf("LookupArch(%q) = %v, %v; want %s", name, a, err, want)
		}
	}
	if _, err := LookupArch("mips"); err == nil || err.Error() != `unknown architecture "mips" (known: x86_64, arm64, arm, riscv64)` {
		t.Errorf("LookupArch(mips): %v", err)
	}
}

// hideFS hides some files of a file system.
type hideFS struct {
	fs.FS
	hidden []string
}

func (h hideFS) Open(name string) (fs.File, error) {
	if slices.Contains(h.hidden, name) {
		return nil, fs.ErrNotExist
	}
	return h.FS.Open(name)
}

// Every embedded catalog tells its architecture: by its ARCH file or its
// release, and by its event formats alone when both are hidden.
func TestArchOfEmbedded(t *testing.T) {
	n := 0
	for _, arch := range Arches {
		for _, v := range EmbeddedKernelsOf(arch) {
			n++
			fsys, err := EmbeddedOf(v, arch)
			if err != nil {
				t.Fatal(err)
			}
			if a, how := Open(fsys).Arch(); a != arch || how == "assumed" {
				t.Errorf("%s on %s: Arch = %s (%s)", v, arch.Name, a.Name, how)
			}
			if a, how := Open(hideFS{fsys, []string{"ARCH", "VERSION"}}).Arch(); a != arch || how != "the event formats" {
				t.Errorf("%s on %s without ARCH and VERSION: Arch = %s (%s)", v, arch.Name, a.Name, how)
			}
		}
	}
	if n < 8 {
		t.Errorf("%d embedded catalogs, want the 4 of x86_64, 3 of arm64 and 1 of arm at least", n)
	}
}

// Without ARCH or VERSION, the formats tell: raw_syscalls' args size and
// the events one architecture has.
func TestArchOfEvents(t *testing.T) {
	raw := func(size int) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("name: sys_enter\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" +
			"\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\tfield:unsigned long args[6];\toffset:16;\tsize:" + strconv.Itoa(size) + ";\tsigned:0;\n\nprint fmt: \"\"\n")}
	}
	for _, tt := range []struct {
		name, want, how string
		fsys            fstest.MapFS
	}{
		{"x86", "x86_64", "the event formats", fstest.MapFS{"events/raw_syscalls/sys_enter/format": raw(48), "events/irq_vectors/local_timer_entry/format": {}}},
		{"arm", "arm", "the event formats", fstest.MapFS{"events/raw_syscalls/sys_enter/format": raw(24), "events/syscalls/sys_enter_arm_fadvise64_64/format": {}}},
		{"release", "arm64", "the kernel release", fstest.MapFS{"VERSION": {Data: []byte("6.1.0-56-cloud-arm64\n")}}},
		{"ARCH", "arm", "the catalog's ARCH", fstest.MapFS{"ARCH": {Data: []byte("armv7l\n")}, "VERSION": {Data: []byte("6.1.0-56-cloud-amd64\n")}}},
		{"nothing", "x86_64", "assumed", fstest.MapFS{"events/sched/sched_switch/format": {}}},
	} {
		a, how := Open(tt.fsys).Arch()
		if a.Name != tt.want || how != tt.how {
			t.Errorf("%s: Arch = %s (%s), want %s (%s)", tt.name, a.Name, how, tt.want, tt.how)
		}
	}
	c := Open(fstest.MapFS{"ARCH": {Data: []byte("aarch64\n")}})
	x, _ := LookupArch("arm")
	c.SetArch(x, "--arch")
	if a, how := c.Arch(); a.Name != "arm" || how != "--arch" {
		t.Errorf("after SetArch: %s (%s)", a.Name, how)
	}
}
