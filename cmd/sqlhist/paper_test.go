package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/tracefs"
)

// paperKernels are kernels no suite boots: their formats directories in
// testdata/paper have a README of that version (derived from 5.10.262's,
// see testdata/paper/README.md), so what sqlhist does for them is proven
// on paper only.
var paperKernels = []string{"4.19", "5.4", "5.15"}

// versionRE matches a refusal that names the version with the feature.
var versionRE = regexp.MustCompile(`needs Linux [0-9]+\.[0-9]+ \(`)

// TestPaperKernels compiles every golden case that succeeds on 6.1 against
// each paper kernel and compares the outcomes with testdata/paper/outcomes.txt
// (-update rewrites it). A case refused there must be refused only with
// messages that name the feature and the version that has it.
func TestPaperKernels(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/queries/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	var b strings.Builder
	b.WriteString("# What sqlhist does with each golden case that succeeds on 6.1, given the\n" +
		"# formats directories of testdata/paper (go test ./cmd/sqlhist -run TestPaperKernels -update).\n")
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if hasFormats(a) || strings.TrimSpace(section(a, "want/exit")) != "0" {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", name)
		for _, v := range paperKernels {
			res := runPaper(t, a, v)
			if res.code == exitOK {
				form := "accepted"
				switch {
				case strings.Contains(res.stdout, "/synthetic_events"):
					form += ", synthetic events in synthetic_events"
				case strings.Contains(res.stdout, "dynamic_events"):
					form += ", dynamic_events"
				}
				if regexp.MustCompile(`onmatch\([^)]*\)\.[a-z_0-9]+\(`).MatchString(res.stdout) && !strings.Contains(res.stdout, ").trace(") {
					form += ", onmatch().NAME() actions"
				}
				fmt.Fprintf(&b, "  %-5s %s\n", v, form)
				continue
			}
			var msgs []string
			for _, l := range strings.Split(res.stderr, "\n") {
				if m := regexp.MustCompile(`^query\.sql:\d+:\d+: (.*)$`).FindStringSubmatch(l); m != nil {
					if strings.HasPrefix(m[1], "warning: ") {
						continue
					}
					msgs = append(msgs, m[1])
					if !versionRE.MatchString(m[1]) && !strings.Contains(m[1], "was not created") {
						t.Errorf("%s on %s: a refusal that names no feature and version: %s", name, v, m[1])
					}
				}
			}
			if len(msgs) == 0 {
				t.Errorf("%s on %s: exit %d without a positioned error:\n%s", name, v, res.code, res.stderr)
			}
			fmt.Fprintf(&b, "  %-5s refused: %s\n", v, strings.Join(msgs, " | "))
		}
	}
	const file = "../../testdata/paper/outcomes.txt"
	if *update {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Errorf("%s differs (-want +got):\n%s", file, diffLines(string(want), b.String()))
	}
}

// paperFS is a paper kernel's directory (README, FILES, a few formats)
// over every event format of the embedded 5.10: the golden cases use
// events the directories do not copy.
func paperFS(t *testing.T, dir string) fs.FS {
	t.Helper()
	base, err := tracefs.Embedded("5.10")
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{}
	for _, root := range []fs.FS{base, os.DirFS(dir)} {
		err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if root == base && !strings.HasPrefix(p, "events/") {
				return nil // README, FILES, VERSION are the paper kernel's
			}
			data, err := fs.ReadFile(root, p)
			m[p] = &fstest.MapFile{Data: data}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// runPaper compiles a golden case against testdata/paper/linux-V.
func runPaper(t *testing.T, a *txtar.Archive, version string) caseResult {
	t.Helper()
	files := fstest.MapFS{}
	for _, f := range a.Files {
		files[f.Name] = &fstest.MapFile{Data: f.Data}
		if bin, ok := strings.CutPrefix(f.Name, "elf/"); ok {
			data, err := buildELF(string(f.Data))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			files[bin] = &fstest.MapFile{Data: data}
		}
	}
	var args []string
	for _, l := range strings.Split(strings.TrimSpace(section(a, "args")), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			args = append(args, l)
		}
	}
	dir := "../../testdata/paper/linux-" + version
	args = append(args, "--formats", dir, "-f", "query.sql")
	var stdout, stderr bytes.Buffer
	e := env{
		Stdin:  strings.NewReader(""),
		Stdout: &stdout, Stderr: &stderr,
		Dir: func(p string) (fs.FS, error) {
			if p == dir {
				return paperFS(t, dir), nil
			}
			return nil, fs.ErrNotExist
		},
		ReadFile: func(p string) ([]byte, error) { return fs.ReadFile(files, strings.TrimPrefix(p, "/")) },
		Writer:   func(string) tracefs.Writer { t.Fatal("a paper case tried to write to tracefs"); return nil },
	}
	code := run(args, e)
	return caseResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}
