package main

import (
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
		for _, f := range []string{"duration", "events", "interval", "out", "engine"} {
			if fl(f) {
				return 0, usageError(e, "--%s goes with --run (-r)", f)
			}
		}
		return 0, o.checkPrint(e)
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
