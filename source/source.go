// Package source holds what every stage of sqlhist says about the query
// text: positions in it ([Pos], [Source], [Position]) and diagnostics
// ([Diag], [Diags]) with the one renderer that prints them as
// "file:line:col: message", the source line and a caret. It is a leaf, as
// go/token is for go/parser and go/printer: the compiler makes positions,
// the planner and emit carry them, and none of them reaches upward for
// them.
package source

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Pos is a position in a [Source]: a byte offset plus one, so that the zero
// value, [NoPos], means "unknown".
type Pos int

// NoPos is the unknown position.
const NoPos Pos = 0

// IsValid reports whether p is a known position.
func (p Pos) IsValid() bool { return p != NoPos }

// Offset returns the byte offset of p. It panics on NoPos.
func (p Pos) Offset() int {
	if p == NoPos {
		panic("sqlhist internal error: Offset of NoPos")
	}
	return int(p) - 1
}

// PosOf returns the Pos of a byte offset.
func PosOf(offset int) Pos { return Pos(offset + 1) }

// Source is a named query text.
type Source struct {
	Name string // "<args>", a file name, or "<stdin>"
	Text string

	lines []int // byte offsets of line starts, built on first use
}

// NewSource returns a Source.
func NewSource(name, text string) *Source { return &Source{Name: name, Text: text} }

// Position is a resolved position: file, 1-based line and 1-based byte column.
type Position struct {
	Filename string
	Offset   int
	Line     int
	Col      int // 1-based byte column
}

// String returns "file:line:col".
func (p Position) String() string { return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Col) }

func (s *Source) lineStarts() []int {
	if s.lines == nil {
		s.lines = []int{0}
		for i := 0; i < len(s.Text); i++ {
			if s.Text[i] == '\n' {
				s.lines = append(s.lines, i+1)
			}
		}
	}
	return s.lines
}

// Position resolves p. NoPos resolves to the end of the text.
func (s *Source) Position(p Pos) Position {
	off := len(s.Text)
	if p.IsValid() {
		off = min(p.Offset(), len(s.Text))
	}
	lines := s.lineStarts()
	i := sort.Search(len(lines), func(i int) bool { return lines[i] > off }) - 1
	return Position{Filename: s.Name, Offset: off, Line: i + 1, Col: off - lines[i] + 1}
}

// Line returns the text of the 1-based line n without its newline (and
// without a trailing carriage return).
func (s *Source) Line(n int) string {
	lines := s.lineStarts()
	if n < 1 || n > len(lines) {
		return ""
	}
	end := len(s.Text)
	if n < len(lines) {
		end = lines[n] - 1
	}
	return strings.TrimSuffix(s.Text[lines[n-1]:end], "\r")
}

// Diag is one diagnostic: a message about the source range [Pos, End).
type Diag struct {
	Pos, End Pos
	Msg      string
	Hint     string
	Warning  bool
}

// Diags is a list of diagnostics.
type Diags []*Diag

// Add appends a diagnostic and returns it.
func (d *Diags) Add(pos, end Pos, format string, args ...any) *Diag {
	x := &Diag{Pos: pos, End: end, Msg: fmt.Sprintf(format, args...)}
	*d = append(*d, x)
	return x
}

// Sort orders the diagnostics by position, then message.
func (d Diags) Sort() {
	sort.SliceStable(d, func(i, j int) bool {
		if d[i].Pos != d[j].Pos {
			return d[i].Pos < d[j].Pos
		}
		return d[i].Msg < d[j].Msg
	})
}

// Errors returns the diagnostics that are errors, not warnings.
func (d Diags) Errors() Diags {
	var out Diags
	for _, x := range d {
		if !x.Warning {
			out = append(out, x)
		}
	}
	return out
}

// Err returns d as an error when it holds at least one error, else nil.
func (d Diags) Err() error {
	if len(d.Errors()) == 0 {
		return nil
	}
	return d
}

// Error implements error: the first message, and how many more there are.
func (d Diags) Error() string {
	e := d.Errors()
	switch len(e) {
	case 0:
		return "no errors"
	case 1:
		return e[0].Msg
	}
	return fmt.Sprintf("%s (and %d more errors)", e[0].Msg, len(e)-1)
}

// MaxDiags is how many diagnostics Render prints before it stops.
const MaxDiags = 10

// Render writes the diagnostics as "file:line:col: message", the numbered
// source line and a caret line underlining the range, plus a hint line.
func (d Diags) Render(src *Source) string {
	var b strings.Builder
	for i, x := range d {
		if i == MaxDiags {
			fmt.Fprintf(&b, "%s: too many errors\n", src.Name)
			break
		}
		renderOne(&b, src, x)
	}
	return b.String()
}

func renderOne(b *strings.Builder, src *Source, x *Diag) {
	kind := ""
	if x.Warning {
		kind = "warning: "
	}
	if !x.Pos.IsValid() {
		// Not about the query text: a flag or the catalog.
		fmt.Fprintf(b, "sqlhist: %s%s\n", kind, x.Msg)
		if x.Hint != "" {
			fmt.Fprintf(b, "hint: %s\n", x.Hint)
		}
		return
	}
	p := src.Position(x.Pos)
	fmt.Fprintf(b, "%s: %s%s\n", p, kind, x.Msg)
	line := src.Line(p.Line)
	if src.Text != "" {
		num := fmt.Sprint(p.Line)
		pad := strings.Repeat(" ", len(num))
		width := 1
		if x.End.IsValid() && x.End > x.Pos {
			e := src.Position(x.End)
			if e.Line == p.Line {
				width = max(1, e.Col-p.Col)
			} else {
				width = max(1, len(line)-p.Col+1)
			}
		}
		col := p.Col - 1
		line, col, width = clipExcerpt(line, col, width)
		fmt.Fprintf(b, "  %s | %s\n", num, expandTabs(line))
		lead := caretLead(line, col)
		fmt.Fprintf(b, "  %s | %s^%s\n", pad, lead, strings.Repeat("~", width-1))
	}
	if x.Hint != "" {
		fmt.Fprintf(b, "hint: %s\n", x.Hint)
	}
}

// MaxExcerpt is the most bytes of a source line a diagnostic shows: a
// longer line (a query of one long line) is clipped around the caret,
// "…" marking what is left out.
const MaxExcerpt = 256

// clipExcerpt clips line to MaxExcerpt bytes around byte column col (the
// caret) and the underline's width, keeping whole characters: the shown
// line, and the caret's column and width in it.
func clipExcerpt(line string, col, width int) (string, int, int) {
	if len(line) <= MaxExcerpt {
		return line, col, width
	}
	start := max(0, min(col-MaxExcerpt/3, len(line)-MaxExcerpt))
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+MaxExcerpt)
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	width = max(1, min(width, end-col))
	shown, at := line[start:end], col-start
	if start > 0 {
		shown, at = "…"+shown, at+len("…")
	}
	if end < len(line) {
		shown += "…"
	}
	return shown, at, width
}

// caretLead returns the white space that puts a caret under byte column
// col of line: tabs stay tabs, other characters become one space each
// (a multi-byte character counts once).
func caretLead(line string, col int) string {
	var b strings.Builder
	for i, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteString("    ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }
