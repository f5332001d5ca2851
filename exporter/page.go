package exporter

import (
	"compress/gzip"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// metric is one series of the page: its family's name, help and type,
// its labels, and its value (a histogram's in hist). A counter or
// histogram with a created time carries it (protobuf shows it).
type metric struct {
	name, help string
	kind       metricKind
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
	format, contentType := negotiate(r.Header.Get("Accept"))
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", contentType)
	out := http.ResponseWriter(w)
	var zw *gzip.Writer
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		zw = gzip.NewWriter(w)
		defer zw.Close()
	}
	if err := writePage(writerOf(out, zw), format, fams); err != nil && e.Log != nil {
		fmt.Fprintf(e.Log, "sqlhist: --metrics: writing the page: %v\n", err)
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
	add := func(name, help string, kind metricKind, v float64) {
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
