package tracefs

import (
	"archive/zip"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// catalogs holds event catalogs captured from real kernels by
// tools/capture-catalog, one zip per kernel (see catalogs/README.md).
//
//go:embed catalogs
var catalogs embed.FS

// EmbeddedKernels lists the kernel versions with an embedded catalog of
// x86_64 (the default architecture), oldest first.
func EmbeddedKernels() []string { return EmbeddedKernelsOf(Arches[0]) }

// EmbeddedKernelsOf lists the kernel versions with an embedded catalog of
// an architecture, oldest first. The zip of an x86_64 kernel is
// linux-<version>.zip, another architecture's linux-<version>-<debian>.zip
// (linux-6.1-arm64.zip, linux-6.1-armhf.zip).
func EmbeddedKernelsOf(arch *Arch) []string {
	ents, _ := fs.ReadDir(catalogs, "catalogs")
	var vs []string
	for _, e := range ents {
		v, ok := strings.CutPrefix(e.Name(), "linux-")
		if !ok || !strings.HasSuffix(v, ".zip") {
			continue
		}
		v = strings.TrimSuffix(v, ".zip")
		version, debian, _ := strings.Cut(v, "-")
		if debian == "" && arch.Name == Arches[0].Name || debian != "" && debian == arch.Debian {
			vs = append(vs, version)
		}
	}
	slices.SortFunc(vs, compareVersions)
	return vs
}

// EmbeddedSummary names every embedded catalog by architecture, for help
// texts: "6.1, 6.12, 7.2 (x86_64); 6.1 (arm)".
func EmbeddedSummary() string {
	var parts []string
	for _, a := range Arches {
		if vs := EmbeddedKernelsOf(a); len(vs) > 0 {
			parts = append(parts, strings.Join(vs, ", ")+" ("+a.Name+")")
		}
	}
	return strings.Join(parts, "; ")
}

func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < min(len(as), len(bs)); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
}

// Embedded returns the embedded x86_64 catalog of a kernel version
// ("6.1"), or the newest one with an empty version, as a file system
// rooted like a tracefs.
func Embedded(version string) (fs.FS, error) { return EmbeddedOf(version, nil) }

// EmbeddedOf returns the embedded catalog of a kernel version on an
// architecture (nil: x86_64), or that architecture's newest with an empty
// version. The zip's directory is the name index; a format file is
// inflated only when it is read.
func EmbeddedOf(version string, arch *Arch) (fs.FS, error) {
	if arch == nil {
		arch = Arches[0]
	}
	vs := EmbeddedKernelsOf(arch)
	if len(vs) == 0 {
		if arch != Arches[0] {
			return nil, fmt.Errorf("this build has no embedded event catalog of %s (have %s)", arch.Name, EmbeddedSummary())
		}
		return nil, fmt.Errorf("this build has no embedded event catalog")
	}
	if version == "" {
		version = vs[len(vs)-1]
	}
	if !slices.Contains(vs, version) {
		if arch != Arches[0] {
			return nil, fmt.Errorf("no embedded catalog for kernel %q on %s (have %s)", version, arch.Name, EmbeddedSummary())
		}
		return nil, fmt.Errorf("no embedded catalog for kernel %q (have %s)", version, strings.Join(vs, ", "))
	}
	file := "linux-" + version + ".zip"
	if arch != Arches[0] {
		file = "linux-" + version + "-" + arch.Debian + ".zip"
	}
	embeddedMu.Lock()
	defer embeddedMu.Unlock()
	if r, ok := embeddedReaders[file]; ok {
		return r, nil
	}
	data, err := catalogs.ReadFile("catalogs/" + file)
	if err != nil {
		return nil, err
	}
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	embeddedReaders[file] = r
	return r, nil
}

// The parsed zip directories, kept for the process: a zip.Reader is safe
// for concurrent reads.
var (
	embeddedMu      sync.Mutex
	embeddedReaders = map[string]*zip.Reader{}
)

// ArchesWithEvent lists the architectures other than except whose newest
// embedded catalog has the event (system may be empty): what tells a user
// that an event missing on their target belongs to another architecture
// (sys_enter_open exists on x86_64, not on arm64).
func ArchesWithEvent(system, name string, except *Arch) []string {
	var out []string
	for _, a := range Arches {
		if a == except {
			continue
		}
		fsys, err := EmbeddedOf("", a)
		if err != nil {
			continue
		}
		if _, err := Open(fsys).Lookup(system, name); err == nil {
			out = append(out, a.Name)
		}
	}
	return out
}
