package results

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
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

// TestWriteTableNotASCII: a cell that is not printable ASCII goes to
// tablewriter, which measures wide characters; so does a table without a
// header.
func TestWriteTableNotASCII(t *testing.T) {
	for _, cell := range []string{"日本語", "tab\there", "é", "a\nb", ""} {
		var got, want bytes.Buffer
		header, rows := []string{"A", "B"}, [][]string{{cell, "5"}, {"z", "6"}}
		if cell == "" {
			header = nil
		}
		if err := WriteTable(&got, header, rows); err != nil {
			t.Fatal(err)
		}
		writeTablewriter(&want, header, rows)
		if got.String() != want.String() {
			t.Errorf("%q: got\n%s\nwant\n%s", cell, got.String(), want.String())
		}
	}
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
