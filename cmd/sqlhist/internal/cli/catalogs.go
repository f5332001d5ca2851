package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

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
	Engines      = []string{live.EngineAuto, live.EngineBPF, live.EngineKernel, live.EngineStream, live.EngineAwk}
	PrintFormats = []string{"script", "json", "bootconfig"}
	RunFormats   = []string{"table", "json", "csv", "folded", "pprof"}
)

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
