package cli

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/exporter"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
)

// checkDashboard refuses --metrics-dashboard without -r --metrics.
func (o *options) checkDashboard(e env) int {
	if o.dashboard != "" && (!o.run || o.live.Metrics == "") {
		return usageError(e, "--metrics-dashboard FILE writes the Grafana dashboard of a --metrics run: give it with -r --metrics ADDR")
	}
	return exitOK
}

// writeDashboard writes the Grafana dashboard of the plan's metrics to
// --metrics-dashboard FILE, before the run applies anything.
func (o *options) writeDashboard(e env, src *source.Source, plan *planner.Plan) error {
	if o.dashboard == "" {
		return nil
	}
	panels := exporter.DashboardPanels(plan, "_"+strconv.Itoa(e.PID), src)
	var events []string
	seen := map[string]bool{}
	for _, p := range panels[:len(panels)-1] {
		ev, _, _ := strings.Cut(p.Title, ": ")
		if !seen[ev] {
			seen[ev] = true
			events = append(events, ev)
		}
	}
	var b bytes.Buffer
	if err := exporter.WriteDashboard(&b, "sqlhist: "+strings.Join(events, ", "), panels); err != nil {
		return err
	}
	return e.ReplaceFile(o.dashboard, b.Bytes())
}
