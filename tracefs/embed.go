package tracefs

import (
	"archive/zip"
	"bytes"
	"embed"
	"fmt"
	"io"
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
	if z, ok := embeddedReaders[file]; ok {
		return z, nil
	}
	// The zip is read in place (an embedded file reads at an offset),
	// not copied.
	f, err := catalogs.Open("catalogs/" + file)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("embedded catalog %s cannot be read at an offset", file)
	}
	r, err := zip.NewReader(ra, st.Size())
	if err != nil {
		return nil, err
	}
	z := newZipFS(r)
	embeddedReaders[file] = z
	return z, nil
}

// The parsed zip directories, kept for the process: a zip.Reader is safe
// for concurrent reads.
var (
	embeddedMu      sync.Mutex
	embeddedReaders = map[string]*zipFS{}
)

// zipFS serves a catalog's files from its zip's central directory, found
// by a binary search of the names (the capture writes them sorted; an
// unsorted zip gets a map). A zip.Reader's own Open first builds an index
// of every file and directory, sorted: for the few files a compile reads
// that was a fifth of a printing process's time. Directories (and names
// the zip lacks but under a directory) are the zip.Reader's.
type zipFS struct {
	r     *zip.Reader
	index map[string]*zip.File // nil when r.File is sorted by name
}

func newZipFS(r *zip.Reader) *zipFS {
	z := &zipFS{r: r}
	if !slices.IsSortedFunc(r.File, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) }) {
		z.index = make(map[string]*zip.File, len(r.File))
		for _, f := range r.File {
			z.index[f.Name] = f
		}
	}
	return z
}

// file is the zip's entry of a file name ("" when it has none, or only a
// directory of that name). dir says whether a directory holds name's
// path (only where the names are sorted: else unknown, true).
func (z *zipFS) file(name string) (f *zip.File, dir bool) {
	if z.index != nil {
		return z.index[name], true
	}
	cmp := func(f *zip.File, n string) int { return strings.Compare(f.Name, n) }
	if i, ok := slices.BinarySearchFunc(z.r.File, name, cmp); ok {
		return z.r.File[i], false
	}
	i, _ := slices.BinarySearchFunc(z.r.File, name+"/", cmp)
	return nil, i < len(z.r.File) && strings.HasPrefix(z.r.File[i].Name, name+"/")
}

func (z *zipFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, dir := z.file(name)
	switch {
	case f != nil:
		rc, err := f.Open()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &zipFile{f: f, rc: rc}, nil
	case dir || name == ".":
		return z.r.Open(name)
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadFile reads a file whole, into a buffer of its size.
func (z *zipFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	f, dir := z.file(name)
	if f == nil {
		if dir || name == "." {
			return fs.ReadFile(z.r, name)
		}
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	rc, err := f.Open()
	if err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	defer rc.Close()
	// The size is the zip's word: a file that says more than a catalog
	// can hold is read as it comes.
	size := f.UncompressedSize64
	if size > 64<<20 {
		size = 0
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	return buf.Bytes(), nil
}

// zipFile is an open file of a zipFS.
type zipFile struct {
	f  *zip.File
	rc io.ReadCloser
}

func (f *zipFile) Stat() (fs.FileInfo, error) { return f.f.FileInfo(), nil }
func (f *zipFile) Read(b []byte) (int, error) { return f.rc.Read(b) }
func (f *zipFile) Close() error               { return f.rc.Close() }

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
