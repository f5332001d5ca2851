package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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
	}
}

func testEnvQuiet() env {
	e, _, _ := testEnv(nil, "")
	return e
}
