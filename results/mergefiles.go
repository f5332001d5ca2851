package results

import (
	"errors"
	"strconv"
	"sync"

	"bytes"
	"fmt"
	"io"
	"regexp"

	"github.com/sqlhist/sqlhist/source"
)

// MergeFiles is sqlhist merge: it reads the saved results of each file
// (what -r -o json wrote, one target's or a fleet's) with read, writes
// each target's results under its label (the file's "label", else its
// name) and their merge to w in format (table, json or csv), and its
// messages to errw. It reports whether every file was read and merged:
// false when a file could not be read, a fleet's file holds a target
// that failed, or the files ran different queries (the others are still
// written).
func MergeFiles(w, errw io.Writer, format string, files []string, read func(string) ([]byte, error)) bool {
	ok := true
	var targets []Labelled
	labels := map[string]string{} // label: the file that has it
	n := 0
	for _, f := range files {
		got, err := readResultsFile(f, read)
		var pe placedError
		if errors.As(err, &pe) {
			io.WriteString(errw, pe.text)
		} else if err != nil {
			fmt.Fprintf(errw, "sqlhist: %s\n", err)
		}
		if err != nil {
			ok = false
			continue
		}
		n++
		for _, t := range got {
			if t.Label == "" {
				t.Label = f
			}
			if other, dup := labels[t.Label]; dup {
				fmt.Fprintf(errw, "sqlhist: warning: %s and %s both have the label %q: the second is shown as %q\n", other, f, t.Label, t.Label+" ("+f+")")
				t.Label += " (" + f + ")"
			}
			labels[t.Label] = f
			ok = ok && t.Err == nil // a fleet's target that failed
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return ok
	}
	merged, err := MergeLabelled(targets)
	if werr := WriteFleet(w, errw, format, targets, merged); werr != nil {
		fmt.Fprintf(errw, "sqlhist: %v\n", werr)
		return false
	}
	if err != nil {
		fmt.Fprintf(errw, "sqlhist: not merged: %v\n", err)
		ok = false
	}
	if k := len(files) - n; k > 0 {
		fmt.Fprintf(errw, "sqlhist: %d of the %d files could not be read: the merge is of the other %d\n", k, len(files), n)
	}
	return ok
}

// readResultsFile reads the saved results of one file; its errors start
// with the file's name, and a place in it when there is one
// ("f.json:3:5: …").
func readResultsFile(file string, read func(string) ([]byte, error)) ([]Labelled, error) {
	data, err := read(file)
	if err != nil {
		return nil, err
	}
	targets, err := ReadJSONTargets(bytes.NewReader(data))
	if err == nil {
		return targets, nil
	}
	return nil, placeFileError(file, data, err)
}

// placeFileError places an error of reading file (data): "line:col: …"
// as file:line:col, the message, the line and a caret, as the compiler's
// diagnostics are; another error after the file's name.
func placeFileError(file string, data []byte, err error) error {
	m := linePlace().FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %v", file, err)
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	src := source.NewSource(file, string(data))
	off := 0
	for i := 1; i < line && off < len(data); i++ {
		if j := bytes.IndexByte(data[off:], '\n'); j >= 0 {
			off += j + 1
		} else {
			off = len(data)
		}
	}
	var d source.Diags
	d.Add(source.PosOf(min(off+col-1, len(data))), source.NoPos, "%s", m[3])
	return placedError{text: d.Render(src)}
}

// placedError is a rendered diagnostic of a file: file:line:col, the
// line and a caret.
type placedError struct{ text string }

func (e placedError) Error() string { return e.text }

var linePlace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^([0-9]+):([0-9]+): (.*)$`) })
