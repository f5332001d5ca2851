package tracefs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Histogram is one histogram of a hist file: what one hist trigger on the
// event has collected.
type Histogram struct {
	// TriggerInfo is the trigger as the kernel lists it on the
	// "# trigger info:" line, without the " [active]" or " [paused]" suffix.
	TriggerInfo string
	// Paused is true when the trigger is paused.
	Paused bool
	// Entries are the entries in the order printed (the trigger's sort=).
	Entries []*HistEntry
	// Snapshot holds the details of an onmax(...).snapshot() that fired,
	// or nil when none did.
	Snapshot *HistSnapshot
	// Totals are the counts printed at the end of the histogram.
	Totals HistTotals
}

// HistTotals are the "Totals:" of a histogram.
type HistTotals struct {
	Hits    uint64 // events that reached the map
	Entries uint64 // entries printed
	Dropped uint64 // inserts lost because the map was full
	// Failed counts the inserts lost for another reason, which FailedWhy
	// names (the BPF engine's map updates; the kernel's hist files have
	// none): a full map is one fix, these are another.
	Failed    uint64
	FailedWhy string
}

// HistEntry is one entry of a histogram: one key and its values.
type HistEntry struct {
	// Keys are the key fields in the trigger's keys= order.
	Keys []HistValue
	// Values are hitcount (unless nohitcount) and the vals= fields, in order.
	Values []HistValue
	// Tracked are the onmax/onchange lines printed under the entry.
	Tracked []HistTracked
}

// HistTracked is the line an onmax() or onchange() handler prints under an
// entry: "\tmax: V" or "\tchanged: V", then the save() fields.
type HistTracked struct {
	Handler string      // "max" or "changed"
	Value   uint64      // the tracked maximum or last value
	Saved   []HistValue // the fields of save(...), in order
}

// HistSnapshot is the "Snapshot taken" block printed when an
// onmax(...).snapshot() fired.
type HistSnapshot struct {
	Handler string      // the handler, as in "onmax($wl_lat)"
	Value   uint64      // the triggering value
	Key     []HistValue // the key of the triggering entry
	Raw     string      // the details line, for forms not understood
}

// HistValueKind says how the kernel printed a key or value.
type HistValueKind int

// The kinds of [HistValue].
const (
	HistNumber     HistValueKind = iota // unsigned decimal; Num
	HistHex                             // .hex; Num
	HistSym                             // .sym "[addr] symbol"; Num, Text
	HistSymOffset                       // .sym-offset "[addr] sym+off/size"; Num, Text
	HistExecname                        // .execname "comm [pid]"; Text, Num
	HistSyscall                         // .syscall "name [nr]"; Text, Num
	HistLog2                            // .log2 "~ 2^exp"; Num is exp
	HistBuckets                         // .buckets=N "~ low-high"; Num, High
	HistString                          // char[] key, or a saved string; Text
	HistStacktrace                      // stacktrace key; Frames
	HistPercent                         // .percent value; Percent
	HistGraph                           // .graph value; Text is the bar
)

// HistValue is one "name: value" of an entry.
type HistValue struct {
	Name string        // the field name as printed, without modifier
	Raw  string        // the printed value without the padding around it (a stack: its frames, one a line)
	Kind HistValueKind // how the value is printed
	// Num is the number for the numeric kinds: the value, the address
	// (sym), the pid (execname), the syscall number, the log2 exponent or
	// the low end of a bucket.
	Num uint64
	// High is the high end of a bucket.
	High uint64
	// Text is the symbol, comm, syscall name, graph bar or string, without
	// the kernel's padding (so a string's own trailing spaces are lost).
	Text string
	// Frames are the frames of a stacktrace key, as printed ("func+0x1/0x2").
	Frames []string
	// Percent is the value of a .percent field.
	Percent float64
}

// ParseHist parses the text of a hist file. A file holds one histogram per
// hist trigger on the event; an event without triggers gives an empty file
// and no histograms. Text that is not a hist file, or is truncated before a
// histogram's Totals, is an error.
func ParseHist(text string) ([]*Histogram, error) {
	p := &histParser{lines: strings.Split(text, "\n")}
	var hs []*Histogram
	for {
		p.skipBlank()
		if p.eof() {
			return hs, nil
		}
		h, err := p.histogram()
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
}

type histParser struct {
	lines []string
	i     int // index of the next line
	keys  []string
	vals  map[string]string
}

func (p *histParser) eof() bool { return p.i >= len(p.lines) }

func (p *histParser) next() string {
	l := strings.TrimSuffix(p.lines[p.i], "\r")
	p.i++
	return l
}

func (p *histParser) skipBlank() {
	for !p.eof() && strings.TrimSpace(p.lines[p.i]) == "" {
		p.i++
	}
}

func (p *histParser) errorf(format string, args ...any) error {
	return fmt.Errorf("hist line %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *histParser) histogram() (*Histogram, error) {
	if l := p.next(); strings.TrimSpace(l) != "# event histogram" {
		return nil, p.errorf("want %q, got %q", "# event histogram", l)
	}
	h := &Histogram{}
	for !p.eof() && strings.HasPrefix(p.lines[p.i], "#") {
		if info, ok := strings.CutPrefix(p.next(), "# trigger info: "); ok {
			h.TriggerInfo, h.Paused = cutTriggerState(RepairListing(strings.TrimSpace(info)))
		}
	}
	if h.TriggerInfo == "" {
		return nil, p.errorf("no trigger info line")
	}
	p.keys, p.vals = histSpecs(h.TriggerInfo)
	for !p.eof() {
		l := p.next()
		trimmed := strings.TrimSpace(l)
		var err error
		switch {
		case trimmed == "":
		case strings.HasPrefix(l, "{"):
			err = p.entry(h, l)
		case strings.HasPrefix(l, "\t") && (strings.HasPrefix(trimmed, "max:") || strings.HasPrefix(trimmed, "changed:")):
			err = p.tracked(h, trimmed)
		case strings.HasPrefix(l, "Snapshot taken"):
			h.Snapshot = &HistSnapshot{}
			if !p.eof() && strings.HasPrefix(p.lines[p.i], "\t") {
				h.Snapshot = p.snapshot(p.next())
			}
		case l == "Totals:":
			if err := p.totals(h); err != nil {
				return nil, err
			}
			return h, nil
		default:
			err = p.errorf("unexpected line %q", l)
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, p.errorf("truncated histogram: no Totals")
}

// cutTriggerState removes the " [active]" or " [paused]" suffix.
func cutTriggerState(info string) (string, bool) {
	if s, ok := strings.CutSuffix(info, " [paused]"); ok {
		return s, true
	}
	s, _ := strings.CutSuffix(info, " [active]")
	return s, false
}

// histSpecs returns the modifier of each key (in order) and of each value
// (by name) of a trigger listing: "hex", "sym-offset", "buckets", ….
func histSpecs(info string) (keys []string, vals map[string]string) {
	keyList, valList := triggerFields(info)
	for _, k := range keyList {
		name, mod := splitModifier(k)
		if name == "stacktrace" || name == "common_stacktrace" || mod == "stacktrace" {
			mod = "stacktrace"
		}
		keys = append(keys, mod)
	}
	vals = map[string]string{}
	for _, v := range valList {
		name, mod := splitModifier(v)
		vals[name] = mod
	}
	return keys, vals
}

// triggerFields returns the keys= and vals= lists of a trigger listing,
// as written: "id.syscall", "common_pid.execname".
func triggerFields(info string) (keys, vals []string) {
	if i := strings.Index(info, " if "); i >= 0 {
		info = info[:i]
	}
	for _, seg := range strings.Split(info, ":") {
		if list, ok := strings.CutPrefix(seg, "keys="); ok {
			keys = strings.Split(list, ",")
		} else if list, ok := strings.CutPrefix(seg, "vals="); ok {
			vals = strings.Split(list, ",")
		}
	}
	return keys, vals
}

// splitModifier splits "bytes_req.buckets=64" into "bytes_req", "buckets".
func splitModifier(f string) (name, mod string) {
	name, mod, _ = strings.Cut(f, ".")
	mod, _, _ = strings.Cut(mod, "=")
	return name, mod
}

// stackKeyRE finds where a stack trace key starts on an entry's line: the
// kernel prints "common_stacktrace:" (6.1: "stacktrace:") and a newline, or
// for a stack trace field "stack.stacktrace" and the first frame on the
// same line; each frame takes a line of its own, after 9 spaces.
var stackKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|, )(?:((?:common_)?stacktrace):$|([A-Za-z_][A-Za-z0-9_]*)\.stacktrace(?: {9}(\S.*))?$)`)
})

// frameIndent is the kernel's indent of a stack frame (hist_trigger_
// stacktrace_print: "%*c" of 1 + 8 spaces).
const frameIndent = "         "

func (p *histParser) entry(h *Histogram, line string) error {
	body, ok := strings.CutPrefix(line, "{ ")
	if !ok {
		return p.errorf("bad entry %q", line)
	}
	var keyText []string // the keys' texts, joined by ", "
	var stacks [][]string
	for strings.Contains(body, "stacktrace") { // the expression's literal: most entries have none
		m := stackKeyRE().FindStringSubmatchIndex(body)
		if m == nil {
			break
		}
		// The stack's key is written "name: " ("field.stacktrace: ")
		// so that parseHistKeys finds it; its frames go apart.
		name := ""
		if m[2] >= 0 {
			name = body[m[2]:m[3]]
		} else {
			name = body[m[4]:m[5]] + ".stacktrace"
		}
		if m[0] > 0 {
			keyText = append(keyText, body[:m[0]])
		}
		keyText = append(keyText, name+": ")
		var frames []string
		if m[6] >= 0 {
			frames = append(frames, strings.TrimSpace(body[m[6]:m[7]]))
		}
		for !p.eof() && isFrameLine(p.lines[p.i]) {
			frames = append(frames, strings.TrimSpace(p.next()))
		}
		stacks = append(stacks, frames)
		if p.eof() {
			return p.errorf("truncated stacktrace")
		}
		// What follows the frames: "}" and the values, or more keys.
		body = p.next()
		if !strings.HasPrefix(body, "}") && !strings.HasPrefix(body, ", ") {
			return p.errorf("unexpected line %q in a stacktrace", body)
		}
		body = strings.TrimPrefix(body, ", ")
	}
	var rest string
	if len(stacks) > 0 {
		// After a stack the kernel closes with "}", no space before.
		j := strings.LastIndex(body, "}")
		if j < 0 {
			return p.errorf("a stacktrace key without its closing }")
		}
		if k := strings.TrimRight(body[:j], " "); k != "" {
			keyText = append(keyText, k)
		}
		rest = body[j+1:]
	} else {
		j := strings.LastIndex(body, " }")
		if j < 0 {
			return p.errorf("unterminated key in %q", line)
		}
		keyText = append(keyText, body[:j])
		rest = body[j+2:]
	}
	keys, err := parseHistKeys(strings.Join(keyText, ", "), p.keys, stacks)
	if err != nil {
		return p.errorf("%v", err)
	}
	vals, err := parseHistVals(rest, p.vals, true)
	if err != nil {
		return p.errorf("%v", err)
	}
	h.Entries = append(h.Entries, &HistEntry{Keys: keys, Values: vals})
	return nil
}

// isFrameLine reports whether a line is a stack frame: the kernel's
// indent, then the symbol.
func isFrameLine(l string) bool {
	return len(l) > len(frameIndent) && strings.HasPrefix(l, frameIndent) && l[len(frameIndent)] != ' '
}

func (p *histParser) tracked(h *Histogram, line string) error {
	if len(h.Entries) == 0 {
		return p.errorf("%q before any entry", line)
	}
	vals, err := parseHistVals(line, nil, false)
	if err != nil || len(vals) == 0 || vals[0].Kind != HistNumber {
		return p.errorf("bad handler line %q", line)
	}
	t := HistTracked{Handler: vals[0].Name, Value: vals[0].Num}
	if len(vals) > 1 {
		t.Saved = vals[1:]
	}
	e := h.Entries[len(h.Entries)-1]
	e.Tracked = append(e.Tracked, t)
	return nil
}

// snapshot parses "\ttriggering value { onmax($x) }: V\ttriggered by event
// with key: { k: v }" as far as it can; Raw always holds the line.
func (p *histParser) snapshot(line string) *HistSnapshot {
	s := &HistSnapshot{Raw: strings.TrimSpace(line)}
	rest, ok := strings.CutPrefix(s.Raw, "triggering value { ")
	if !ok {
		return s
	}
	handler, rest, ok := strings.Cut(rest, " }:")
	if !ok {
		return s
	}
	s.Handler = handler
	val, key, found := strings.Cut(rest, "triggered by event with key: { ")
	if n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64); err == nil {
		s.Value = n
	}
	if key, ok := strings.CutSuffix(key, " }"); found && ok {
		s.Key, _ = parseHistKeys(key, p.keys, nil)
	}
	return s
}

func (p *histParser) totals(h *Histogram) error {
	for _, t := range []struct {
		label string
		dst   *uint64
	}{{"Hits:", &h.Totals.Hits}, {"Entries:", &h.Totals.Entries}, {"Dropped:", &h.Totals.Dropped}} {
		if p.eof() {
			return p.errorf("truncated Totals")
		}
		l := p.next()
		num, ok := strings.CutPrefix(strings.TrimSpace(l), t.label)
		n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
		if !ok || err != nil {
			return p.errorf("want %q line in Totals, got %q", t.label, l)
		}
		*t.dst = n
	}
	return nil
}

// InFlight reports whether the histogram was printed while an event was
// still being added to it: its entries' hitcounts add up to less than its
// Totals' Hits. The kernel counts a hit as it finds or makes the entry,
// then adds to the entry's values, and prints the entries before the
// Totals, so a file read while the trigger fires (or in the moment after
// a pause, while a CPU is still inside the trigger) can show a hit that
// no entry shows yet. A histogram without hitcounts (nohitcount) is never
// in flight by this measure.
func (h *Histogram) InFlight() bool {
	var sum uint64
	for _, e := range h.Entries {
		found := false
		for _, v := range e.Values {
			if v.Name == "hitcount" {
				sum += v.Num
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return sum < h.Totals.Hits
}

// KeyFields returns the keys of the trigger as its "trigger info" line
// lists them, with their modifiers: "id.syscall", "common_pid.execname".
func (h *Histogram) KeyFields() []string {
	keys, _ := triggerFields(h.TriggerInfo)
	return keys
}

// doubledCPU matches how 7.2 lists a common_cpu field of a hist trigger:
// the field's name after "common_cpu" ("common_cpucommon_cpu", or
// "common_cpucpu" for the cpu alias). 6.1 and 6.12 list "common_cpu".
var doubledCPU = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bcommon_cpu(?:common_cpu|cpu)\b`) })

// RepairListing turns a trigger as a trigger file or a hist file lists it
// back into a trigger the kernel accepts: 7.2 refuses its own listing of a
// common_cpu field ("Couldn't find field"), so removing a listed trigger
// with "!" needs the field's real name.
func RepairListing(listed string) string {
	if !strings.Contains(listed, "common_cpu") {
		return listed
	}
	return doubledCPU().ReplaceAllString(listed, "common_cpu")
}
