package tracefs

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ErrorLogEntry is one entry of the error_log file:
//
//	[<secs>.<usecs>] <location>: error: <error>
//	  Command: <command>
//	<spaces>^
type ErrorLogEntry struct {
	// Timestamp is the time as printed, without brackets or padding
	// ("8.230414").
	Timestamp string
	// Seconds is Timestamp in seconds.
	Seconds float64
	// Location names what logged the error: "hist:<system>:<event>",
	// "synthetic_events", "trace_kprobe", "event filter parse error", ….
	Location string
	// Error is the error text ("Couldn't find field").
	Error string
	// Command is the command text the error is about.
	Command string
	// Offset is the byte offset into Command that the caret points at, or
	// -1 when the caret line is missing or points outside Command. The
	// kernel finds it with strstr, so it marks the first occurrence of the
	// failing text, which may not be the failing one.
	Offset int
}

var errorLogHeadRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[\s*(\d+\.\d+)\] (.*?): error: (.*)$`) })

// commandPrefix starts the command line; the caret line has
// len(commandPrefix)+Offset spaces before the caret.
const commandPrefix = "  Command: "

// ParseErrorLog parses the text of an error_log file. An entry starts at
// its "[ts] location: error: text" line; its Command and caret lines are
// optional (a truncated read keeps the entry, with Offset -1). Lines that
// belong to no entry are ignored.
func ParseErrorLog(text string) []ErrorLogEntry {
	var out []ErrorLogEntry
	var cur *ErrorLogEntry
	hasCmd := false
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
		}
		cur, hasCmd = nil, false
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := errorLogHeadRE().FindStringSubmatch(line); m != nil {
			flush()
			secs, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				continue
			}
			cur = &ErrorLogEntry{Timestamp: m[1], Seconds: secs, Location: m[2], Error: m[3], Offset: -1}
			continue
		}
		if cur == nil {
			continue
		}
		if cmd, ok := strings.CutPrefix(line, commandPrefix); ok && !hasCmd {
			cur.Command, hasCmd = cmd, true
			continue
		}
		if hasCmd && cur.Offset < 0 && strings.TrimLeft(line, " ") == "^" {
			off := strings.Index(line, "^") - len(commandPrefix)
			if off >= 0 && off <= len(cur.Command) {
				cur.Offset = off
			}
		}
	}
	flush()
	return out
}

// errorLogKey identifies an entry across two reads of error_log.
type errorLogKey struct{ ts, loc, cmd, err string }

// NewEntries returns the entries of after that are not in before, in
// order: the errors logged between two reads of error_log, so a caller can
// read the log before and after a write to find the errors of exactly that
// write (one write may log several). The kernel keeps only the last few
// entries, so entries of before may be missing from after. Entries are
// compared by timestamp, location, command and error text (the error text
// too, because one write can log two errors in the same microsecond); an
// entry repeated in after counts as new as often as it is repeated more
// than in before.
func NewEntries(before, after []ErrorLogEntry) []ErrorLogEntry {
	seen := map[errorLogKey]int{}
	for _, e := range before {
		seen[keyOf(e)]++
	}
	var out []ErrorLogEntry
	for _, e := range after {
		k := keyOf(e)
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		out = append(out, e)
	}
	return out
}

func keyOf(e ErrorLogEntry) errorLogKey {
	return errorLogKey{e.Timestamp, e.Location, e.Command, e.Error}
}
