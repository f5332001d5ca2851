package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// An interval's rows are the difference of two readings: counts and sums
// exactly, the maximum exact when a new one arrived, else a bound (the
// maximum so far, clipped to the bucket).
func TestIntervalDifference(t *testing.T) {
	read := func(text string) *tracefs.Histogram { return parseOne(t, text) }
	const head = "# event histogram\n#\n# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:m=lat:sort=hitcount:size=8192:onmax($m).save(lat) [active]\n#\n\n"
	before := read(head +
		"{ comm: sh, lat: ~ 2^4 } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n" +
		"{ comm: ls, lat: ~ 2^7 } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n" +
		"\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n")
	after := read(head +
		"{ comm: sh, lat: ~ 2^4 } hitcount:          5  lat:         66\n\tmax:         16  lat:         16\n" +
		"{ comm: ls, lat: ~ 2^7 } hitcount:          2  lat:        170\n\tmax:        100  lat:        100\n" +
		"{ comm: ls, lat: ~ 2^3 } hitcount:          1  lat:          7\n\tmax:          7  lat:          7\n" +
		"\nTotals:\n    Hits: 8\n    Entries: 3\n    Dropped: 0\n")
	d := HistMinus(after, before)
	if d.Totals.Hits != 4 || len(d.Entries) != 3 {
		t.Fatalf("difference: hits %d, %d entries", d.Totals.Hits, len(d.Entries))
	}
	h := &planner.Hist{System: "synthetic", Event: "wl", Keys: planner.MustExprs("comm", "lat.log2"),
		Columns: []planner.Column{{Label: "comm", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}, {Label: "lat", Kind: planner.ColLatency, Index: 1, Unit: "us"}}}
	res := NewResult(&planner.Unit{}, h, d)
	got := map[string]Row{}
	for _, r := range res.Rows {
		got[r.Cells[0].Text] = r
	}
	sh, ls := got["sh"], got["ls"]
	if sh.Count != 2 || sh.Stats.Sum != 30 || sh.Stats.Max != 16 || sh.Stats.MaxBound {
		t.Errorf("sh: count %d, sum %v, max %d (bound %v); want 2, 30, 16 exact", sh.Count, sh.Stats.Sum, sh.Stats.Max, sh.Stats.MaxBound)
	}
	// ls: one event of 70 in (64, 128] (no new maximum: at most 100) and
	// one of 7.
	if ls.Count != 2 || ls.Stats.Sum != 77 || ls.Stats.Max != 100 || !ls.Stats.MaxBound {
		t.Errorf("ls: count %d, sum %v, max %d (bound %v); want 2, 77, <=100", ls.Count, ls.Stats.Sum, ls.Stats.Max, ls.Stats.MaxBound)
	}
}

// 7.2 lists a key twice now and then; a difference folds the twins of each
// reading first, so every event of the interval is counted once, and a
// histogram query's table shows the key once.
func TestIntervalDuplicateKeys(t *testing.T) {
	read := func(text string) *tracefs.Histogram { return parseOne(t, text) }
	const head = "# event histogram\n#\n# trigger info: hist:keys=comm:vals=hitcount,lat:sort=hitcount:size=8192 [active]\n#\n\n"
	before := read(head +
		"{ comm: sh } hitcount:          3  lat:         30\n" +
		"{ comm: sh } hitcount:          1  lat:         10\n" +
		"\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n")
	after := read(head +
		"{ comm: sh } hitcount:          1  lat:         10\n" +
		"{ comm: sh } hitcount:          6  lat:         60\n" +
		"\nTotals:\n    Hits: 7\n    Entries: 2\n    Dropped: 0\n")
	d := HistMinus(after, before)
	if len(d.Entries) != 1 || d.Entries[0].Values[0].Num != 3 || d.Entries[0].Values[1].Num != 30 {
		t.Fatalf("difference: %+v", d.Entries)
	}
	h := &planner.Hist{System: "sched", Event: "sched_switch", Keys: planner.MustExprs("comm"),
		Columns: []planner.Column{{Label: "comm", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}}}
	res := NewResult(&planner.Unit{}, h, after)
	if len(res.Rows) != 1 || res.Rows[0].Count != 7 {
		t.Errorf("rows of a reading with a twin: %+v", res.Rows)
	}
}

// A syscall the kernel cannot name keeps its number in the table (32-bit
// arm: private calls such as set_tls, 983045), so rows stay apart.
func TestUnknownSyscallKey(t *testing.T) {
	h0 := parseOne(t, "# event histogram\n#\n# trigger info: hist:keys=id.syscall:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n"+
		"{ id: unknown_syscall               [983045] } hitcount:          3\n"+
		"{ id: sys_openat                    [322] } hitcount:          2\n"+
		"\nTotals:\n    Hits: 5\n    Entries: 2\n    Dropped: 0\n")
	h := &planner.Hist{System: "raw_syscalls", Event: "sys_enter", Keys: planner.MustExprs("id.syscall"),
		Columns: []planner.Column{{Label: "call", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}}}
	res := NewResult(&planner.Unit{}, h, h0)
	if len(res.Rows) != 2 || res.Rows[0].Cells[0].Text != "unknown_syscall [983045]" || res.Rows[1].Cells[0].Text != "sys_openat" {
		t.Errorf("rows: %+v", res.Rows)
	}
}

// Folding twins changes counts: the rows then follow the trigger's sort
// again (sort=hitcount.descending), as the suite's aggregate on 7.2 needs.
func TestTwinsResorted(t *testing.T) {
	h0 := parseOne(t, "# event histogram\n#\n# trigger info: hist:keys=comm:vals=hitcount:sort=hitcount.descending:size=2048 [active]\n#\n\n"+
		"{ comm: ls } hitcount:          5\n"+
		"{ comm: sh } hitcount:          4\n"+
		"{ comm: sh } hitcount:          3\n"+
		"\nTotals:\n    Hits: 12\n    Entries: 3\n    Dropped: 0\n")
	h := &planner.Hist{System: "synthetic", Event: "x", Keys: planner.MustExprs("comm"), Sort: []string{"hitcount.descending"},
		Columns: []planner.Column{{Label: "comm", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}}}
	res := NewResult(&planner.Unit{}, h, h0)
	if len(res.Rows) != 2 || res.Rows[0].Cells[0].Text != "sh" || res.Rows[0].Count != 7 || res.Rows[1].Count != 5 {
		t.Errorf("rows: %+v", res.Rows)
	}
}

// 5.10 prints a signed key as an unsigned 64-bit number (an s32 -100 as
// 18446744073709551516): a signed key column reads it back as -100, in
// the table and in JSON; an unsigned column keeps the number.
func TestSignedKey(t *testing.T) {
	h0 := parseOne(t, "# event histogram\n#\n# trigger info: hist:keys=dfd:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n"+
		"{ dfd: 18446744073709551516 } hitcount:          7\n"+
		"{ dfd:          3 } hitcount:          2\n"+
		"\nTotals:\n    Hits: 9\n    Entries: 2\n    Dropped: 0\n")
	for _, signed := range []bool{true, false} {
		h := &planner.Hist{System: "kprobes", Event: "p", Keys: planner.MustExprs("dfd"),
			Columns: []planner.Column{{Label: "dfd", Kind: planner.ColKey, Signed: signed}, {Label: "count", Kind: planner.ColCount}}}
		res := NewResult(&planner.Unit{}, h, h0)
		want := map[bool]string{true: "-100", false: "18446744073709551516"}[signed]
		if len(res.Rows) != 2 || res.Rows[0].Cells[0].Text != want || res.Rows[1].Cells[0].Text != "3" {
			t.Fatalf("signed=%v rows: %+v", signed, res.Rows)
		}
		var b bytes.Buffer
		if err := renderJSON(&b, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `"dfd": `+want) {
			t.Errorf("signed=%v: JSON %s, want dfd %s", signed, b.String(), want)
		}
	}
}

// parseOne parses a hist file holding one histogram.
func parseOne(t *testing.T, text string) *tracefs.Histogram {
	t.Helper()
	hs, err := tracefs.ParseHist(text)
	if err != nil || len(hs) != 1 {
		t.Fatalf("%v: %q", err, text)
	}
	return hs[0]
}
