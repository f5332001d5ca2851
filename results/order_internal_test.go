package results

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/planner"
)

// Without ORDER BY, a histogram with COUNT(*) (no sort= in its trigger:
// the kernel lists it fewest first) shows its rows most first, ties by
// their keys, as a JOIN's table and a histogram without an aggregate do;
// its JSON says so. ORDER BY (sort=) keeps its order. A LIMIT keeps the
// kernel's first entries, as the printed script's closing line does,
// shown most first.
func TestDefaultOrderMostFirst(t *testing.T) {
	h := &planner.Hist{Keys: planner.MustExprs("common_pid"), Columns: []planner.Column{
		{Label: "pid", Kind: planner.ColKey}, {Label: "n", Kind: planner.ColCount}}}
	const info = "hist:keys=common_pid:vals=hitcount:size=2048"
	entries := "{ common_pid:         30 } hitcount:          1\n" +
		"{ common_pid:         20 } hitcount:          2\n" +
		"{ common_pid:         12 } hitcount:          2\n" +
		"{ common_pid:         40 } hitcount:          5\n"
	res := NewResult(&planner.Unit{}, h, parseOne(t, histText(info, entries, 10, 4)))
	if d := cmp.Diff([]string{"40,5", "12,2", "20,2", "30,1"}, cellsOf(res)); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	var js, csv strings.Builder
	Write(&js, []*Result{res}, "json")
	if !strings.Contains(js.String(), `"order": [
        {
          "column": "count",
          "desc": true
        }
      ]`) {
		t.Errorf("JSON order:\n%s", js.String())
	}
	Write(&csv, []*Result{res}, "csv")
	if csv.String() != "pid,n\n40,5\n12,2\n20,2\n30,1\n" {
		t.Errorf("CSV:\n%s", csv.String())
	}

	lim := *h
	lim.Limit = 3
	res = NewResult(&planner.Unit{}, &lim, parseOne(t, histText(info, entries, 10, 4)))
	if d := cmp.Diff([]string{"12,2", "20,2", "30,1"}, cellsOf(res)); d != "" {
		t.Errorf("LIMIT 3 (-want +got):\n%s", d)
	}

	asc := *h
	asc.Sort = []string{"common_pid"}
	res = NewResult(&planner.Unit{}, &asc, parseOne(t, histText(info+":sort=common_pid",
		"{ common_pid:         12 } hitcount:          2\n{ common_pid:         40 } hitcount:          5\n", 7, 2)))
	if d := cmp.Diff([]string{"12,2", "40,5"}, cellsOf(res)); d != "" {
		t.Errorf("ORDER BY pid (-want +got):\n%s", d)
	}
}
