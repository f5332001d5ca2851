package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// runOn runs sql as run id on a fake tracefs whose hist file of the event
// (relative to the run's instance) holds hist, and returns the report.
func runOn(t *testing.T, sql string, id int, event, hist string) *results.Report {
	t.Helper()
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewSource("q.sql", sql)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, id))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	f := newFake()
	f.Files[fmt.Sprintf("instances/sqlhist_%d/events/%s/hist", id, event)] = hist
	if strings.HasPrefix(event, "synthetic/") {
		// A JOIN's results are in the run's lease; a histogram on its
		// synthetic event (an aggregate) beside its triggers.
		f.Files[fmt.Sprintf("instances/%s/events/%s/hist", live.LeaseName(id), event)] = hist
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// joinHist is the results histogram of the wakeup JOIN of run id, with
// its entries, and the counter of negative latencies with neg events.
func joinHist(id int, entries string, hits, n, neg int) string {
	return fmt.Sprintf(`# event histogram
#
# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:sched_waking_to_sched_switch_%[1]d_max=lat:sort=hitcount:size=8192:onmax($sched_waking_to_sched_switch_%[1]d_max).save(lat) if lat < 9223372036854775808 [active]
#

%[2]s
Totals:
    Hits: %[3]d
    Entries: %[4]d
    Dropped: 0

# event histogram
#
# trigger info: hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808 [active]
#

Totals:
    Hits: %[5]d
    Entries: 0
    Dropped: 0
`, id, entries, hits, n, neg)
}

// Two targets' runs of the wakeup JOIN.
func wakeupFleet(t *testing.T) (a, b *results.Report) {
	a = runOn(t, wakeup, 9, "synthetic/sched_waking_to_sched_switch_9", joinHist(9,
		"{ comm: sh                                                 , lat: ~ 2^4  } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n"+
			"{ comm: kworker/0:1                                        , lat: ~ 2^3  } hitcount:          2  lat:         10\n\tmax:          5  lat:          5\n"+
			"{ comm: sh                                                 , lat: ~ 2^7  } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n",
		6, 3, 0))
	b = runOn(t, wakeup, 11, "synthetic/sched_waking_to_sched_switch_11", joinHist(11,
		"{ comm: sh                                                 , lat: ~ 2^5  } hitcount:          4  lat:        100\n\tmax:         30  lat:         30\n"+
			"{ comm: rcu_preempt                                        , lat: ~ 2^11 } hitcount:          2  lat:       3000\n\tmax:       1500  lat:       1500\n",
		6, 2, 1))
	return a, b
}

// Merging a JOIN's results: counts and sums add, the maximum is the
// largest, the distributions add (per row and overall), and the
// percentiles come from the merged distribution; a key on both targets
// is one row, a key on one is kept.
func TestMergeJoin(t *testing.T) {
	a, b := wakeupFleet(t)
	m, err := results.Merge([]*results.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	res := m.Results[0]
	if res.Title != "synthetic/sched_waking_to_sched_switch" {
		t.Errorf("title %q, want the event's name without the runs' ids", res.Title)
	}
	if tot := res.Totals(); tot.Hits != 12 || tot.Entries != 5 || tot.Dropped != 0 || res.Negative != 1 {
		t.Errorf("totals %+v, negative %d; want hits 12, entries 5, negative 1", tot, res.Negative)
	}
	type row struct {
		Comm  string
		Count uint64
		Sum   float64
		Max   uint64
		Dist  map[int]uint64
		P50   results.Percentile
		P90   results.Percentile
		P99   results.Percentile
		Bound bool
	}
	var got []row
	for _, r := range res.Rows {
		got = append(got, row{r.Cells[0].Text, r.Count, r.Stats.Sum, r.Stats.Max, r.Stats.Dist,
			r.Percentile(50), r.Percentile(90), r.Percentile(99), r.Stats.MaxBound})
	}
	// sh: 3 events in (8, 16], 1 in (64, 128] on the first target, 4 in
	// (16, 32] on the second. The median is the 4th of 8: the first of
	// the 4 in (16, 32], interpolated over 17…32: 17 + 0.5/4*15. p90 and
	// p99 are the 8th, the maximum.
	max100 := results.Percentile{Value: 100, Low: 100, High: 100}
	want := []row{
		{"sh", 8, 236, 100, map[int]uint64{4: 3, 7: 1, 5: 4}, results.Percentile{Value: 18.875, Low: 16, High: 32}, max100, max100, false},
		{"kworker/0:1", 2, 10, 5, map[int]uint64{3: 2}, results.Percentile{Value: 5, Low: 4, High: 5}, results.Percentile{Value: 5, Low: 5, High: 5}, results.Percentile{Value: 5, Low: 5, High: 5}, false},
		{"rcu_preempt", 2, 3000, 1500, map[int]uint64{11: 2}, results.Percentile{Value: 1025 + 0.25*475, Low: 1024, High: 1500}, results.Percentile{Value: 1500, Low: 1500, High: 1500}, results.Percentile{Value: 1500, Low: 1500, High: 1500}, false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("merged rows (-want +got):\n%s", d)
	}
	var dist []uint64
	for _, bk := range res.Distribution {
		dist = append(dist, bk.Count)
	}
	// (4, 8] … (1K, 2K]
	if d := cmp.Diff([]uint64{2, 3, 4, 0, 1, 0, 0, 0, 2}, dist); d != "" || res.Distribution[0].Low != 4 {
		t.Errorf("merged distribution from %d (-want +got):\n%s", res.Distribution[0].Low, d)
	}
	// The targets' own rows are left alone.
	if a.Results[0].Rows[0].Count != 4 || a.Results[0].Rows[0].Stats.Max != 100 || len(a.Results[0].Rows[0].Stats.Dist) != 2 {
		t.Errorf("merging changed a target's row: %+v", a.Results[0].Rows[0])
	}
}

// kmallocHist is a GROUP BY histogram with a count, a sum and a maximum
// with its saved field.
func kmallocHist(entries string, hits, n, dropped int) string {
	return fmt.Sprintf(`# event histogram
#
# trigger info: hist:keys=common_pid:vals=hitcount,bytes_alloc:max_bytes_req=bytes_req:sort=hitcount:size=2048:onmax($max_bytes_req).save(bytes_req) [active]
#

%s
Totals:
    Hits: %d
    Entries: %d
    Dropped: %d
`, entries, hits, n, dropped)
}

const kmallocSQL = `SELECT common_pid, COUNT(*) AS n, SUM(bytes_alloc), MAX(bytes_req) FROM kmalloc GROUP BY common_pid`

// Merging GROUP BY aggregates: COUNT(*) and SUM add, MAX is the largest,
// the Totals add, and the rows are most first, as -r shows them without
// ORDER BY (ties by their keys).
func TestMergeAggregates(t *testing.T) {
	a := runOn(t, kmallocSQL, 9, "kmem/kmalloc", kmallocHist(
		"{ common_pid:        100 } hitcount:          3  bytes_alloc:        300\n\tmax:         64  bytes_req:         64\n"+
			"{ common_pid:        200 } hitcount:          1  bytes_alloc:         32\n\tmax:         32  bytes_req:         32\n", 4, 2, 0))
	b := runOn(t, kmallocSQL, 11, "kmem/kmalloc", kmallocHist(
		"{ common_pid:        100 } hitcount:          2  bytes_alloc:       1000\n\tmax:        512  bytes_req:        512\n"+
			"{ common_pid:        300 } hitcount:          5  bytes_alloc:         50\n\tmax:         10  bytes_req:         10\n", 7, 2, 1))
	m, err := results.Merge([]*results.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := results.Write(&out, m.Results, "csv"); err != nil {
		t.Fatal(err)
	}
	want := "common_pid,n,sum(bytes_alloc),max(bytes_req)\n100,5,1300,512\n300,5,50,10\n200,1,32,32\n"
	if out.String() != want {
		t.Errorf("merged:\n%s\nwant:\n%s", out.String(), want)
	}
	if tot := m.Results[0].Totals(); tot != (tracefs.HistTotals{Hits: 11, Entries: 4, Dropped: 1}) {
		t.Errorf("totals %+v", tot)
	}
}

// Reports of different queries are refused, naming what differs.
func TestMergeRefusesDifferentQueries(t *testing.T) {
	a, _ := wakeupFleet(t)
	k := runOn(t, kmallocSQL, 13, "kmem/kmalloc", kmallocHist("", 0, 0, 0))
	other := runOn(t, `SELECT call_site, COUNT(*) AS n, SUM(bytes_alloc), MAX(bytes_req) FROM kmalloc GROUP BY call_site`, 15, "kmem/kmalloc", kmallocHist("", 0, 0, 0))
	for _, c := range []struct {
		reps []*results.Report
		want string
	}{
		{[]*results.Report{a, k}, "report 1 and report 2 ran different queries: statement 1 reads synthetic/sched_waking_to_sched_switch_9 against kmem/kmalloc"},
		{[]*results.Report{k, other}, "statement 1 (kmem/kmalloc) shows common_pid (key)"},
		{[]*results.Report{k, {Results: append(k.Results, k.Results...)}}, "1 statements against 2"},
	} {
		_, err := results.Merge(c.reps)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := results.Merge(nil); err == nil {
		t.Error("merged nothing")
	}
}

// jsonOf is what sqlhist -r -o json prints for a report.
func jsonOf(t *testing.T, rep *results.Report) string {
	t.Helper()
	var b strings.Builder
	if err := results.Write(&b, rep.Results, "json"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func tableOf(t *testing.T, rep *results.Report) string {
	t.Helper()
	var b strings.Builder
	if err := results.Write(&b, rep.Results, "table"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// readBack reads a report back from its JSON.
func readBack(t *testing.T, js string) (string, *results.Report) {
	t.Helper()
	label, rep, err := results.ReadJSONReport(strings.NewReader(js))
	if err != nil {
		t.Fatalf("%v in\n%s", err, js)
	}
	return label, rep
}

// What -o json prints reads back into a report that prints the same JSON
// and the same table, merged alone or not; and merging reports read back
// gives what merging the runs' reports gives.
func TestJSONRoundTrip(t *testing.T) {
	a, b := wakeupFleet(t)
	k := runOn(t, kmallocSQL, 9, "kmem/kmalloc", kmallocHist(
		"{ common_pid:        100 } hitcount:          3  bytes_alloc:        300\n\tmax:         64  bytes_req:         64\n", 3, 1, 0))
	agg := runOn(t, aggregateJoin, 7, "synthetic/sched_waking_to_sched_switch_7", `# event histogram
#
# trigger info: hist:keys=comm,lat.log2:vals=hitcount:sort=hitcount.descending:size=2048 [active]
#

{ comm: kworker/0:1                                       , lat: ~ 2^5        } hitcount:          5
{ comm: sh                                                , lat: ~ 2^0        } hitcount:          2

Totals:
    Hits: 7
    Entries: 2
    Dropped: 0
`)
	m, err := results.Merge([]*results.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range map[string]*results.Report{"join": a, "aggregates": k, "log2 key": agg, "merged": m} {
		js := jsonOf(t, rep)
		_, back := readBack(t, js)
		if d := cmp.Diff(js, jsonOf(t, back)); d != "" {
			t.Errorf("%s: JSON read back and written again (-want +got):\n%s", name, d)
		}
		if d := cmp.Diff(tableOf(t, rep), tableOf(t, back)); d != "" {
			t.Errorf("%s: table of the JSON read back (-want +got):\n%s", name, d)
		}
		one, err := results.Merge([]*results.Report{back})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(js, jsonOf(t, one)); d != "" {
			t.Errorf("%s: one report read back and merged alone (-want +got):\n%s", name, d)
		}
	}
	_, ra := readBack(t, jsonOf(t, a))
	_, rb := readBack(t, jsonOf(t, b))
	m2, err := results.Merge([]*results.Report{ra, rb})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(jsonOf(t, m), jsonOf(t, m2)); d != "" {
		t.Errorf("merging what was read back (-runs +read back):\n%s", d)
	}
	if !strings.HasPrefix(jsonOf(t, a), "{\n  \"results\": [") {
		t.Errorf("unlabelled JSON starts %q", jsonOf(t, a)[:20])
	}
}

// A label written with the results reads back; so does the total of -i's
// lines; what is not one run's results is an error that says where.
func TestReadJSONForms(t *testing.T) {
	a, _ := wakeupFleet(t)
	var b, errw strings.Builder
	if err := a.WriteLabelled(&b, &errw, "json", "root@board"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "{\n  \"label\": \"root@board\",\n  \"results\": [") {
		t.Errorf("labelled JSON starts %q", b.String()[:40])
	}
	label, back := readBack(t, b.String())
	if label != "root@board" || jsonOf(t, back) != jsonOf(t, a) {
		t.Errorf("label %q, results read back differ", label)
	}
	var iv strings.Builder
	(&results.Interval{N: 1, Results: a.Results}).WriteLabelled(&iv, "json", "b2")
	intervals := iv.String()
	a.WriteTotalLabelled(&iv, &errw, "json", "b2")
	label, back = readBack(t, iv.String())
	if label != "b2" || jsonOf(t, back) != jsonOf(t, a) {
		t.Errorf("-i lines: label %q, results read back differ", label)
	}
	for _, c := range []struct{ in, want string }{
		{intervals, "1 intervals and no total"},
		{"", "empty"},
		{"{\"results\": [\n  {\"event\": 3}]}", "2:13: results[0]: json: cannot unmarshal number"},
		{"{\"results\": []}\n{\"results\": []}", "2:1: a second document of results (the first is at line 1)"},
		{"{\"results\": [\n", "2:1: unexpected end of the file"},
		{"{\"results\": [}", "1:14: invalid character '}'"},
		{"[1]", "1:1: the document is a JSON array"},
		{"{\"targets\": [], \"merged\": null}", "a fleet's document"},
		{strings.Replace(jsonOf(t, a), `"sum"`, `"summ"`, 1), "results[0].rows[0].lat: no \"sum\""},
		{strings.Replace(jsonOf(t, a), `"kinds"`, `"kindz"`, 1), "no \"kinds\" (written by an sqlhist older than merge"},
		{strings.Replace(jsonOf(t, a), `"lat.log2"`, `"lat.logg"`, 1), `results[0].keys[1]: expression "lat.logg": unknown modifier "logg"`},
	} {
		_, _, err := results.ReadJSONReport(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// A fleet prints each target's results under its label, the failed
// target's error on errw, and the merge of the others; its JSON keeps the
// objects one target's -o json prints.
func TestWriteFleet(t *testing.T) {
	a, b := wakeupFleet(t)
	targets := []results.Labelled{{Label: "A", Report: a}, {Label: "B", Report: b}, {Label: "C", Err: fmt.Errorf("the transport closed")}}
	m, err := results.MergeLabelled(targets)
	if err != nil {
		t.Fatal(err)
	}
	var out, errw strings.Builder
	if err := results.WriteFleet(&out, &errw, "table", targets, m); err != nil {
		t.Fatal(err)
	}
	want := "=== A\n" + tableOf(t, a) + "\n=== B\n" + tableOf(t, b) + "\n=== merged (2 of 3 targets)\n" + tableOf(t, m)
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(errw.String(), "sqlhist: C: the transport closed\nsqlhist: B: warning: synthetic/sched_waking_to_sched_switch_11: 1 events had a negative lat") ||
		!strings.Contains(errw.String(), "\nsqlhist: merged: warning: synthetic/sched_waking_to_sched_switch: 1 events") {
		t.Errorf("errw: %q", errw.String())
	}

	out.Reset()
	errw.Reset()
	if err := results.WriteFleet(&out, &errw, "json", targets, m); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Targets []struct {
			Label   string
			Results []any
			Error   string
		}
		Merged struct{ Results []any }
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	resultsOf := func(rep *results.Report) []any {
		var one struct{ Results []any }
		if err := json.Unmarshal([]byte(jsonOf(t, rep)), &one); err != nil {
			t.Fatal(err)
		}
		return one.Results
	}
	if len(doc.Targets) != 3 || doc.Targets[0].Label != "A" || doc.Targets[2].Error != "the transport closed" || doc.Targets[2].Results != nil {
		t.Fatalf("targets: %+v", doc.Targets)
	}
	if d := cmp.Diff(resultsOf(a), doc.Targets[0].Results); d != "" {
		t.Errorf("target A's results differ from its -o json (-want +got):\n%s", d)
	}
	if d := cmp.Diff(resultsOf(m), doc.Merged.Results); d != "" {
		t.Errorf("merged results (-want +got):\n%s", d)
	}

	out.Reset()
	if err := results.WriteFleet(&out, &errw, "csv", targets, m); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if lines[0] != "target,comm,count,lat_avg,lat_p50,lat_p90,lat_p99,lat_max" || len(lines) != 1+2+2+3 ||
		!strings.HasPrefix(lines[1], "A,sh,4,") || !strings.HasPrefix(lines[3], "B,sh,4,") || lines[5] != "merged,sh,8,29.5,19,100,100,100" {
		t.Errorf("csv:\n%s", out.String())
	}
	if !strings.Contains(errw.String(), "sqlhist: merged: synthetic/sched_waking_to_sched_switch: hits 12, entries 5, dropped 0\n") {
		t.Errorf("csv totals on errw:\n%s", errw.String())
	}
}

// One target's results with its label: CSV's first column, a table's
// title line, in -i's forms too; the messages on errw name it.
func TestWriteLabelled(t *testing.T) {
	k := runOn(t, kmallocSQL, 9, "kmem/kmalloc", kmallocHist(
		"{ common_pid:        100 } hitcount:          3  bytes_alloc:        300\n\tmax:         64  bytes_req:         64\n", 3, 1, 2))
	var out, errw strings.Builder
	if err := k.WriteLabelled(&out, &errw, "csv", "adb shell"); err != nil {
		t.Fatal(err)
	}
	if want := "target,common_pid,n,sum(bytes_alloc),max(bytes_req)\nadb shell,100,3,300,64\n"; out.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.HasPrefix(errw.String(), "sqlhist: adb shell: warning: kmem/kmalloc: the rows are incomplete") ||
		!strings.HasSuffix(errw.String(), "sqlhist: adb shell: kmem/kmalloc: hits 3, entries 1, dropped 2\n") {
		t.Errorf("errw:\n%s", errw.String())
	}
	out.Reset()
	k.WriteLabelled(&out, &errw, "table", "adb shell")
	if want := "=== adb shell\n" + tableOf(t, k); out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	(&results.Interval{N: 2, Results: k.Results}).WriteLabelled(&out, "csv", "adb shell")
	k.WriteTotalLabelled(&out, &errw, "csv", "adb shell")
	if want := "target,interval,common_pid,n,sum(bytes_alloc),max(bytes_req)\nadb shell,2,100,3,300,64\n" +
		"target,interval,common_pid,n,sum(bytes_alloc),max(bytes_req)\nadb shell,total,100,3,300,64\n"; out.String() != want {
		t.Errorf("-i csv:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	(&results.Interval{N: 2, Results: k.Results}).WriteLabelled(&out, "table", "adb shell")
	if !strings.HasPrefix(out.String(), "=== adb shell: interval 2: 0.0 s to 0.0 s\nkmem/kmalloc\n") {
		t.Errorf("-i table:\n%s", out.String())
	}
	// Without a label, what sqlhist prints without one.
	var plain, labelled strings.Builder
	k.Write(&plain, &errw, "csv")
	k.WriteLabelled(&labelled, &errw, "csv", "")
	if plain.String() != labelled.String() {
		t.Errorf("label \"\" changed the output:\n%s", labelled.String())
	}
}

// Streamed counts and lost events add; the streamed synthetic events of
// runs with other ids are one.
func TestMergeStreamed(t *testing.T) {
	a, b := wakeupFleet(t)
	a.Streamed, a.Lost = map[string]int{"sched_waking_to_sched_switch_9": 6}, 1
	b.Streamed, b.Lost = map[string]int{"sched_waking_to_sched_switch_11": 5}, 2
	m, err := results.Merge([]*results.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"sched_waking_to_sched_switch_9": 11}, m.Streamed); d != "" || m.Lost != 3 {
		t.Errorf("streamed (-want +got):\n%s\nlost %d", d, m.Lost)
	}
	var sum strings.Builder
	m.WriteStreamSummary(&sum)
	if !strings.Contains(sum.String(), "synthetic/sched_waking_to_sched_switch_9: 11 events streamed; the kernel counted 12") {
		t.Errorf("summary: %s", sum.String())
	}
}

// A fleet's JSON document reads back as its targets, a failed one with
// its error; one target's as itself.
func TestReadJSONTargets(t *testing.T) {
	a, b := wakeupFleet(t)
	targets := []results.Labelled{{Label: "A", Report: a}, {Label: "C", Err: fmt.Errorf("the transport closed")}, {Label: "B", Report: b}}
	m, err := results.MergeLabelled(targets)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := results.WriteFleet(&out, io.Discard, "json", targets, m); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadJSONTargets(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Label != "A" || got[1].Label != "C" || got[1].Err == nil || got[1].Err.Error() != "the transport closed" || got[2].Label != "B" {
		t.Fatalf("targets: %+v", got)
	}
	if jsonOf(t, got[0].Report) != jsonOf(t, a) || jsonOf(t, got[2].Report) != jsonOf(t, b) {
		t.Error("a target's results read back differ")
	}
	m2, err := results.MergeLabelled(got)
	if err != nil || jsonOf(t, m2) != jsonOf(t, m) {
		t.Errorf("merge of the targets read back differs (%v)", err)
	}
	one, err := results.ReadJSONTargets(strings.NewReader(jsonOf(t, a)))
	if err != nil || len(one) != 1 || one[0].Label != "" || jsonOf(t, one[0].Report) != jsonOf(t, a) {
		t.Errorf("one target's JSON: %+v, %v", one, err)
	}
	bad := strings.Replace(out.String(), `"label": "B"`, `"labl": "B"`, 1)
	if _, err := results.ReadJSONTargets(strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("%d:5: targets[2]: no \"label\"", strings.Count(bad[:strings.Index(bad, `"labl"`)], "\n"))) {
		t.Errorf("error %v", err)
	}
}

// The stream engine's answers say so: the JSON names the engine and the
// events lost and reads back with them, the table's header line and a
// warning tell the loss, and a merge with a kernel's answer names both
// engines and adds the losses.
func TestStreamEngineInReports(t *testing.T) {
	a, b := wakeupFleet(t)
	for _, res := range a.Results {
		res.Engine, res.Lost = live.EngineStream, 3
	}
	js := jsonOf(t, a)
	if !strings.Contains(js, `"engine": "stream"`) || !strings.Contains(js, `"lost": 3`) {
		t.Errorf("JSON without the engine and the loss:\n%s", js)
	}
	if strings.Contains(jsonOf(t, b), `"engine"`) {
		t.Errorf("the kernel's JSON names an engine (it is the default)")
	}
	_, back := readBack(t, js)
	if back.Results[0].Engine != live.EngineStream || back.Results[0].Lost != 3 {
		t.Errorf("read back: engine %q lost %d", back.Results[0].Engine, back.Results[0].Lost)
	}
	if tab := tableOf(t, a); !strings.Contains(tab, "engine: stream (sqlhist computed the triggers from the events), 3 events lost") {
		t.Errorf("the table does not say the engine and the loss:\n%s", tab)
	}
	var out, errw strings.Builder
	if err := a.Write(&out, &errw, "csv"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errw.String(), "lost 3 events") || !strings.Contains(errw.String(), "not whole") {
		t.Errorf("no warning of the loss:\n%s", errw.String())
	}
	m, err := results.Merge([]*results.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Results[0]; r.Engine != "kernel+stream" || r.Lost != 3 {
		t.Errorf("merged: engine %q lost %d, want kernel+stream and 3", r.Engine, r.Lost)
	}
}

// An error inside "results" is placed at the value that is wrong, with
// its line and a caret under it, not at the document's start.
func TestMergeFilesPlacesResultsErrors(t *testing.T) {
	a, _ := wakeupFleet(t)
	good := jsonOf(t, a)
	for _, c := range []struct{ name, old, new, msg, caretAt string }{
		{"count", `"count": 2,`, `"count": "x2",`, `results[0].rows[1].count: a count, not "x2"`, `"x2"`},
		{"kind", `"key"`, `"kee"`, `results[0].kinds[0]: unknown kind "kee"`, `"kee"`},
		{"type", `"event": "`, `"event": 7, "x": "`, `results[0]: json: cannot unmarshal number`, `7`},
		{"deep", `"count": 3`, `"count": "x3"`, `results[0].rows[0].lat: json: cannot unmarshal string`, `"x3"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := strings.Index(good, c.old)
			if i < 0 {
				t.Fatalf("%q not in the results", c.old)
			}
			bad := good[:i] + c.new + good[i+len(c.old):]
			var out, errw strings.Builder
			read := func(string) ([]byte, error) { return []byte(bad), nil }
			if results.MergeFiles(&out, &errw, "table", []string{"b.json"}, read) {
				t.Fatal("merged a bad file")
			}
			off := strings.Index(bad[i:], c.caretAt) + i
			line := strings.Count(bad[:off], "\n") + 1
			col := off - strings.LastIndex(bad[:off], "\n")
			want := fmt.Sprintf("b.json:%d:%d: %s", line, col, c.msg)
			if !strings.HasPrefix(errw.String(), want) {
				t.Fatalf("error\n%s\nwant it to start %q", errw.String(), want)
			}
			lines := strings.Split(errw.String(), "\n")
			if len(lines) < 3 || !strings.HasSuffix(lines[2], "| "+strings.Repeat(" ", col-1)+"^") {
				t.Errorf("caret not under column %d:\n%s", col, errw.String())
			}
		})
	}
}

// The reason an engine answered is in the table's engine line and in the
// JSON, and reads back from it.
func TestEngineReasonInReports(t *testing.T) {
	a, _ := wakeupFleet(t)
	for _, res := range a.Results {
		res.Engine, res.EngineReason, res.Lost = results.EngineStream, "auto: this kernel has no hist triggers", 2
	}
	if tab := tableOf(t, a); !strings.Contains(tab, "engine: stream (sqlhist computed the triggers from the events; auto: this kernel has no hist triggers), 2 events lost") {
		t.Errorf("the table does not say why the engine answered:\n%s", tab)
	}
	js := jsonOf(t, a)
	if !strings.Contains(js, `"engine_reason": "auto: this kernel has no hist triggers"`) {
		t.Errorf("the JSON does not say why the engine answered:\n%s", js)
	}
	_, back := readBack(t, js)
	if back.Results[0].EngineReason != "auto: this kernel has no hist triggers" {
		t.Errorf("read back: reason %q", back.Results[0].EngineReason)
	}
}
