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

// EmbeddedKernels lists the kernel versions with an embedded catalog,
// oldest first.
func EmbeddedKernels() []string {
	ents, _ := fs.ReadDir(catalogs, "catalogs")
	var vs []string
	for _, e := range ents {
		if v, ok := strings.CutPrefix(e.Name(), "linux-"); ok && strings.HasSuffix(v, ".zip") {
			vs = append(vs, strings.TrimSuffix(v, ".zip"))
		}
	}
	slices.SortFunc(vs, compareVersions)
	return vs
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

// Embedded returns the embedded catalog of a kernel version ("6.1"), or the
// newest one with an empty version, as a file system rooted like a tracefs.
// The zip's directory is the name index; a format file is inflated only
// when it is read.
func Embedded(version string) (fs.FS, error) {
	vs := EmbeddedKernels()
	if len(vs) == 0 {
		return nil, fmt.Errorf("this build has no embedded event catalog")
	}
	if version == "" {
		version = vs[len(vs)-1]
	}
	if !slices.Contains(vs, version) {
		return nil, fmt.Errorf("no embedded catalog for kernel %q (have %s)", version, strings.Join(vs, ", "))
	}
	embeddedMu.Lock()
	defer embeddedMu.Unlock()
	if r, ok := embeddedReaders[version]; ok {
		return r, nil
	}
	data, err := catalogs.ReadFile("catalogs/linux-" + version + ".zip")
	if err != nil {
		return nil, err
	}
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	embeddedReaders[version] = r
	return r, nil
}

// The parsed zip directories, kept for the process: a zip.Reader is safe
// for concurrent reads.
var (
	embeddedMu      sync.Mutex
	embeddedReaders = map[string]*zip.Reader{}
)
