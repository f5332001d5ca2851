package live_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// A UNION ALL is one shared histogram (name=) that each event's trigger
// writes to: --run shows it once, read from the first event's hist file
// (the named trigger's, not another keyed alike), and its MAX column from
// the onmax line under each entry.
func TestRunUnionAllShared(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	const q = `SELECT fd, MAX(count) AS biggest, COUNT(*) AS n FROM sys_enter_read WHERE count == 1234
UNION ALL SELECT fd, MAX(count) AS biggest, COUNT(*) AS n FROM sys_enter_write WHERE count == 1234`
	src := source.NewSource("union.sql", q)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 9))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	if len(plan.Units) != 2 || plan.Units[0].Start.Name != "sys_enter_read_union_9" || plan.Units[1].Start.Name != plan.Units[0].Start.Name || !plan.Units[1].Feeds {
		t.Fatalf("units: %+v", plan.Units)
	}
	f := newFake()
	f.Files["instances/sqlhist_9/events/syscalls/sys_enter_read/hist"] = `# event histogram
#
# trigger info: hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 if count == 1234 [active]
#

{ fd:          0 } hitcount:          5

Totals:
    Hits: 5
    Entries: 1
    Dropped: 0

# event histogram
#
# trigger info: hist:name=sys_enter_read_union_9:keys=fd:vals=hitcount:max_count=count:sort=hitcount:size=2048:onmax($max_count).save(count) if count == 1234 [active]
#

{ fd:          0 } hitcount:          5
	max:       1234  count:       1234
{ fd:          1 } hitcount:          5
	max:       1234  count:       1234

Totals:
    Hits: 10
    Entries: 2
    Dropped: 0
`
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Title != "syscalls/sys_enter_read+sys_enter_write" {
		t.Fatalf("%d results (%v), want the shared histogram once", len(rep.Results), rep.Results)
	}
	var out strings.Builder
	if err := results.Write(&out, rep.Results, "csv"); err != nil {
		t.Fatal(err)
	}
	if want := "fd,biggest,n\n0,1234,5\n1,1234,5\n"; out.String() != want {
		t.Errorf("rows:\n%s\nwant:\n%s", out.String(), want)
	}
	triggers := 0
	for _, w := range f.Writes {
		if strings.Contains(w, ":name=sys_enter_read_union_9") && !strings.Contains(w, "!hist") && !strings.Contains(w, ":pause") {
			triggers++
		}
	}
	if triggers != 2 {
		t.Errorf("%d triggers named sys_enter_read_union_9 written, want one per event:\n%v", triggers, f.Writes)
	}
}
