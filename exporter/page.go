package exporter

import (
	"compress/gzip"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The page is built here from the metric families' protocol buffers
// (client_model) and written by expfmt, the Prometheus libraries that
// define the formats, rather than through client_golang's registry: that
// package registers its default collectors when a process starts, which
// every sqlhist process paid (0.7 ms of a 4.5 ms start on this host,
// more under emulation) whether it served metrics or not.

const (
	counter       = dto.MetricType_COUNTER
	gauge         = dto.MetricType_GAUGE
	histogramKind = dto.MetricType_HISTOGRAM
)

// metric is one series of the page: its family's name, help and type,
// its labels, and its value (a histogram's in hist). A counter or
// histogram with a created time carries it (protobuf shows it).
type metric struct {
	name, help string
	kind       dto.MetricType
	labels     []string
	values     []string
	value      float64
	created    time.Time
	hist       *histogram
}

// histogram is a histogram's count, sum, classic buckets (cumulative
// counts by upper bound) and, when native is not nil, its native buckets
// of schema 0 by index and its zero bucket (threshold 1).
type histogram struct {
	count      uint64
	sum        float64
	cumulative map[float64]uint64
	native     map[int]int64
	zero       uint64
}

// families turns metrics into the page's families, sorted by name, each
// family's metrics by their label values. A metric whose family was
// given another type or help, or whose labels repeat an earlier one's,
// is left out and told in the errors; a label value that is not UTF-8
// has its bad bytes replaced.
func families(ms []metric) ([]*dto.MetricFamily, []error) {
	byName := map[string]*dto.MetricFamily{}
	seen := map[string]bool{}
	var errs []error
	for _, m := range ms {
		mf := byName[m.name]
		if mf == nil {
			mf = &dto.MetricFamily{Name: &m.name, Help: &m.help, Type: new(m.kind)}
			byName[m.name] = mf
		} else if mf.GetType() != m.kind || mf.GetHelp() != m.help {
			errs = append(errs, fmt.Errorf("%s: a %s with another help or type than its family's left out", m.name, m.kind))
			continue
		}
		if len(m.labels) != len(m.values) {
			errs = append(errs, fmt.Errorf("%s: %d label names, %d values: left out", m.name, len(m.labels), len(m.values)))
			continue
		}
		pairs := make([]*dto.LabelPair, len(m.labels))
		for i := range m.labels {
			v := m.values[i]
			if !utf8.ValidString(v) {
				v = strings.ToValidUTF8(v, "\uFFFD")
			}
			pairs[i] = &dto.LabelPair{Name: &m.labels[i], Value: &v}
		}
		sort.Slice(pairs, func(a, b int) bool { return pairs[a].GetName() < pairs[b].GetName() })
		key := m.name
		for _, p := range pairs {
			key += "\xff" + p.GetName() + "\xfe" + p.GetValue()
		}
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: a series with the labels of an earlier one left out", m.name))
			continue
		}
		seen[key] = true
		out := &dto.Metric{Label: pairs}
		var created *timestamppb.Timestamp
		if !m.created.IsZero() {
			created = timestamppb.New(m.created)
		}
		switch m.kind {
		case counter:
			out.Counter = &dto.Counter{Value: new(m.value), CreatedTimestamp: created}
		case gauge:
			out.Gauge = &dto.Gauge{Value: new(m.value)}
		case histogramKind:
			out.Histogram = m.hist.proto(created)
		}
		mf.Metric = append(mf.Metric, out)
	}
	var out []*dto.MetricFamily
	for _, mf := range byName {
		sort.SliceStable(mf.Metric, func(a, b int) bool { return labelsLess(mf.Metric[a].Label, mf.Metric[b].Label) })
		out = append(out, mf)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].GetName() < out[b].GetName() })
	return out, errs
}

// labelsLess orders two metrics of a family by their label values, in
// the order of their (sorted) names.
func labelsLess(a, b []*dto.LabelPair) bool {
	for i := range min(len(a), len(b)) {
		if av, bv := a[i].GetValue(), b[i].GetValue(); av != bv {
			return av < bv
		}
	}
	return len(a) < len(b)
}

// proto is the histogram as its protocol buffer: the classic buckets by
// upper bound and, when it has them, the native buckets as spans and
// deltas (a gap of up to two buckets filled with empty ones, a longer
// one starting a new span).
func (h *histogram) proto(created *timestamppb.Timestamp) *dto.Histogram {
	out := &dto.Histogram{SampleCount: new(h.count), SampleSum: new(h.sum), CreatedTimestamp: created}
	bounds := make([]float64, 0, len(h.cumulative))
	for b := range h.cumulative {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: new(b), CumulativeCount: new(h.cumulative[b])})
	}
	if h.native == nil {
		return out
	}
	out.Schema, out.ZeroThreshold, out.ZeroCount = new(int32(0)), new(1.0), new(h.zero)
	idx := make([]int, 0, len(h.native))
	for i := range h.native {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var prev int64
	next := 0
	for n, i := range idx {
		if gap := i - next; n == 0 || gap > 2 {
			out.PositiveSpan = append(out.PositiveSpan, &dto.BucketSpan{Offset: new(int32(gap)), Length: new(uint32(0))})
		} else {
			for range gap {
				*out.PositiveSpan[len(out.PositiveSpan)-1].Length++
				out.PositiveDelta = append(out.PositiveDelta, -prev)
				prev = 0
			}
		}
		*out.PositiveSpan[len(out.PositiveSpan)-1].Length++
		out.PositiveDelta = append(out.PositiveDelta, h.native[i]-prev)
		prev = h.native[i]
		next = i + 1
	}
	return out
}

// serveMetrics writes the page in the format the scraper accepts (text,
// or delimited protobuf with native histograms and created times),
// gzipped when it accepts gzip. What cannot be shown is left out and
// logged; the rest is served.
func (e *Exporter) serveMetrics(w http.ResponseWriter, r *http.Request) {
	ms := append(e.collect(), processMetrics()...)
	fams, errs := families(ms)
	if len(errs) > 0 && e.Log != nil {
		l := log.New(e.Log, "sqlhist: --metrics: ", 0)
		for _, err := range errs {
			l.Println(err)
		}
	}
	format := expfmt.Negotiate(r.Header)
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", string(format))
	out := http.ResponseWriter(w)
	var zw *gzip.Writer
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		zw = gzip.NewWriter(w)
		defer zw.Close()
	}
	enc := expfmt.NewEncoder(writerOf(out, zw), format)
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			if e.Log != nil {
				fmt.Fprintf(e.Log, "sqlhist: --metrics: %s: %v\n", mf.GetName(), err)
			}
			return
		}
	}
}

// writerOf is the gzip writer when there is one, else w.
func writerOf(w http.ResponseWriter, zw *gzip.Writer) interface{ Write([]byte) (int, error) } {
	if zw != nil {
		return zw
	}
	return w
}

// acceptsGzip reads an Accept-Encoding header: gzip listed, and not
// with q=0.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// processMetrics are the process's own: its CPU time, memory, open
// files and start (Linux's /proc/self, as Prometheus' process_ metrics
// name them), and the Go runtime's goroutines, threads and heap.
func processMetrics() []metric {
	var out []metric
	add := func(name, help string, kind dto.MetricType, v float64) {
		out = append(out, metric{name: name, help: help, kind: kind, value: v})
	}
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The fields after the command, which may hold spaces and ")".
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			f := strings.Fields(string(stat[i+1:]))
			// f[0] is field 3 (state): utime is field 14, stime 15,
			// starttime 22, vsize 23, rss 24 (pages).
			if len(f) > 21 {
				const ticks = 100 // USER_HZ on every Linux architecture
				ut, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counter, (ut+st)/ticks)
				if start, err := strconv.ParseFloat(f[19], 64); err == nil {
					if boot := bootTime(); boot > 0 {
						add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gauge, boot+start/ticks)
					}
				}
				vsize, _ := strconv.ParseFloat(f[20], 64)
				rss, _ := strconv.ParseFloat(f[21], 64)
				add("process_virtual_memory_bytes", "Virtual memory size in bytes.", gauge, vsize)
				add("process_resident_memory_bytes", "Resident memory size in bytes.", gauge, rss*float64(os.Getpagesize()))
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		add("process_open_fds", "Number of open file descriptors.", gauge, float64(len(fds)))
	}
	if lim := maxFDs(); lim > 0 {
		add("process_max_fds", "Maximum number of open file descriptors.", gauge, lim)
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	add("go_goroutines", "Number of goroutines that currently exist.", gauge, float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	add("go_threads", "Number of OS threads created.", gauge, float64(threads))
	add("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", gauge, float64(mem.HeapAlloc))
	add("go_memstats_sys_bytes", "Number of bytes obtained from system.", gauge, float64(mem.Sys))
	add("go_gc_cycles_total", "Completed GC cycles.", counter, float64(mem.NumGC))
	out = append(out, metric{name: "go_info", help: "Information about the Go environment.", kind: gauge, labels: []string{"version"}, values: []string{runtime.Version()}, value: 1})
	return out
}

// bootTime is when the system booted (Unix seconds), from /proc/stat.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// maxFDs is the soft limit of open files, from /proc/self/limits.
func maxFDs() float64 {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					return v
				}
				return math.Inf(1)
			}
		}
	}
	return 0
}
