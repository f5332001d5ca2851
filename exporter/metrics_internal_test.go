package exporter

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// wakeupResult is a JOIN's results histogram as -r reads it: comm and the
// latency's log2 bucket as keys, its sum and maximum.
func wakeupResult(t *testing.T, entries string, hits, n int) *results.Result {
	t.Helper()
	const head = "# event histogram\n#\n# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:m=lat:sort=hitcount:size=8192:onmax($m).save(lat) [active]\n#\n\n"
	h := &planner.Hist{System: "synthetic", Event: "wakeup_lat", Keys: planner.MustExprs("comm", "lat.log2"),
		Columns: []planner.Column{{Label: "comm", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}, {Label: "lat", Kind: planner.ColLatency, Index: 1, Unit: "us"}}}
	text := head + entries + "\nTotals:\n    Hits: " + itoa(hits) + "\n    Entries: " + itoa(n) + "\n    Dropped: 3\n"
	return results.NewResult(&planner.Unit{}, h, parseOne(t, text))
}

func itoa(n int) string { return strconv.Itoa(n) }

// syscallResult is a histogram query's: a count and a sum by system call.
func syscallResult(t *testing.T, entries string, hits, n int) *results.Result {
	t.Helper()
	const head = "# event histogram\n#\n# trigger info: hist:keys=id.syscall:vals=hitcount,ret:sort=hitcount:size=2048 [active]\n#\n\n"
	h := &planner.Hist{System: "raw_syscalls", Event: "sys_exit", Keys: planner.MustExprs("id.syscall"), Vals: planner.MustExprs("ret"),
		Columns: []planner.Column{{Label: "id", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount}, {Label: "SUM(ret)", Kind: planner.ColValue, Index: 0}}}
	text := head + entries + "\nTotals:\n    Hits: " + itoa(hits) + "\n    Entries: " + itoa(n) + "\n    Dropped: 0\n"
	return results.NewResult(&planner.Unit{}, h, parseOne(t, text))
}

// scrape gets the exporter's metrics in the text format, or in protobuf
// (what a Prometheus with native histograms asks for), as families.
func scrape(t *testing.T, e *Exporter, proto bool) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	if proto {
		req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(resp.Header))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding %s: %v\n%s", resp.Header.Get("Content-Type"), err, body)
		}
		out[mf.GetName()] = &mf
	}
	return out
}

// metricWith is the family's metric whose labels include want.
func metricWith(mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	if mf == nil {
		return nil
	}
	for _, m := range mf.Metric {
		ok := true
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			return m
		}
	}
	return nil
}

// A JOIN's latency is a histogram per comm: classic buckets at the
// kernel's edges (cumulative), the exact sum and count, and in protobuf
// the native buckets of schema 0 at the kernel's own indexes, 0 and 1 in
// the zero bucket; the maximum a gauge; the map's totals and the run's
// health beside.
func TestExporterJOIN(t *testing.T) {
	res := wakeupResult(t,
		"{ comm: sh, lat: ~ 2^4 } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n"+
			"{ comm: sh, lat: ~ 2^0 } hitcount:          2  lat:          1\n\tmax:          1  lat:          1\n"+
			"{ comm: ls, lat: ~ 2^7 } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n", 6, 3)
	e := NewExporter()
	e.Start("board", "")
	e.Update("board", []*results.Result{res})
	for _, proto := range []bool{false, true} {
		fams := scrape(t, e, proto)
		lat := metricWith(fams["sqlhist_wakeup_lat_lat_microseconds"], map[string]string{"comm": "sh", "target": "board"})
		if lat == nil || lat.Histogram == nil {
			t.Fatalf("proto %v: no latency histogram for sh: %v", proto, fams["sqlhist_wakeup_lat_lat_microseconds"])
		}
		h := lat.Histogram
		if h.GetSampleCount() != 5 || h.GetSampleSum() != 37 {
			t.Errorf("proto %v: sh's count %d sum %v, want 5 and 37", proto, h.GetSampleCount(), h.GetSampleSum())
		}
		cum := map[float64]uint64{}
		for _, b := range h.Bucket {
			cum[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		if cum[1] != 2 || cum[16] != 5 {
			t.Errorf("proto %v: classic buckets %v, want le=1: 2, le=16: 5", proto, cum)
		}
		if proto {
			if h.GetSchema() != 0 || h.GetZeroThreshold() != 1 || h.GetZeroCount() != 2 {
				t.Errorf("native: schema %d, zero threshold %v, zero count %d; want 0, 1, 2", h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount())
			}
			// One span: index 4 (offset 4, length 1), delta 3.
			if len(h.PositiveSpan) != 1 || h.PositiveSpan[0].GetOffset() != 4 || h.PositiveSpan[0].GetLength() != 1 || len(h.PositiveDelta) != 1 || h.PositiveDelta[0] != 3 {
				t.Errorf("native buckets: spans %v deltas %v, want index 4 holding 3", h.PositiveSpan, h.PositiveDelta)
			}
		}
		mx := metricWith(fams["sqlhist_wakeup_lat_lat_microseconds_max"], map[string]string{"comm": "ls"})
		if mx == nil || mx.Gauge.GetValue() != 100 {
			t.Errorf("proto %v: ls's maximum %v, want 100", proto, mx)
		}
		if d := metricWith(fams["sqlhist_map_dropped_total"], map[string]string{"query": "sqlhist_wakeup_lat"}); d == nil || d.Counter.GetValue() != 3 {
			t.Errorf("proto %v: the map's drops %v, want 3", proto, d)
		}
		if up := metricWith(fams["sqlhist_up"], map[string]string{"target": "board"}); up == nil || up.Gauge.GetValue() != 1 {
			t.Errorf("proto %v: sqlhist_up %v, want 1", proto, up)
		}
	}
}

// A histogram query: a counter of events and a counter of the sum per
// key, with labels named from the columns.
func TestExporterCounts(t *testing.T) {
	res := syscallResult(t,
		"{ id: sys_read                      [  0] } hitcount:          6  ret:        600\n"+
			"{ id: sys_write                     [  1] } hitcount:          2  ret:         20\n", 8, 2)
	e := NewExporter()
	e.Start("", "")
	e.Update("", []*results.Result{res})
	fams := scrape(t, e, false)
	rd := metricWith(fams["sqlhist_sys_exit_events_total"], map[string]string{"id": "sys_read"})
	if rd == nil || rd.Counter.GetValue() != 6 {
		t.Fatalf("sys_read's count: %v (families %v)", rd, keysOf(fams))
	}
	if s := metricWith(fams["sqlhist_sys_exit_sum_ret_total"], map[string]string{"id": "sys_write"}); s == nil || s.Counter.GetValue() != 20 {
		t.Errorf("sys_write's sum: %v", s)
	}
	// The created time travels in protobuf (the text format has none).
	if rd := metricWith(scrape(t, e, true)["sqlhist_sys_exit_events_total"], map[string]string{"id": "sys_read"}); rd == nil || rd.Counter.CreatedTimestamp == nil {
		t.Error("a counter has no created time: a run started again would not begin new series")
	}
}

// Past the limit of label sets, the rows are counted under _other, the
// warning is given once, and sqlhist_series_folded says how many.
func TestExporterSeriesLimit(t *testing.T) {
	var rows strings.Builder
	for i, name := range []string{"a", "b", "c", "d"} {
		rows.WriteString("{ id: sys_" + name + "                      [  " + itoa(i) + "] } hitcount:          " + itoa(10-i) + "  ret:          1\n")
	}
	res := syscallResult(t, rows.String(), 34, 4)
	var log bytes.Buffer
	e := NewExporter()
	e.Series, e.Log = 2, &log
	e.Start("", "")
	e.Update("", []*results.Result{res})
	fams := scrape(t, e, false)
	scrape(t, e, false)
	ev := fams["sqlhist_sys_exit_events_total"]
	if ev == nil || len(ev.Metric) != 3 {
		t.Fatalf("want 2 series and %s, got %v", OtherLabel, ev)
	}
	if o := metricWith(ev, map[string]string{"id": OtherLabel}); o == nil || o.Counter.GetValue() != 8+7 {
		t.Errorf("the folded rows: %v, want 15", o)
	}
	if f := metricWith(fams["sqlhist_series_folded"], nil); f == nil || f.Gauge.GetValue() != 2 {
		t.Errorf("sqlhist_series_folded %v, want 2", f)
	}
	if n := strings.Count(log.String(), "more than 2 label sets"); n != 1 {
		t.Errorf("the warning was given %d times:\n%s", n, log.String())
	}
}

// A target that failed is down and its results' series are gone, while
// another target's are still served; a target started again counts from
// its new start.
func TestExporterFleet(t *testing.T) {
	e := NewExporter()
	for _, name := range []string{"a", "b"} {
		e.Start(name, "")
		e.Update(name, []*results.Result{syscallResult(t, "{ id: sys_read                      [  0] } hitcount:          6  ret:        600\n", 6, 1)})
	}
	e.Down("a", io.ErrUnexpectedEOF)
	fams := scrape(t, e, false)
	if up := metricWith(fams["sqlhist_up"], map[string]string{"target": "a"}); up == nil || up.Gauge.GetValue() != 0 {
		t.Errorf("a's sqlhist_up %v, want 0", up)
	}
	ev := fams["sqlhist_sys_exit_events_total"]
	if ev == nil || len(ev.Metric) != 1 || metricWith(ev, map[string]string{"target": "b"}) == nil {
		t.Errorf("want only b's count served, got %v", ev)
	}
	before := metricWith(fams["sqlhist_run_start_timestamp_seconds"], map[string]string{"target": "a"}).Gauge.GetValue()
	e.Start("a", "")
	after := metricWith(scrape(t, e, false)["sqlhist_run_start_timestamp_seconds"], map[string]string{"target": "a"}).Gauge.GetValue()
	if !(after >= before) || math.IsNaN(after) {
		t.Errorf("a's start %v, then %v", before, after)
	}
}

// Names: a metric or label name part is lower case with runs of other
// characters one _, and never starts with a digit; names the exporter
// uses as labels are not taken by a column.
func TestMetricNames(t *testing.T) {
	for in, want := range map[string]string{"wakeup_lat": "wakeup_lat", "SUM(ret)": "sum_ret", "a--b": "a_b", "9lives": "_9lives", "": "x", "__x": "x"} {
		if got := MetricPart(in); got != want {
			t.Errorf("MetricPart(%q) = %q, want %q", in, got, want)
		}
	}
	if got := labelName("target"); got != "target_key" {
		t.Errorf("labelName(target) = %q", got)
	}
	rs := []*results.Result{{Title: "synthetic/x_42"}, {Title: "synthetic/x_42"}, {Title: "sched/sched_switch+sched_waking"}}
	if got := strings.Join(metricNames(rs, "_42"), " "); got != "sqlhist_x sqlhist_x_2 sqlhist_sched_switch_sched_waking" {
		t.Errorf("metricNames: %s", got)
	}
}

func keysOf(m map[string]*dto.MetricFamily) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Two targets' runs have their own suffixes ("_11", "_22"): both serve
// one family, whose help names the event without them (a family's help
// differing between targets made the registry drop one target's series).
func TestExporterSuffixes(t *testing.T) {
	var log bytes.Buffer
	e := NewExporter()
	e.Log = &log
	for _, sfx := range []string{"_11", "_22"} {
		res := wakeupResult(t, "{ comm: sh, lat: ~ 2^4 } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n", 3, 1)
		res.Title = "synthetic/wakeup_lat" + sfx
		e.Start("t"+sfx, sfx)
		e.Update("t"+sfx, []*results.Result{res})
	}
	fams := scrape(t, e, true)
	if mf := fams["sqlhist_wakeup_lat_lat_microseconds"]; mf == nil || len(mf.Metric) != 2 || strings.Contains(mf.GetHelp(), "_11") {
		t.Errorf("want both targets' histograms under one help without a suffix: %v", mf)
	}
	if log.Len() != 0 {
		t.Errorf("the registry refused something:\n%s", log.String())
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
