package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Choices are the choices of a command line that decide what is printed
// or how -r runs, checked together by Check before anything is compiled
// or written (sqlhist's flags; another front end can fill them too).
type Choices struct {
	Run, Execute, Teardown bool   // -r, -e, --teardown
	Events                 bool   // --events: stream the synthetic events' trace lines
	Output                 string // -o: script, json, bootconfig; with -r table, json, csv, folded, pprof
	Out                    string // --out: the results' file
	Duration               string // -d: seconds ("10", "0.5") or a Go duration ("1m30s")
	Interval               string // -i: print each interval alone
	Live                   bool   // --live: redraw the results in place on a terminal
	Engine                 string // --engine: kernel, stream or auto
	Metrics                string // --metrics: the address /metrics is served on
	Series                 int    // --metrics-series: label sets a query keeps
	Size                   int    // --size: entries of each histogram's map
	BufferKB               int    // --buffer-kb: the ring buffer of the run's instance, per CPU (stream engine)
	Initrd                 string // --initrd FILE
	PlanFile               string // --plan FILE
	TeardownOut            string // --teardown-out FILE: the teardown script too
	PlanOut                string // --plan-out FILE: the JSON plan too
	// OutTerminal says that the results would go to a terminal (-o
	// pprof refuses one).
	OutTerminal bool

	// Set by Check: -d and -i parsed (0 when not given).
	Collect, Every time.Duration
	// Set by the caller once it knows: the engine -r resolved
	// (ChooseEngine), why, and the catalog the plan was compiled against.
	Used       string
	UsedReason string
	Catalog    *tracefs.Catalog
}

// Check validates the choices against each other (given reports
// whether a flag was given, by its long name), and fills in Output's
// default, Collect and Every. Its errors are usage errors.
func (c *Choices) Check(given func(name string) bool) error {
	if given("size") {
		if c.Size < 128 || c.Size > 131072 {
			return fmt.Errorf("--size %d: the kernel takes 128 to 131072 entries", c.Size)
		}
		if c.PlanFile != "" {
			return fmt.Errorf("--plan replays the writes of a plan as they are: drop --size (give it when the plan is made)")
		}
	}
	if given("buffer-kb") && (c.BufferKB < live.MinBufferKB || c.BufferKB > live.MaxBufferKB) {
		return fmt.Errorf("--buffer-kb %d: give %d to %d KiB of ring buffer per CPU", c.BufferKB, live.MinBufferKB, live.MaxBufferKB)
	}
	if err := c.checkAlso(); err != nil {
		return err
	}
	if !c.Run {
		// -d and --engine stream print the awk engine's script (checked
		// again once the catalog is known: CheckAwk).
		for _, f := range []string{"events", "out", "metrics", "metrics-series", "live"} {
			if given(f) {
				return fmt.Errorf("--%s goes with --run (-r)", f)
			}
		}
		if given("interval") {
			// The awk engine's script prints per interval too.
			iv, err := live.ParseDuration(c.Interval)
			if err != nil {
				return fmt.Errorf("-i: %v", strings.TrimPrefix(err.Error(), "-d "))
			}
			c.Every = iv
		}
		if err := c.checkPrint(); err != nil || c.Duration == "" {
			return err
		}
		d, err := live.ParseDuration(c.Duration)
		if err != nil {
			return err
		}
		c.Collect = d
		return nil
	}
	if c.Output == "" {
		c.Output = "table"
	}
	if c.Execute || c.Teardown {
		return fmt.Errorf("--run applies, collects and tears down by itself: drop -e and --teardown")
	}
	switch c.Output {
	case "table", "json", "csv", "folded", "pprof":
	default:
		return fmt.Errorf("-o %q: with --run use table, json, csv, folded or pprof", c.Output)
	}
	if c.Metrics != "" && c.Events {
		return fmt.Errorf("--metrics serves the results; --events streams every event: use one of them")
	}
	if c.Interval != "" {
		if c.Events {
			return fmt.Errorf("-i prints results per interval; --events streams every event: use one of them")
		}
		iv, err := live.ParseDuration(c.Interval)
		if err != nil {
			return fmt.Errorf("-i: %v", strings.TrimPrefix(err.Error(), "-d "))
		}
		c.Every = iv
	}
	if err := c.checkLive(); err != nil {
		return err
	}
	if err := c.checkOut(); err != nil {
		return err
	}
	if c.Duration != "" {
		d, err := live.ParseDuration(c.Duration)
		if err != nil {
			return err
		}
		c.Collect = d
	}
	return nil
}

// checkLive validates --live: a view of tables on the terminal, redrawn
// every -i (DefaultLiveEvery without it). On a stdout that is not a
// terminal it prints each interval as -i does (LiveView says which).
func (c *Choices) checkLive() error {
	if !c.Live {
		return nil
	}
	switch {
	case c.Events:
		return fmt.Errorf("--live redraws the results in place; --events streams every event: use one of them")
	case c.Out != "":
		return fmt.Errorf("--live draws the results on the terminal: drop --out (or --live, to write them to %s)", c.Out)
	case c.Output != "table":
		return fmt.Errorf("--live draws tables: drop -o %s (or --live: -i prints each interval as %s)", c.Output, c.Output)
	}
	if c.Every == 0 {
		c.Every = results.DefaultLiveEvery
	}
	return nil
}

// LiveView reports whether -r draws the --live view: --live with the
// results going to a terminal. Without a terminal, --live prints each
// interval as -i does.
func (c *Choices) LiveView() bool { return c.Live && c.OutTerminal }

// checkAlso validates --teardown-out and --plan-out: the other forms of
// a printed or applied compile.
func (c *Choices) checkAlso() error {
	switch {
	case c.TeardownOut == "" && c.PlanOut == "":
		return nil
	case c.Run:
		return fmt.Errorf("--run removes what it creates: --teardown-out and --plan-out go with printing or -e")
	case c.TeardownOut != "" && c.Teardown:
		return fmt.Errorf("--teardown prints the teardown: drop --teardown-out, or --teardown to print the commands and save their teardown")
	case c.PlanOut != "" && c.PlanFile != "":
		return fmt.Errorf("--plan FILE replays a plan: --plan-out writes the plan of a compile (the replay's plan is FILE)")
	case c.PlanOut != "" && c.Output != "" && c.Output != "script":
		return fmt.Errorf("--plan-out writes the plan of the script's commands: give it without -o %s", c.Output)
	case c.TeardownOut != "" && c.TeardownOut == c.PlanOut:
		return fmt.Errorf("--teardown-out and --plan-out name the same file %s", c.PlanOut)
	}
	return nil
}

// checkPrint validates -o and the flags of the printed forms (without -r).
func (c *Choices) checkPrint() error {
	switch c.Output {
	case "", "script":
		c.Output = "script"
	case "json", "bootconfig":
		if c.Execute {
			return fmt.Errorf("-e applies the commands; -o %s only prints: use one of them", c.Output)
		}
	case "table", "csv", "folded", "pprof":
		return fmt.Errorf("-o %s shows results: it goes with --run (-r)", c.Output)
	default:
		return fmt.Errorf("-o %q: use script, json or bootconfig (with --run: table, json, csv, folded or pprof)", c.Output)
	}
	if c.Initrd != "" && (c.Output != "bootconfig" || c.Teardown) {
		return fmt.Errorf("--initrd FILE takes the bootconfig of -o bootconfig (without --teardown)")
	}
	if c.PlanFile != "" && c.Output != "script" {
		return fmt.Errorf("--plan FILE replays a JSON plan as a script or with -e: drop -o %s", c.Output)
	}
	return nil
}

// checkOut validates --out and the stack formats against the other -r
// choices. A pprof profile is binary: it goes to --out FILE, or to a
// stdout that is not a terminal; with -i, where each interval is a
// profile of its own, to --out FILE.
func (c *Choices) checkOut() error {
	f := c.Output
	switch {
	case results.IsStackFormat(f) && c.Events:
		return fmt.Errorf("-o %s draws the results' stacks; --events streams every event: use one of them", f)
	case f == "pprof" && c.Every > 0 && c.Out == "":
		return fmt.Errorf("-i with -o pprof writes a profile per interval: give --out FILE (interval N goes to FILE with .N before its extension, the total to FILE)")
	case f == "pprof" && c.Out == "" && c.OutTerminal:
		return fmt.Errorf("-o pprof writes a gzipped profile, not for a terminal: redirect stdout (> offcpu.pb.gz) or give --out FILE")
	case c.Out != "" && c.Events:
		return fmt.Errorf("--out takes the results; --events streams to stdout: drop one of them")
	}
	return nil
}

func usagef(format string, args ...any) error { return source.Usagef(format, args...) }
