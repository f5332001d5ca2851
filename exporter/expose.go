package exporter

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The page is written here, in Prometheus' text format (0.0.4) and its
// delimited protocol buffers (io.prometheus.client.MetricFamily, each
// prefixed with its length as a varint), rather than by the Prometheus
// libraries: linking client_model's generated code cost every sqlhist
// process its protobuf descriptors' set-up at start (1.3 M instructions,
// about 2.3 ms of a one-vCPU guest's 17 ms start under emulation),
// whether it served metrics or not. Those libraries are the tests'
// oracles: the same families written by expfmt, byte for byte, and
// scraped by a real Prometheus (TestDashboardInPrometheus).

// metricKind is a family's type, numbered as the protocol buffers' enum
// MetricType numbers them.
type metricKind int

const (
	counter       metricKind = 0
	gauge         metricKind = 1
	histogramKind metricKind = 4
)

func (k metricKind) String() string {
	switch k {
	case counter:
		return "counter"
	case gauge:
		return "gauge"
	case histogramKind:
		return "histogram"
	}
	return "type " + strconv.Itoa(int(k))
}

// family is one metric family of the page: its series sorted by their
// label values.
type family struct {
	name, help string
	kind       metricKind
	series     []*sample
}

// sample is one series of a family: its labels sorted by name, its value
// (a histogram's in hist) and, for a counter or histogram, when it began
// counting (zero: not known).
type sample struct {
	labels  []labelPair
	value   float64
	created time.Time
	hist    *histogram
}

type labelPair struct{ name, value string }

// validMetricName says whether s is a metric name every Prometheus reads
// without quoting or escaping: [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// validLabelName says whether s is such a label name:
// [a-zA-Z_][a-zA-Z0-9_]*, not beginning with the reserved "__".
func validLabelName(s string) bool {
	return validMetricName(s) && !strings.Contains(s, ":") && !strings.HasPrefix(s, "__")
}

// families turns metrics into the page's families, sorted by name, each
// family's series by their label values. A metric whose family was
// given another type or help, whose labels repeat an earlier one's, or
// whose name or label names are not Prometheus' is left out and told in
// the errors; a label value that is not UTF-8 has its bad bytes
// replaced.
func families(ms []metric) ([]*family, []error) {
	byName := map[string]*family{}
	seen := map[string]bool{}
	var errs []error
	for _, m := range ms {
		if !validMetricName(m.name) {
			errs = append(errs, fmt.Errorf("%q: not a metric name: left out", m.name))
			continue
		}
		if len(m.labels) != len(m.values) {
			errs = append(errs, fmt.Errorf("%s: %d label names, %d values: left out", m.name, len(m.labels), len(m.values)))
			continue
		}
		pairs := make([]labelPair, len(m.labels))
		bad := ""
		for i, name := range m.labels {
			v := m.values[i]
			if !utf8.ValidString(v) {
				v = strings.ToValidUTF8(v, "\uFFFD")
			}
			if !validLabelName(name) || m.kind == histogramKind && name == "le" {
				bad = name
			}
			pairs[i] = labelPair{name, v}
		}
		if bad != "" {
			errs = append(errs, fmt.Errorf("%s: %q is not a label name it can have: left out", m.name, bad))
			continue
		}
		sort.Slice(pairs, func(a, b int) bool { return pairs[a].name < pairs[b].name })
		f := byName[m.name]
		if f == nil {
			f = &family{name: m.name, help: m.help, kind: m.kind}
			byName[m.name] = f
		} else if f.kind != m.kind || f.help != m.help {
			errs = append(errs, fmt.Errorf("%s: a %s with another help or type than its family's left out", m.name, m.kind))
			continue
		}
		key := m.name
		for i, p := range pairs {
			if i > 0 && p.name == pairs[i-1].name {
				bad = p.name
			}
			key += "\xff" + p.name + "\xfe" + p.value
		}
		if bad != "" {
			errs = append(errs, fmt.Errorf("%s: label %s given twice: left out", m.name, bad))
			continue
		}
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: a series with the labels of an earlier one left out", m.name))
			continue
		}
		seen[key] = true
		s := &sample{labels: pairs, value: m.value}
		if m.kind != gauge {
			s.created = m.created
		}
		if m.kind == histogramKind {
			s.hist = m.hist
			if s.hist == nil {
				s.hist = &histogram{}
			}
		}
		f.series = append(f.series, s)
	}
	out := make([]*family, 0, len(byName))
	for _, f := range byName {
		if len(f.series) == 0 {
			continue
		}
		sort.SliceStable(f.series, func(a, b int) bool { return labelsLess(f.series[a].labels, f.series[b].labels) })
		out = append(out, f)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out, errs
}

// labelsLess orders two series of a family by their label values, in
// the order of their (sorted) names.
func labelsLess(a, b []labelPair) bool {
	for i := range min(len(a), len(b)) {
		if a[i].value != b[i].value {
			return a[i].value < b[i].value
		}
	}
	return len(a) < len(b)
}

// bounds are the histogram's classic upper bounds, in order.
func (h *histogram) bounds() []float64 {
	out := make([]float64, 0, len(h.cumulative))
	for b := range h.cumulative {
		out = append(out, b)
	}
	sort.Float64s(out)
	return out
}

// span is a run of a native histogram's buckets: its offset from the
// bucket after the last span's (from 0 for the first) and its length.
type span struct {
	offset int32
	length uint32
}

// nativeBuckets are the histogram's native buckets as spans and deltas
// (each bucket's count less the one before it in the spans): a gap of up
// to two buckets is filled with empty ones, a longer one starts a new
// span.
func (h *histogram) nativeBuckets() ([]span, []int64) {
	idx := make([]int, 0, len(h.native))
	for i := range h.native {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var spans []span
	var deltas []int64
	var prev int64
	next := 0
	for n, i := range idx {
		if gap := i - next; n == 0 || gap > 2 {
			spans = append(spans, span{offset: int32(gap)})
		} else {
			for range gap {
				spans[len(spans)-1].length++
				deltas = append(deltas, -prev)
				prev = 0
			}
		}
		spans[len(spans)-1].length++
		deltas = append(deltas, h.native[i]-prev)
		prev = h.native[i]
		next = i + 1
	}
	return spans, deltas
}

// The formats a scraper may be given.
type pageFormat int

const (
	formatText pageFormat = iota
	formatProto
)

// negotiate reads an Accept header: the delimited protocol buffers when
// the scraper lists them before (by quality, then order) the text
// format; else the text format, which every scraper reads. It returns the
// format and the Content-Type that says it, with the name escaping the
// scraper asked for ("allow-utf-8") or the one that is always true of
// this page's names ("underscores": they are all legacy names, which no
// escaping changes).
func negotiate(accept string) (pageFormat, string) {
	type clause struct {
		typ    string
		params map[string]string
		q      float64
	}
	var clauses []clause
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		c := clause{typ: strings.ToLower(strings.TrimSpace(fields[0])), params: map[string]string{}, q: 1}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(p, "=")
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.Trim(strings.TrimSpace(v), `"`)
			if k == "q" {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					c.q = q
				}
				continue
			}
			c.params[k] = v
		}
		if c.typ != "" && c.q > 0 {
			clauses = append(clauses, c)
		}
	}
	sort.SliceStable(clauses, func(a, b int) bool { return clauses[a].q > clauses[b].q })
	for _, c := range clauses {
		escaping := "underscores"
		if c.params["escaping"] == "allow-utf-8" {
			escaping = "allow-utf-8"
		}
		switch {
		case c.typ == "application/vnd.google.protobuf" && c.params["proto"] == "io.prometheus.client.MetricFamily" && c.params["encoding"] == "delimited":
			return formatProto, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=" + escaping
		case c.typ == "text/plain" && (c.params["version"] == "" || c.params["version"] == "0.0.4"):
			return formatText, "text/plain; version=0.0.4; charset=utf-8; escaping=" + escaping
		}
	}
	return formatText, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
}

// writePage writes the families in the format.
func writePage(w io.Writer, f pageFormat, fams []*family) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, fam := range fams {
		if f == formatProto {
			buf = fam.appendProto(buf[:0])
			bw.Write(binary.AppendUvarint(nil, uint64(len(buf))))
			bw.Write(buf)
		} else {
			fam.writeText(bw)
		}
	}
	return bw.Flush()
}

// writeText writes the family in the text format: its help, its type and
// a line a sample (a histogram's buckets, +Inf's always, then its sum and
// count).
func (f *family) writeText(w *bufio.Writer) {
	w.WriteString("# HELP " + f.name + " ")
	textEscaper.WriteString(w, f.help)
	w.WriteString("\n# TYPE " + f.name + " " + f.kind.String() + "\n")
	for _, s := range f.series {
		if s.hist == nil {
			writeSample(w, f.name, s.labels, "", 0, s.value)
			continue
		}
		h := s.hist
		inf := false
		for _, b := range h.bounds() {
			writeSample(w, f.name+"_bucket", s.labels, "le", b, float64(h.cumulative[b]))
			inf = inf || math.IsInf(b, 1)
		}
		if !inf {
			writeSample(w, f.name+"_bucket", s.labels, "le", math.Inf(1), float64(h.count))
		}
		writeSample(w, f.name+"_sum", s.labels, "", 0, h.sum)
		writeSample(w, f.name+"_count", s.labels, "", 0, float64(h.count))
	}
}

var (
	textEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeSample writes one line of the text format: the name, the labels
// (and a bucket's le), the value.
func writeSample(w *bufio.Writer, name string, labels []labelPair, le string, bound, v float64) {
	w.WriteString(name)
	sep := byte('{')
	for _, l := range labels {
		w.WriteByte(sep)
		w.WriteString(l.name + `="`)
		valueEscaper.WriteString(w, l.value)
		w.WriteByte('"')
		sep = ','
	}
	if le != "" {
		w.WriteByte(sep)
		w.WriteString(le + `="` + formatFloat(bound) + `"`)
		sep = ','
	}
	if sep == ',' {
		w.WriteByte('}')
	}
	w.WriteString(" " + formatFloat(v) + "\n")
}

// formatFloat writes a value as the text format does: the shortest
// decimal that reads back the same, and NaN, +Inf, -Inf.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// The protocol buffers' wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendDoubleField(b []byte, field int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), math.Float64bits(v))
}

func appendBytesField(b []byte, field int, v []byte) []byte {
	return append(binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(v))), v...)
}

func appendStringField(b []byte, field int, v string) []byte {
	return append(binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(v))), v...)
}

// zigzag is a signed integer as the sint types encode it.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// appendProto appends the family as an io.prometheus.client.MetricFamily
// (proto2: every field set is written, zero or not), its fields in the
// order of their numbers.
func (f *family) appendProto(b []byte) []byte {
	b = appendStringField(b, 1, f.name)
	b = appendStringField(b, 2, f.help)
	b = appendVarintField(b, 3, uint64(f.kind))
	for _, s := range f.series {
		b = appendBytesField(b, 4, s.appendProto(nil, f.kind))
	}
	return b
}

// appendProto appends the sample as an io.prometheus.client.Metric:
// labels (1), then its gauge (2), counter (3) or histogram (7).
func (s *sample) appendProto(b []byte, kind metricKind) []byte {
	for _, l := range s.labels {
		var pair []byte
		pair = appendStringField(pair, 1, l.name)
		pair = appendStringField(pair, 2, l.value)
		b = appendBytesField(b, 1, pair)
	}
	switch kind {
	case gauge:
		b = appendBytesField(b, 2, appendDoubleField(nil, 1, s.value))
	case counter:
		c := appendDoubleField(nil, 1, s.value)
		if !s.created.IsZero() {
			c = appendBytesField(c, 3, appendTimestamp(nil, s.created))
		}
		b = appendBytesField(b, 3, c)
	case histogramKind:
		b = appendBytesField(b, 7, s.hist.appendProto(nil, s.created))
	}
	return b
}

// appendTimestamp appends t as a google.protobuf.Timestamp (proto3: its
// zero fields are left out).
func appendTimestamp(b []byte, t time.Time) []byte {
	if sec := t.Unix(); sec != 0 {
		b = appendVarintField(b, 1, uint64(sec))
	}
	if ns := t.Nanosecond(); ns != 0 {
		b = appendVarintField(b, 2, uint64(ns))
	}
	return b
}

// appendProto appends the histogram as an io.prometheus.client.Histogram:
// its count (1), sum (2), classic buckets (3) by upper bound and, when it
// has native buckets, their schema 0 (5), zero threshold 1 (6), zero
// count (7), spans (12) and deltas (13, not packed); its created time
// (15).
func (h *histogram) appendProto(b []byte, created time.Time) []byte {
	b = appendVarintField(b, 1, h.count)
	b = appendDoubleField(b, 2, h.sum)
	for _, bound := range h.bounds() {
		var bk []byte
		bk = appendVarintField(bk, 1, h.cumulative[bound])
		bk = appendDoubleField(bk, 2, bound)
		b = appendBytesField(b, 3, bk)
	}
	if h.native != nil {
		b = appendVarintField(b, 5, zigzag(0))
		b = appendDoubleField(b, 6, 1)
		b = appendVarintField(b, 7, h.zero)
		spans, deltas := h.nativeBuckets()
		for _, sp := range spans {
			var m []byte
			m = appendVarintField(m, 1, zigzag(int64(sp.offset)))
			m = appendVarintField(m, 2, uint64(sp.length))
			b = appendBytesField(b, 12, m)
		}
		for _, d := range deltas {
			b = appendVarintField(b, 13, zigzag(d))
		}
	}
	if !created.IsZero() {
		b = appendBytesField(b, 15, appendTimestamp(nil, created))
	}
	return b
}
