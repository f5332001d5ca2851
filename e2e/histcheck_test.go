package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// histChecks are a golden case's checks of the values its histograms
// hold (its e2e section):
//
//	tracked F      every onmax/onchange line that saved F saved the value
//	               it tracked: the last change, the maximum
//	maxstream K F  each entry's maximum (the onmax line) is the largest F
//	               that the synthetic event lines with that K carried
//	valtimes E N   every entry of the histograms on event E has its first
//	               summed value N times its hitcount (SUM(16-8-4-2),
//	               which the kernel may list folded, as 2)
//	percent        the percentages of each value (the count, a sum) in each histogram add up to 100
type histChecks struct {
	tracked   []string
	maxstream [][2]string
	valtimes  [][2]string
	percent   bool
}

// parseHistCheck reads one e2e line into h; false if it is not one.
func (h *histChecks) parse(w []string) bool {
	switch {
	case len(w) == 2 && w[0] == "tracked":
		h.tracked = append(h.tracked, w[1])
	case len(w) == 3 && w[0] == "maxstream":
		h.maxstream = append(h.maxstream, [2]string{w[1], w[2]})
	case len(w) == 3 && w[0] == "valtimes":
		h.valtimes = append(h.valtimes, [2]string{w[1], w[2]})
	case len(w) == 1 && w[0] == "percent":
		h.percent = true
	default:
		return false
	}
	return true
}

// check runs the checks on what the guest read of the case's hist files.
func (h histChecks) check(r *caseResult, synths map[string]bool) []string {
	if len(h.tracked)+len(h.maxstream)+len(h.valtimes) == 0 && !h.percent {
		return nil
	}
	var problems []string
	var all []*tracefs.Histogram
	byEvent := map[string][]*tracefs.Histogram{}
	for path, text := range r.hists {
		hs, err := tracefs.ParseHist(text)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		all = append(all, hs...)
		parts := strings.Split(path, "/")
		if len(parts) >= 2 {
			byEvent[parts[len(parts)-2]] = append(byEvent[parts[len(parts)-2]], hs...)
		}
	}
	for _, f := range h.tracked {
		problems = append(problems, checkTracked(all, f)...)
	}
	for _, kf := range h.maxstream {
		problems = append(problems, checkMaxStream(all, synthFields(r.trace, synths), kf[0], kf[1])...)
	}
	for _, en := range h.valtimes {
		problems = append(problems, checkValTimes(byEvent[en[0]], en[1])...)
	}
	if h.percent {
		problems = append(problems, checkPercent(all)...)
	}
	return problems
}

func checkTracked(all []*tracefs.Histogram, field string) []string {
	checked := 0
	for _, hg := range all {
		for _, e := range hg.Entries {
			for _, t := range e.Tracked {
				for _, s := range t.Saved {
					if s.Name != field {
						continue
					}
					checked++
					if s.Num != t.Value {
						return []string{fmt.Sprintf("tracked %s: the %s line holds %d but saved %s=%s (entry %s)", field, t.Handler, t.Value, field, s.Raw, keyText(e))}
					}
				}
			}
		}
	}
	if checked == 0 {
		return []string{fmt.Sprintf("tracked %s: no onmax/onchange line saved %s", field, field)}
	}
	return nil
}

func checkMaxStream(all []*tracefs.Histogram, lines []map[string]string, key, field string) []string {
	streamed := map[string]uint64{}
	for _, l := range lines {
		k, okK := l[key]
		v, err := strconv.ParseUint(l[field], 10, 64)
		if !okK || err != nil {
			continue
		}
		streamed[k] = max(streamed[k], v)
	}
	var hits uint64
	maxima := map[string]uint64{}
	for _, hg := range all {
		hits += hg.Totals.Hits
		for _, e := range hg.Entries {
			for _, t := range e.Tracked {
				if t.Handler == "max" {
					for _, k := range e.Keys {
						if k.Name != key {
							continue
						}
						if k.Kind == tracefs.HistString {
							maxima[k.Text] = max(maxima[k.Text], t.Value)
						} else {
							maxima[k.Raw] = max(maxima[k.Raw], t.Value)
						}
					}
				}
			}
		}
	}
	if len(maxima) == 0 || len(streamed) == 0 {
		return []string{fmt.Sprintf("maxstream %s %s: %d maxima in the histogram, %d keys streamed", key, field, len(maxima), len(streamed))}
	}
	// Every streamed line is in the histogram (the hist trigger sees each
	// event the trace does): its maximum is at least each streamed value;
	// the trace shows at most 300 lines, so equality is checked only when
	// it shows as many as the histogram counted.
	complete := uint64(len(lines)) == hits
	for k, v := range streamed {
		m, ok := maxima[k]
		switch {
		case !ok:
			return []string{fmt.Sprintf("maxstream: %s=%s was streamed but has no maximum in the histogram", key, k)}
		case m < v:
			return []string{fmt.Sprintf("maxstream: %s=%s streamed %s=%d, above the histogram's maximum %d", key, k, field, v, m)}
		case complete && m != v:
			return []string{fmt.Sprintf("maxstream: %s=%s: the histogram's maximum is %d, the largest of its %d streamed events %d", key, k, m, hits, v)}
		}
	}
	return nil
}

func checkValTimes(all []*tracefs.Histogram, times string) []string {
	n, _ := strconv.ParseUint(times, 10, 64)
	checked := 0
	for _, hg := range all {
		for _, e := range hg.Entries {
			if len(e.Values) < 2 || e.Values[0].Name != "hitcount" {
				continue
			}
			checked++
			hits, v := e.Values[0].Num, e.Values[1]
			if v.Num != n*hits {
				return []string{fmt.Sprintf("valtimes: %s=%d for %d hits in entry %s, want %d×", v.Name, v.Num, hits, keyText(e), n)}
			}
		}
	}
	if checked == 0 {
		return []string{"valtimes: no entry has a summed value"}
	}
	return nil
}

func checkPercent(all []*tracefs.Histogram) []string {
	found := false
	for _, hg := range all {
		// Each value's shares on its own: the count's (hitcount (%)),
		// a sum's (bytes_req (%)).
		sum, entries := map[string]float64{}, map[string]int{}
		var names []string
		for _, e := range hg.Entries {
			for _, v := range e.Values {
				if v.Kind == tracefs.HistPercent {
					if entries[v.Name] == 0 {
						names = append(names, v.Name)
					}
					sum[v.Name] += v.Percent
					entries[v.Name]++
				}
			}
		}
		for _, name := range names {
			found = true
			// Each entry's share is rounded down to 0.01 %.
			if s, n := sum[name], entries[name]; s > 100.005 || s < 100-0.01*float64(n)-0.005 {
				return []string{fmt.Sprintf("percent: %d entries' shares of %s add up to %.2f %%", n, name, s)}
			}
		}
	}
	if !found {
		return []string{"percent: no (%) values in the histograms"}
	}
	return nil
}

func keyText(e *tracefs.HistEntry) string {
	var parts []string
	for _, k := range e.Keys {
		parts = append(parts, k.Name+": "+k.Raw)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// The value checks fail on wrong values: a saved field that is not the
// tracked one, a maximum below a streamed value, a sum that is not N per
// event, percentages that do not add up.
func TestHistChecks(t *testing.T) {
	const head = "# event histogram\n#\n# trigger info: hist:keys=comm:vals=hitcount,16-8-4-2:m=lat:sort=hitcount:size=2048:onmax($m).save(lat) [active]\n#\n\n"
	const tail = "\nTotals:\n    Hits: 3\n    Entries: 2\n    Dropped: 0\n"
	good := head + "{ comm: sh } hitcount:          2  16-8-4-2:          4\n\tmax:         40  lat:         40\n" +
		"{ comm: ls } hitcount:          1  16-8-4-2:          2\n\tmax:          7  lat:          7\n" + tail
	bad := head + "{ comm: sh } hitcount:          2  16-8-4-2:          3\n\tmax:         40  lat:         39\n" +
		"{ comm: ls } hitcount:          1  16-8-4-2:          2\n\tmax:          7  lat:          7\n" + tail
	trace := []string{"sh-1 [000] ..... 1.0: wl: comm=sh lat=40", "sh-1 [000] ..... 1.0: wl: comm=sh lat=12", "ls-2 [000] ..... 1.0: wl: comm=ls lat=7"}
	h := histChecks{tracked: []string{"lat"}, maxstream: [][2]string{{"comm", "lat"}}, valtimes: [][2]string{{"x", "2"}}}
	synths := map[string]bool{"wl": true}
	if p := h.check(&caseResult{hists: map[string]string{"x/hist": good}, trace: trace}, synths); len(p) != 0 {
		t.Errorf("right values: %v", p)
	}
	if p := h.check(&caseResult{hists: map[string]string{"x/hist": bad}, trace: trace}, synths); len(p) != 2 {
		t.Errorf("wrong values: want the tracked and valtimes problems, got %v", p)
	}
	over := append(trace, "sh-1 [000] ..... 1.0: wl: comm=sh lat=41")
	if p := h.check(&caseResult{hists: map[string]string{"x/hist": good}, trace: over}, synths); len(p) != 1 || !strings.Contains(p[0], "above the histogram's maximum") {
		t.Errorf("a streamed value above the maximum: %v", p)
	}
	pc := "# event histogram\n#\n# trigger info: hist:keys=id.syscall:vals=hitcount.percent:sort=hitcount:size=2048:nohitcount [active]\n#\n\n" +
		"{ id: sys_read                      [  0] } hitcount (%):  75.00\n{ id: sys_write                     [  1] } hitcount (%):  %s\n" + tail
	if p := (histChecks{percent: true}).check(&caseResult{hists: map[string]string{"x/hist": strings.Replace(pc, "%s", "24.99", 1)}}, nil); len(p) != 0 {
		t.Errorf("shares adding up to 99.99: %v", p)
	}
	if p := (histChecks{percent: true}).check(&caseResult{hists: map[string]string{"x/hist": strings.Replace(pc, "%s", "20.00", 1)}}, nil); len(p) != 1 {
		t.Errorf("shares adding up to 95: %v", p)
	}
	// Two values' shares, each adding up to 100 on its own (6.12's hist
	// of hitcount.percent and bytes_req.percent).
	two := "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=hitcount.percent,bytes_req.percent:sort=hitcount:size=2048:nohitcount [active]\n#\n\n" +
		"{ common_pid:        148 }  hitcount (%):  60.00  bytes_req (%):   0.72\n" +
		"{ common_pid:        150 }  hitcount (%):  40.00  bytes_req (%):  %s\n" + tail
	if p := (histChecks{percent: true}).check(&caseResult{hists: map[string]string{"x/hist": strings.Replace(two, "%s", "99.28", 1)}}, nil); len(p) != 0 {
		t.Errorf("two values' shares, each adding up to 100: %v", p)
	}
	if p := (histChecks{percent: true}).check(&caseResult{hists: map[string]string{"x/hist": strings.Replace(two, "%s", "37.34", 1)}}, nil); len(p) != 1 || !strings.Contains(p[0], "bytes_req") {
		t.Errorf("a sum's shares adding up to 38.06: %v", p)
	}
}
