package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
)

const heatmapUsage = `usage: sqlhist heatmap [-o svg|html] [--keys N] FILE.json

sqlhist heatmap draws what sqlhist -r -i N -o json saved as latency
heatmaps: for each statement with a latency (a JOIN's) or a log2 key,
time across (one column per interval), the log2 buckets up, the events
of each cell as its colour; a panel per row key (a fleet's targets
apart), the keys with the most events first. It writes an SVG picture,
or with -o html a page of its own that shows it, to stdout. A run draws
the same live with --heatmap FILE. Exit status: 0 ok, 1 the file not
read or nothing to draw, 2 bad usage.

flags:
`

// runHeatmap is sqlhist heatmap.
func runHeatmap(args []string, e env) int {
	fl := pflag.NewFlagSet("sqlhist heatmap", pflag.ContinueOnError)
	fl.SetOutput(e.Stderr)
	output := fl.StringP("output", "o", "svg", "write `FORMAT`: svg (a picture) or html (a page with the picture in it)")
	keys := fl.Int("keys", results.DefaultHeatmapKeys, "draw a panel for at most `N` row keys of a statement, those with the most events (the picture says how many are left out)")
	help := fl.BoolP("help", "h", false, "show this help")
	fl.Usage = func() { fmt.Fprint(e.Stderr, heatmapUsage+fl.FlagUsagesWrapped(helpColumns)) }
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return heatmapUsageError(e, "%v", err)
	}
	if *help {
		fmt.Fprint(e.Stdout, heatmapUsage+fl.FlagUsagesWrapped(helpColumns))
		return exitOK
	}
	if *output != "svg" && *output != "html" {
		return heatmapUsageError(e, "-o %q: use svg or html", *output)
	}
	if *keys < 1 {
		return heatmapUsageError(e, "--keys %d: draw at least one key", *keys)
	}
	if len(fl.Args()) != 1 {
		return heatmapUsageError(e, "give one file that sqlhist -r -i N -o json wrote")
	}
	hm, err := results.HeatmapFile(fl.Arg(0), e.ReadFile, results.HeatmapOptions{Keys: *keys})
	if err != nil {
		msg := err.Error()
		if !strings.HasSuffix(msg, "\n") {
			msg = "sqlhist: " + msg + "\n"
		}
		io.WriteString(e.Stderr, msg)
		return exitQuery
	}
	if err := writeHeatmap(e.Stdout, hm, *output); err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	return exitOK
}

func heatmapUsageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.Stderr, "sqlhist heatmap: "+format+"\n", args...)
	fmt.Fprintln(e.Stderr, "run 'sqlhist heatmap --help' for usage")
	return exitUsage
}

// writeHeatmap writes a heatmap as an SVG picture or an HTML page.
func writeHeatmap(w io.Writer, hm *results.Heatmap, format string) error {
	if format == "html" {
		return hm.WriteHTML(w)
	}
	return hm.WriteSVG(w)
}

// heatmapFormat is the format of --heatmap FILE: html for a name ending
// in .html or .htm, else svg.
func heatmapFormat(file string) string {
	l := strings.ToLower(file)
	if strings.HasSuffix(l, ".html") || strings.HasSuffix(l, ".htm") {
		return "html"
	}
	return "svg"
}

// checkHeatmap refuses --heatmap without -r and -i (a usage error).
func (o *options) checkHeatmap(e env) int {
	if o.heatmap == "" {
		return exitOK
	}
	switch {
	case !o.run || o.live.Every <= 0:
		return usageError(e, "--heatmap FILE draws the intervals of a run: give it with -r and -i N")
	case o.live.Out != "" && o.live.Out == o.heatmap:
		return usageError(e, "--out and --heatmap name the same file %s", o.heatmap)
	}
	return exitOK
}

// heatmapHook returns what -r does at each interval with --heatmap FILE:
// then (the interval's own output), and the heatmap of the intervals so
// far written to FILE, whole (a browser's reload shows the run so far).
func (o *options) heatmapHook(e env, src *source.Source, then func(*results.Interval)) func(*results.Interval) {
	if o.heatmap == "" {
		return then
	}
	var ivs []results.HeatInterval
	said := false
	return func(iv *results.Interval) {
		if then != nil {
			then(iv)
		}
		ivs = append(ivs, results.HeatInterval{Label: e.Via, Interval: iv})
		hm, err := results.NewHeatmap(ivs, results.HeatmapOptions{Source: src})
		if err == nil {
			var b bytes.Buffer
			if err = writeHeatmap(&b, hm, heatmapFormat(o.heatmap)); err == nil {
				err = e.ReplaceFile(o.heatmap, b.Bytes())
			}
		}
		if err != nil && !said {
			fmt.Fprintf(e.Stderr, "sqlhist: --heatmap %s: %v\n", o.heatmap, err)
			said = true
		}
	}
}
