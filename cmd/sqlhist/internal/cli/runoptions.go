package cli

import (
	"strconv"
	"time"

	"github.com/sqlhist/sqlhist/live"
)

// RunOptions are Run's options for the choices c on h: its clock, its
// log, a run id and marker of h's, how often a --via target's objects are
// checked, and --events' stream to h's stdout.
func runOptions(h live.Host, c *Choices) live.Options {
	opt := live.Options{Duration: c.Collect, Log: h.Stderr, After: h.After, Marker: "sqlhist-end-" + strconv.Itoa(h.PID), Alive: h.Alive, ID: h.PID,
		Engine: c.Used, EngineReason: c.UsedReason, Catalog: c.Catalog, BufferKB: c.BufferKB}
	if h.Via != "" {
		// Each check of the run's objects is requests to the target.
		opt.Watch = 5 * time.Second
	}
	if c.Events {
		opt.Events, opt.Format = h.Stdout, c.Output
	}
	if c.Every > 0 {
		opt.Interval, opt.Tick = c.Every, h.Tick
	}
	return opt
}
