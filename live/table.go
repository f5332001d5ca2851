package live

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteTable prints rows under a header as a plain-text table: columns
// padded with spaces, a rule of dashes under the header, no borders, no
// trailing blanks. Every table for people goes through here, so the
// tablewriter API (which changes between major versions) is used in one
// place only.
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	align := alignments(len(header), rows)
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
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: align}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: align}),
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

// alignments puts numeric columns on the right: a column whose cells
// all read as numbers.
func alignments(n int, rows [][]string) []tw.Align {
	out := make([]tw.Align, n)
	for c := range out {
		out[c] = tw.AlignLeft
		numeric := len(rows) > 0
		for _, r := range rows {
			if c >= len(r) {
				continue
			}
			if _, err := strconv.ParseFloat(r[c], 64); err != nil {
				numeric = false
				break
			}
		}
		if numeric {
			out[c] = tw.AlignRight
		}
	}
	return out
}

// trimTable drops trailing blanks and makes the header rule as wide as
// the widest line.
func trimTable(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	width := 0
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
		if strings.Trim(lines[i], "-") != "" {
			width = max(width, len(lines[i]))
		}
	}
	for i, l := range lines {
		if l != "" && strings.Trim(l, "-") == "" {
			lines[i] = strings.Repeat("-", width)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
