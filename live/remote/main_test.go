package remote

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the package's tests in a directory of their own: they
// drive real shells with greetings cut at arbitrary bytes, and a cut
// shell once ran a fragment of a function's body as a redirection and
// made a file, named by the rest of the line, in the source tree (it was
// committed with ca61704). Nothing a test's shell writes lands there now.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sqlhist-remote-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.Chdir(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 && code == 0 {
		// What the shells left is reported, never kept: a test that
		// makes files names its own directory.
		for _, e := range ents {
			fmt.Fprintf(os.Stderr, "a test's shell left %q in the working directory\n", e.Name())
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
