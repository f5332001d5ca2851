package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// viaResync brings a shell that a cut session left in the middle of a
// line back to reading commands: the answer's begin marker is printed
// whatever was cut, in the shells a target runs.
func TestViaResync(t *testing.T) {
	cuts := []string{
		"",                        // nothing was cut
		"R 1 5 \"abc",             // an open double quote
		"R 3 7 \"x\n\"y\n\"z",     // a request with newlines, cut inside the next
		"R 1 5 'abc",              // an open single quote
		"C=abc\\",                 // a line continuation
		"R 2 9 \\'\\\"x\\ \\",     // escaped quotes, then a continuation
		"echo not-a-marker; R 4 ", // a line cut between words
	}
	shells := 0
	for _, sh := range []string{"dash", "bash", "busybox sh", "mksh"} {
		if _, err := exec.LookPath(strings.Fields(sh)[0]); err != nil {
			continue
		}
		shells++
		for _, cut := range cuts {
			cmd := exec.Command("sh", "-c", sh)
			cmd.Stdin = strings.NewReader(cut + viaResync + "echo via-begin-$((6*7))\necho answer\n")
			out, _ := cmd.CombinedOutput()
			_, after, ok := strings.Cut(string(out), "via-begin-42\n")
			if !ok || after != "answer\n" {
				t.Errorf("%s after %q: %q", sh, cut, out)
			}
		}
	}
	if shells == 0 {
		t.Fatal("no shell to try")
	}
}

// ConsoleDumps picks ViaGuest.Dump's dumps out of a console, each whole,
// and a last one cut by the guest's end as it is.
func TestConsoleDumps(t *testing.T) {
	console := "boot\n== sqlhist-via-dump at 5.5 s\n-- 95 S wchan do_wait: sh /dev/ttyS1\n== end of sqlhist-via-dump\nnoise\n" +
		"== sqlhist-via-dump at 70.1 s\n-- 95 S wchan wait_woken: sh /dev/ttyS1\n"
	want := "== sqlhist-via-dump at 5.5 s\n-- 95 S wchan do_wait: sh /dev/ttyS1\n== end of sqlhist-via-dump\n" +
		"== sqlhist-via-dump at 70.1 s\n-- 95 S wchan wait_woken: sh /dev/ttyS1\n"
	if got := vm.ConsoleDumps(console); got != want {
		t.Errorf("ConsoleDumps:\n%q\nwant\n%q", got, want)
	}
	if got := vm.ConsoleDumps("boot\nno dump\n"); got != "" {
		t.Errorf("no dump: %q", got)
	}
}
