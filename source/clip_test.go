package source

import (
	"strings"
	"testing"
)

// A diagnostic in a long line shows MaxExcerpt bytes around the caret,
// with the caret under the same character; a short line is whole.
func TestRenderClipsLongLines(t *testing.T) {
	text := "SELECT " + strings.Repeat("a + ", 30000) + "nosuch FROM sched_switch"
	src := NewSource("<args>", text)
	at := strings.Index(text, "nosuch")
	var d Diags
	d.Add(PosOf(at), PosOf(at+len("nosuch")), "unknown field %q", "nosuch")
	out := d.Render(src)
	lines := strings.Split(out, "\n")
	if len(out) > 3*MaxExcerpt+100 || len(lines) != 4 {
		t.Fatalf("%d bytes, %d lines:\n%.400s", len(out), len(lines), out)
	}
	shown, caret := lines[1], lines[2]
	if !strings.Contains(shown, "…") || !strings.Contains(shown, "nosuch FROM") {
		t.Errorf("excerpt %q", shown)
	}
	i := strings.Index(caret, "^")
	if got := []rune(shown)[len([]rune(caret[:i]))]; got != 'n' || !strings.HasSuffix(caret, "^~~~~~") {
		t.Errorf("the caret is under %q:\n%s\n%s", got, shown, caret)
	}
	short := NewSource("q", "SELECT x FROM y")
	var d2 Diags
	d2.Add(PosOf(7), PosOf(8), "bad")
	if got := d2.Render(short); got != "q:1:8: bad\n  1 | SELECT x FROM y\n    |        ^\n" {
		t.Errorf("short line: %q", got)
	}
}
