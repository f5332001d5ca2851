package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/sqlhist/sqlhist/results"
)

// oracleCollector sends the metrics as client_golang's constant metrics,
// the way the exporter made them before it built its families itself.
type oracleCollector []metric

func (oracleCollector) Describe(chan<- *prometheus.Desc) {}

func (c oracleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		desc := prometheus.NewDesc(m.name, m.help, m.labels, nil)
		switch {
		case m.kind == counter && !m.created.IsZero():
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, m.value, m.created, m.values...)
		case m.kind == counter:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, m.value, m.values...)
		case m.kind == gauge:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, m.value, m.values...)
		default:
			h := m.hist
			classic := prometheus.MustNewConstHistogramWithCreatedTimestamp(desc, h.count, h.sum, h.cumulative, m.created, m.values...)
			if h.native == nil {
				ch <- classic
				continue
			}
			native, err := prometheus.NewConstNativeHistogram(desc, h.count, h.sum, h.native, nil, h.zero, 0, 1, m.created, m.values...)
			if err != nil {
				panic(err)
			}
			ch <- oracleBoth{classic, native}
		}
	}
}

// expfmtPage is the page expfmt writes of the families in the format.
func expfmtPage(t *testing.T, format pageFormat, fams []*dto.MetricFamily) []byte {
	t.Helper()
	f := expfmt.NewFormat(expfmt.TypeTextPlain)
	if format == formatProto {
		f = expfmt.NewFormat(expfmt.TypeProtoDelim)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, f)
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// oracleBoth is a classic histogram with a native one's buckets.
type oracleBoth struct{ classic, native prometheus.Metric }

func (b oracleBoth) Desc() *prometheus.Desc { return b.classic.Desc() }

func (b oracleBoth) Write(out *dto.Metric) error {
	if err := b.classic.Write(out); err != nil {
		return err
	}
	var n dto.Metric
	if err := b.native.Write(&n); err != nil {
		return err
	}
	h, nh := out.Histogram, n.Histogram
	h.Schema, h.ZeroThreshold, h.ZeroCount = nh.Schema, nh.ZeroThreshold, nh.ZeroCount
	h.PositiveSpan, h.PositiveDelta = nh.PositiveSpan, nh.PositiveDelta
	return nil
}

// The page written here equals, byte for byte in both formats, what
// expfmt writes of client_golang's families of the same metrics: the exporter's metrics of a JOIN, a histogram query
// and a fleet with a target down, and native histograms whose buckets
// have gaps of one, two, three and more buckets (spans and deltas),
// one whose buckets disagree with its count (classic buckets only), and
// an unknown sum.
func TestFamiliesAsClientGolang(t *testing.T) {
	e := NewExporter()
	e.Start("board", "")
	e.Update("board", []*results.Result{wakeupResult(t,
		"{ comm: sh, lat: ~ 2^4 } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n"+
			"{ comm: sh, lat: ~ 2^0 } hitcount:          2  lat:          1\n\tmax:          1  lat:          1\n"+
			"{ comm: ls, lat: ~ 2^7 } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n"+
			"{ comm: a b, lat: ~ 2^9 } hitcount:          4  lat:        2000\n\tmax:        600  lat:        600\n", 10, 4),
		syscallResult(t, "{ id: sys_read                      [  0] } hitcount:          6  ret:        600\n"+
			"{ id: sys_write                     [  1] } hitcount:          2  ret:         20\n", 8, 2)})
	e.Start("down", "")
	e.Update("down", []*results.Result{syscallResult(t, "{ id: sys_close                     [  3] } hitcount:          1  ret:          0\n", 1, 1)})
	e.Down("down", io.ErrUnexpectedEOF)
	ms := e.collect()
	start := time.Unix(1700000000, 123456789)
	for i, native := range []map[int]int64{
		{1: 5, 2: 1, 4: 2, 7: 3, 8: 0, 20: 1},
		{3: 1, 6: 2},
		{},
	} {
		var n uint64 = 2
		for _, v := range native {
			n += uint64(v)
		}
		ms = append(ms, metric{name: "h_gaps", help: "gaps", kind: histogramKind, labels: []string{"z", "a"}, values: []string{"v", string(rune('a' + i))}, created: start,
			hist: &histogram{count: n, sum: 99, cumulative: map[float64]uint64{1: 2, 64: n, math.Inf(1): n}, native: native, zero: 2}})
	}
	ms = append(ms, metric{name: "h_nan", help: "nan", kind: histogramKind, created: start,
		hist: &histogram{count: 9, sum: math.NaN(), cumulative: map[float64]uint64{8: 9}, native: map[int]int64{3: 7}}})
	s := &series{count: 3, sum: 10, buckets: map[float64]uint64{2: 5}, native: map[int]int64{1: 5}}
	if h := histogramMetric("h_bad", "bad", s, true, start, nil, nil); h.hist.native != nil {
		t.Error("a native histogram with more in its buckets than its count kept")
	} else {
		ms = append(ms, h)
	}

	// What the text format escapes, and values of every form.
	for i, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e21, 0.1, -1, 1, 0, 1.5e-7, 123456789} {
		ms = append(ms, metric{name: "g_hostile", help: "a \\ and\na second line \"quoted\"", kind: gauge,
			labels: []string{"v", "w"}, values: []string{string(rune('a'+i)) + "q\"uote \\ back\nline \u03c0", ""}, value: v})
	}
	ms = append(ms, metric{name: "c_plain", kind: counter, value: 7})

	reg := prometheus.NewRegistry()
	reg.MustRegister(oracleCollector(ms))
	want, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, errs := families(ms)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(got) != len(want) {
		t.Fatalf("%d families, client_golang %d", len(got), len(want))
	}
	for _, format := range []pageFormat{formatText, formatProto} {
		var ours bytes.Buffer
		if err := writePage(&ours, format, got); err != nil {
			t.Fatal(err)
		}
		theirs := expfmtPage(t, format, want)
		if bytes.Equal(ours.Bytes(), theirs) {
			continue
		}
		if format == formatText {
			t.Errorf("the text page differs from expfmt's:\n%s\nexpfmt's:\n%s", ours.Bytes(), theirs)
			continue
		}
		// Say which family differs, and how.
		dec := expfmt.NewDecoder(&ours, expfmt.NewFormat(expfmt.TypeProtoDelim))
		for i := range want {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				t.Fatalf("family %d: %v", i, err)
			}
			if !proto.Equal(&mf, want[i]) {
				t.Errorf("family %d:\n%v\nclient_golang:\n%v", i, &mf, want[i])
			}
		}
		t.Errorf("the protobuf page differs from expfmt's")
	}
	if len(ms) < 30 {
		t.Errorf("only %d metrics compared", len(ms))
	}
}

// What cannot be shown is left out and told, the rest kept: a family
// given two types, a repeated label set; a label value that is not UTF-8
// is shown with its bad bytes replaced.
func TestFamiliesLeaveOut(t *testing.T) {
	ms := []metric{
		{name: "a", help: "h", kind: gauge, labels: []string{"x"}, values: []string{"1"}, value: 1},
		{name: "a", help: "h", kind: counter, labels: []string{"x"}, values: []string{"2"}, value: 2},
		{name: "a", help: "h", kind: gauge, labels: []string{"x"}, values: []string{"1"}, value: 3},
		{name: "a", help: "h", kind: gauge, labels: []string{"x"}, values: []string{"bad\xff"}, value: 4},
	}
	fams, errs := families(ms)
	if len(errs) != 2 || len(fams) != 1 || len(fams[0].series) != 2 {
		t.Fatalf("errors %v, families %v", errs, fams)
	}
	if v := fams[0].series[1].labels[0].value; v != "bad\uFFFD" {
		t.Errorf("label value %q", v)
	}
}

// The page in every form a scraper may ask for: text, protobuf, gzipped
// when it accepts gzip; the process's own metrics beside the query's.
func TestServeMetricsFormats(t *testing.T) {
	e := NewExporter()
	e.Start("", "")
	e.Update("", []*results.Result{syscallResult(t, "{ id: sys_read                      [  0] } hitcount:          6  ret:        600\n", 6, 1)})
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	for _, c := range []struct{ accept, encoding, wantType string }{
		{"", "", "text/plain"},
		{"", "gzip", "text/plain"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "gzip, deflate", "application/vnd.google.protobuf"},
		{"", "gzip;q=0", "text/plain"},
	} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Accept", c.accept)
		req.Header.Set("Accept-Encoding", c.encoding)
		tr := &http.Transport{DisableCompression: true}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), c.wantType) {
			t.Errorf("%q: content type %q", c.accept, resp.Header.Get("Content-Type"))
		}
		gz := resp.Header.Get("Content-Encoding") == "gzip"
		if wantGz := strings.HasPrefix(c.encoding, "gzip") && c.encoding != "gzip;q=0"; gz != wantGz {
			t.Errorf("%q %q: gzipped %v", c.accept, c.encoding, gz)
		}
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(zr)
		}
		for _, want := range []string{"sqlhist_sys_exit_events_total", "process_resident_memory_bytes", "process_cpu_seconds_total", "go_goroutines"} {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("%q %q: no %s in the page", c.accept, c.encoding, want)
			}
		}
	}
	for _, m := range processMetrics() {
		if m.name == "process_resident_memory_bytes" && (m.value < 1<<20 || m.value > 1<<34) {
			t.Errorf("resident memory %v bytes", m.value)
		}
		if m.name == "process_start_time_seconds" && math.Abs(m.value-float64(time.Now().Unix())) > 3600 {
			t.Errorf("started at %v", m.value)
		}
	}
}

// The format a scraper is given: protobuf only when it asks for the
// delimited protocol buffers before the text format; the Content-Type
// read back by expfmt as that format; for the Accept headers
// Prometheus sends (2.x, with and without native histograms, and 3.x),
// the same format expfmt's negotiation picks.
func TestNegotiate(t *testing.T) {
	const (
		protoDelim = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
		prom2      = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
		prom2NH    = protoDelim + ";q=0.8,application/openmetrics-text;version=1.0.0;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
		prom3      = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
		prom3NH    = protoDelim + ";escaping=allow-utf-8;q=0.7," + prom3
	)
	for _, c := range []struct {
		accept       string
		want         pageFormat
		asPrometheus bool
	}{
		{"", formatText, true},
		{"*/*", formatText, true},
		{prom2, formatText, true},
		{prom2NH, formatProto, true},
		{prom3, formatText, true},
		{prom3NH, formatProto, true},
		{protoDelim, formatProto, true},
		{" Application/Vnd.Google.Protobuf ; proto=io.prometheus.client.MetricFamily ; encoding=delimited", formatProto, false},
		{protoDelim + ";q=0", formatText, false},
		{"text/plain;q=0.9," + protoDelim + ";q=0.5", formatText, false},
		{"text/plain;version=0.0.4;q=0.2," + protoDelim + ";q=0.5", formatProto, false},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text", formatText, false},
		{"application/vnd.google.protobuf;proto=other;encoding=delimited", formatText, false},
		{"garbage;;q=x,,", formatText, false},
	} {
		got, ct := negotiate(c.accept)
		if got != c.want {
			t.Errorf("Accept %q: format %v, want %v", c.accept, got, c.want)
		}
		h := http.Header{}
		h.Set("Content-Type", ct)
		rf := expfmt.ResponseFormat(h).FormatType()
		if want := map[pageFormat]expfmt.FormatType{formatText: expfmt.TypeTextPlain, formatProto: expfmt.TypeProtoDelim}[got]; rf != want {
			t.Errorf("Accept %q: Content-Type %q read by expfmt as %v, want %v", c.accept, ct, rf, want)
		}
		if c.asPrometheus {
			h := http.Header{}
			h.Set("Accept", c.accept)
			if theirs := expfmt.Negotiate(h).FormatType(); theirs != rf {
				t.Errorf("Accept %q: %v, expfmt negotiates %v", c.accept, rf, theirs)
			}
		}
	}
}
