//go:build !unix

package live

import "io"

// TermSize is not known here: --live does not cut its screen.
func TermSize(io.Writer) (cols, rows int, ok bool) { return 0, 0, false }
