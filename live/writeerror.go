package live

import (
	"errors"
	"fmt"
	"io"

	"github.com/sqlhist/sqlhist/source"
)

// WriteError prints err as sqlhist does: diagnostics and refused writes
// at their place in src (file:line:col, the line, a caret, the kernel's
// error_log as the hint), the failures of undoing and any other error as
// "sqlhist: …" lines. Joined errors are written one after the other.
func WriteError(w io.Writer, src *source.Source, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, x := range j.Unwrap() {
			WriteError(w, src, x)
		}
		return
	}
	var d source.Diags
	var ae *ApplyError
	var eu *EngineUnavailable
	switch {
	case err == nil:
	case errors.As(err, &d):
		io.WriteString(w, d.Render(src))
	case errors.As(err, &eu) && eu.Diag != nil:
		io.WriteString(w, source.Diags{eu.Diag}.Render(src))
	case errors.As(err, &ae):
		io.WriteString(w, source.Diags{ae.Diag()}.Render(src))
		for _, u := range ae.Undo {
			fmt.Fprintf(w, "sqlhist: %v\n", u)
		}
	default:
		fmt.Fprintf(w, "sqlhist: %v\n", err)
	}
}
