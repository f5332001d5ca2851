package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxHeatIntervals is the most intervals a heatmap draws: a day of -i 1.
const MaxHeatIntervals = 86400

// ReadJSONIntervals reads back the intervals of what sqlhist -r -i N -o
// json printed: its lines {"interval": N, "start": s, "end": s,
// "partial": …, "results": […]} (a fleet's with their "label"); the total
// and other documents are left out. Its errors are placed as
// [ReadJSONReport]'s are ("3:5: …", or the line of the document and the
// path in it).
func ReadJSONIntervals(r io.Reader) ([]HeatInterval, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []HeatInterval
	docs := 0
	for {
		start := int(dec.InputOffset())
		var d struct {
			Label    *string
			Interval *int
			Start    *float64
			End      *float64
			Partial  bool
			Results  json.RawMessage
		}
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			return nil, jsonSyntaxError(data, start, err)
		}
		docs++
		start = skipSpace(data, start)
		if d.Interval == nil {
			continue // the total, or another document
		}
		switch {
		case *d.Interval < 1:
			return nil, posError(data, start, "interval %d: intervals are numbered from 1", *d.Interval)
		case *d.Interval > MaxHeatIntervals:
			return nil, posError(data, start, "interval %d: a heatmap draws at most %d intervals", *d.Interval, MaxHeatIntervals)
		case d.Start == nil || d.End == nil || *d.End < *d.Start || *d.Start < 0:
			return nil, posError(data, start, "interval %d: no \"start\" and \"end\" (seconds, the end after the start)", *d.Interval)
		case d.Results == nil:
			return nil, posError(data, start, "interval %d: no \"results\"", *d.Interval)
		}
		rep, err := readJSONResults(d.Results)
		if err != nil {
			return nil, placeError(data, start, err)
		}
		iv := &Interval{N: *d.Interval, Start: jsonSeconds(*d.Start), End: jsonSeconds(*d.End), Partial: d.Partial, Results: rep.Results}
		label := ""
		if d.Label != nil {
			label = *d.Label
		}
		out = append(out, HeatInterval{Label: label, Interval: iv})
	}
	if len(out) == 0 {
		if docs > 0 {
			return nil, errors.New("no intervals: not the output of sqlhist -r -i N -o json (-i prints a line per interval)")
		}
		return nil, errors.New("empty: no intervals")
	}
	return out, nil
}

// jsonSeconds is a JSON number of seconds as a duration, to the microsecond.
func jsonSeconds(s float64) time.Duration {
	return time.Duration(s*1e6+0.5) * time.Microsecond
}

// HeatmapFile reads the saved intervals of file (what -r -i N -o json
// wrote) with read and draws them; its errors start with the file's
// name, and a place in it when there is one, rendered as the compiler's
// diagnostics are (file:line:col, the line and a caret).
func HeatmapFile(file string, read func(string) ([]byte, error), opt HeatmapOptions) (*Heatmap, error) {
	data, err := read(file)
	if err != nil {
		return nil, err
	}
	ivs, err := ReadJSONIntervals(bytes.NewReader(data))
	if err != nil {
		return nil, placeFileError(file, data, err)
	}
	hm, err := NewHeatmap(ivs, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return hm, nil
}
