package exporter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// DashPanel is one panel of a dashboard: its Grafana type (heatmap,
// timeseries), title, unit and PromQL expressions. The expressions use
// the dashboard's variables: $job, and Grafana's $__rate_interval.
type DashPanel struct {
	Type, Title, Unit, Description string
	Exprs                          []DashExpr
}

// DashExpr is one query of a panel and the legend of its series.
type DashExpr struct {
	Expr, Legend string
	Heatmap      bool // the buckets of a heatmap
}

// DashboardPanels are the panels of the dashboard of a plan's --metrics
// (the run's suffix of derived event names, "_<id>", as the exporter is
// given it): per statement, for a latency or a log2 key's native
// histogram a heatmap, the p50, p90 and p99 (histogram_quantile) and the
// events' rate; for a .buckets key the same from its classic buckets; for
// a count, the events' rate; a sum's rate; a maximum; then the runs'
// health (up, lost and dropped events). src, when not nil, gives the
// descriptions each statement's SQL.
func DashboardPanels(plan *planner.Plan, suffix string, src *source.Source) []DashPanel {
	var rs []*results.Result
	for _, u := range plan.Units {
		h := u.Results
		if h == nil {
			h = u.Start
		}
		if u.Feeds || h == nil {
			continue
		}
		rs = append(rs, results.NewResult(u, h, &tracefs.Histogram{}))
	}
	names := metricNames(rs, suffix)
	sel := `{job=~"$job"}`
	rate := func(m string) string { return "rate(" + m + sel + "[$__rate_interval])" }
	var out []DashPanel
	for i, res := range rs {
		q, h := names[i], res.Hist
		event := strings.TrimSuffix(res.Title, suffix)
		desc := results.HeatTitle(res, src)
		if desc == res.Title {
			desc = event
		}
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
					histKey, histKind = j, "native"
					if mod != "log2" {
						histKind = "classic"
					}
					continue
				}
				labels = append(labels, labelName(c.Label))
			case planner.ColValue:
				sums = append(sums, j)
			case planner.ColMax:
				maxes = append(maxes, j)
			}
		}
		labels = uniqueLabels(labels)
		by := "sum(" // summed over a fleet's targets and the instances
		legend := event
		if len(labels) > 0 {
			by = "sum by (" + strings.Join(labels, ", ") + ") ("
			var parts []string
			for _, l := range labels {
				parts = append(parts, "{{"+l+"}}")
			}
			legend = strings.Join(parts, " ")
		}
		hist, unit, what := "", "", ""
		switch {
		case res.Latency != nil:
			u := "nanoseconds"
			unit = "ns"
			if res.Latency.Unit == "us" {
				u, unit = "microseconds", "µs"
			}
			hist, histKind, what = q+"_"+MetricPart(res.Latency.Label)+"_"+u, "native", res.Latency.Label
		case histKey >= 0:
			hist, what = q+"_"+MetricPart(h.Columns[histKey].Label), h.Columns[histKey].Label
		}
		if hist != "" {
			heat := "sum(" + rate(hist) + ")"
			quant := func(p string) string { return "histogram_quantile(" + p + ", " + by + rate(hist) + "))" }
			count := by + "histogram_count(" + rate(hist) + "))"
			if histKind == "classic" {
				heat = "sum by (le) (" + rate(hist+"_bucket") + ")"
				lby := "sum by (le) ("
				if len(labels) > 0 {
					lby = "sum by (le, " + strings.Join(labels, ", ") + ") ("
				}
				quant = func(p string) string { return "histogram_quantile(" + p + ", " + lby + rate(hist+"_bucket") + "))" }
				count = by + rate(hist+"_count") + ")"
			}
			out = append(out, DashPanel{Type: "heatmap", Title: event + ": " + what + " heatmap", Unit: unit, Description: desc,
				Exprs: []DashExpr{{Expr: heat, Legend: "{{le}}", Heatmap: true}}})
			var qs []DashExpr
			for _, p := range []struct{ q, name string }{{"0.5", "p50"}, {"0.9", "p90"}, {"0.99", "p99"}} {
				qs = append(qs, DashExpr{Expr: quant(p.q), Legend: legend + " " + p.name})
			}
			out = append(out, DashPanel{Type: "timeseries", Title: event + ": " + what + " p50, p90, p99", Unit: unit, Description: desc, Exprs: qs})
			out = append(out, DashPanel{Type: "timeseries", Title: event + ": events per second", Unit: "ops", Description: desc,
				Exprs: []DashExpr{{Expr: count, Legend: legend}}})
			if res.Latency != nil {
				out = append(out, DashPanel{Type: "timeseries", Title: event + ": the largest " + what, Unit: unit, Description: desc,
					Exprs: []DashExpr{{Expr: strings.Replace(by, "sum", "max", 1) + hist + "_max" + sel + ")", Legend: legend}}})
			}
		} else {
			out = append(out, DashPanel{Type: "timeseries", Title: event + ": events per second", Unit: "ops", Description: desc,
				Exprs: []DashExpr{{Expr: by + rate(q+"_events_total") + ")", Legend: legend}}})
		}
		for _, j := range sums {
			c := h.Columns[j]
			out = append(out, DashPanel{Type: "timeseries", Title: event + ": " + c.Label + " per second", Description: desc,
				Exprs: []DashExpr{{Expr: by + rate(q+"_"+MetricPart(c.Label)+"_total") + ")", Legend: legend}}})
		}
		for _, j := range maxes {
			c := h.Columns[j]
			out = append(out, DashPanel{Type: "timeseries", Title: event + ": " + c.Label, Description: desc,
				Exprs: []DashExpr{{Expr: strings.Replace(by, "sum", "max", 1) + q + "_" + MetricPart(c.Label) + sel + ")", Legend: legend}}})
		}
	}
	out = append(out, DashPanel{Type: "timeseries", Title: "sqlhist: targets up, events lost and dropped per second",
		Description: "sqlhist_up is 1 while a target's run collects; the stream engine's lost events and a full hist map's drops make counts short.",
		Exprs: []DashExpr{{Expr: "sum(sqlhist_up" + sel + ")", Legend: "targets up"},
			{Expr: "sum(" + rate("sqlhist_events_lost_total") + ")", Legend: "lost"},
			{Expr: "sum(" + rate("sqlhist_map_dropped_total") + ")", Legend: "dropped"}}})
	return out
}

// WriteDashboard writes a Grafana dashboard (JSON) of the panels, with
// the data source ($datasource, a Prometheus) and the scrape job ($job,
// from sqlhist_up's jobs) as variables; title names it.
func WriteDashboard(w io.Writer, title string, panels []DashPanel) error {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var ps []any
	for i, p := range panels {
		var targets []any
		for k, e := range p.Exprs {
			t := map[string]any{"refId": string(rune('A' + k)), "expr": e.Expr, "legendFormat": e.Legend, "datasource": ds}
			if e.Heatmap {
				t["format"] = "heatmap"
			}
			targets = append(targets, t)
		}
		defaults := map[string]any{}
		if p.Unit != "" {
			defaults["unit"] = p.Unit
		}
		panel := map[string]any{"id": i + 1, "type": p.Type, "title": p.Title, "description": p.Description, "datasource": ds, "targets": targets,
			"gridPos":     map[string]int{"x": (i % 2) * 12, "y": (i / 2) * 8, "w": 12, "h": 8},
			"fieldConfig": map[string]any{"defaults": defaults, "overrides": []any{}}}
		if p.Type == "heatmap" {
			panel["options"] = map[string]any{"calculate": false, "yAxis": map[string]any{"unit": p.Unit}, "color": map[string]any{"scheme": "Oranges", "mode": "scheme"}}
		}
		ps = append(ps, panel)
	}
	sum := sha256.Sum256([]byte(title))
	d := map[string]any{
		"title": title, "uid": "sqlhist-" + hex.EncodeToString(sum[:])[:12], "tags": []string{"sqlhist"},
		"schemaVersion": 39, "editable": true, "refresh": "5s", "time": map[string]string{"from": "now-15m", "to": "now"},
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
			map[string]any{"name": "job", "label": "Job", "type": "query", "datasource": ds, "refresh": 2, "includeAll": true, "multi": true,
				"allValue": ".+", "current": map[string]any{"text": "All", "value": "$__all"},
				"definition": "label_values(sqlhist_up, job)", "query": map[string]any{"query": "label_values(sqlhist_up, job)", "refId": "job"}},
		}},
		"panels": ps,
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("the dashboard: %v", err)
	}
	return nil
}
