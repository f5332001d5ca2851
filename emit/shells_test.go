package emit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testShell is a shell a printed script may meet on a target: Debian's
// and Ubuntu's /bin/sh, busybox's (initramfs, embedded boards), Android's
// and bash in POSIX mode.
type testShell struct {
	name string
	// bins are the binaries to look for, in order; args go before the
	// script's path.
	bins []string
	args []string
	pkg  string // the Debian package, for the message
}

var testShells = []testShell{
	{name: "dash", bins: []string{"dash"}, pkg: "dash"},
	{name: "busybox-ash", bins: []string{"/bin/busybox", "/usr/bin/busybox", "busybox"}, args: []string{"sh"}, pkg: "busybox-static"},
	{name: "mksh", bins: []string{"mksh"}, pkg: "mksh"},
	{name: "bash-posix", bins: []string{"bash"}, args: []string{"--posix"}, pkg: "bash"},
}

// find returns the shell's binary, or "" when it is not installed.
func (s testShell) find() string {
	for _, b := range s.bins {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// scriptLines are trace lines a printed script must write byte for byte:
// the quoting tests' hostile strings, words every echo takes as options,
// and bytes that shells use inside (ash and dash mark quoting with
// 0x81-0x88).
func scriptLines() []string {
	lines := append([]string{}, hostile...)
	return append(lines,
		"-e", "-E", "-ne", "-nE", "-en", "-n -e", "--", "-", "-:wakeup_lat", "!hist:keys=pid",
		`a\tb`, `\c`, `\0101`, `%d %s %%`, "\x81\x82\x83\x84\x85\x86\x87\x88", "\xff\xfe",
		"$HOME ${IFS} $((1+1)) $0 $# $@", "a'b\"c`d", "trailing space ", " leading", "tab\t\tend\t",
		"hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).trace(wl,next_comm,$lat) if next_comm ~ \"a*'\\\\\"",
		"touch pwned; touch pwned2", "$(touch pwned)", "`touch pwned`", "x\n$(touch pwned)\ny")
}

// TestScriptsUnderShells runs printed scripts under each shell of
// testShells, with a root standing in for tracefs (a temporary directory
// whose name needs quoting too), and checks that the bytes each file
// receives are the commands' lines, each with its newline, in order, and
// that nothing else ran. A shell that is not installed fails the test
// when CI=true (make unit installs them: tools/test-shells); elsewhere
// its subtest is skipped with the reason.
func TestScriptsUnderShells(t *testing.T) {
	lines := scriptLines()
	var cmds []Command
	files := []string{"dynamic_events", "events/sched/sched_switch/trigger", "instances/a/events/synthetic/x/enable"}
	for i, l := range lines {
		cmds = append(cmds, Command{Kind: KindTrigger, File: files[i%len(files)], Line: l})
	}
	cmds = append(cmds, Command{Kind: KindDir, File: "instances/$(touch pwned)", Line: "mkdir"})
	for _, sh := range testShells {
		t.Run(sh.name, func(t *testing.T) {
			bin := sh.find()
			if bin == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed (Debian package %s): make unit installs it (go run ./tools/test-shells)", sh.name, sh.pkg)
				}
				t.Skipf("%s is not installed (Debian package %s; go run ./tools/test-shells installs it)", sh.name, sh.pkg)
			}
			dir := t.TempDir()
			root := filepath.Join(dir, "trace fs 'x' $(touch pwned) \\")
			for _, f := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var script bytes.Buffer
			notes := []string{"a note\n$(touch pwned)", "it's `touch pwned`"}
			if err := Print(&script, cmds, PrintOptions{Root: root, Notes: notes}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "script.sh")
			os.WriteFile(path, script.Bytes(), 0o644)
			cmd := exec.Command(bin, append(append([]string{}, sh.args...), path)...)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Fatalf("%s %v: %v\n%s", bin, sh.args, err, stderr.String())
			}
			want := map[string]string{}
			for _, c := range cmds {
				if c.Kind != KindDir {
					want[c.File] += c.Line + "\n"
				}
			}
			for _, f := range files {
				got, err := os.ReadFile(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want[f] {
					wl, gl := strings.SplitAfter(want[f], "\n"), strings.SplitAfter(string(got), "\n")
					for i := range min(len(wl), len(gl)) {
						if wl[i] != gl[i] {
							t.Errorf("%s: %s line %d is %q, want %q", sh.name, f, i+1, gl[i], wl[i])
							break
						}
					}
					t.Errorf("%s: %s holds %d bytes, want %d", sh.name, f, len(got), len(want[f]))
				}
			}
			// Nothing ran: no file but the script and the root's tree.
			var extra []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && p != path && !strings.HasPrefix(p, root+string(filepath.Separator)) {
					extra = append(extra, p)
				}
				return nil
			})
			if len(extra) > 0 {
				t.Errorf("%s: the script made files it should not: %v", sh.name, extra)
			}
		})
	}
}
