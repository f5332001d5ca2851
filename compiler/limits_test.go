package compiler

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/source"
)

// parseErr parses text and returns its diagnostics (nil when it parsed).
func parseErr(t *testing.T, text string) source.Diags {
	t.Helper()
	_, err := Parse(source.NewSource("q.sql", text))
	if err == nil {
		return nil
	}
	d, ok := err.(source.Diags)
	if !ok {
		t.Fatalf("error is %T, want Diags", err)
	}
	return d
}

func TestNestingLimit(t *testing.T) {
	const head = "SELECT pid FROM sched_waking WHERE pid == "
	tests := []struct {
		name string
		nest func(n int) string // an operand nested n levels deep
	}{
		{"minus", func(n int) string { return strings.Repeat("-", n) + "1" }},
		{"not", func(n int) string { return strings.Repeat("!", n) + "1" }},
		{"NOT", func(n int) string { return strings.Repeat("NOT ", n) + "1" }},
		{"parens", func(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }},
		{"mixed", func(n int) string { return strings.Repeat("-(", n/2) + "1" + strings.Repeat(")", n/2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range parseErr(t, head+tt.nest(MaxNesting)) {
				if strings.Contains(d.Msg, "nested") {
					t.Fatalf("%d levels refused: %s", MaxNesting, d.Msg)
				}
			}
			text := head + tt.nest(MaxNesting+2)
			d := parseErr(t, text)
			if len(d) != 1 || !strings.Contains(d[0].Msg, "nested too deeply: more than 100 levels") {
				t.Fatalf("%d levels: %v, want one nesting error", MaxNesting+2, d)
			}
			// The caret is on the token that went past the limit: in the
			// nested part, before the operand.
			if off := d[0].Pos.Offset(); off < len(head) || off >= strings.Index(text, "1") {
				t.Fatalf("error at offset %d, want between %d and %d", off, len(head), strings.Index(text, "1"))
			}
		})
	}
}

// Binary operators chain without nesting: a long sum or OR list is not
// refused by the nesting limit, and prefix operators in separate
// parentheses or statements do not add up.
func TestNestingCountsOnlyNesting(t *testing.T) {
	for _, text := range []string{
		"SELECT pid FROM sched_waking WHERE " + strings.Repeat("pid == 1 || ", 300) + "pid == 2",
		"SELECT pid FROM sched_waking WHERE " + strings.Repeat("(pid == -1) || ", 300) + "pid == 2",
		"SELECT (a" + strings.Repeat(" - b", 300) + ") AS x FROM e",
		strings.Repeat("SELECT pid FROM e WHERE pid == "+strings.Repeat("-", 60)+"1;\n", 3),
	} {
		for _, d := range parseErr(t, text) {
			if strings.Contains(d.Msg, "nested") {
				t.Errorf("%.60q…: %s", text, d.Msg)
			}
		}
	}
}

func TestSizeLimit(t *testing.T) {
	const q = "SELECT pid FROM sched_waking\n-- "
	pad := func(n int) string { return q + strings.Repeat("x", n-len(q)) }
	if _, err := Parse(source.NewSource("q.sql", pad(MaxSourceBytes))); err != nil {
		t.Fatalf("a %d-byte script: %v", MaxSourceBytes, err)
	}
	d := parseErr(t, pad(MaxSourceBytes+1))
	if len(d) != 1 || d[0].Msg != "the script is 65537 bytes; sqlhist reads at most 65536" {
		t.Fatalf("got %v", d)
	}
	if p := source.NewSource("q.sql", pad(MaxSourceBytes+1)).Position(d[0].Pos); p.Line != 2 || p.Col != MaxSourceBytes+1-len("SELECT pid FROM sched_waking\n") {
		t.Fatalf("at %v, want line 2 at the byte past the limit", p)
	}
}
