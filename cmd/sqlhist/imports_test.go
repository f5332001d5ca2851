package main

import (
	"go/parser"
	"go/token"
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
// programs, live (apply, run, results)
// sits on top of the pipeline and reaches other machines through its
// transport (live/remote), nothing in the pipeline imports live, the
// command (cmd/sqlhist, tests aside) imports only live and source, and
// only compiler imports the tidb parser.
func TestImportGraph(t *testing.T) {
	const mod = "github.com/sqlhist/sqlhist/"
	allowed := map[string][]string{
		"source":      {},
		"compiler":    {"source"},
		"tracefs":     {},
		"planner":     {"compiler", "tracefs", "source"},
		"emit":        {"planner", "source", "tracefs"},
		"stream":      {"planner", "tracefs"},
		"bpf":         {"planner", "stream", "tracefs"},
		"results":     {"planner", "source", "tracefs"},
		"exporter":    {"planner", "results", "source", "tracefs"},
		"live":        {"compiler", "planner", "emit", "stream", "bpf", "source", "tracefs", "results", "exporter", "live/remote"},
		"live/remote": {"emit", "tracefs"},
		"cmd/sqlhist": {"live", "results", "exporter", "source"},
	}
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
				if strings.HasPrefix(path, "github.com/prometheus/") && pkg != "exporter" {
					t.Errorf("%s imports %s: only exporter may import the Prometheus client", f, path)
				}
				if rest, own := strings.CutPrefix(path, mod); own {
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
}
