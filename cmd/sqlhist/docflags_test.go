package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The markers of a flag block in the README or docs/: between them, a
// code block of the flags as --help prints them.
const (
	flagsBegin = "<!-- sqlhist flags: made from the flag set, as --help prints them; make docs-flags rewrites it -->\n"
	flagsEnd   = "<!-- end of sqlhist flags -->\n"
)

// flagBlock is the code block of the flags, made from the flag set.
func flagBlock() string {
	var o options
	return "```\n" + newFlags(&o, nil).FlagUsagesWrapped(helpColumns) + "```\n"
}

// Every flag block of the README and docs/ is the flag set's, as --help
// prints it (-update, or make docs-flags, rewrites them): a flag added,
// renamed or described anew fails here until the docs say so. docs/run.md
// has one, which lists every flag.
func TestDocFlagBlocks(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	want := flagBlock()
	blocks := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, out := string(data), ""
		for {
			before, rest, ok := strings.Cut(text, flagsBegin)
			if !ok {
				out += text
				break
			}
			got, after, ok := strings.Cut(rest, flagsEnd)
			if !ok {
				t.Fatalf("%s: a flag block without its end marker %q", f, flagsEnd)
			}
			blocks++
			line := strings.Count(out+before, "\n") + 2
			if got != want && !*update {
				t.Errorf("%s:%d: the flag block is not the flag set's (go test ./cmd/sqlhist -run TestDocFlagBlocks -update, or make docs-flags, rewrites it); it is:\n%s\nwant:\n%s", filepath.Base(f), line, got, want)
			}
			out += before + flagsBegin + want + flagsEnd
			text = after
		}
		if *update && out != string(data) {
			if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the flag blocks of %s", f)
		}
	}
	run, _ := os.ReadFile("../../docs/run.md")
	if blocks == 0 || !strings.Contains(string(run), flagsBegin) {
		t.Errorf("docs/run.md has no flag block")
	}
	var o options
	for _, f := range flagDocs(newFlags(&o, nil)) {
		if !strings.Contains(want, "--"+f.Name+" ") {
			t.Errorf("the flag block lacks --%s", f.Name)
		}
	}
}
