package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// liveOptions are the flags of --run.
type liveOptions struct {
	duration string // -d: seconds ("10", "0.5") or a Go duration ("1m30s")
	events   bool   // --events: stream the synthetic events' trace lines
	output   string // -o: table, json, csv, folded or pprof
	out      string // --out: the results' file
	size     int    // --size: entries of each histogram's map (see checkSize)
	interval string // -i: print each interval alone
	every    time.Duration
	engine   string // --engine: kernel, stream or auto
	metrics  string // --metrics: the address /metrics is served on
	series   int    // --metrics-series: label sets a query keeps
	// used is the engine --run resolved (live.PickEngine), and catalog
	// the catalog the plan was compiled against.
	used    string
	catalog *tracefs.Catalog
}

// checkLive validates the --run flags against the others.
func (o *options) checkLive(e env, fl changed) (time.Duration, int) {
	if code := o.checkSize(e, fl); code != exitOK {
		return 0, code
	}
	if !o.run {
		// -d and --engine stream print the awk engine's script (checked
		// again once the catalog is known: checkAwk).
		for _, f := range []string{"events", "interval", "out", "metrics", "metrics-series"} {
			if fl(f) {
				return 0, usageError(e, "--%s goes with --run (-r)", f)
			}
		}
		if code := o.checkPrint(e); code != exitOK || o.live.duration == "" {
			return 0, code
		}
		d, err := live.ParseDuration(o.live.duration)
		if err != nil {
			return 0, usageError(e, "%v", err)
		}
		return d, exitOK
	}
	if o.live.output == "" {
		o.live.output = "table"
	}
	if o.execute || o.teardown {
		return 0, usageError(e, "--run applies, collects and tears down by itself: drop -e and --teardown")
	}
	switch o.live.output {
	case "table", "json", "csv", "folded", "pprof":
	default:
		return 0, usageError(e, "-o %q: with --run use table, json, csv, folded or pprof", o.live.output)
	}
	if o.live.metrics != "" && o.live.events {
		return 0, usageError(e, "--metrics serves the results; --events streams every event: use one of them")
	}
	if o.live.interval != "" {
		if o.live.events {
			return 0, usageError(e, "-i prints results per interval; --events streams every event: use one of them")
		}
		iv, err := live.ParseDuration(o.live.interval)
		if err != nil {
			return 0, usageError(e, "-i: %v", strings.TrimPrefix(err.Error(), "-d "))
		}
		o.live.every = iv
	}
	if code := o.checkOut(e); code != exitOK {
		return 0, code
	}
	if o.live.duration == "" {
		return 0, exitOK
	}
	d, err := live.ParseDuration(o.live.duration)
	if err != nil {
		return 0, usageError(e, "%v", err)
	}
	return d, exitOK
}

// changed reports whether a flag was given.
type changed func(name string) bool

// metricsEvery is how often --metrics reads the results without -i.
const metricsEvery = 5 * time.Second

// serveMetrics sets a run up to serve --metrics: a lone run listens on
// the address itself (refused before anything is applied), a fleet's
// target updates the fleet's exporter under its label. done ends the
// serving once the run returned.
func (o *options) serveMetrics(ctx context.Context, e env, opt *live.Options) (*live.Exporter, func(error), int) {
	if o.live.metrics == "" {
		return nil, func(error) {}, exitOK
	}
	tuneGC(os.Getenv, true)
	exp, stop := e.exporter, func() {}
	if exp == nil {
		l, err := live.Listen(o.live.metrics)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
			return nil, nil, exitQuery
		}
		exp = live.NewExporter()
		exp.Series, exp.Log = o.live.series, e.stderr
		sctx, cancel := context.WithCancel(ctx)
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := exp.Serve(sctx, l); err != nil {
				fmt.Fprintf(e.stderr, "sqlhist: --metrics: %v\n", err)
			}
		}()
		stop = func() { cancel(); <-served }
		fmt.Fprintf(e.stderr, "sqlhist: serving metrics on http://%s/metrics\n", l.Addr())
	}
	exp.Start(e.label, "_"+strconv.Itoa(e.pid)) // live.Prepare's suffix
	if opt.Interval <= 0 {
		opt.Interval, opt.Tick = metricsEvery, e.tick
	}
	opt.OnTotal = func(rs []*live.Result) { exp.Update(e.label, rs) }
	return exp, func(err error) { exp.Down(e.label, err); stop() }, exitOK
}

// fleetMetrics serves --metrics for a fleet: one address, every target's
// results labelled target=its --via. Every target must be worked on at
// once, or the last would wait for the first to end.
func (o *options) fleetMetrics(e env, targets int) (*live.Exporter, func(), int) {
	if o.live.metrics == "" || !o.run {
		return nil, func() {}, exitOK
	}
	if o.viaJobs < targets {
		return nil, nil, usageError(e, "--metrics serves every target at once: --via-jobs %d is fewer than the %d targets", o.viaJobs, targets)
	}
	l, err := live.Listen(o.live.metrics)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
		return nil, nil, exitQuery
	}
	exp := live.NewExporter()
	exp.Series, exp.Log = o.live.series, e.stderr
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := exp.Serve(ctx, l); err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: --metrics: %v\n", err)
		}
	}()
	fmt.Fprintf(e.stderr, "sqlhist: serving metrics of %d targets on http://%s/metrics\n", targets, l.Addr())
	return exp, func() { cancel(); <-served }, exitOK
}
