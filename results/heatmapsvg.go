package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The heatmap's geometry, in pixels.
const (
	heatMargin   = 16
	heatYLabels  = 84 // the bucket labels left of a panel
	heatRow      = 12 // a log2 bucket's height
	heatMaxCol   = 24 // an interval's width: at most, and at least
	heatMinCol   = 3
	heatWidth    = 720 // what the columns aim to fill
	heatMinWidth = 960
	heatGap      = 16   // between panels side by side
	heatTwoWidth = 1280 // the widest picture made wider for two panels a row
	heatSwatch   = 44   // a legend colour's width
)

// HeatCell is where one cell of a panel is drawn.
type HeatCell struct {
	Map, Panel int // indexes into Heatmap.Maps and its Panels
	Col, Exp   int // the interval (from 0) and the log2 bucket
	X, Y, W, H int
}

// HeatLayout is where everything of a heatmap is drawn: the picture's
// size and every cell's rectangle, empty ones too (the tests look at a
// browser's rendering there).
type HeatLayout struct {
	Width, Height int
	Cells         []HeatCell
	text          []heatText
	rects         []heatRect
}

type heatText struct {
	x, y        int
	size        int
	anchor      string // "", "end", "middle"
	bold        bool
	text, title string
}

type heatRect struct {
	x, y, w, h int
	fill       string
	title      string
	cell       bool
}

// columns is each interval's width and left edge in a panel: a whole
// interval heatMinCol to heatMaxCol pixels, a partial one in proportion.
func (hm *Heatmap) columns() (xs, ws []int) {
	n := len(hm.Spans)
	cw := heatMaxCol
	if n > 0 {
		cw = min(max(heatWidth/n, heatMinCol), heatMaxCol)
	}
	var full time.Duration
	for _, s := range hm.Spans {
		if !s.Partial && s.End > s.Start {
			full = s.End - s.Start
			break
		}
	}
	x := 0
	for _, s := range hm.Spans {
		w := cw
		if s.Partial && full > 0 {
			w = int((int64(cw)*int64(s.End-s.Start) + int64(full)/2) / int64(full))
			w = min(max(w, 1), cw)
		}
		xs, ws = append(xs, x), append(ws, w)
		x += w
	}
	return xs, ws
}

// Layout places the heatmap's titles, legends and panels, the statements
// one under the other.
func (hm *Heatmap) Layout() *HeatLayout {
	xs, ws := hm.columns()
	plotW := 0
	if n := len(xs); n > 0 {
		plotW = xs[n-1] + ws[n-1]
	}
	panelW := heatYLabels + plotW
	lay := &HeatLayout{Width: max(heatMinWidth, 2*heatMargin+panelW)}
	if two := 2*heatMargin + 2*panelW + heatGap; two <= heatTwoWidth {
		lay.Width = max(lay.Width, two) // two panels side by side at least
	}
	x0 := heatMargin + heatYLabels
	chars := (lay.Width - 2*heatMargin) / 7 // of the 12-pixel title
	y := heatMargin
	for mi, st := range hm.Maps {
		if mi > 0 {
			y += 12
		}
		for _, line := range wrapText(st.Title, chars) {
			y += 16
			lay.text = append(lay.text, heatText{x: heatMargin, y: y, size: 12, bold: true, text: line})
		}
		sub := hm.subtitle(st)
		if st.Left > 0 {
			sub += fmt.Sprintf(". %d more keys (%d events) are not drawn: only the %d with the most events are", st.Left, st.LeftEvents, len(st.Panels))
		}
		for _, line := range wrapText(sub, chars*7/6) {
			y += 15
			lay.text = append(lay.text, heatText{x: heatMargin, y: y, size: 11, text: line})
		}
		// The legend: each level's colour and its least count.
		y += 8
		lay.text = append(lay.text, heatText{x: x0 - 6, y: y + 10, size: 10, anchor: "end", text: "events ≥"})
		for i, l := range st.legendLevels() {
			floor := uint64(1)
			if st.Max > 1 {
				floor = levelFloor(l, st.Max)
			}
			lay.rects = append(lay.rects, heatRect{x: x0 + i*heatSwatch, y: y, w: heatSwatch - 2, h: 12, fill: HeatColour(l)})
			lay.text = append(lay.text, heatText{x: x0 + i*heatSwatch + heatSwatch/2 - 1, y: y + 24, size: 9, anchor: "middle", text: countText(floor)})
		}
		y += 30
		// The panels, in rows of as many as the width holds.
		rows := st.MaxExp - st.MinExp + 1
		panelH := 14 + 4 + rows*heatRow + 11 + 8
		perRow := max(1, (lay.Width-2*heatMargin+heatGap)/(panelW+heatGap))
		for pi, p := range st.Panels {
			px := heatMargin + heatYLabels + (pi%perRow)*(panelW+heatGap)
			py := y + (pi/perRow)*panelH + 14
			key := p.Key
			if key == "" {
				key = "all events"
			}
			label := fmt.Sprintf("%s: %d events", key, p.Events)
			if n := max(panelW/6, 12); utf8.RuneCountInString(label) > n {
				label = string([]rune(label)[:n-1]) + "…"
			}
			lay.text = append(lay.text, heatText{x: px, y: py, size: 11, text: label, title: key})
			py += 4
			lay.rects = append(lay.rects, heatRect{x: px, y: py, w: plotW, h: rows * heatRow, fill: HeatmapBackground})
			for e := st.MaxExp; e >= st.MinExp; e-- {
				ry := py + (st.MaxExp-e)*heatRow
				lo, hi := bucketRange(e)
				lay.text = append(lay.text, heatText{x: px - 4, y: ry + heatRow - 2, size: 9, anchor: "end", text: bucketText(lo, hi)})
				for c := range xs {
					cell := HeatCell{Map: mi, Panel: pi, Col: c, Exp: e, X: px + xs[c], Y: ry, W: ws[c], H: heatRow}
					lay.Cells = append(lay.Cells, cell)
					n := p.Cells[c][e]
					if n == 0 {
						continue
					}
					s := hm.Spans[c]
					lay.rects = append(lay.rects, heatRect{x: cell.X, y: cell.Y, w: cell.W, h: cell.H, fill: HeatColour(HeatLevel(n, st.Max)), cell: true,
						title: fmt.Sprintf("%s to %s s, %s %s: %d events", secondsText(s.Start), secondsText(s.End), st.Measure, bucketText(lo, hi), n)})
				}
			}
			// The time axis: the end of an interval every 48 pixels or so.
			ay := py + rows*heatRow + 11
			step := max(1, (48+ws[0]-1)/max(ws[0], 1))
			lay.text = append(lay.text, heatText{x: px - 4, y: ay, size: 9, anchor: "end", text: "s"})
			for c := range xs {
				if (c+1)%step == 0 || c == len(xs)-1 && (c+1)%step > step/2 {
					lay.text = append(lay.text, heatText{x: px + xs[c] + ws[c], y: ay, size: 9, anchor: "middle", text: secondsText(hm.Spans[c].End)})
				}
			}
		}
		y += (len(st.Panels) + perRow - 1) / perRow * panelH
		if len(st.Panels) == 0 {
			y += 14
			lay.text = append(lay.text, heatText{x: x0, y: y, size: 11, text: "no events"})
		}
	}
	lay.Height = y + heatMargin
	return lay
}

// legendLevels are the colour levels a statement's counts can reach.
func (st *HeatStatement) legendLevels() []int {
	if st.Max <= 1 {
		return []int{HeatmapLevels}
	}
	var out []int
	for l := 1; l <= HeatmapLevels; l++ {
		if l < HeatmapLevels && levelFloor(l, st.Max) == levelFloor(l+1, st.Max) {
			continue // no count is of this level
		}
		out = append(out, l)
	}
	return out
}

// subtitle says what a statement's heatmap shows.
func (hm *Heatmap) subtitle(st *HeatStatement) string {
	every := ""
	for _, s := range hm.Spans {
		if !s.Partial {
			every = " of " + secondsText(s.End-s.Start) + " s"
			break
		}
	}
	what := st.Event + ": "
	if st.Title == st.Event {
		what = ""
	}
	return fmt.Sprintf("%s%s by log2 bucket (up), per interval%s (across: %d intervals); colour: the events of the cell", what, st.Measure, every, len(hm.Spans))
}

// countText writes a count short: 999, 1.2k, 35k, 1.5M.
func countText(n uint64) string {
	switch {
	case n < 1000:
		return strconv.FormatUint(n, 10)
	case n < 10000:
		return strconv.FormatFloat(float64(n/100)/10, 'f', -1, 64) + "k"
	case n < 1000000:
		return strconv.FormatUint(n/1000, 10) + "k"
	case n < 10000000:
		return strconv.FormatFloat(float64(n/100000)/10, 'f', -1, 64) + "M"
	}
	return strconv.FormatUint(n/1000000, 10) + "M"
}

// wrapText breaks s at spaces into lines of at most width characters (a
// longer word alone on its line, cut with "…" past twice the width).
func wrapText(s string, width int) []string {
	width = max(width, 20)
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if utf8.RuneCountInString(w) > 2*width {
			w = string([]rune(w)[:2*width-1]) + "…"
		}
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// WriteSVG writes the heatmap as an SVG document.
func (hm *Heatmap) WriteSVG(w io.Writer) error {
	b := bufio.NewWriter(w)
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	hm.writeSVG(b, hm.Layout())
	return b.Flush()
}

// WriteHTML writes the heatmap as a page of its own: the SVG in it,
// nothing fetched.
func (hm *Heatmap) WriteHTML(w io.Writer) error {
	b := bufio.NewWriter(w)
	title := "sqlhist heatmap"
	if len(hm.Maps) > 0 {
		title += ": " + hm.Maps[0].Title
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>")
	b.WriteString(xmlEscape(title))
	b.WriteString("</title>\n<style>html, body { margin: 0; padding: 0; background: #ffffff; } svg { display: block; }</style>\n</head>\n<body>\n")
	hm.writeSVG(b, hm.Layout())
	b.WriteString("</body>\n</html>\n")
	return b.Flush()
}

func (hm *Heatmap) writeSVG(b *bufio.Writer, lay *HeatLayout) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, sans-serif" shape-rendering="crispEdges">`+"\n",
		lay.Width, lay.Height, lay.Width, lay.Height)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", lay.Width, lay.Height)
	for _, r := range lay.rects {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"`, r.x, r.y, r.w, r.h, r.fill)
		if r.title == "" {
			b.WriteString("/>\n")
			continue
		}
		fmt.Fprintf(b, "><title>%s</title></rect>\n", xmlEscape(r.title))
	}
	for _, t := range lay.text {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d"`, t.x, t.y, t.size)
		if t.anchor != "" {
			fmt.Fprintf(b, ` text-anchor="%s"`, t.anchor)
		}
		if t.bold {
			b.WriteString(` font-weight="bold"`)
		}
		if t.title != "" {
			fmt.Fprintf(b, "><title>%s</title>%s</text>\n", xmlEscape(t.title), xmlEscape(t.text))
			continue
		}
		fmt.Fprintf(b, ">%s</text>\n", xmlEscape(t.text))
	}
	b.WriteString("</svg>\n")
}

// xmlEscape escapes text for XML content and attributes, and drops what
// XML 1.0 cannot hold (control characters but tab and newline, invalid
// UTF-8).
func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == utf8.RuneError, r < 0x20 && r != '\t' && r != '\n', r == 0xfffe, r == 0xffff, r >= 0xd800 && r <= 0xdfff:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
