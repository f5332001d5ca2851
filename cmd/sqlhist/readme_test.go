package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/internal/execfile"
)

// docCommand is an sqlhist command shown in a code block of the README
// or a page of docs/.
type docCommand struct {
	file string
	line int
	text string
	// whyNot is the reason the code block's commands that cannot run
	// here are not run, from a "<!-- not run here: … -->" line right
	// before the block.
	whyNot string
}

// notRunMark starts the comment that says why a block's commands are
// not run here.
const notRunMark = "<!-- not run here: "

// docCommands reads the sqlhist commands of the README and docs/*.md:
// the lines of ``` blocks that start with sqlhist, sudo sqlhist or go run
// ./cmd/sqlhist, with their continuation lines (a trailing backslash, or
// a quote still open).
func docCommands(t *testing.T) []docCommand {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	start := regexp.MustCompile(`^(\$ )?(sudo )?(sqlhist|go run \./cmd/sqlhist)( |$)`)
	var out []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, flags, cur := false, false, (*docCommand)(nil)
		prev, why := "", ""
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			l := sc.Text()
			switch {
			case l+"\n" == flagsBegin:
				flags = true // a flag block: no commands
			case l+"\n" == flagsEnd:
				flags = false
			}
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				if !in {
					why = ""
					if r, ok := strings.CutPrefix(prev, notRunMark); ok {
						why = strings.TrimSuffix(r, " -->")
					}
				}
				in, cur = !in, nil
				continue
			}
			prev = l
			if !in || flags {
				continue
			}
			if cur != nil {
				cur.text += "\n" + l
			} else if start.MatchString(strings.TrimSpace(l)) {
				out = append(out, docCommand{file: filepath.Base(f), line: n, text: strings.TrimPrefix(strings.TrimSpace(l), "$ "), whyNot: why})
				cur = &out[len(out)-1]
			}
			if cur != nil && !strings.HasSuffix(cur.text, "\\") && strings.Count(cur.text, "'")%2 == 0 {
				cur = nil
			}
		}
	}
	return out
}

// needsTarget reports whether a command needs a kernel's tracefs (root,
// -e, -r, --cleanup, -p, --via, a file of the reader's): those run in the
// kernel suite's guests, not here.
func needsTarget(cmd string) bool {
	f := strings.Fields(cmd)
	for _, w := range f {
		switch {
		case w == "sudo", w == "-e", w == "--execute", w == "-r", w == "--run", w == "--cleanup", w == "-p",
			w == "--via", w == "--via-file", w == "--plan", w == "--initrd", w == "-f", w == "merge", w == "heatmap", strings.HasPrefix(w, "-r"), w == "-B":
			return true
		}
	}
	return false
}

// Every sqlhist command the README and docs/ show that prints (no root,
// no target) runs here and succeeds: against an embedded catalog, with
// this machine's tracefs hidden. One that needs a target is compiled as
// it would print (the kernel suite's guests run their kind); one that
// cannot be (no query, a file of the reader's) is in a block marked
// "<!-- not run here: REASON -->", which says where it is run instead.
func TestDocCommands(t *testing.T) {
	cmds := docCommands(t)
	// The README starts with what a newcomer runs: a query printed on an
	// embedded catalog, without root, and the tests.
	readme, _ := os.ReadFile("../../README.md")
	first, _, _ := strings.Cut(strings.SplitN(string(readme), "```sh\n", 2)[1], "```")
	if l := strings.Split(strings.TrimSpace(first), "\n"); len(l) != 2 || !strings.HasPrefix(l[0], "go run ./cmd/sqlhist --kernel ") || l[1] != "make test" ||
		len(cmds) == 0 || cmds[0].text != l[0] || needsTarget(cmds[0].text) {
		t.Errorf("the README's first block is not the printing command and make test:\n%s", first)
	}
	// Before them, what make test needs and how long it takes, as
	// docs/testing.md measured it (its warm and cold times, in minutes).
	intro, _, _ := strings.Cut(string(readme), "```sh\n")
	intro = strings.Join(strings.Fields(intro), " ")
	testing, _ := os.ReadFile("../../docs/testing.md")
	for _, c := range []struct{ re, says string }{
		{`\*\*Warm\*\*[^*]*\*\*(\d+) s\*\*`, "about %d minutes with warm caches"},
		{`\*\*Cold\*\*[^*]*\*\*(\d+) s\*\*`, "%d from cold"},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(string(testing))
		if m == nil {
			t.Errorf("docs/testing.md has no time matching %s", c.re)
			continue
		}
		s, _ := strconv.Atoi(m[1])
		if want := fmt.Sprintf(c.says, (s+30)/60); !strings.Contains(intro, want) {
			t.Errorf("the README's start does not say %q (docs/testing.md: %d s):\n%s", want, s, intro)
		}
	}
	for _, want := range []string{"make test", "root", "apt-get", "qemu", "the network", "builds two kernels", "2 cores"} {
		if !strings.Contains(intro, want) {
			t.Errorf("the README's start does not say %q:\n%s", want, intro)
		}
	}
	if len(cmds) < 5 {
		t.Fatalf("only %d commands found in the README and docs/", len(cmds))
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sqlhist")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	// "go run ./cmd/sqlhist" is the built binary too.
	if err := execfile.Write(filepath.Join(dir, "go"), []byte("#!/bin/sh\nshift 2\nexec "+bin+" \"$@\"\n")); err != nil {
		t.Fatal(err)
	}
	// A command that needs a target is compiled as printing would: an
	// sqlhist that drops a run's flags (-r, -d, -i, -o, --out,
	// --metrics, --engine, --events, --live) and --via, for Debian's newest
	// embedded kernel unless it names one; sudo runs it as it is.
	pdir := t.TempDir()
	if err := execfile.Write(filepath.Join(pdir, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n")); err != nil {
		t.Fatal(err)
	}
	if err := execfile.Write(filepath.Join(pdir, "sqlhist"), []byte(`#!/bin/sh
k="--kernel 7.2"
n=$#
while [ $n -gt 0 ]; do
	a=$1; shift; n=$((n-1))
	case $a in
	-r|--run|--events|--live) ;;
	-d|-i|-o|--out|--metrics|--engine|--via) shift; n=$((n-1)) ;;
	--kernel|--formats) k=; set -- "$@" "$a" ;;
	*) set -- "$@" "$a" ;;
	esac
done
exec `+bin+` $k "$@"
`)); err != nil {
		t.Fatal(err)
	}
	ran, printed, skipped := 0, 0, 0
	for _, c := range cmds {
		path := dir
		if needsTarget(c.text) {
			// (A shell comment after the command is not its words.)
			words := regexp.MustCompile(`(?m)\s#[^']*$`).ReplaceAllString(c.text, "")
			if regexp.MustCompile(`--cleanup|\bmerge\b|\bheatmap\b| -f |--plan|--via-file| -p |--initrd`).MatchString(words) {
				// No query to print, or a file of the reader's.
				if c.whyNot == "" {
					t.Errorf("%s:%d: %s\ncannot run here and its block does not say why (%sREASON -->)", c.file, c.line, c.text, notRunMark)
				}
				skipped++
				continue
			}
			path = pdir
			printed++
		} else {
			ran++
		}
		cmd := exec.Command("sh", "-c", c.text)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PATH="+path+":"+os.Getenv("PATH"), "SQLHIST_CACHE_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s:%d: %s\n%v:\n%s", c.file, c.line, c.text, err, out)
		}
	}
	t.Logf("%d commands run as shown; %d that need a target compiled as printed; %d not run, each marked why (files of the reader's, --cleanup, merge, heatmap)", ran, printed, skipped)
	if skipped > printed {
		t.Errorf("%d commands not run at all, more than the %d compiled", skipped, printed)
	}
}
