package results

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// histText is a hist file of one histogram with the trigger info and the
// entries given.
func histText(info, entries string, hits, n int) string {
	return "# event histogram\n#\n# trigger info: " + info + " [active]\n#\n\n" + entries +
		"\nTotals:\n    Hits: " + strconv.Itoa(hits) + "\n    Entries: " + strconv.Itoa(n) + "\n    Dropped: 0\n"
}

// cellsOf lists each row's cells as CSV writes them.
func cellsOf(res *Result) []string {
	var out []string
	for _, r := range res.Rows {
		out = append(out, strings.Join(res.cells(r, ""), ","))
	}
	return out
}

func mergeOf(t *testing.T, rs ...*Result) *Result {
	t.Helper()
	var reps []*Report
	for _, r := range rs {
		reps = append(reps, &Report{Results: []*Result{r}})
	}
	m, err := Merge(reps)
	if err != nil {
		t.Fatal(err)
	}
	return m.Results[0]
}

// The count's share and bar are recomputed from the merged counts as the
// kernel computes them (hundredths truncated; a bar of 20 for the largest
// count); without counts (nohitcount) the share is estimated from each
// target's and marked "~", with a note.
func TestMergeShares(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("id.syscall"), Vals: planner.MustExprs("hitcount.percent", "hitcount.graph"), Columns: []planner.Column{
		{Label: "call", Kind: planner.ColKey}, {Label: "share", Kind: planner.ColPercent, Index: 0}, {Label: "bar", Kind: planner.ColGraph, Index: 1}}}
	const info = "hist:keys=id.syscall:vals=hitcount.percent,hitcount.graph:sort=hitcount:size=2048"
	a := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ id: sys_write                     [  1] } hitcount:          2 hitcount (%):  25.00 hitcount:                   ######\n"+
			"{ id: sys_read                      [  0] } hitcount:          6 hitcount (%):  75.00 hitcount:     ####################\n", 8, 2)))
	b := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ id: sys_read                      [  0] } hitcount:          1 hitcount (%):  25.00 hitcount:                   ######\n"+
			"{ id: sys_write                     [  1] } hitcount:          3 hitcount (%):  75.00 hitcount:     ####################\n", 4, 2)))
	m := mergeOf(t, a, b)
	// read 7 of 12: 58.33; write 5 of 12: 41.66 (truncated, as the
	// kernel does); the bar of write is 20*5/7 = 14.
	want := []string{"sys_read,58.33," + strings.Repeat("#", 20), "sys_write,41.66," + strings.Repeat("#", 14)}
	if d := cmp.Diff(want, cellsOf(m)); d != "" || len(m.Notes) != 0 {
		t.Errorf("merged shares (-want +got):\n%s\nnotes %q", d, m.Notes)
	}

	nh := *h
	nh.NoHitcount = true
	const ninfo = info + ":nohitcount"
	a = NewResult(&planner.Unit{}, &nh, parseOne(t, histText(ninfo,
		"{ id: sys_write                     [  1] } hitcount (%):  25.00 hitcount:                   ######\n"+
			"{ id: sys_read                      [  0] } hitcount (%):  75.00 hitcount:     ####################\n", 8, 2)))
	b = NewResult(&planner.Unit{}, &nh, parseOne(t, histText(ninfo,
		"{ id: sys_read                      [  0] } hitcount (%):  25.00 hitcount:                   ######\n"+
			"{ id: sys_write                     [  1] } hitcount (%):  75.00 hitcount:     ####################\n", 4, 2)))
	m = mergeOf(t, a, b)
	want = []string{"sys_read,~58.33," + strings.Repeat("#", 20), "sys_write,~41.67," + strings.Repeat("#", 14)}
	if d := cmp.Diff(want, cellsOf(m)); d != "" || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "share is estimated") {
		t.Errorf("merged shares without counts (-want +got):\n%s\nnotes %q", d, m.Notes)
	}
}

// A sum's share and bar are of each target's own total, which the
// results do not carry: merged, they show "?" with a note; one target's
// results pass as they are.
func TestMergeSumShares(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("common_pid"), Vals: planner.MustExprs("bytes_req.percent", "bytes_alloc.graph"), NoHitcount: true, Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "share", Kind: planner.ColSumPercent, Index: 0}, {Label: "bar", Kind: planner.ColSumGraph, Index: 1}}}
	const info = "hist:keys=common_pid:vals=bytes_req.percent,bytes_alloc.graph:sort=hitcount:size=2048:nohitcount"
	a := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:        148 }  bytes_req (%):   0.72  bytes_alloc:                     \n"+
			"{ common_pid:        151 }  bytes_req (%):  99.28  bytes_alloc: ####################\n", 8, 2)))
	b := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:        151 }  bytes_req (%): 100.00  bytes_alloc: ####################\n", 4, 1)))
	// Without counts, most first is the kernel's order (fewest first)
	// reversed.
	if got := cellsOf(a); !cmp.Equal(got, []string{"151,99.28," + strings.Repeat("#", 20), "148,0.72,"}) {
		t.Errorf("one target's shares: %q", got)
	}
	m := mergeOf(t, a, b)
	if d := cmp.Diff([]string{"148,?,?", "151,?,?"}, cellsOf(m)); d != "" || len(m.Notes) != 2 || !strings.Contains(m.Notes[0], "each target's own total") {
		t.Errorf("merged sum shares (-want +got):\n%s\nnotes %q", d, m.Notes)
	}
}

// MAX keeps the largest and the fields saved with it; a bound ("<=") wins
// only when nothing exact is as large. onchange's last values have no
// order across targets: a row whose targets differ shows "?", with a note.
func TestMergeHandlers(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("common_pid"), Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}, {Label: "max(b)", Kind: planner.ColMax},
		{Label: "saved(c)", Kind: planner.ColSaved, Index: 0}}}
	const info = "hist:keys=common_pid:vals=hitcount:m=b:sort=hitcount:size=2048:onmax($m).save(c)"
	a := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:         12 } hitcount:          3\n\tmax:        512  c:          1\n"+
			"{ common_pid:         40 } hitcount:          5\n\tmax:         64  c:          2\n", 8, 2)))
	b := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:         12 } hitcount:          1\n\tmax:       4096  c:          3\n"+
			"{ common_pid:         40 } hitcount:          1\n\tmax:         64  c:          4\n", 2, 2)))
	b.Rows[1].Cells[2] = Cell{Text: "<=100", Num: 100} // an interval's bound
	m := mergeOf(t, a, b)
	want := []string{"40,6,<=100,4", "12,4,4096,3"}
	if d := cmp.Diff(want, cellsOf(m)); d != "" {
		t.Errorf("merged maxima (-want +got):\n%s", d)
	}

	hc := &planner.Hist{Keys: planner.MustExprs("next_pid"), Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}, {Label: "last(lat)", Kind: planner.ColChanged},
		{Label: "saved(prio)", Kind: planner.ColSaved, Index: 0}}}
	const cinfo = "hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048:onchange($l).save(prio)"
	a = NewResult(&planner.Unit{}, hc, parseOne(t, histText(cinfo,
		"{ next_pid:       2160 } hitcount:          1\n\tchanged:     264463  prio:        120\n"+
			"{ next_pid:       2156 } hitcount:          2\n\tchanged:         17  prio:        120\n", 3, 2)))
	b = NewResult(&planner.Unit{}, hc, parseOne(t, histText(cinfo,
		"{ next_pid:       2160 } hitcount:          1\n\tchanged:        999  prio:        120\n"+
			"{ next_pid:       2156 } hitcount:          4\n\tchanged:         17  prio:        120\n", 5, 2)))
	m = mergeOf(t, a, b)
	want = []string{"2156,6,17,120", "2160,2,?,?"}
	if d := cmp.Diff(want, cellsOf(m)); d != "" || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "last(lat) is each target's own last value") {
		t.Errorf("merged last values (-want +got):\n%s\nnotes %q", d, m.Notes)
	}
}

// LIMIT: the merged rows are ordered as the query orders them and cut to
// the limit, with a note when a target may have cut a row.
func TestMergeLimit(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("common_pid"), Vals: planner.MustExprs("b"), Sort: []string{"b.descending"}, Limit: 2, Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "sum(b)", Kind: planner.ColValue, Index: 0}}}
	const info = "hist:keys=common_pid:vals=hitcount,b:sort=b.descending:size=2048"
	a := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:         12 } hitcount:          3  b:         50\n"+
			"{ common_pid:         40 } hitcount:          5  b:         40\n"+
			"{ common_pid:         41 } hitcount:          5  b:         30\n", 13, 3)))
	b := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ common_pid:         41 } hitcount:          1  b:         45\n", 1, 1)))
	m := mergeOf(t, a, b)
	// 41 has 75 in all, but the first target's rows stop at 40 (30 cut):
	// the merge shows what it was given, and says so.
	want := []string{"41,45", "12,50"}
	if d := cmp.Diff(want, cellsOf(m)); d == "" {
		t.Fatal("the cut row was counted")
	}
	want = []string{"12,50", "41,45"}
	if d := cmp.Diff(want, cellsOf(m)); d != "" || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "LIMIT 2: a target that shows 2 rows may have cut a row") {
		t.Errorf("merged rows (-want +got):\n%s\nnotes %q", d, m.Notes)
	}
}

// A symbol is one key whatever its address on each machine (KASLR): the
// merged row shows it without one when they differ.
func TestMergeSymbols(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("call_site.sym-offset"), Columns: []planner.Column{
		{Label: "site", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}}}
	const info = "hist:keys=call_site.sym-offset:vals=hitcount:sort=hitcount:size=2048"
	a := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ call_site: [ffffffff8bb5999c] kmalloc_reserve+0x4c/0xb0 } hitcount:          3\n", 3, 1)))
	b := NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ call_site: [ffffffffa0b5999c] kmalloc_reserve+0x4c/0xb0 } hitcount:          2\n", 2, 1)))
	if got := cellsOf(mergeOf(t, a, b)); !cmp.Equal(got, []string{"kmalloc_reserve+0x4c/0xb0,5"}) {
		t.Errorf("merged: %q", got)
	}
}

// The hist files of the kernels' testdata, shown as a histogram query
// shows them, print the same table and JSON once written as JSON and
// read back: keys of every kind (hex, log2, buckets, execname, syscall,
// sym-offset, strings, stacks), sums, maxima, last values; the keys read
// back are the same typed keys.
func TestJSONRoundTripKeys(t *testing.T) {
	files, err := filepath.Glob("../tracefs/testdata/hist-6.1-*.txt")
	if err != nil || len(files) < 10 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tracefs.ParseHist(string(data))
		if err != nil || len(hs) == 0 {
			continue
		}
		res := histResult(hs[0])
		var js, table strings.Builder
		renderJSON(&js, []*Result{res})
		renderTables(&table, []*Result{res})
		_, back, err := ReadJSONReport(strings.NewReader(js.String()))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		// The "keys" read back are the typed keys written.
		if len(back.Results) != 1 || !planner.ExprsEqual(back.Results[0].Hist.Keys, res.Hist.Keys) {
			t.Errorf("%s: keys %v read back as %v", file, res.Hist.Keys, back.Results)
		}
		var js2, table2 strings.Builder
		renderJSON(&js2, back.Results)
		renderTables(&table2, back.Results)
		if d := cmp.Diff(js.String(), js2.String()); d != "" {
			t.Errorf("%s: JSON (-want +got):\n%s", file, d)
		}
		if d := cmp.Diff(table.String(), table2.String()); d != "" {
			t.Errorf("%s: table (-want +got):\n%s", file, d)
		}
	}
}

// triggerVals are a trigger's keys= and vals= fields.
func triggerVals(info string) (keys, vals []string) {
	info, _, _ = strings.Cut(info, " if ")
	for _, seg := range strings.Split(info, ":") {
		if list, ok := strings.CutPrefix(seg, "keys="); ok {
			keys = strings.Split(list, ",")
		} else if list, ok := strings.CutPrefix(seg, "vals="); ok {
			vals = strings.Split(list, ",")
		}
	}
	return keys, vals
}

// histResult shows a histogram as a histogram query of its keys, count,
// sums and handlers would.
func histResult(got *tracefs.Histogram) *Result {
	h := &planner.Hist{System: "s", Event: "e"}
	keys, vals := triggerVals(got.TriggerInfo)
	h.Keys, h.Vals = planner.MustExprs(keys...), planner.MustExprs(vals...)
	for i, k := range keys {
		h.Columns = append(h.Columns, planner.Column{Label: k, Kind: planner.ColKey, Index: i})
	}
	h.Columns = append(h.Columns, planner.Column{Label: "count", Kind: planner.ColCount})
	for i, v := range vals {
		if v != "hitcount" {
			h.Columns = append(h.Columns, planner.Column{Label: v, Kind: planner.ColValue, Index: i - 1})
		}
	}
	if strings.Contains(got.TriggerInfo, "onmax(") {
		h.Columns = append(h.Columns, planner.Column{Label: "max", Kind: planner.ColMax})
	}
	if strings.Contains(got.TriggerInfo, "onchange(") {
		h.Columns = append(h.Columns, planner.Column{Label: "last", Kind: planner.ColChanged})
	}
	if strings.Contains(got.TriggerInfo, ".save(") {
		h.Columns = append(h.Columns, planner.Column{Label: "saved", Kind: planner.ColSaved})
	}
	return NewResult(&planner.Unit{}, h, got)
}

// What ReadJSONReport accepts can be merged and printed in every format
// without a panic.
func FuzzReadJSONReport(f *testing.F) {
	for _, name := range []string{"hist-6.1-buckets.txt", "hist-6.1-stacktrace.txt", "hist-6.1-onchange-save.txt", "hist-6.1-two-triggers.txt"} {
		data, err := os.ReadFile("../tracefs/testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		hs, err := tracefs.ParseHist(string(data))
		if err != nil {
			f.Fatal(err)
		}
		var js strings.Builder
		renderJSONLabelled(&js, []*Result{histResult(hs[0])}, name)
		f.Add(js.String())
	}
	h := &planner.Hist{System: "synthetic", Event: "wl", Keys: planner.MustExprs("comm", "lat.log2"),
		Columns: []planner.Column{{Label: "comm", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}, {Label: "lat", Kind: planner.ColLatency, Index: 1, Unit: "us"}}}
	const head = "# event histogram\n#\n# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:m=lat:sort=hitcount:size=8192:onmax($m).save(lat) [active]\n#\n\n"
	hs, err := tracefs.ParseHist(head +
		"{ comm: sh, lat: ~ 2^4 } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n" +
		"{ comm: ls, lat: ~ 2^7 } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n" +
		"\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n")
	if err != nil {
		f.Fatal(err)
	}
	var js strings.Builder
	renderJSON(&js, []*Result{NewResult(&planner.Unit{}, h, hs[0])})
	f.Add(js.String())
	f.Add(`{"total": true, "results": []}`)
	f.Fuzz(func(t *testing.T, in string) {
		fuzzguard.Run(fuzzguard.Limit, in, func() { checkReadJSON(t, in) })
	})
}

func checkReadJSON(t *testing.T, in string) {
	_, rep, err := ReadJSONReport(strings.NewReader(in))
	if err != nil {
		return
	}
	m, err := Merge([]*Report{rep, rep})
	if err != nil {
		t.Fatalf("a report does not merge with itself: %v", err)
	}
	for _, format := range Formats {
		WriteFleet(io.Discard, io.Discard, format, []Labelled{{Label: "a", Report: rep}, {Label: "b", Report: rep}}, m)
	}
}

// TestMergeEngine: merged results name each engine they came from once,
// kernel, stream, then awk.
func TestMergeEngine(t *testing.T) {
	for _, tt := range []struct {
		engines []string
		want    string
	}{
		{[]string{"kernel", "kernel"}, "kernel"},
		{[]string{"", "stream"}, "kernel+stream"},
		{[]string{"awk", "kernel"}, "kernel+awk"},
		{[]string{"stream", "awk", "kernel", "awk"}, "kernel+stream+awk"},
		{[]string{"awk", "awk"}, "awk"},
	} {
		got := ""
		for i, e := range tt.engines {
			got = mergeEngine(got, e, i == 0)
		}
		if got != tt.want {
			t.Errorf("%q: %q, want %q", tt.engines, got, tt.want)
		}
	}
}

// A result's shape names each key's modifier, a bucket's size with it.
func TestShapeModifiers(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("bytes.buckets=64", "call_site.sym-offset", "common_stacktrace", "common_timestamp/1000"), Columns: []planner.Column{
		{Label: "b", Kind: planner.ColKey, Index: 0}, {Label: "s", Kind: planner.ColKey, Index: 1},
		{Label: "st", Kind: planner.ColKey, Index: 2}, {Label: "t", Kind: planner.ColKey, Index: 3}, {Label: "count", Kind: planner.ColCount}}}
	want := "b (key .buckets=64), s (key .sym-offset), st (key .stacktrace), t (key), count (count)"
	if got := shape(&Result{Hist: h}); got != want {
		t.Errorf("shape = %q, want %q", got, want)
	}
}
