//go:build unix

package live

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// TermSize is the size of the terminal w writes to, in columns and
// lines; ok is false when w is not one.
func TermSize(w io.Writer) (cols, rows int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile {
		return 0, 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}
