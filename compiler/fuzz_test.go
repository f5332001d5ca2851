package compiler

import (
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
	"github.com/sqlhist/sqlhist/source"
)

// FuzzParse checks that any input gives either a script or diagnostics
// whose positions lie inside the source, never a panic, and that parsing
// is deterministic, all within fuzzguard.Limit. It is seeded with every
// golden query.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/queries/*.txtar")
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if file.Name == "query.sql" {
				f.Add(string(file.Data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		fuzzguard.Run(fuzzguard.Limit, text, func() { checkParse(t, text) })
	})
}

// checkParse is FuzzParse's check of one input.
func checkParse(t *testing.T, text string) {
	src := source.NewSource("fuzz.sql", text)
	s1, err1 := Parse(src)
	s2, err2 := Parse(source.NewSource("fuzz.sql", text))
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("nondeterministic: %v vs %v", err1, err2)
	}
	if err1 == nil {
		if !reflect.DeepEqual(s1, s2) {
			t.Fatalf("nondeterministic parse of %q", text)
		}
		return
	}
	d, ok := err1.(source.Diags)
	if !ok {
		t.Fatalf("error is %T, want Diags", err1)
	}
	for _, x := range d {
		if x.Pos.IsValid() && x.Pos.Offset() > len(text) || x.End.IsValid() && x.End.Offset() > len(text) {
			t.Fatalf("diagnostic %q at %d..%d outside a %d-byte source", x.Msg, x.Pos, x.End, len(text))
		}
	}
	_ = d.Render(src)
}
