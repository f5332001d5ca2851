package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sqlhist/sqlhist/exporter"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
)

// MetricsEvery is how often --metrics reads the results without -i.
const MetricsEvery = 5 * time.Second

// serveExporter serves a new exporter of c's series on c.Metrics until
// the function it returns is called, saying so on log.
func serveExporter(ctx context.Context, c *Choices, log io.Writer, what string) (*exporter.Exporter, func(), error) {
	l, err := exporter.Listen(c.Metrics)
	if err != nil {
		return nil, nil, err
	}
	exp := exporter.NewExporter()
	exp.Series, exp.Log = c.Series, log
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := exp.Serve(sctx, l); err != nil {
			fmt.Fprintf(log, "sqlhist: --metrics: %v\n", err)
		}
	}()
	fmt.Fprintf(log, "sqlhist: serving metrics%s on http://%s/metrics\n", what, l.Addr())
	return exp, func() { cancel(); <-served }, nil
}

// serveMetrics sets a run on h up to serve --metrics (c.Metrics; nothing
// without it): a lone run listens on the address itself (refused before
// anything is applied), a fleet's target (h.Exporter) updates the
// fleet's exporter under h.Label. opt reads the results every -i or
// MetricsEvery. done ends the serving once the run returned.
func serveMetrics(ctx context.Context, h live.Host, c *Choices, opt *live.Options) (done func(error), err error) {
	if c.Metrics == "" {
		return func(error) {}, nil
	}
	// A server, not a run that ends: Go's default collector target.
	TuneGC(os.Getenv, true)
	exp, stop := h.Exporter, func() {}
	if exp == nil {
		if exp, stop, err = serveExporter(ctx, c, h.Stderr, ""); err != nil {
			return nil, err
		}
	}
	exp.Start(h.Label, "_"+strconv.Itoa(h.PID)) // Prepare's suffix
	if opt.Interval <= 0 {
		opt.Interval, opt.Tick = MetricsEvery, h.Tick
	}
	opt.OnTotal = func(rs []*results.Result) { exp.Update(h.Label, rs) }
	return func(err error) { exp.Down(h.Label, err); stop() }, nil
}

// FleetMetrics serves --metrics for a fleet of targets worked on jobs at
// a time: one address, every target's results labelled target=its
// --via (Host.Exporter and Label). Every target must be worked on at
// once, or the last would wait for the first to end. Without --metrics
// or -r, nothing.
func FleetMetrics(h live.Host, c *Choices, jobs, targets int) (*exporter.Exporter, func(), error) {
	if c.Metrics == "" || !c.Run {
		return nil, func() {}, nil
	}
	if jobs < targets {
		return nil, nil, usagef("--metrics serves every target at once: --via-jobs %d is fewer than the %d targets", jobs, targets)
	}
	return serveExporter(context.Background(), c, h.Stderr, fmt.Sprintf(" of %d targets", targets))
}
