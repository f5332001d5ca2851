package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Inserts lost with the map not full (the BPF engine's map updates that
// the kernel refused) are told apart from a full map: the warning names
// the kernel's reason and suggests no --size; the totals count them among
// the events; JSON carries them and reads them back; a merge sums them
// and an interval subtracts them.
func TestFailedInserts(t *testing.T) {
	h := &planner.Hist{System: "raw_syscalls", Event: "sys_enter", Keys: planner.MustExprs("id"),
		Columns: []planner.Column{{Label: "id", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}}}
	read := func(hits, dropped, failed uint64) *tracefs.Histogram {
		why := ""
		if failed > 0 {
			why = "the kernel's map update returned EBUSY (device or resource busy)"
		}
		return &tracefs.Histogram{TriggerInfo: "hist:keys=id:vals=hitcount:sort=hitcount:size=2048",
			Entries: []*tracefs.HistEntry{{Keys: []tracefs.HistValue{{Name: "id", Raw: "1", Num: 1}}, Values: []tracefs.HistValue{{Name: "hitcount", Raw: "", Num: hits}}}},
			Totals:  tracefs.HistTotals{Hits: hits, Entries: 1, Dropped: dropped, Failed: failed, FailedWhy: why}}
	}
	res := NewResult(&planner.Unit{}, h, read(4063, 0, 1))
	var warn bytes.Buffer
	res.WriteWarnings(&warn)
	want := "sqlhist: warning: raw_syscalls/sys_enter: the rows are incomplete: 1 of the 4064 events could not be stored with the map not full: the kernel's map update returned EBUSY (device or resource busy); the totals count every event\n"
	if warn.String() != want {
		t.Errorf("warning:\n%s\nwant:\n%s", warn.String(), want)
	}
	var out bytes.Buffer
	if err := Write(&out, []*Result{res}, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"events": 4064,`) || !strings.Contains(out.String(), `"failed": 1,`) || !strings.Contains(out.String(), `"failed_why": "the kernel's map update returned EBUSY`) {
		t.Errorf("JSON totals:\n%s", out.String())
	}
	_, rep, err := ReadJSONReport(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0].Read.Totals; got.Failed != 1 || got.FailedWhy != res.Read.Totals.FailedWhy {
		t.Errorf("read back: %+v", got)
	}
	m, err := Merge([]*Report{rep, rep})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Results[0].Read.Totals; got.Failed != 2 || got.Hits != 2*4063 {
		t.Errorf("merged: %+v", got)
	}
	var text bytes.Buffer
	if err := Write(&text, []*Result{res}, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Totals: hits 4063, entries 1, dropped 0, failed 1\n") {
		t.Errorf("text totals:\n%s", text.String())
	}
	d := HistMinus(read(5000, 0, 3), read(4063, 0, 1))
	if d.Totals.Failed != 2 || d.Totals.Hits != 937 {
		t.Errorf("interval: %+v", d.Totals)
	}
	// A full map alone keeps its own words, and no failed column.
	res = NewResult(&planner.Unit{}, h, read(100, 5, 0))
	warn.Reset()
	res.WriteWarnings(&warn)
	if !strings.Contains(warn.String(), "5 of the 105 events found the map of 2048 entries full") || strings.Contains(warn.String(), "not full") {
		t.Errorf("full map warning:\n%s", warn.String())
	}
	out.Reset()
	Write(&out, []*Result{res}, "json")
	if strings.Contains(out.String(), "failed") {
		t.Errorf("JSON of a run with no failed insert names one:\n%s", out.String())
	}
}
