package live_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The AS labels of a histogram's keys, a log2 or a bucket key among them,
// are its columns' names in -r's table, CSV and JSON, and survive a
// read-back (sqlhist merge): the hist files are the kernel's own.
func TestRunKeepsLabels(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, hist, file string
		labels                  []string
		firstRow                string // the CSV's first row
	}{
		{"buckets", "SELECT CAST(bytes_req AS BUCKETS=64) AS req, CAST(bytes_alloc AS BUCKETS=128) AS alloc, COUNT(*) AS n FROM kmalloc GROUP BY req, alloc",
			"hist-6.1-buckets.txt", "events/kmem/kmalloc/hist", []string{"req", "alloc", "n"}, "0-63,0-127,660"},
		{"log2", "SELECT CAST(call_site AS HEX) AS site, CAST(bytes_req AS LOG2) AS sec, CAST(common_pid AS EXECNAME) AS task, COUNT(*) FROM kmalloc GROUP BY site, sec, task",
			"hist-6.1-hex-log2-execname.txt", "events/kmem/kmalloc/hist", []string{"site", "sec", "task", "count"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := source.NewSource("q.sql", c.query)
			plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 9))
			if plan == nil {
				t.Fatal(diags.Render(src))
			}
			hist, err := os.ReadFile("../tracefs/testdata/" + c.hist)
			if err != nil {
				t.Fatal(err)
			}
			f := newFake()
			f.Files["instances/sqlhist_9/"+c.file] = string(hist)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || len(rep.Results[0].Rows) == 0 {
				t.Fatalf("results %+v", rep.Results)
			}
			var table, csv, js strings.Builder
			for _, o := range []struct {
				w      *strings.Builder
				format string
			}{{&table, "table"}, {&csv, "csv"}, {&js, "json"}} {
				if err := results.Write(o.w, rep.Results, o.format); err != nil {
					t.Fatal(err)
				}
			}
			head := strings.Fields(strings.Split(table.String(), "\n")[1])
			if strings.Join(head, " ") != strings.Join(c.labels, " ") {
				t.Errorf("table header %q, want %q:\n%s", head, c.labels, table.String())
			}
			lines := strings.Split(csv.String(), "\n")
			if lines[0] != strings.Join(c.labels, ",") || c.firstRow != "" && lines[1] != c.firstRow {
				t.Errorf("CSV:\n%s\nwant the header %q and the first row %q", csv.String(), strings.Join(c.labels, ","), c.firstRow)
			}
			var doc struct {
				Results []struct {
					Columns []string
					Rows    []map[string]any
				}
			}
			if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
				t.Fatal(err)
			}
			if got := doc.Results[0].Columns; strings.Join(got, " ") != strings.Join(c.labels, " ") {
				t.Errorf("JSON columns %q, want %q", got, c.labels)
			}
			for _, l := range c.labels {
				if _, ok := doc.Results[0].Rows[0][l]; !ok {
					t.Errorf("JSON row %v has no %q", doc.Results[0].Rows[0], l)
				}
			}
			_, back, err := results.ReadJSONReport(strings.NewReader(js.String()))
			if err != nil {
				t.Fatal(err)
			}
			var again strings.Builder
			results.Write(&again, back.Results, "table")
			if again.String() != table.String() {
				t.Errorf("read back:\n%s\nwant:\n%s", again.String(), table.String())
			}
		})
	}
}
