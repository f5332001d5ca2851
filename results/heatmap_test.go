package results_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
	"github.com/sqlhist/sqlhist/results"
)

var updateHeatmap = flag.Bool("update-heatmap", false, "rewrite testdata/heatmap's SVG and HTML")

const heatFixture = "testdata/heatmap/intervals.json"

// readHeatFixture draws the fixture: five intervals (the last partial) of
// a JOIN's latency by comm, a log2 key by call, and a count (no
// picture).
func readHeatFixture(t *testing.T, keys int) *results.Heatmap {
	t.Helper()
	hm, err := results.HeatmapFile(heatFixture, os.ReadFile, results.HeatmapOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return hm
}

func svgOf(t *testing.T, hm *results.Heatmap, html bool) string {
	t.Helper()
	var b bytes.Buffer
	write := hm.WriteSVG
	if html {
		write = hm.WriteHTML
	}
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHeatmapGolden: the fixture's SVG and HTML are the files under
// testdata/heatmap, byte for byte (go test ./live -run TestHeatmapGolden
// -update-heatmap rewrites them), and the same on every render.
func TestHeatmapGolden(t *testing.T) {
	for _, c := range []struct {
		file string
		html bool
	}{{"testdata/heatmap/intervals.svg", false}, {"testdata/heatmap/intervals.html", true}} {
		got := svgOf(t, readHeatFixture(t, 0), c.html)
		for i := 0; i < 5; i++ {
			if again := svgOf(t, readHeatFixture(t, 0), c.html); again != got {
				t.Fatalf("%s: two renders of the same input differ:\n%s", c.file, cmp.Diff(got, again))
			}
		}
		if *updateHeatmap {
			if err := os.WriteFile(c.file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-want +got; -update-heatmap rewrites it):\n%s", c.file, diff)
		}
	}
}

// TestHeatmapDocsSample: docs/heatmap.svg is what sqlhist heatmap draws
// from docs/heatmap-6.1.json (a 6.1 guest's -r -i 1 -d 20 -o json),
// byte for byte (-update-heatmap redraws it; docs/heatmap.png is its
// screenshot, see docs/run.md).
func TestHeatmapDocsSample(t *testing.T) {
	hm, err := results.HeatmapFile("../docs/heatmap-6.1.json", os.ReadFile, results.HeatmapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := svgOf(t, hm, false)
	if *updateHeatmap {
		if err := os.WriteFile("../docs/heatmap.svg", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("../docs/heatmap.svg")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("docs/heatmap.svg is not what docs/heatmap-6.1.json draws (-update-heatmap redraws it):\n%s", cmp.Diff(string(want), got))
	}
	xmlTexts(t, got)
}

// xmlTexts parses a document strictly with encoding/xml and returns the
// text of each <text> and <title> element, in order.
func xmlTexts(t *testing.T, doc string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	var out []string
	var stack []string
	var cur strings.Builder
	svgs := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			cur.Reset()
			if tok.Name.Local == "svg" {
				svgs++
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("the svg element's namespace is %q", tok.Name.Space)
				}
			}
		case xml.CharData:
			cur.Write(tok)
		case xml.EndElement:
			if n := tok.Name.Local; n == "text" || n == "title" {
				out = append(out, cur.String())
				cur.Reset()
			}
			stack = stack[:len(stack)-1]
		}
	}
	if svgs != 1 || len(stack) != 0 {
		t.Errorf("%d svg elements, %d left open", svgs, len(stack))
	}
	return out
}

// TestHeatmapXML: the SVG and the HTML page are well-formed XML; a key
// with <, &, " and ' in it reads back as it was; the count statement
// (no distribution) is not drawn; the legend's colours are its levels'.
func TestHeatmapXML(t *testing.T) {
	hm := readHeatFixture(t, 0)
	for _, html := range []bool{false, true} {
		texts := xmlTexts(t, svgOf(t, hm, html))
		all := strings.Join(texts, "\n")
		for _, want := range []string{
			"comm=<b>&\"x': 4 events", // the key, escaped in the file
			"comm=cat: 76 events",     // 27 + 47 + 2 (the partial interval's)
			"call=read: 15 events",    // 3 + 9 + 2 + 1 (a log2 key)
			"call=write: 5 events",    //
			"lat (us) by log2 bucket", // the measure
			"bytes by log2 bucket",    //
			"3 to 4 s",                // a cell's title: its interval
			"(512, 1K]: 2 events",     // … its bucket and count
			"4 to 4.5 s, lat (us) [0, 1]: 1 events",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("html %v: no %q in the texts:\n%s", html, want, all)
			}
		}
		if strings.Contains(all, "sched_switch") {
			t.Errorf("a statement without a distribution is drawn:\n%s", all)
		}
	}
	if len(hm.Maps) != 2 || hm.Maps[0].Max != 40 || hm.Maps[1].Max != 9 {
		t.Fatalf("maps: %d, scales %v", len(hm.Maps), hm.Maps)
	}
	if len(hm.Spans) != 5 || !hm.Spans[4].Partial {
		t.Errorf("spans %v", hm.Spans)
	}
}

// TestHeatmapKeysLeftOut: with --keys 1 the picture draws the key with
// the most events and says how many others, with how many events, are
// left out.
func TestHeatmapKeysLeftOut(t *testing.T) {
	hm := readHeatFixture(t, 1)
	st := hm.Maps[0]
	if len(st.Panels) != 1 || st.Panels[0].Key != "comm=cat" || st.Left != 2 || st.LeftEvents != 4+5 {
		t.Fatalf("panels %d (%q), left %d (%d events)", len(st.Panels), st.Panels[0].Key, st.Left, st.LeftEvents)
	}
	texts := strings.Join(xmlTexts(t, svgOf(t, hm, false)), " ")
	if !strings.Contains(texts, "2 more keys (9 events) are not drawn: only the 1 with the most events") {
		t.Errorf("the picture does not say what is left out:\n%s", texts)
	}
}

// TestHeatLevel: one event is the palest level, the largest cell the
// darkest, levels grow with the count, and each level's colour differs
// from the others' and from the background.
func TestHeatLevel(t *testing.T) {
	seen := map[string]int{results.HeatmapBackground: 0}
	for l := 1; l <= results.HeatmapLevels; l++ {
		c := results.HeatColour(l)
		if o, dup := seen[c]; dup {
			t.Errorf("level %d has the colour %s of level %d", l, c, o)
		}
		seen[c] = l
	}
	if results.HeatLevel(1, 1000) != 1 || results.HeatLevel(1000, 1000) != results.HeatmapLevels || results.HeatLevel(1, 1) != results.HeatmapLevels || results.HeatLevel(0, 5) != 0 {
		t.Errorf("levels of 1, the largest, a lone event, nothing: %d %d %d %d", results.HeatLevel(1, 1000), results.HeatLevel(1000, 1000), results.HeatLevel(1, 1), results.HeatLevel(0, 5))
	}
	prev := 0
	for n := uint64(1); n <= 1000; n++ {
		l := results.HeatLevel(n, 1000)
		if l < prev {
			t.Fatalf("level of %d is %d, below %d's", n, l, n-1)
		}
		prev = l
	}
}

// TestReadJSONIntervalsErrors: what is not -i's JSON is refused with
// where.
func TestReadJSONIntervalsErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, in, want string }{
		{"total", `{"total": true, "results": []}`, "no intervals: not the output of sqlhist -r -i N -o json"},
		{"empty", ``, "empty: no intervals"},
		{"syntax", "{\"interval\": 1,\n  \"start\": x}", "syntax.json:2:12: invalid character"},
		{"zero", `{"interval": 0, "start": 0, "end": 1, "results": []}`, "syntax"},
		{"noend", `{"interval": 2, "start": 0, "results": []}`, "interval 2: no \"start\" and \"end\""},
		{"noresults", `{"interval": 2, "start": 0, "end": 1}`, "interval 2: no \"results\""},
		{"badrow", `{"interval": 1, "start": 0, "end": 1, "results": [{"event": "a/b", "columns": ["n"], "kinds": ["count"], "rows": [{"n": "x"}], "totals": {}}]}`, "results[0].rows[0].n: a count, not \"x\""},
		{"nothing", `{"interval": 1, "start": 0, "end": 1, "results": [{"event": "a/b", "columns": ["n"], "kinds": ["count"], "rows": [{"n": 3}], "totals": {}}]}`, "nothing to draw"},
	} {
		file := filepath.Join(dir, c.name+".json")
		os.WriteFile(file, []byte(c.in), 0o644)
		want := c.want
		if c.name == "zero" {
			want = "zero.json:1:1: interval 0: intervals are numbered from 1"
		}
		_, err := results.HeatmapFile(file, os.ReadFile, results.HeatmapOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", c.name, err, want)
		}
	}
}

// heatExpected counts the fixture's events by statement (its event),
// panel key, interval and log2 bucket, read from the JSON with nothing of
// live's: what the picture must show.
func heatExpected(t *testing.T) map[string]uint64 {
	t.Helper()
	data, err := os.ReadFile(heatFixture)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var d struct {
			Interval int
			Results  []struct {
				Event string
				Rows  []map[string]any
			}
		}
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Results {
			for _, row := range r.Rows {
				if lat, ok := row["lat"].(map[string]any); ok {
					for _, b := range lat["distribution"].([]any) {
						b := b.(map[string]any)
						e := expOf(uint64(b["high"].(float64)))
						out[fmt.Sprintf("%s|comm=%s|%d|%d", r.Event, row["comm"], d.Interval-1, e)] += uint64(b["count"].(float64))
					}
				}
				if by, ok := row["bytes"].(float64); ok {
					out[fmt.Sprintf("%s|call=%s|%d|%d", r.Event, row["call"], d.Interval-1, expOf(uint64(by)))] += uint64(row["count"].(float64))
				}
			}
		}
	}
	return out
}

// expOf is the log2 bucket whose top is high: 2^e.
func expOf(high uint64) int {
	e := 0
	for high > 1 {
		high >>= 1
		e++
	}
	return e
}

// TestHeatmapCells: every cell of the layout has the fixture's count of
// its statement, key, interval and bucket, and every count is in a cell.
func TestHeatmapCells(t *testing.T) {
	hm := readHeatFixture(t, 0)
	want := heatExpected(t)
	got := map[string]uint64{}
	for _, c := range hm.Layout().Cells {
		st := hm.Maps[c.Map]
		p := st.Panels[c.Panel]
		if n := p.Cells[c.Col][c.Exp]; n > 0 {
			got[fmt.Sprintf("%s|%s|%d|%d", st.Event, p.Key, c.Col, c.Exp)] = n
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-fixture +drawn):\n%s", diff)
	}
}

// TestHeatmapTargets: the intervals of several targets (a fleet's
// labels) are panels of their own, "LABEL: KEY"; one target's label is
// left out.
func TestHeatmapTargets(t *testing.T) {
	data, err := os.ReadFile(heatFixture)
	if err != nil {
		t.Fatal(err)
	}
	ivs, err := results.ReadJSONIntervals(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	one := append([]results.HeatInterval(nil), ivs...)
	for i := range one {
		one[i].Label = "board1"
	}
	two := append(append([]results.HeatInterval(nil), one...), ivs...)
	for i := len(one); i < len(two); i++ {
		two[i].Label = "board2"
	}
	for _, c := range []struct {
		ivs  []results.HeatInterval
		want []string
	}{
		{one, []string{"comm=cat", "comm=sh", "comm=<b>&\"x'"}},
		{two, []string{"board1: comm=cat", "board2: comm=cat", "board1: comm=sh", "board2: comm=sh", "board1: comm=<b>&\"x'", "board2: comm=<b>&\"x'"}},
	} {
		hm, err := results.NewHeatmap(c.ivs, results.HeatmapOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range hm.Maps[0].Panels {
			got = append(got, p.Key)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("panels (-want +got):\n%s", diff)
		}
	}
}

// FuzzHeatmap: whatever a file holds, sqlhist heatmap either refuses it
// or draws well-formed XML; never a panic or a hang.
func FuzzHeatmap(f *testing.F) {
	data, err := os.ReadFile(heatFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	lines := strings.SplitN(string(data), "\n", 2)
	f.Add(lines[0])
	f.Add(`{"interval": 3, "start": 2, "end": 3, "results": []}`)
	f.Fuzz(func(t *testing.T, in string) {
		fuzzguard.Run(fuzzguard.Limit, in, func() {
			ivs, err := results.ReadJSONIntervals(strings.NewReader(in))
			if err != nil {
				return
			}
			hm, err := results.NewHeatmap(ivs, results.HeatmapOptions{Keys: 3})
			if err != nil {
				return
			}
			var b bytes.Buffer
			if err := hm.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(&b)
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("not well-formed: %v", err)
				}
			}
		})
	})
}
