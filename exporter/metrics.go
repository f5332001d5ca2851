package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
)

// DefaultMetricSeries is how many label sets a query's metrics keep
// before the rest are counted under one (see [Exporter]).
const DefaultMetricSeries = 1000

// OtherLabel is the label value of the series that counts a query's rows
// beyond the exporter's limit of label sets, every key label set to it.
const OtherLabel = "_other"

// Exporter serves runs' results as Prometheus metrics: every query's
// rows as series named from the query ("sqlhist_" and its synthetic
// event's or its event's name), its keys as labels; counts and sums as
// counters; a JOIN's latency, and a histogram query's .log2 or .buckets
// key, as a histogram (classic buckets at the kernel's edges and, to a
// scraper that asks for protobuf, a native histogram of schema 0, whose
// bucket i is the kernel's log2 bucket i: (2^(i-1), 2^i], with 0 and 1
// in the zero bucket); MAX columns and a latency's maximum as gauges.
// The values are the kernel's cumulative counts (a hist map only grows)
// read at each live.Options.OnTotal; the counters carry the run's start as
// their created time, so that a run started again begins new series.
//
// Each target (a fleet's, labelled target=NAME; "" for a lone run, whose
// series have no target label) has
// its own results and health: sqlhist_up, the last read, reads, the
// stream engine's lost events, each map's hits, entries and drops. A
// target that fails shows as down and its results' series go; the others
// keep being served. A query keeps at most Series label sets (the first
// seen); the rows beyond are counted under OtherLabel, and
// sqlhist_series_folded says how many were.
type Exporter struct {
	// Series is the limit of label sets a query's metrics keep; 0 is
	// DefaultMetricSeries.
	Series int
	// Log receives a warning the first time a query's rows are folded;
	// nil discards it.
	Log io.Writer

	mu      sync.Mutex
	targets map[string]*exported
	order   []string
}

// exported is one target's state.
type exported struct {
	results []*results.Result
	suffix  string    // the run's suffix of synthetic event names
	start   time.Time // the run's start: the counters' created time
	read    time.Time // the last reading
	reads   uint64
	up      bool
	err     string
	// admitted are the label sets each query's metrics keep, by the
	// query's metric name; folded those counted as OtherLabel.
	admitted map[string]map[string]bool
	folded   map[string]map[string]bool
}

// NewExporter returns an exporter with nothing to serve yet but the
// process's own metrics (resident memory, CPU; see processMetrics).
func NewExporter() *Exporter {
	return &Exporter{targets: map[string]*exported{}}
}

// Start says a target's run has begun collecting (now): it is up, with
// no results yet, and its counters start from nothing. suffix is the
// run's suffix of derived synthetic event names ("_<id>", see
// live.Prepare), left out of the metrics' names so that they stay the same
// from run to run.
func (e *Exporter) Start(target, suffix string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.target(target)
	*t = exported{suffix: suffix, start: time.Now(), up: true, reads: t.reads, admitted: map[string]map[string]bool{}, folded: map[string]map[string]bool{}}
}

// Update takes a target's reading: everything its run has collected.
func (e *Exporter) Update(target string, rs []*results.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.target(target)
	if t.start.IsZero() {
		t.start = time.Now()
	}
	t.results, t.read, t.up, t.err = rs, time.Now(), true, ""
	t.reads++
}

// Down marks a target's run as ended by err (nil: ended without
// error): its results' series go, sqlhist_up reads 0.
func (e *Exporter) Down(target string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.target(target)
	t.results, t.up = nil, false
	if err != nil {
		t.err = err.Error()
	}
}

func (e *Exporter) target(name string) *exported {
	t := e.targets[name]
	if t == nil {
		t = &exported{admitted: map[string]map[string]bool{}, folded: map[string]map[string]bool{}}
		e.targets[name] = t
		e.order = append(e.order, name)
	}
	return t
}

// Handler serves the metrics (text, or protobuf with native histograms
// to a scraper that asks for it; see page.go).
func (e *Exporter) Handler() http.Handler {
	return http.HandlerFunc(e.serveMetrics)
}

// Listen opens addr (host:port; ":9101" is every address) for
// [Exporter.Serve]: a refused address is an error before anything is
// applied.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %v", addr, errnoText(err))
	}
	return l, nil
}

// Serve serves /metrics (and a short page at /) on l until ctx is done.
func (e *Exporter) Serve(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "sqlhist: the query's results are at /metrics")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			srv.Shutdown(shut)
		case <-done:
		}
	}()
	err := srv.Serve(l)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// collect lists every target's metrics, in the targets' order.
func (e *Exporter) collect() []metric {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []metric
	for _, name := range e.order {
		out = e.collectTarget(out, name, e.targets[name])
	}
	return out
}

// The run's own health: name, help and the labels besides target's.
type healthMetric struct {
	name, help string
	labels     []string
}

var (
	descUp       = healthMetric{"sqlhist_up", "1 while the target's run is collecting and read, 0 once it failed or ended.", nil}
	descRead     = healthMetric{"sqlhist_last_read_timestamp_seconds", "When the target's results were last read (Unix time).", nil}
	descReads    = healthMetric{"sqlhist_reads_total", "Readings of the target's results.", nil}
	descStart    = healthMetric{"sqlhist_run_start_timestamp_seconds", "When the target's run began collecting (Unix time); a new value is a new run, whose counters start again.", nil}
	descLost     = healthMetric{"sqlhist_events_lost_total", "Events the stream engine's ring buffers lost before they were read (0 for the kernel's hist triggers).", []string{"engine"}}
	descHits     = healthMetric{"sqlhist_map_hits_total", "Events that reached the query's hist map.", []string{"query"}}
	descEntries  = healthMetric{"sqlhist_map_entries", "Entries in the query's hist map.", []string{"query"}}
	descDropped  = healthMetric{"sqlhist_map_dropped_total", "Events the query's hist map could not store (it was full, or the kernel refused a BPF map insert): its counts are then short.", []string{"query"}}
	descNegative = healthMetric{"sqlhist_negative_latencies_total", "A JOIN's events whose latency was negative (the end stamped before the start), left out of its histogram.", []string{"query"}}
	descFolded   = healthMetric{"sqlhist_series_folded", "Label sets of the query counted under " + OtherLabel + " beyond the limit of label sets.", []string{"query"}}
)

// targetLabels are the first label names and values of a target's
// series: target=NAME for a fleet's target, none for a lone run (which
// has no target to name).
func targetLabels(target string, names, values []string) ([]string, []string) {
	if target == "" {
		return names, values
	}
	return append([]string{"target"}, names...), append([]string{target}, values...)
}

// health is a gauge or counter of the run's own health.
func health(m healthMetric, kind metricKind, v float64, target string, values ...string) metric {
	names, vals := targetLabels(target, m.labels, values)
	return metric{name: m.name, help: m.help, kind: kind, labels: names, values: vals, value: v}
}

// healthSince is a counter of the run's own health created at the run's
// start.
func healthSince(m healthMetric, v float64, start time.Time, target string, values ...string) metric {
	mt := health(m, counter, v, target, values...)
	mt.created = start
	return mt
}

func (e *Exporter) collectTarget(out []metric, name string, t *exported) []metric {
	up := 0.0
	if t.up {
		up = 1
	}
	out = append(out, health(descUp, gauge, up, name), health(descReads, counter, float64(t.reads), name))
	if !t.read.IsZero() {
		out = append(out, health(descRead, gauge, float64(t.read.UnixNano())/1e9, name))
	}
	if !t.start.IsZero() {
		out = append(out, health(descStart, gauge, float64(t.start.UnixNano())/1e9, name))
	}
	if len(t.results) == 0 {
		return out
	}
	engine, lost := results.EngineKernel, 0
	for _, res := range t.results {
		if res.Engine != "" {
			engine = res.Engine
		}
		lost = max(lost, res.Lost)
	}
	out = append(out, healthSince(descLost, float64(lost), t.start, name, engine))
	names := metricNames(t.results, t.suffix)
	for i, res := range t.results {
		q := names[i]
		if res.Read != nil {
			tot := res.Totals()
			out = append(out, healthSince(descHits, float64(tot.Hits), t.start, name, q),
				health(descEntries, gauge, float64(tot.Entries), name, q),
				healthSince(descDropped, float64(tot.Dropped+tot.Failed), t.start, name, q))
		}
		if res.Latency != nil {
			out = append(out, healthSince(descNegative, float64(res.Negative), t.start, name, q))
		}
		var folded int
		out, folded = e.collectResult(out, name, t, q, res)
		out = append(out, health(descFolded, gauge, float64(folded), name, q))
	}
	return out
}

// metricNames names each result's metrics: "sqlhist_" and the synthetic
// event's (a JOIN's, less the run's suffix) or the event's name, "_2",
// "_3" after a name taken.
func metricNames(rs []*results.Result, suffix string) []string {
	seen := map[string]int{}
	out := make([]string, len(rs))
	for i, res := range rs {
		base := res.Title
		if j := strings.IndexByte(base, '/'); j >= 0 {
			base = base[j+1:]
		}
		if suffix != "" {
			base = strings.TrimSuffix(base, suffix)
		}
		n := "sqlhist_" + MetricPart(base)
		seen[n]++
		if k := seen[n]; k > 1 {
			n += "_" + strconv.Itoa(k)
		}
		out[i] = n
	}
	return out
}

// MetricPart makes a name part of a Prometheus metric or label name:
// lower case, every run of other characters than letters, digits and _
// one _, no _ at either end, and a leading digit after a _.
func MetricPart(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			if r == '_' && (under || b.Len() == 0) {
				continue
			}
			b.WriteRune(r)
			under = r == '_'
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return "x"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return out
}

// labelName makes a key column's label name; names Prometheus or the
// exporter uses get a _key suffix.
func labelName(col string) string {
	n := MetricPart(col)
	switch n {
	case "target", "le", "query", "engine", "job", "instance":
		n += "_key"
	}
	if strings.HasPrefix(n, "__") {
		n = "k" + n
	}
	return n
}

// series is one label set of a query's metrics, the rows with those
// labels added up.
type series struct {
	labels []string
	count  uint64
	sums   []uint64 // per sum column
	maxes  []float64
	hasMax []bool
	// The histogram: classic buckets by upper bound, native buckets by
	// index (schema 0), the zero bucket's count, the sum (NaN when the
	// query has none) and the maximum (a JOIN's latency).
	buckets map[float64]uint64
	native  map[int]int64
	zero    uint64
	sum     float64
	max     uint64
}

// collectResult adds one result's metrics and says how many label sets
// it folded into OtherLabel.
func (e *Exporter) collectResult(out []metric, target string, t *exported, q string, res *results.Result) ([]metric, int) {
	h := res.Hist
	if h == nil {
		return out, 0
	}
	// The help texts name the event without the run's suffix: a family's
	// help must be the same for every target, whose runs' suffixes differ.
	title := strings.TrimSuffix(res.Title, t.suffix)
	if t.suffix == "" {
		title = res.Title
	}
	// The columns: the key labels, the histogram's key (a .log2 or
	// .buckets key of a histogram query), the sums and maxima.
	var keys []int
	var labels []string
	histKey, histKind := -1, ""
	var sums, maxes []int
	for j, c := range h.Columns {
		switch c.Kind {
		case planner.ColKey:
			mod := ""
			if c.Index < len(h.Keys) {
				mod = h.Keys[c.Index].Mod
			}
			if res.Latency == nil && histKey < 0 && (mod == "log2" || mod == "buckets") {
				histKey, histKind = j, mod
				continue
			}
			keys = append(keys, j)
			labels = append(labels, labelName(c.Label))
		case planner.ColValue:
			sums = append(sums, j)
		case planner.ColMax:
			maxes = append(maxes, j)
		}
	}
	labels = uniqueLabels(labels)
	limit := e.Series
	if limit <= 0 {
		limit = DefaultMetricSeries
	}
	admitted, folded := t.admitted[q], t.folded[q]
	if admitted == nil {
		admitted, folded = map[string]bool{}, map[string]bool{}
		t.admitted[q], t.folded[q] = admitted, folded
	}
	byKey := map[string]*series{}
	var order []string
	for ri := range res.Rows {
		r := &res.Rows[ri]
		vals := make([]string, len(keys))
		for i, j := range keys {
			vals[i] = labelValue(r.At(h.Columns[j], j))
		}
		k := strings.Join(vals, "\x00")
		if !admitted[k] {
			if len(admitted) < limit {
				admitted[k] = true
			} else {
				if len(folded) == 0 && e.Log != nil {
					fmt.Fprintf(e.Log, "sqlhist: --metrics: %s has more than %d label sets; the rest are counted as %s (sqlhist_series_folded)\n", q, limit, OtherLabel)
				}
				folded[k] = true
				for i := range vals {
					vals[i] = OtherLabel
				}
				k = "\x01other"
			}
		}
		s := byKey[k]
		if s == nil {
			s = &series{labels: vals, sums: make([]uint64, len(sums)), maxes: make([]float64, len(maxes)), hasMax: make([]bool, len(maxes)),
				buckets: map[float64]uint64{}, native: map[int]int64{}, sum: math.NaN()}
			byKey[k] = s
			order = append(order, k)
		}
		s.count += r.Count
		for i, j := range sums {
			s.sums[i] += r.At(h.Columns[j], j).Num
		}
		for i, j := range maxes {
			if c := r.At(h.Columns[j], j); c.IsNum && (!s.hasMax[i] || float64(c.Num) > s.maxes[i]) {
				s.maxes[i], s.hasMax[i] = float64(c.Num), true
			}
		}
		switch {
		case res.Latency != nil && r.Stats != nil:
			if math.IsNaN(s.sum) {
				s.sum = 0
			}
			s.sum += r.Stats.Sum
			s.max = max(s.max, r.Stats.Max)
			for ex, n := range r.Stats.Dist {
				s.addLog2(ex, n)
			}
		case histKey >= 0:
			c := r.At(h.Columns[histKey], histKey)
			if histKind == "log2" {
				ex := 0
				if c.Num > 1 {
					ex = bits.Len64(c.Num) - 1
				}
				s.addLog2(ex, r.Count)
			} else if hi, ok := bucketsHigh(c.Text); ok {
				s.buckets[hi] += r.Count
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a] < order[b] })
	created := t.start
	for _, k := range order {
		s := byKey[k]
		ln, lv := targetLabels(target, labels, s.labels)
		switch {
		case res.Latency != nil:
			unit := "nanoseconds"
			if res.Latency.Unit == "us" {
				unit = "microseconds"
			}
			base := q + "_" + MetricPart(res.Latency.Label) + "_" + unit
			out = append(out, histogramMetric(base, "The latency of "+title+" ("+unit+"), by the kernel's log2 buckets.", s, true, created, ln, lv),
				metric{name: base + "_max", help: "The largest latency of " + title + " (" + unit + ").", kind: gauge, labels: ln, values: lv, value: float64(s.max)})
		case histKey >= 0:
			c := h.Columns[histKey]
			out = append(out, histogramMetric(q+"_"+MetricPart(c.Label), "The distribution of "+c.Label+" in "+title+" (its sum is not counted: NaN).", s, histKind == "log2", created, ln, lv))
		default:
			out = append(out, metric{name: q + "_events_total", help: "Events of " + title + " counted.", kind: counter, labels: ln, values: lv, value: float64(s.count), created: created})
		}
		for i, j := range sums {
			c := h.Columns[j]
			out = append(out, metric{name: q + "_" + MetricPart(c.Label) + "_total", help: "The sum of " + c.Label + " over " + title + "'s events.", kind: counter, labels: ln, values: lv, value: float64(s.sums[i]), created: created})
		}
		for i, j := range maxes {
			if s.hasMax[i] {
				c := h.Columns[j]
				out = append(out, metric{name: q + "_" + MetricPart(c.Label), help: "The largest " + c.Label + " of " + title + ".", kind: gauge, labels: ln, values: lv, value: s.maxes[i]})
			}
		}
	}
	return out, len(folded)
}

// uniqueLabels renames a label name taken by an earlier column: _2, _3.
func uniqueLabels(names []string) []string {
	seen := map[string]int{}
	for i, n := range names {
		seen[n]++
		if k := seen[n]; k > 1 {
			names[i] = n + "_" + strconv.Itoa(k)
		}
	}
	return names
}

// labelValue is a key cell as a label value: its text, a stack's frames
// joined by ";" (innermost last, as folded stacks read).
func labelValue(c results.Cell) string {
	if c.Frames != nil {
		f := make([]string, len(c.Frames))
		for i, fr := range c.Frames {
			f[len(f)-1-i] = fr
		}
		return strings.Join(f, ";")
	}
	return c.Text
}

// addLog2 counts n events of the kernel's log2 bucket e: (2^(e-1), 2^e],
// e = 0 holding 0 and 1 (the native histogram's zero bucket, of
// threshold 1).
func (s *series) addLog2(e int, n uint64) {
	if e <= 0 {
		s.zero += n
		s.buckets[1] += n
		return
	}
	s.native[e] += int64(n)
	s.buckets[math.Ldexp(1, e)] += n
}

// bucketsHigh reads a .buckets key's text "LOW-HIGH" as its inclusive
// upper bound.
func bucketsHigh(text string) (float64, bool) {
	_, hi, ok := strings.Cut(text, "-")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
	return float64(v), err == nil
}

// histogramMetric is a series' histogram: classic buckets (cumulative,
// at the kernel's edges), and with native the same counts as a native
// histogram of schema 0 (zero threshold 1), unless its buckets hold
// more or other than its count (then the classic buckets alone, as
// client_golang refused such a native histogram).
func histogramMetric(name, help string, s *series, native bool, created time.Time, ln, lv []string) metric {
	h := &histogram{count: s.count, sum: s.sum, cumulative: map[float64]uint64{}}
	bounds := make([]float64, 0, len(s.buckets))
	for b := range s.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	var run uint64
	for _, b := range bounds {
		run += s.buckets[b]
		h.cumulative[b] = run
	}
	if native && nativeCountAgrees(s) {
		h.native, h.zero = s.native, s.zero
	}
	return metric{name: name, help: help, kind: histogramKind, labels: ln, values: lv, created: created, hist: h}
}

// nativeCountAgrees says whether a native histogram's buckets add up to
// its count (at most its count when the sum is not known, NaN).
func nativeCountAgrees(s *series) bool {
	n := int64(s.zero)
	for _, v := range s.native {
		n += v
	}
	if math.IsNaN(s.sum) {
		return n <= int64(s.count)
	}
	return n == int64(s.count)
}

// errnoText is the system's message for a failed call, without the path
// or address.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
