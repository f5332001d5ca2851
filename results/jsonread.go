package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ReadJSONReport reads back what sqlhist -r -o json printed: the document
// {"results": […]}, with its "label" when it has one (see
// [Report.WriteLabelled]), or the lines of -i, whose {"total": true, …}
// line it takes (the intervals are in the total). The report is precise
// enough to [Merge] exactly: counts, sums, the latency's distributions
// and maxima, the Totals. A table printed from it is the one sqlhist
// printed, but for what JSON does not keep: a syscall key's number, a
// symbol's address.
//
// Errors say where: "3:5: …" (line and column) for JSON that does not
// parse, else the line where the document starts and the path in it
// ("results[0].rows[2].lat: …").
func ReadJSONReport(r io.Reader) (label string, rep *Report, err error) {
	data, d, at, err := readJSONDoc(r, false)
	if err != nil {
		return "", nil, err
	}
	if d.Label != nil {
		label = *d.Label
	}
	rep, err = readJSONResults(d.Results)
	if err != nil {
		return "", nil, placeError(data, at, err)
	}
	rep.setEngine(d.Engine, d.Reason, d.Lost)
	return label, rep, nil
}

// ReadJSONTargets reads back saved results as [ReadJSONReport] does, one
// target's (its label "" when it has none), and also the document of a
// fleet ([WriteFleet]): its targets, those that failed with their errors;
// its merge is left out (merge the targets again).
func ReadJSONTargets(r io.Reader) ([]Labelled, error) {
	data, d, at, err := readJSONDoc(r, true)
	if err != nil {
		return nil, err
	}
	if d.Targets == nil {
		rep, err := readJSONResults(d.Results)
		if err != nil {
			return nil, placeError(data, at, err)
		}
		rep.setEngine(d.Engine, d.Reason, d.Lost)
		label := ""
		if d.Label != nil {
			label = *d.Label
		}
		return []Labelled{{Label: label, Report: rep}}, nil
	}
	var targets []struct {
		Label   *string
		Error   *string
		Engine  string
		Reason  string `json:"engine_reason"`
		Lost    int
		Results json.RawMessage
	}
	if err := json.Unmarshal(d.Targets, &targets); err != nil {
		return nil, placeError(data, at, within(err, "targets: "+err.Error(), "targets"))
	}
	var out []Labelled
	for i, t := range targets {
		switch {
		case t.Label == nil:
			return nil, placeError(data, at, within(nil, fmt.Sprintf("targets[%d]: no \"label\"", i), "targets", i))
		case t.Error != nil:
			out = append(out, Labelled{Label: *t.Label, Err: errors.New(*t.Error)})
		case t.Results == nil:
			return nil, placeError(data, at, within(nil, fmt.Sprintf("targets[%d] (%s): no \"results\" and no \"error\"", i, *t.Label), "targets", i))
		default:
			rep, err := readJSONResults(t.Results)
			if err != nil {
				return nil, placeError(data, at, within(err, fmt.Sprintf("targets[%d] (%s).%v", i, *t.Label, err), "targets", i))
			}
			rep.setEngine(t.Engine, t.Reason, t.Lost)
			out = append(out, Labelled{Label: *t.Label, Report: rep})
		}
	}
	return out, nil
}

// jsonDoc is a document sqlhist -r -o json prints, or a fleet's.
type jsonDoc struct {
	Label    *string         `json:"label"`
	Engine   string          `json:"engine"`
	Reason   string          `json:"engine_reason"`
	Lost     int             `json:"lost"`
	Total    bool            `json:"total"`
	Interval json.RawMessage `json:"interval"`
	Targets  json.RawMessage `json:"targets"`
	Results  json.RawMessage `json:"results"`
}

// readJSONDoc reads the one document of results in r (of -i's lines, the
// total's), and a fleet's when fleets is set; it returns the data read
// and where the document starts.
func readJSONDoc(r io.Reader, fleets bool) ([]byte, *jsonDoc, int, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var found *jsonDoc
	foundAt, intervals := 0, 0
	for {
		start := int(dec.InputOffset())
		var d jsonDoc
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, 0, jsonSyntaxError(data, start, err)
		}
		start = skipSpace(data, start)
		switch {
		case d.Targets != nil && !fleets:
			return nil, nil, 0, posError(data, start, "a fleet's document (\"targets\" and \"merged\"), not one target's results: give each target's -o json output")
		case d.Interval != nil:
			intervals++
			continue
		case d.Results == nil && d.Targets == nil:
			return nil, nil, 0, posError(data, start, "no \"results\": not the -o json output of sqlhist -r")
		case found != nil:
			return nil, nil, 0, posError(data, start, "a second document of results (the first is at line %d): give one run's output per file", lineOf(data, foundAt))
		}
		found, foundAt = &d, start
	}
	if found == nil {
		if intervals > 0 {
			return nil, nil, 0, fmt.Errorf("%d intervals and no total (the line {\"total\": true, …} that ends -i's output): the run was cut short", intervals)
		}
		return nil, nil, 0, errors.New("empty: no results")
	}
	return data, found, foundAt, nil
}

// setEngine records the engine a saved document names ("" for the
// kernel's), why it answered and the events it lost.
func (rep *Report) setEngine(engine, reason string, lost int) {
	if lost < 0 {
		lost = 0
	}
	rep.Engine, rep.EngineReason, rep.Lost = engine, reason, lost
	if engine == "" {
		rep.Engine = EngineKernel
		return
	}
	for _, res := range rep.Results {
		res.Engine, res.EngineReason, res.Lost = engine, reason, lost
	}
}

// readJSONResults reads a "results" list; its errors start with the path
// in it.
func readJSONResults(results json.RawMessage) (*Report, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(results, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, within(nil, fmt.Sprintf("results: a JSON %s, not a list of results: not the -o json output of sqlhist -r", te.Value), "results")
		}
		return nil, within(err, fmt.Sprintf("results: %v", err), "results")
	}
	rep := &Report{}
	for i, m := range raw {
		res, err := readJSONResult(m)
		if err != nil {
			return nil, within(err, fmt.Sprintf("results[%d]%v", i, err), "results", i)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// readJSONResult reads one result object (see jsonResults).
func readJSONResult(m json.RawMessage) (*Result, error) {
	var in struct {
		Event        string
		Columns      []string
		Kinds        []string
		Keys         []string
		Order        []jsonOrder
		Limit        int
		Size         int
		Rows         []map[string]json.RawMessage
		Totals       *jsonTotals
		Unit         string
		Distribution []jsonBucket
	}
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return nil, within(err, fmt.Sprintf(": %v", err))
	}
	switch {
	case in.Event == "":
		return nil, errors.New(": no \"event\"")
	case in.Totals == nil:
		return nil, fmt.Errorf(" (%s): no \"totals\"", in.Event)
	case in.Kinds == nil:
		return nil, fmt.Errorf(" (%s): no \"kinds\" (written by an sqlhist older than merge: run the query again with this one)", in.Event)
	case len(in.Kinds) != len(in.Columns):
		return nil, fmt.Errorf(" (%s): %d kinds for %d columns", in.Event, len(in.Kinds), len(in.Columns))
	}
	h := &planner.Hist{Limit: in.Limit, Size: in.Size, NoHitcount: true}
	// The keys as the trigger wrote them: reading them back is the one
	// place the hist text of a plan is parsed.
	for j, k := range in.Keys {
		x, err := planner.ParseExpr(k)
		if err != nil {
			return nil, within(nil, fmt.Sprintf(".keys[%d]: %v", j, err), "keys", j)
		}
		h.Keys = append(h.Keys, x)
	}
	h.System, h.Event, _ = strings.Cut(in.Event, "/")
	byName := map[string]planner.ColumnKind{}
	for k, name := range kindNames {
		byName[name] = k
	}
	keys, vals, saved := 0, 0, 0
	for j, label := range in.Columns {
		kind, ok := byName[in.Kinds[j]]
		if !ok {
			return nil, within(nil, fmt.Sprintf(".kinds[%d]: unknown kind %q", j, in.Kinds[j]), "kinds", j)
		}
		c := planner.Column{Label: label, Kind: kind}
		switch kind {
		case planner.ColKey, planner.ColLatency:
			c.Index = keys
			keys++
		case planner.ColValue, planner.ColPercent, planner.ColGraph, planner.ColSumPercent, planner.ColSumGraph:
			c.Index = vals
			vals++
		case planner.ColSaved:
			c.Index = saved
			saved++
		case planner.ColCount:
			h.NoHitcount = false
		}
		if kind == planner.ColLatency {
			c.Unit = in.Unit
		}
		h.Columns = append(h.Columns, c)
	}
	if keys > len(h.Keys) {
		return nil, fmt.Errorf(" (%s): %d key columns and %d \"keys\"", in.Event, keys, len(h.Keys))
	}
	u := &planner.Unit{}
	for _, o := range in.Order {
		u.Order = append(u.Order, planner.ResultOrder{Label: o.Column, Desc: o.Desc})
	}
	t := in.Totals
	res := &Result{Unit: u, Hist: h, Title: in.Event, Negative: t.Negative,
		Read: &tracefs.Histogram{Totals: tracefs.HistTotals{Hits: t.Hits, Entries: t.Entries, Dropped: t.Dropped, Failed: t.Failed, FailedWhy: t.FailedWhy}}}
	for j := range h.Columns {
		if h.Columns[j].Kind == planner.ColLatency {
			res.Latency = &h.Columns[j]
		}
	}
	for _, b := range in.Distribution {
		res.Distribution = append(res.Distribution, Bucket{b.Low, b.High, b.Count})
	}
	for i, m := range in.Rows {
		row, err := readJSONRow(h, m)
		if err == nil && row.Stats != nil {
			err = checkStats(row)
		}
		if err != nil {
			return nil, within(err, fmt.Sprintf(".rows[%d]%v", i, err), "rows", i)
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// checkStats checks that a row's latency distribution counts its events.
func checkStats(r Row) error {
	var n uint64
	for _, c := range r.Stats.Dist {
		n += c
	}
	if r.Count == 0 || n != r.Count {
		return fmt.Errorf(": the latency's distribution counts %d events, the row %d", n, r.Count)
	}
	return nil
}

// readJSONRow reads one row: a value per column, by its kind.
func readJSONRow(h *planner.Hist, m map[string]json.RawMessage) (Row, error) {
	var r Row
	for _, c := range h.Columns {
		v, ok := m[c.Label]
		if !ok {
			return r, fmt.Errorf(": no %q", c.Label)
		}
		cl, err := readJSONCell(h, c, v, &r)
		if err != nil {
			return r, within(err, fmt.Sprintf(".%s: %v", c.Label, err), mapKey(c.Label))
		}
		r.Cells = append(r.Cells, cl)
	}
	return r, nil
}

// readJSONCell reads the cell of column c (the count and the latency go to
// the row).
func readJSONCell(h *planner.Hist, c planner.Column, v json.RawMessage, r *Row) (Cell, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	switch c.Kind {
	case planner.ColCount:
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return Cell{}, fmt.Errorf("a count, not %s", v)
		}
		r.Count = n
		return Cell{}, nil
	case planner.ColLatency:
		var l struct {
			Max          *uint64
			MaxBound     bool `json:"max_is_bound"`
			Sum          *float64
			Distribution []jsonBucket
		}
		if err := dec.Decode(&l); err != nil {
			return Cell{}, err
		}
		if l.Sum == nil || l.Max == nil || l.Distribution == nil {
			return Cell{}, errors.New("no \"sum\", \"max\" or \"distribution\" (written by an sqlhist older than merge: run the query again with this one)")
		}
		s := &LatencyStats{Sum: *l.Sum, Max: *l.Max, MaxBound: l.MaxBound, Dist: map[int]uint64{}}
		for _, b := range l.Distribution {
			s.Dist[bucketExp(Bucket{b.Low, b.High, b.Count})] += b.Count
		}
		r.Stats = s
		return Cell{}, nil
	}
	var x any
	if err := dec.Decode(&x); err != nil {
		return Cell{}, err
	}
	switch x := x.(type) {
	case json.Number:
		return numberCell(h, c, x)
	case string:
		return stringCell(c, x), nil
	case []any:
		frames := []string{}
		for _, f := range x {
			s, ok := f.(string)
			if !ok {
				return Cell{}, fmt.Errorf("a stack's frames are strings, not %v", f)
			}
			frames = append(frames, s)
		}
		return Cell{Text: strings.Join(frames, "\n"), Frames: frames}, nil
	}
	return Cell{}, fmt.Errorf("a number, a string or frames, not %s", v)
}

// numberCell is a cell of a number as JSON has it: a key's value (shown
// as its modifier shows it), a sum, a maximum, a percentage.
func numberCell(h *planner.Hist, c planner.Column, x json.Number) (Cell, error) {
	if c.Kind == planner.ColPercent || c.Kind == planner.ColSumPercent {
		f, err := x.Float64()
		if err != nil {
			return Cell{}, err
		}
		return Cell{Text: strconv.FormatFloat(f, 'f', 2, 64)}, nil
	}
	if strings.HasPrefix(string(x), "-") {
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || c.Kind != planner.ColKey {
			return Cell{}, fmt.Errorf("%s: not a signed key", x)
		}
		return Cell{Text: string(x), Num: uint64(n), IsNum: true, Neg: true}, nil
	}
	n, err := strconv.ParseUint(string(x), 10, 64)
	if err != nil {
		return Cell{}, fmt.Errorf("%s: not an unsigned 64-bit number", x)
	}
	cl := Cell{Text: string(x), Num: n, IsNum: true}
	mod := keyModifier(h, c)
	switch {
	case mod == "log2":
		lo, hi := bucketRange(bucketExp(Bucket{High: n}))
		if hi != n {
			return Cell{}, fmt.Errorf("%d: not the top of a log2 bucket", n)
		}
		cl.Text = bucketText(lo, hi)
	case mod == "buckets":
		size := h.Keys[c.Index].Buckets
		if size == 0 {
			return Cell{}, fmt.Errorf("key %q: no bucket size", h.Keys[c.Index])
		}
		cl.Text = fmt.Sprintf("%d-%d", n, n+size-1)
	case mod == "hex":
		cl.Text = strconv.FormatUint(n, 16)
	}
	return cl, nil
}

// stringCell is a cell of a string: a key's text, a bound ("<=N") or an
// unknown ("?") maximum, a saved string, a bar.
func stringCell(c planner.Column, s string) Cell {
	if c.Kind == planner.ColMax {
		if rest, ok := strings.CutPrefix(s, "<="); ok {
			if n, err := strconv.ParseUint(rest, 10, 64); err == nil {
				return Cell{Text: s, Num: n}
			}
		}
	}
	return Cell{Text: s}
}

// posError is an error at the document that starts at offset off.
func posError(data []byte, off int, format string, args ...any) error {
	line, col := lineCol(data, off)
	return fmt.Errorf("%d:%d: "+format, append([]any{line, col}, args...)...)
}

// jsonSyntaxError places a decoding error: at its offset when it has one.
func jsonSyntaxError(data []byte, start int, err error) error {
	off := start
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset) - 1
		if off <= skipSpace(data, start) {
			err = fmt.Errorf("%v: not JSON (sqlhist merge reads what sqlhist -r -o json printed)", err)
		}
	case errors.As(err, &te):
		off = int(te.Offset) - 1
		err = fmt.Errorf("%s is a JSON %s, not %s: not the -o json output of sqlhist -r", pathOr(te.Field, "the document"), te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = len(data)
		err = errors.New("unexpected end of the file: the output was cut short")
	}
	return posError(data, max(off, 0), "%v", err)
}

func pathOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// lineCol is the line and byte column (from 1) of offset off.
func lineCol(data []byte, off int) (int, int) {
	off = min(off, len(data))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func lineOf(data []byte, off int) int {
	l, _ := lineCol(data, off)
	return l
}

// skipSpace is the offset of the first byte at or after off that is not
// JSON white space.
func skipSpace(data []byte, off int) int {
	for off < len(data) && bytes.IndexByte([]byte(" \t\r\n"), data[off]) >= 0 {
		off++
	}
	return off
}
