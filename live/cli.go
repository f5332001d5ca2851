package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The pipeline's types a caller of this package names: a program needs
// no other package of sqlhist than live and source.
type (
	// Catalog is the event catalog a query compiles against.
	Catalog = tracefs.Catalog
	// Plan is a compiled query.
	Plan = planner.Plan
	// CompileOptions are Compile's options (the flags of sqlhist).
	CompileOptions = planner.Options
	// Writer writes under a tracefs: Append, Mkdir, Rmdir.
	Writer = tracefs.Writer
	// DirWriter writes to the files of a mounted tracefs at Root.
	DirWriter = tracefs.DirWriter
)

// BootProbeGroup is the group of the probes a bootconfig defines
// (CompileOptions.ProbeGroup with -o bootconfig).
const BootProbeGroup = emit.BootProbeGroup

// ParseSave parses -S's comma-separated fields.
func ParseSave(s string) ([]string, error) { return planner.ParseSave(s) }

// EmbeddedSummary names the catalogs embedded in the binary.
func EmbeddedSummary() string { return tracefs.EmbeddedSummary() }

// EmbeddedVersions lists the kernel versions --kernel takes: those with
// an embedded catalog of any architecture, oldest first.
func EmbeddedVersions() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range tracefs.Arches {
		for _, v := range tracefs.EmbeddedKernelsOf(a) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		as, bs := strings.Split(a, "."), strings.Split(b, ".")
		for i := 0; i < min(len(as), len(bs)); i++ {
			x, _ := strconv.Atoi(as[i])
			y, _ := strconv.Atoi(bs[i])
			if x != y {
				return x - y
			}
		}
		return len(as) - len(bs)
	})
	return out
}

// ArchNames lists the architectures --arch names (x86_64 first).
func ArchNames() []string {
	var out []string
	for _, a := range tracefs.Arches {
		out = append(out, a.Name)
	}
	return out
}

// The fixed sets of values of sqlhist's flags, for the completions: the
// engines of --engine, the formats -o prints (PrintFormats) and those of
// -r's results (RunFormats).
var (
	Engines      = []string{EngineAuto, EngineBPF, EngineKernel, EngineStream, EngineAwk}
	PrintFormats = []string{"script", "json", "bootconfig"}
	RunFormats   = []string{"table", "json", "csv", "folded", "pprof"}
)

// Quote quotes s for a POSIX shell.
func Quote(s string) string { return emit.Quote(s) }

// OpenDir opens the directory p of this machine.
func OpenDir(p string) (fs.FS, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", p)
	}
	return os.DirFS(p), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// CacheDir is sqlhist's directory in the user's cache directory
// ($SQLHIST_CACHE_DIR when set), or "" when there is none.
func CacheDir() string {
	if d := os.Getenv("SQLHIST_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sqlhist")
}

// ReplaceFile writes data to a temporary file next to path and renames
// it over path, keeping path's permissions: a reader sees the old file or
// the new one, never a part.
func ReplaceFile(path string, data []byte) (err error) {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sqlhist-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// Version says which build this is: the commit it was built from (with
// "+changes" when the tree had uncommitted changes), the Go toolchain,
// the machine it was built for, and the embedded catalogs.
func Version() string {
	commit := "unknown commit"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = "commit " + rev
			if modified == "true" {
				commit += "+changes"
			}
		}
	}
	return fmt.Sprintf("sqlhist %s, %s, %s/%s\nembedded catalogs: %s\n", commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, tracefs.EmbeddedSummary())
}
