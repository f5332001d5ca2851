package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/tracefs"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of testdata/queries/*.txtar")

// A golden case is testdata/queries/NAME.txtar with these files:
//
//	query.sql            the SQL, read with -f query.sql
//	args                 optional extra flags, one per line
//	tracefs/...          optional event formats (then --formats tracefs;
//	                     otherwise the embedded 6.1 catalog)
//	elf/PATH             a binary at /PATH for uprobes, described as
//	                     "SYMBOL ADDRESS" lines (see buildELF)
//	want/commands.sh     expected stdout
//	want/teardown.sh     expected stdout with --teardown (successful cases)
//	want/stderr          expected stderr
//	want/exit            expected exit code
//	want/plan.json       expected stdout with -o json (successful cases)
//	want/bootconfig      expected stdout with -o bootconfig, or
//	want/bootconfig.err  its stderr when boot-time tracing cannot do it
//	want/K/commands.sh   expected stdout when compiled against the catalog
//	want/K/stderr        of kernel K (5.10, 6.12, 7.2, 6.1-arm64, …, 6.1-armhf),
//	want/K/exit          only where it differs from the 6.1 result
//
// A line of query.sql may end in -- ERROR "regexp": some error must be
// reported on that line with a matching message.
const goldenKernel = "6.1"

// otherKernels are the other embedded catalogs every case is compiled
// against, so that differences between kernels show as different output.
// A name with an architecture, 6.1-arm64, is the embedded catalog of that
// kernel on it (--kernel 6.1 --arch arm64), as the kernel suite names the
// kernels it boots.
var otherKernels = []string{"5.10", "6.12", "7.2", "6.1-arm64", "6.12-arm64", "7.2-arm64", "6.1-armhf"}

type caseResult struct {
	stdout, stderr string
	code           int
	// What --teardown-out teardown.out and --plan-out plan.out wrote.
	teardownOut, planOut string
}

func runCase(t *testing.T, a *txtar.Archive, extra ...string) caseResult {
	return runCaseOn(t, a, goldenKernel, extra...)
}

func runCaseOn(t *testing.T, a *txtar.Archive, kernel string, extra ...string) caseResult {
	t.Helper()
	files := fstest.MapFS{}
	hasFormats := false
	for _, f := range a.Files {
		files[f.Name] = &fstest.MapFile{Data: f.Data}
		if strings.HasPrefix(f.Name, "tracefs/") {
			hasFormats = true
		}
		if bin, ok := strings.CutPrefix(f.Name, "elf/"); ok {
			data, err := buildELF(string(f.Data))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			files[bin] = &fstest.MapFile{Data: data}
		}
	}
	var args []string
	if data, ok := files["args"]; ok {
		for _, l := range strings.Split(strings.TrimSpace(string(data.Data)), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				args = append(args, l)
			}
		}
	}
	if hasFormats {
		args = append(args, "--formats", "tracefs")
	} else if version, arch, ok := strings.Cut(kernel, "-"); ok {
		args = append(args, "--kernel", version, "--arch", arch)
	} else {
		args = append(args, "--kernel", kernel)
	}
	args = append(args, extra...)
	args = append(args, "-f", "query.sql")
	var stdout, stderr bytes.Buffer
	var res caseResult
	e := env{
		ReplaceFile: func(p string, data []byte) error {
			switch p {
			case "teardown.out":
				res.teardownOut = string(data)
			case "plan.out":
				res.planOut = string(data)
			default:
				t.Errorf("a golden case wrote %s", p)
			}
			return nil
		},
		Stdin:  strings.NewReader(""),
		Stdout: &stdout, Stderr: &stderr,
		Dir: func(p string) (fs.FS, error) {
			if p == "/sys/kernel/tracing" {
				return nil, fs.ErrNotExist // never the machine's tracefs
			}
			return fs.Sub(files, p)
		},
		// Absolute paths (uprobe binaries) are served from the archive's root.
		ReadFile: func(p string) ([]byte, error) { return fs.ReadFile(files, strings.TrimPrefix(p, "/")) },
		Writer:   func(string) tracefs.Writer { t.Fatal("a golden case tried to write to tracefs"); return nil },
	}
	res.code = run(args, e)
	res.stdout, res.stderr = stdout.String(), stderr.String()
	return res
}

// replayPlan runs sqlhist --plan on a JSON plan, printing.
func replayPlan(plan string, args ...string) caseResult {
	e, stdout, stderr := testEnv(nil, "")
	e.ReadFile = func(string) ([]byte, error) { return []byte(plan), nil }
	var res caseResult
	e.ReplaceFile = func(p string, data []byte) error { res.teardownOut = p + ":" + string(data); return nil }
	res.code = run(append([]string{"--plan", "plan.json"}, args...), e)
	res.stdout, res.stderr = stdout.String(), stderr.String()
	return res
}

func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/queries/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runCase(t, a)
			again := runCase(t, a)
			if got != again {
				t.Fatalf("nondeterministic output:\n%+v\nthen\n%+v", got, again)
			}
			want := map[string]string{
				"want/commands.sh": got.stdout,
				"want/stderr":      got.stderr,
				"want/exit":        strconv.Itoa(got.code) + "\n",
			}
			if got.code == exitOK {
				td := runCase(t, a, "--teardown")
				if td.code != exitOK {
					t.Errorf("--teardown failed with exit %d: %s", td.code, td.stderr)
				}
				want["want/teardown.sh"] = td.stdout
				plan := runCase(t, a, "-o", "json")
				if plan.code != exitOK {
					t.Errorf("-o json failed with exit %d: %s", plan.code, plan.stderr)
				}
				want["want/plan.json"] = plan.stdout
				// Replayed, the plan prints the script and its teardown,
				// byte for byte (the compiler's warnings are not replayed).
				if r := replayPlan(plan.stdout); r.code != exitOK || r.stdout != got.stdout {
					t.Errorf("--plan of want/plan.json printed\n%+v\nwant the script\n%+v", r, got)
				}
				if r := replayPlan(plan.stdout, "--teardown"); r.code != exitOK || r.stdout != td.stdout {
					t.Errorf("--plan --teardown of want/plan.json printed\n%+v\nwant the teardown\n%+v", r, td)
				}
				// One compile writes the three: the script printed, its
				// teardown and its plan saved, each as printed alone.
				all := runCase(t, a, "--teardown-out", "teardown.out", "--plan-out", "plan.out")
				if all.code != exitOK || all.stdout != got.stdout || all.stderr != got.stderr || all.teardownOut != td.stdout || all.planOut != plan.stdout {
					t.Errorf("--teardown-out and --plan-out gave\n%+v\nwant the script, the teardown and the plan of\n%+v\n%+v\n%+v", all, got, td, plan)
				}
				if r := replayPlan(plan.stdout, "--teardown-out", "teardown.out"); r.code != exitOK || r.stdout != got.stdout || r.teardownOut != "teardown.out:"+td.stdout {
					t.Errorf("--plan with --teardown-out printed\n%+v\nwant the script\n%+v", r, got)
				}
				boot := runCase(t, a, "-o", "bootconfig")
				if boot.code == exitOK {
					want["want/bootconfig"] = boot.stdout
				} else {
					want["want/bootconfig.err"] = boot.stderr
				}
			}
			for _, k := range otherKernels {
				if hasFormats(a) {
					break
				}
				other := runCaseOn(t, a, k)
				// The target line names each kernel: a kernel has a
				// script of its own only when the commands differ.
				if withoutTarget(other.stdout) != withoutTarget(got.stdout) {
					want["want/"+k+"/commands.sh"] = other.stdout
				}
				if other.stderr != got.stderr {
					want["want/"+k+"/stderr"] = other.stderr
				}
				if other.code != got.code {
					want["want/"+k+"/exit"] = strconv.Itoa(other.code) + "\n"
				}
			}
			checkInlineErrors(t, a, got.stderr)
			if *update {
				updateArchive(a, want)
				if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, k := range sortedKeys(want) {
				if w := section(a, k); w != want[k] {
					t.Errorf("%s differs (-want +got):\n%s", k, diffLines(w, want[k]))
				}
			}
			for _, f := range a.Files {
				if strings.HasPrefix(f.Name, "want/") {
					if _, ok := want[f.Name]; !ok {
						t.Errorf("%s present but the case produced no such output", f.Name)
					}
				}
			}
		})
	}
}

// targetLine is a printed script's first line, naming the kernel and
// catalog it was compiled for.
var targetLine = regexp.MustCompile(`(?m)^# sqlhist: compiled for .*\n`)

// withoutTarget is a script without its target line.
func withoutTarget(script string) string { return targetLine.ReplaceAllString(script, "") }

var errorComment = regexp.MustCompile(`--\s*ERROR\s+"((?:[^"\\]|\\.)*)"`)

// checkInlineErrors matches -- ERROR "re" comments in query.sql against the
// rendered diagnostics ("query.sql:LINE:COL: message").
func checkInlineErrors(t *testing.T, a *txtar.Archive, stderr string) {
	t.Helper()
	q := section(a, "query.sql")
	diagRE := regexp.MustCompile(`(?m)^query\.sql:(\d+):\d+: (.*)$`)
	got := map[int][]string{}
	for _, m := range diagRE.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		got[n] = append(got[n], m[2])
	}
	expected := 0
	for i, line := range strings.Split(q, "\n") {
		for _, m := range errorComment.FindAllStringSubmatch(line, -1) {
			expected++
			checkOne(t, i+1, m[1], got)
		}
	}
	if expected > 0 {
		for line, msgs := range got {
			for _, m := range msgs {
				if !strings.HasPrefix(m, "warning:") {
					t.Errorf("query.sql:%d: unexpected error: %s", line, m)
				}
			}
		}
	}
}

// checkOne consumes the first diagnostic of the line matching the pattern.
func checkOne(t *testing.T, line int, pattern string, got map[int][]string) {
	t.Helper()
	re, err := regexp.Compile(strings.ReplaceAll(pattern, `\"`, `"`))
	if err != nil {
		t.Errorf("query.sql:%d: bad ERROR pattern: %v", line, err)
		return
	}
	for j, msg := range got[line] {
		if re.MatchString(msg) {
			got[line] = append(got[line][:j], got[line][j+1:]...)
			return
		}
	}
	t.Errorf("query.sql:%d: no error matching %q (got %q)", line, re, got[line])
}

func section(a *txtar.Archive, name string) string {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

func updateArchive(a *txtar.Archive, want map[string]string) {
	var files []txtar.File
	for _, f := range a.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			files = append(files, f)
		}
	}
	for _, k := range sortedKeys(want) {
		if want[k] == "" && k != "want/exit" {
			continue
		}
		files = append(files, txtar.File{Name: k, Data: []byte(want[k])})
	}
	a.Files = files
}

func sortedKeys(m map[string]string) []string {
	order := []string{"want/commands.sh", "want/teardown.sh", "want/stderr", "want/exit",
		"want/plan.json", "want/bootconfig", "want/bootconfig.err"}
	for _, k := range otherKernels {
		order = append(order, "want/"+k+"/commands.sh", "want/"+k+"/stderr", "want/"+k+"/exit")
	}
	var out []string
	for _, k := range order {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func hasFormats(a *txtar.Archive) bool {
	for _, f := range a.Files {
		if strings.HasPrefix(f.Name, "tracefs/") {
			return true
		}
	}
	return false
}

// diffLines is a small line diff for test failures.
func diffLines(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "-%s\n+%s\n", w, g)
		}
	}
	return b.String()
}
