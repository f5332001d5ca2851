package main

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The Go code blocks of docs/go.md compile against the packages they
// name: each is the body of a function given ctx and sql, type-checked
// with the imports it uses.
func TestGoDocCompiles(t *testing.T) {
	md, err := os.ReadFile("../../docs/go.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(md), -1)
	if len(blocks) == 0 {
		t.Fatal("docs/go.md has no Go code block")
	}
	pkgs := map[string]string{
		"fmt": "fmt", "log": "log", "os": "os", "time": "time", "context": "context",
		"tracefs": "github.com/sqlhist/sqlhist/tracefs", "source": "github.com/sqlhist/sqlhist/source",
		"planner": "github.com/sqlhist/sqlhist/planner", "emit": "github.com/sqlhist/sqlhist/emit",
		"live": "github.com/sqlhist/sqlhist/live", "results": "github.com/sqlhist/sqlhist/results",
		"exporter": "github.com/sqlhist/sqlhist/exporter",
	}
	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out, err := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	export := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if dec.Decode(&p) != nil {
			break
		}
		export[p.ImportPath] = p.Export
	}
	for i, b := range blocks {
		var imports []string
		for name, path := range pkgs {
			code := regexp.MustCompile(`//.*`).ReplaceAllString(b[1], "")
			if name == "context" || regexp.MustCompile(`\b`+name+`\.`).MatchString(code) {
				imports = append(imports, "\t"+`"`+path+`"`)
			}
		}
		sort.Strings(imports)
		text := "package doc\n\nimport (\n" + strings.Join(imports, "\n") + "\n)\n\nfunc _(ctx context.Context, sql string) {\n\t_, _ = ctx, sql\n" + b[1] + "}\n"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "go.md", text, 0)
		if err != nil {
			t.Errorf("block %d of docs/go.md: %v\n%s", i+1, err, text)
			continue
		}
		imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(export[path]) })
		conf := types.Config{Importer: imp}
		if _, err := conf.Check("doc", fset, []*ast.File{f}, nil); err != nil {
			t.Errorf("block %d of docs/go.md does not compile: %v\n%s", i+1, err, text)
		}
	}
}
