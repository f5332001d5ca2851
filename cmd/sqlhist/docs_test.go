package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sqlhist/sqlhist/cmd/sqlhist/internal/cli"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// --help fits 80 columns, lists every flag, the commands (merge among
// them) and the exit codes; so does merge --help.
func TestHelpFits(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"merge", "--help"}} {
		e, stdout, _ := testEnv(nil, "")
		if code := run(args, e); code != exitOK {
			t.Fatalf("%q: exit %d", args, code)
		}
		for i, l := range strings.Split(stdout.String(), "\n") {
			if n := utf8.RuneCountInString(l); n > helpColumns {
				t.Errorf("%q line %d is %d columns: %q", args, i+1, n, l)
			}
		}
	}
	e, stdout, _ := testEnv(nil, "")
	run([]string{"--help"}, e)
	help := stdout.String()
	for _, want := range []string{"merge ", "man ", "completion ", "exit status: 0 ok, 1 bad query or failed apply, 2 bad usage", "--via-trace", "libtracefs"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not say %q", want)
		}
	}
	var o options
	for _, f := range flagDocs(newFlags(&o, nil)) {
		if !strings.Contains(help, "--"+f.Name+" ") && !strings.Contains(help, "--"+f.Name+"\n") {
			t.Errorf("--help does not list --%s", f.Name)
		}
	}
}

// sqlhist man is a man page with every flag of --help, and man(1)
// renders it without a warning when groff is there.
func TestManPage(t *testing.T) {
	e, stdout, stderr := testEnv(nil, "")
	if code := run([]string{"man"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := stdout.String()
	for _, want := range []string{".TH SQLHIST 1", ".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS", ".SH EXIT STATUS", ".SH EXAMPLES"} {
		if !strings.Contains(page, want+"\n") && !strings.Contains(page, want+" ") {
			t.Errorf("the man page has no %q", want)
		}
	}
	var o options
	for _, f := range flagDocs(newFlags(&o, nil)) {
		if !strings.Contains(page, `\fB\-\-`+strings.ReplaceAll(f.Name, "-", `\-`)+`\fR`) {
			t.Errorf("the man page does not list --%s", f.Name)
		}
	}
	e2, again, _ := testEnv(nil, "")
	run([]string{"man"}, e2)
	if again.String() != page {
		t.Error("the man page is not the same twice")
	}
	// Arguments are named as --help names them, not by their Go type.
	for _, want := range []string{`\fB\-\-metrics\-series\fR \fIN\fR`, `\fB\-\-via\-jobs\fR \fIN\fR`, `\fB\-\-name\fR \fINAME\fR`} {
		if !strings.Contains(page, want) {
			t.Errorf("the man page has no %q", want)
		}
	}
	for _, typ := range []string{`\fIint\fR`, `\fIstring\fR`, `\fIduration\fR`} {
		if strings.Contains(page, typ) {
			t.Errorf("the man page names an argument %s", typ)
		}
	}
	// The examples fit 80 columns: as written (in the section's indent
	// of 7 and the example's of 4), and as groff renders them.
	_, examples, _ := strings.Cut(page, ".SH EXAMPLES\n")
	examples, _, _ = strings.Cut(examples, "\n.SH ")
	unroff := strings.NewReplacer(`\-`, "-", `\e`, `\`, `\&`, "")
	n := 0
	for _, l := range strings.Split(examples, "\n") {
		if strings.HasPrefix(l, ".") {
			continue
		}
		n++
		if w := 11 + utf8.RuneCountInString(unroff.Replace(l)); w > 80 && strings.HasPrefix(l, "  ") {
			t.Errorf("an example is %d columns: %q", w, l)
		}
	}
	if n < 8 {
		t.Errorf("only %d lines of EXAMPLES:\n%s", n, examples)
	}
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("no groff to render it")
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	var warn bytes.Buffer
	cmd.Stderr = &warn
	if err := cmd.Run(); err != nil || warn.Len() > 0 {
		t.Errorf("groff: %v: %s", err, warn.String())
	}
	cmd = exec.Command("groff", "-man", "-Tutf8", "-rLL=80n", "-P-cbou")
	cmd.Stdin = strings.NewReader(page)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("groff: %v", err)
	}
	_, shown, _ := strings.Cut(string(out), "\nEXAMPLES\n")
	shown, _, _ = strings.Cut(shown, "\nSEE ALSO\n")
	if !strings.Contains(shown, "sqlhist --cleanup") {
		t.Errorf("no EXAMPLES rendered:\n%s", out)
	}
	for _, l := range strings.Split(shown, "\n") {
		if w := utf8.RuneCountInString(l); w > 80 {
			t.Errorf("a rendered line of EXAMPLES is %d columns: %q", w, l)
		}
	}
}

// The bash completion completes flags, and events from the catalog the
// command line names (an sqlhist on PATH lists them); zsh and fish
// scripts are checked by their shells when installed.
func TestCompletion(t *testing.T) {
	if code := run([]string{"completion", "tcsh"}, testEnvQuiet()); code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", code, exitUsage)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sqlhist")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		e, stdout, stderr := testEnv(nil, "")
		if code := run([]string{"completion", sh}, e); code != exitOK {
			t.Fatalf("completion %s: exit %d: %s", sh, code, stderr)
		}
		script := filepath.Join(dir, "sqlhist."+sh)
		os.WriteFile(script, stdout.Bytes(), 0o644)
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("no %s: its completion is not run", sh)
			continue
		}
		check := exec.Command(sh, "-n", script)
		if sh == "fish" {
			check = exec.Command(sh, "--no-execute", script)
		}
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v: %s", sh, err, out)
		}
		if sh == "fish" {
			cmd := exec.Command("fish", "-c", "source "+script+"; complete -C 'sqlhist --kernel 6.1 --describe sched_swi'")
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "sched_switch\t") {
				t.Errorf("fish: --describe sched_swi on 6.1 completes to %q (%v), want sched_switch", out, err)
			}
			// The values of the flags with a fixed set, -o's by the
			// command line (fish sorts them).
			for line, want := range map[string]string{
				"sqlhist --kernel 6.": "6.1 6.12", "sqlhist --arch ar": "arm arm64", "sqlhist -o ": "bootconfig json script",
				"sqlhist -r -o ": "csv folded json pprof table", "sqlhist merge -o ": "csv json table", "sqlhist completion ": "bash fish zsh",
			} {
				out, err := exec.Command("fish", "-c", "source "+script+"; complete -C '"+line+"'").CombinedOutput()
				var got []string
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					v, _, _ := strings.Cut(l, "\t")
					got = append(got, v)
				}
				if err != nil || strings.Join(got, " ") != want {
					t.Errorf("fish: %q completes to %q (%v), want %s", line, out, err, want)
				}
			}
		}
		if sh == "zsh" {
			// -o's action, run with the words of a command line and a
			// compadd that prints what it is given.
			_, action, _ := strings.Cut(stdout.String(), ":format:{")
			action, _, _ = strings.Cut(action, "}' \\\n")
			for words, want := range map[string]string{"sqlhist -o": "script json bootconfig", "sqlhist -r -d 1 -o": "table json csv folded pprof", "sqlhist merge -o": "table json csv"} {
				out, err := exec.Command("zsh", "-fc", "compadd() { shift; print -r -- \"$*\" }; words=("+words+" ''); "+action).CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != want {
					t.Errorf("zsh: -o after %q offers %q (%v), want %s", words, out, err, want)
				}
			}
		}
		if sh != "bash" {
			continue
		}
		complete := func(words ...string) string {
			prog := "source " + script + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
				"$((${#COMP_WORDS[@]}-1)); _sqlhist; printf '%s\\n' \"${COMPREPLY[@]}\""
			cmd := exec.Command("bash", "-c", prog)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%q: %v: %s", words, err, out)
			}
			return string(out)
		}
		if got := complete("sqlhist", "--desc"); got != "--describe\n" {
			t.Errorf("--desc completes to %q, want --describe", got)
		}
		if got := complete("sqlhist", "--kernel", "6.1", "--describe", "sched_swi"); got != "sched_switch\n" {
			t.Errorf("--describe sched_swi on 6.1 completes to %q, want sched_switch", got)
		}
		if got := complete("sqlhist", "--kernel", "6.1", "--list-events", "sched_wak"); !strings.Contains(got, "sched_waking\n") {
			t.Errorf("--list-events sched_wak on 6.1 completes to %q, want sched_waking among them", got)
		}
		if got := complete("sqlhist", "mer"); got != "merge\n" {
			t.Errorf("mer completes to %q, want merge", got)
		}
		// The values of the flags with a fixed set: -o's are those of
		// printing, or with -r those of the results.
		for _, c := range []struct {
			words []string
			want  string
		}{
			{[]string{"sqlhist", "--kernel", "''"}, strings.Join(cli.EmbeddedVersions(), "\n")},
			{[]string{"sqlhist", "--kernel", "6."}, "6.1\n6.12"},
			{[]string{"sqlhist", "--arch", "ar"}, "arm64\narm"},
			{[]string{"sqlhist", "--engine", "''"}, "auto\nbpf\nkernel\nstream\nawk"},
			{[]string{"sqlhist", "-o", "''"}, "script\njson\nbootconfig"},
			{[]string{"sqlhist", "--output", "b"}, "bootconfig"},
			{[]string{"sqlhist", "-r", "-d", "5", "-o", "''"}, "table\njson\ncsv\nfolded\npprof"},
			{[]string{"sqlhist", "--run", "--output", "f"}, "folded"},
			{[]string{"sqlhist", "completion", "''"}, "bash\nzsh\nfish"},
			{[]string{"sqlhist", "merge", "-o", "''"}, "table\njson\ncsv"},
		} {
			if got := complete(c.words...); got != c.want+"\n" {
				t.Errorf("%q completes to %q, want %q", c.words, got, c.want)
			}
		}
	}
}

// Every flag with a fixed set of values has them in each shell's
// completion (-o with both sets), and the values are those the flags
// take: each --kernel compiles, each --arch with a catalog of it, each
// --engine and -o format passes the checks of the command line.
func TestCompletionValues(t *testing.T) {
	var o options
	flags := flagDocs(newFlags(&o, nil))
	with := map[string]cli.Flag{}
	for _, f := range flags {
		if len(f.Values) > 0 {
			with[f.Name] = f
		}
		if (f.Arg == "int" || f.Arg == "string" || f.Arg == "duration") || f.Arg != strings.ToUpper(f.Arg) {
			t.Errorf("--%s's argument is named %q, not a word in capitals", f.Name, f.Arg)
		}
	}
	for _, n := range []string{"kernel", "arch", "engine", "output"} {
		if len(with[n].Values) == 0 {
			t.Errorf("--%s has no values to complete", n)
		}
	}
	if len(with) != 4 || with["output"].RunValues == nil {
		t.Errorf("flags with values: %v (want kernel, arch, engine, output, with -r's formats)", with)
	}
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		e, stdout, _ := testEnv(nil, "")
		if code := run([]string{"completion", sh}, e); code != exitOK {
			t.Fatalf("completion %s: exit %d", sh, code)
		}
		scripts[sh] = stdout.String()
	}
	for name, f := range with {
		vs := strings.Join(f.Values, " ")
		want := map[string][]string{
			"bash": {`COMPREPLY=($(compgen -W "` + vs + `" -- "$cur"))`},
			"zsh":  {":" + strings.ToLower(f.Arg) + ":(" + vs + ")"},
			"fish": {"complete -c sqlhist -l " + name + " -x -a '" + vs + "'"},
		}
		if f.RunValues != nil {
			rs := strings.Join(f.RunValues, " ")
			want = map[string][]string{
				"bash": {`if _sqlhist_run; then COMPREPLY=($(compgen -W "` + rs + `" -- "$cur")); else COMPREPLY=($(compgen -W "` + vs + `" -- "$cur")); fi`,
					`if [[ ${COMP_WORDS[1]} == merge ]]; then COMPREPLY=($(compgen -W "table json csv" -- "$cur")); elif _sqlhist_run`},
				"zsh": {"then compadd - " + rs + "; else compadd - " + vs + "; fi}", "{if (( ${words[(I)merge]} )); then compadd - table json csv; elif "},
				"fish": {"\t\tprintf '%s\\n' " + rs + "\n\telse\n\t\tprintf '%s\\n' " + vs + "\n", "complete -c sqlhist -l " + name + " -s o -x -a '(__sqlhist_" + name + "_values)'",
					"if __fish_seen_subcommand_from merge\n\t\tprintf '%s\\n' table json csv\n\telse if"},
			}
		}
		for sh, ws := range want {
			for _, w := range ws {
				if !strings.Contains(scripts[sh], w) {
					t.Errorf("the %s completion lacks --%s's values: no %q", sh, name, w)
				}
			}
		}
	}
	for _, v := range with["kernel"].Values {
		e, _, stderr := testEnv(nil, "")
		if code := run([]string{"--kernel", v, "--list-events", "sched_switch"}, e); code != exitOK {
			t.Errorf("--kernel %s: exit %d: %s", v, code, stderr)
		}
	}
	for _, a := range with["arch"].Values {
		e, _, stderr := testEnv(nil, "")
		if code := run([]string{"--arch", a, "--list-events", "sched_switch"}, e); code != exitOK {
			t.Errorf("--arch %s: exit %d: %s", a, code, stderr)
		}
	}
	for _, v := range with["engine"].Values {
		if _, err := live.PickEngine(v, tracefs.Features{}); err != nil {
			t.Errorf("--engine %s: %v", v, err)
		}
	}
	for _, v := range with["output"].MergeValues {
		e, _, stderr := testEnv(nil, "")
		if code := run([]string{"merge", "-o", v, "missing.json"}, e); code == exitUsage || strings.Contains(stderr.String(), "-o") {
			t.Errorf("merge -o %s: exit %d: %s", v, code, stderr)
		}
	}
	given := func(string) bool { return false }
	for _, run := range []bool{false, true} {
		vs := with["output"].Values
		if run {
			vs = with["output"].RunValues
		}
		for _, v := range vs {
			c := cli.Choices{Run: run, Output: v, Out: "f"}
			if err := c.Check(given); err != nil {
				t.Errorf("-o %s (run %v): %v", v, run, err)
			}
		}
	}
}

func testEnvQuiet() env {
	e, _, _ := testEnv(nil, "")
	return e
}
