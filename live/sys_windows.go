package live

import (
	"errors"
	"io"
	"os"
)

// Windows has no tracefs: sqlhist prints, plans and drives targets
// through --via there, and what sys_unix.go asks of a local machine
// fails.

var errNoTracefs = errors.New("no tracefs on Windows: print the commands, or run on a target with --via")

func selfKill() { os.Exit(137) }

func accessW(string) error { return errNoTracefs }

// processAlive reports whether process pid exists on this machine.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

func osPipe(p string) (io.ReadCloser, error) {
	return nil, &os.PathError{Op: "open", Path: p, Err: errNoTracefs}
}

func rawOpen(string) (int, error) { return -1, errNoTracefs }

func rawRead(int, []byte) (int, error) { return 0, errNoTracefs }

func rawClose(int) {}
