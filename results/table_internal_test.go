package results

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// TestWritePlain: a table of printable ASCII comes out of writePlain as
// out of tablewriter, byte for byte: random tables of numbers, words,
// blanks, dashes, rows shorter and longer than the header, none.
func TestWritePlain(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cell := func() string {
		switch r.IntN(12) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("-", 1+r.IntN(3))
		case 2:
			return fmt.Sprint(r.IntN(100000))
		case 3:
			return fmt.Sprint(-r.IntN(1000))
		case 4:
			return fmt.Sprintf("%.1f", r.Float64()*1000)
		case 5:
			return "~" + fmt.Sprint(r.IntN(5000))
		case 6:
			return "<=" + fmt.Sprint(r.IntN(5000))
		case 7:
			return " " + strings.Repeat("a", r.IntN(4)) + " "
		case 8:
			return "kworker/0:1"
		case 9:
			return "1e5"
		case 10:
			var b []byte
			for range r.IntN(20) {
				b = append(b, byte(0x20+r.IntN(0x5f)))
			}
			return string(b)
		}
		return strings.Repeat("x", r.IntN(12))
	}
	numeric := func() string { return fmt.Sprint(r.IntN(1 << r.IntN(30))) }
	edges := []struct {
		header []string
		rows   [][]string
	}{
		{[]string{"A", "B"}, nil},
		{[]string{"A", "B"}, [][]string{{}}},
		{[]string{"A", "B"}, [][]string{{}, {}}},
		{[]string{""}, [][]string{{""}}},
		{[]string{"", ""}, [][]string{{"1", "2"}}},
		{[]string{"A"}, [][]string{{"-"}, {"--"}}},
		{[]string{"N"}, [][]string{{"1"}, {"1e5"}, {"NaN"}, {"-3"}, {"+Inf"}}},
	}
	for _, e := range edges {
		var want bytes.Buffer
		if err := writeTablewriter(&want, e.header, e.rows); err != nil {
			t.Fatal(err)
		}
		if got := trimTable(writePlain(e.header, e.rows)); got != want.String() {
			t.Errorf("header %q, rows %q:\ngot\n%s\nwant (tablewriter)\n%s", e.header, e.rows, got, want.String())
		}
	}
	for i := range 3000 {
		cols := 1 + r.IntN(6)
		header := make([]string, cols)
		for c := range header {
			header[c] = cell()
		}
		kinds := make([]bool, cols+2) // a column of numbers only
		for c := range kinds {
			kinds[c] = r.IntN(2) == 0
		}
		rows := make([][]string, r.IntN(6))
		for j := range rows {
			n := cols
			if r.IntN(5) == 0 {
				n = r.IntN(cols + 3)
			}
			rows[j] = make([]string, n)
			for c := range rows[j] {
				if kinds[c] {
					rows[j][c] = numeric()
				} else {
					rows[j][c] = cell()
				}
			}
		}
		var want bytes.Buffer
		if err := writeTablewriter(&want, header, rows); err != nil {
			t.Fatal(err)
		}
		got := trimTable(writePlain(header, rows))
		if got != want.String() {
			t.Fatalf("table %d, header %q, rows %q:\ngot\n%s\nwant (tablewriter)\n%s", i, header, rows, got, want.String())
		}
	}
}

// The tables with a cell that is not printable ASCII come out as
// tablewriter lays them out (wide and combining characters, accents, a
// stack's lines, no header), but for the rule, as wide as the widest line
// in columns here where tablewriter counted bytes: random tables.
func TestWriteTextAsTablewriter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"日本語", "é", "e\u0301x", "naïve", "ß", "中", "x", "", "12", "3.5", "kworker/0:1", "__schedule", "Ωmega", "한국어 텍스트"}
	cell := func() string {
		k := 1 + r.IntN(3)
		if r.IntN(3) > 0 {
			k = 1
		}
		var lines []string
		for range k {
			w := words[r.IntN(len(words))]
			if w == "" && k > 1 {
				w = "frame"
			}
			lines = append(lines, w)
		}
		return strings.Join(lines, "\n")
	}
	for i := range 500 {
		cols := 1 + r.IntN(4)
		var header []string
		if i%7 != 0 {
			for c := range cols {
				header = append(header, []string{"STACK", "count", "名前", "lat"}[c])
			}
		}
		var rows [][]string
		for range r.IntN(6) {
			var row []string
			for range cols {
				row = append(row, cell())
			}
			rows = append(rows, row)
		}
		if printableASCII(header, rows) && header != nil {
			continue
		}
		var got, want bytes.Buffer
		if err := WriteTable(&got, header, rows); err != nil {
			t.Fatal(err)
		}
		if err := writeTablewriter(&want, header, rows); err != nil {
			t.Fatal(err)
		}
		if g, w := got.String(), ruleByWidth(want.String()); g != w {
			t.Fatalf("table %d, header %q, rows %q:\ngot\n%s\nwant (tablewriter)\n%s", i, header, rows, g, w)
		}
	}
}

// ruleByWidth makes tablewriter's rule (trimTable's, by bytes) as wide
// as the widest line in display columns.
func ruleByWidth(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	widest := 0
	for _, l := range lines {
		if strings.Trim(l, "-") != "" {
			widest = max(widest, textWidth.StringWidth(l))
		}
	}
	for i, l := range lines {
		if l != "" && strings.Trim(l, "-") == "" {
			lines[i] = strings.Repeat("-", widest)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// A cell's control characters and bytes that are not UTF-8 are shown
// escaped, never sent to the terminal; a stack's lines stay lines, the
// number of its row on its first; widths are a terminal's.
func TestWriteTableNotASCII(t *testing.T) {
	cases := []struct {
		header []string
		rows   [][]string
		want   string
	}{
		{[]string{"A", "B"}, [][]string{{"tab\there", "5"}, {"z", "6"}},
			"A          B\n------------\ntab\\there  5\nz          6\n"},
		{[]string{"A", "B"}, [][]string{{"\x1b[31mred\x1b[0m", "5"}},
			"A                   B\n---------------------\n\\x1b[31mred\\x1b[0m  5\n"},
		{[]string{"A", "B"}, [][]string{{"\xff\xfe", "7"}, {"a\rb\u0085", "8"}},
			"A           B\n-------------\n\\xff\\xfe    7\na\\x0db\\x85  8\n"},
		{[]string{"STACK", "count"}, [][]string{{"__schedule\nschedule\n", "12"}, {"日本語", "3"}},
			"STACK       count\n-----------------\n__schedule     12\nschedule\n日本語          3\n"},
		{nil, [][]string{{"日本語", "5"}, {"z", "6"}}, "日本語  5\nz       6\n"},
		{[]string{"A", "B"}, [][]string{{}, {"é", "1"}}, "A  B\n----\né  1\n"},
	}
	for _, c := range cases {
		var got bytes.Buffer
		if err := WriteTable(&got, c.header, c.rows); err != nil {
			t.Fatal(err)
		}
		if got.String() != c.want {
			t.Errorf("header %q, rows %q: got\n%s\nwant\n%s", c.header, c.rows, got.String(), c.want)
		}
	}
}

// writeTablewriter prints the table with tablewriter, as WriteTable did:
// the oracle of the layout.
func writeTablewriter(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	var aligns []tw.Align
	for _, a := range alignments(len(header), rows) {
		aligns = append(aligns, map[align]tw.Align{alignLeft: tw.AlignLeft, alignRight: tw.AlignRight}[a])
	}
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleASCII),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.On, BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.On},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := io.WriteString(w, trimTable(buf.String()))
	return err
}

func BenchmarkWriteTable(b *testing.B) {
	var rows [][]string
	for i := range 7 {
		rows = append(rows, []string{"sh", fmt.Sprint(i * 64), fmt.Sprint(i), "12.5", "~3", "~7", "~9", "100"})
	}
	header := []string{"comm", "count", "avg lat (us)", "p50", "p90", "p99", "max lat", "x"}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		WriteTable(&buf, header, rows)
	}
}

// Keys that tie on the order are ordered as numbers, not as text: pid 33
// before pid 300, a signed key's negatives first.
func TestCompareCellsNumbers(t *testing.T) {
	num := func(n int64) Cell {
		return Cell{Text: strconv.FormatInt(n, 10), Num: uint64(n), IsNum: true, Neg: n < 0}
	}
	for _, c := range []struct {
		a, b Cell
		want int
	}{
		{num(33), num(300), -1}, {num(300), num(33), 1}, {num(-5), num(3), -1}, {num(7), num(7), 0},
		{Cell{Text: "b"}, Cell{Text: "a"}, 1},
	} {
		if got := compareCells(c.a, c.b); got != c.want {
			t.Errorf("compareCells(%q, %q) = %d, want %d", c.a.Text, c.b.Text, got, c.want)
		}
	}
}
