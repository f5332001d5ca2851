package results

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/planner"
)

// MAX(field) is the onmax line under each entry; a percentage and a bar
// of the count are read from hitcount.percent and hitcount.graph, with
// and without the raw hitcount (nohitcount).
func TestDisplayColumns(t *testing.T) {
	const maxText = "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=hitcount:m=bytes_alloc:sort=hitcount:size=2048:onmax($m).save(bytes_alloc) [active]\n#\n\n" +
		"{ common_pid:         12 } hitcount:          3\n\tmax:        512  bytes_alloc:        512\n" +
		"{ common_pid:         40 } hitcount:          5\n\tmax:       4096  bytes_alloc:       4096\n" +
		"\nTotals:\n    Hits: 8\n    Entries: 2\n    Dropped: 0\n"
	h := &planner.Hist{Keys: planner.MustExprs("common_pid"), Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "biggest", Kind: planner.ColMax}, {Label: "n", Kind: planner.ColCount}}}
	res := NewResult(&planner.Unit{}, h, parseOne(t, maxText))
	want := map[string]string{"12": "512", "40": "4096"}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	for _, r := range res.Rows {
		if got := r.Cells[1].Text; got != want[r.Cells[0].Text] || !r.Cells[1].IsNum {
			t.Errorf("pid %s: max %q, want %s", r.Cells[0].Text, got, want[r.Cells[0].Text])
		}
	}
	for _, nohc := range []bool{false, true} {
		line1 := "{ id: sys_read                      [  0] } hitcount:          6 hitcount (%):  75.00 hitcount:     ####################\n"
		line2 := "{ id: sys_write                     [  1] } hitcount:          2 hitcount (%):  25.00 hitcount:                   ######\n"
		info := "hist:keys=id.syscall:vals=hitcount.percent,hitcount.graph:sort=hitcount:size=2048"
		if nohc {
			line1 = "{ id: sys_read                      [  0] } hitcount (%):  75.00 hitcount:     ####################\n"
			line2 = "{ id: sys_write                     [  1] } hitcount (%):  25.00 hitcount:                   ######\n"
			info += ":nohitcount"
		}
		text := "# event histogram\n#\n# trigger info: " + info + " [active]\n#\n\n" + line2 + line1 +
			"\nTotals:\n    Hits: 8\n    Entries: 2\n    Dropped: 0\n"
		h := &planner.Hist{Keys: planner.MustExprs("id.syscall"), Vals: planner.MustExprs("hitcount.percent", "hitcount.graph"), Columns: []planner.Column{
			{Label: "call", Kind: planner.ColKey}, {Label: "share", Kind: planner.ColPercent, Index: 0}, {Label: "bar", Kind: planner.ColGraph, Index: 1}}}
		res := NewResult(&planner.Unit{}, h, parseOne(t, text))
		if len(res.Rows) != 2 {
			t.Fatalf("nohitcount %v: %d rows", nohc, len(res.Rows))
		}
		// Most first, as every -r result without ORDER BY (the kernel
		// lists fewest first): by the counts, or without them
		// (nohitcount) the kernel's order reversed.
		got := res.Rows[0]
		if got.Cells[0].Text != "sys_read" || got.Cells[1].Text != "75.00" || got.Cells[2].Text != "####################" {
			t.Errorf("nohitcount %v: row %+v", nohc, got.Cells)
		}
		if v, _ := jsonCell(h.Columns[1], got.Cells[1]); v != 75.0 {
			t.Errorf("nohitcount %v: JSON percentage %v", nohc, v)
		}
	}
}

// -i is refused for a percentage of the count: the kernel's shares are of
// the whole run.
func TestIntervalPercentRefused(t *testing.T) {
	plan := &planner.Plan{Units: []*planner.Unit{{Start: &planner.Hist{Columns: []planner.Column{{Label: "share", Kind: planner.ColPercent}}}}}}
	if err := CheckIntervalColumns(plan, 0); err != nil {
		t.Errorf("without -i: %v", err)
	}
	if err := CheckIntervalColumns(plan, time.Second); err == nil {
		t.Error("-i of a percentage was accepted")
	}
	sum := &planner.Plan{Units: []*planner.Unit{{Start: &planner.Hist{Columns: []planner.Column{{Label: "bar", Kind: planner.ColSumGraph}}}}}}
	if err := CheckIntervalColumns(sum, time.Second); err == nil || !strings.Contains(err.Error(), "a sum's share") {
		t.Errorf("-i of a sum's bar: %v", err)
	}
}
