package tracefs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// TraceRecord is one event of the trace file.
type TraceRecord struct {
	// Comm is the task's command name; it may hold spaces and dashes, and is
	// "<...>" when the kernel no longer knew it.
	Comm string
	// PID is the number after the last dash before the CPU field.
	PID int
	// TGID is the thread group id shown with the record-tgid option, or -1.
	TGID int
	// CPU is the CPU that recorded the event.
	CPU int
	// Flags is the irq-info column ("d..4."), empty when the option is off.
	Flags string
	// Timestamp is the timestamp as printed ("10.446289").
	Timestamp string
	// Seconds is Timestamp in seconds.
	Seconds float64
	// Micros is Timestamp in whole microseconds, computed from the digits
	// (not through a float), truncated when the kernel prints nanoseconds.
	Micros int64
	// Event is the event name ("wakeup_lat"), or empty when the line has no
	// "name: " after the timestamp (as function tracer lines).
	Event string
	// Body is the text after "name: ". With [ParseTrace], lines that
	// continue the record (after a stack field) are appended after "\n".
	Body string
	// Fields are Body split by the heuristic of [ParseFields] (names
	// unknown); nil when Body is not "name=value" pairs.
	Fields []TraceField
	// Stack holds the "=> func+0x1/0x2" frames printed under the record
	// for a stack field, collected by [ParseTrace].
	Stack []string
}

// TraceField is one "name=value" of an event.
type TraceField struct {
	Name  string
	Value string
}

var (
	traceHeadRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(.*?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[(\d+)\]\s+(?:(\S+)\s+)?(\d+)(?:\.(\d+))?: (.*)$`)
	})
	traceNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*): ?(.*)$`) })
	fieldNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^| )([A-Za-z_][A-Za-z0-9_]*)=`) })
)

// ParseTraceLine parses one line of the trace file:
//
//	<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <secs>.<usecs>: <event>: <body>
//
// It returns false for comment lines ("#"), blank lines, stack frame lines
// and anything else that does not start a record.
func ParseTraceLine(line string) (*TraceRecord, bool) {
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return nil, false
	}
	m := traceHeadRE().FindStringSubmatch(line)
	if m == nil {
		return nil, false
	}
	r := &TraceRecord{Comm: m[1], TGID: -1, Flags: m[5], Timestamp: m[6]}
	var err error
	if r.PID, err = strconv.Atoi(m[2]); err != nil {
		return nil, false
	}
	if t, err := strconv.Atoi(m[3]); err == nil {
		r.TGID = t
	}
	if r.CPU, err = strconv.Atoi(m[4]); err != nil {
		return nil, false
	}
	if m[7] != "" {
		r.Timestamp += "." + m[7]
	}
	if r.Seconds, r.Micros, err = parseTraceTime(m[6], m[7]); err != nil {
		return nil, false
	}
	if n := traceNameRE().FindStringSubmatch(m[8]); n != nil {
		r.Event, r.Body = n[1], n[2]
	} else {
		r.Body = m[8]
	}
	r.Fields, _ = ParseFields(r.Body, nil)
	return r, true
}

// parseTraceTime converts "sec" and "frac" digits into seconds and whole
// microseconds.
func parseTraceTime(sec, frac string) (float64, int64, error) {
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s > 1<<40 {
		return 0, 0, fmt.Errorf("bad timestamp %q", sec)
	}
	us := frac + "000000"
	u, err := strconv.ParseInt(us[:6], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	f, err := strconv.ParseFloat(sec+"."+frac+"0", 64)
	if err != nil {
		return 0, 0, err
	}
	return f, s*1e6 + u, nil
}

// ParseTrace parses the text of a trace file into records, skipping
// comments. Lines that do not start a record continue the one before: a
// "=> frame" line goes to its Stack, any other text (the fields printed
// after a stack field) is added to Body and Fields. Such lines before the
// first record are dropped.
func ParseTrace(text string) []*TraceRecord {
	var recs []*TraceRecord
	for _, line := range strings.Split(text, "\n") {
		if r, ok := ParseTraceLine(line); ok {
			recs = append(recs, r)
			continue
		}
		t := strings.TrimSpace(line)
		if len(recs) == 0 || t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		last := recs[len(recs)-1]
		if frame, ok := strings.CutPrefix(t, "=>"); ok {
			last.Stack = append(last.Stack, strings.TrimSpace(frame))
			continue
		}
		last.Body += "\n" + t
		if fs, err := ParseFields(t, nil); err == nil {
			last.Fields = append(last.Fields, fs...)
		}
	}
	return recs
}

// ParseFields splits the body of an event, "f1=v1 f2=v2", into fields.
//
// Synthetic events print string fields as they are, so a value may hold
// spaces or even " x=". With names, the fields must be exactly those, in
// that order, and each value ends where " <next name>=" starts such that
// the rest of the body still splits; the first such split wins. Without
// names, a field starts at every " <identifier>=", so a string value that
// contains one is cut there. An empty body has no fields; a body that does
// not start with a field is an error.
func ParseFields(s string, names []string) ([]TraceField, error) {
	if names == nil {
		return splitFieldsHeuristic(s)
	}
	fs, ok := splitFieldsNamed(s, names)
	if !ok {
		return nil, fmt.Errorf("fields %q do not match names %q", s, names)
	}
	return fs, nil
}

func splitFieldsHeuristic(s string) ([]TraceField, error) {
	if s == "" {
		return nil, nil
	}
	locs := fieldNameRE().FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 || locs[0][2] != 0 {
		return nil, fmt.Errorf("not name=value fields: %q", s)
	}
	fs := make([]TraceField, len(locs))
	for i, loc := range locs {
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		fs[i] = TraceField{Name: s[loc[2]:loc[3]], Value: s[loc[1]:end]}
	}
	return fs, nil
}

// splitFieldsNamed tries the occurrences of " <next name>=" in order,
// remembering the (offset, name) pairs that cannot start the rest, so
// that it stays polynomial on any input.
func splitFieldsNamed(s string, names []string) ([]TraceField, bool) {
	if len(names) == 0 {
		return nil, s == ""
	}
	failed := map[[2]int]bool{}
	var walk func(pos, k int) ([]TraceField, bool)
	walk = func(pos, k int) ([]TraceField, bool) {
		if failed[[2]int{pos, k}] || !strings.HasPrefix(s[pos:], names[k]+"=") {
			return nil, false
		}
		start := pos + len(names[k]) + 1
		if k == len(names)-1 {
			return []TraceField{{names[k], s[start:]}}, true
		}
		sep := " " + names[k+1] + "="
		for off := start; ; {
			i := strings.Index(s[off:], sep)
			if i < 0 {
				break
			}
			end := off + i
			if tail, ok := walk(end+1, k+1); ok {
				return append([]TraceField{{names[k], s[start:end]}}, tail...), true
			}
			off = end + 1
		}
		failed[[2]int{pos, k}] = true
		return nil, false
	}
	return walk(0, 0)
}
