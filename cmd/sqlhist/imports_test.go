package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportGraph keeps the pipeline's shape: data flows compiler → planner
// → emit, tracefs and source (positions and diagnostics) are leaves (emit
// reads tracefs's feature table), emit reaches no further back than the
// planner, the stream engine (stream) computes the planner's triggers from
// events beside emit, and the BPF engine (bpf) compiles them into
// programs. Above the pipeline, each package has one job:
//
//   - results shows what a run read (tables, JSON, CSV, merge, fleets,
//     stacks, pprof, heatmaps, the live view) and reads it back; it runs
//     nothing and imports no engine, nor live;
//   - live runs a plan on a target (apply, the engines, the run loop,
//     targets) and reaches other machines through its transport
//     (live/remote); it hands its reports to results;
//   - exporter serves results to Prometheus, in the formats it writes
//     itself (the Prometheus libraries and protobuf are its tests'
//     oracles: no package imports them outside tests), and imports
//     neither live nor the engines;
//   - cmd/sqlhist/internal/cli is the command's plumbing (flags and their
//     checks, the man page, completions, the wiring of the packages above);
//     the command (cmd/sqlhist, tests aside) imports only it and source,
//     and no other package imports it;
//   - internal/nohugepages, a leaf, turns transparent huge pages off for
//     the process: the command imports it, so that its init runs early.
//
// Nothing in the pipeline imports live, results or exporter, and only
// compiler imports the tidb parser.
func TestImportGraph(t *testing.T) {
	const mod = "github.com/sqlhist/sqlhist/"
	const cli = "cmd/sqlhist/internal/cli"
	allowed := map[string][]string{
		"source":               {},
		"compiler":             {"source"},
		"tracefs":              {},
		"planner":              {"compiler", "tracefs", "source"},
		"emit":                 {"planner", "source", "tracefs"},
		"stream":               {"planner", "tracefs"},
		"bpf":                  {"compiler", "planner", "stream", "tracefs"},
		"results":              {"planner", "source", "tracefs"},
		"exporter":             {"planner", "results", "source", "tracefs"},
		"live":                 {"compiler", "planner", "emit", "stream", "bpf", "source", "tracefs", "results", "live/remote"},
		"live/remote":          {"emit", "tracefs"},
		cli:                    {"live", "results", "exporter", "compiler", "planner", "emit", "tracefs", "source"},
		"cmd/sqlhist":          {cli, "source", "internal/nohugepages"},
		"internal/nohugepages": {},
	}
	imported := map[string]bool{}
	for pkg, ok := range allowed {
		files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no files in %s", pkg)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, "github.com/pingcap/") && pkg != "compiler" {
					t.Errorf("%s imports %s: only compiler may import the tidb parser", f, path)
				}
				if strings.HasPrefix(path, "github.com/prometheus/") || strings.HasPrefix(path, "google.golang.org/protobuf/") {
					t.Errorf("%s imports %s: the Prometheus libraries and protobuf are for tests only (their init costs every sqlhist process)", f, path)
				}
				if rest, own := strings.CutPrefix(path, mod); own {
					imported[pkg+" "+rest] = true
					found := false
					for _, a := range ok {
						found = found || a == rest
					}
					if !found {
						t.Errorf("%s imports %s, against the pipeline's direction", f, path)
					}
				}
			}
		}
	}
	if !imported["cmd/sqlhist internal/nohugepages"] {
		t.Errorf("cmd/sqlhist does not import internal/nohugepages: the command would run with transparent huge pages")
	}
}

// A Go program that runs queries with live, or shows results with
// results, links no exporter (nor, through it, net/http's server); the
// command links neither the Prometheus libraries nor protobuf, whose
// descriptors' set-up every process would pay at start.
func TestLiveLinksNoExporter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "google.golang.org/protobuf/") {
			t.Errorf("the command links %s", dep)
		}
	}
	for _, pkg := range []string{"../../live", "../../results"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasSuffix(dep, "sqlhist/exporter") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
