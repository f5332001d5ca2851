package stream

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/tracefs"
)

// A TextReader turns the lines trace_pipe prints into events for a
// machine: the engine of a printed awk script, read in Go (the awk
// program [Machine.Awk] writes reads the lines the same way).
type TextReader struct {
	byName map[string]*textEvent
	// Lost counts the events the kernel's "CPU:N [LOST M EVENTS]" lines
	// say were lost; Unread the lines that were neither an event of the
	// machine nor such a line.
	Lost, Unread uint64
	// Comm is the task name of the last event read (its line's header,
	// as the awk program reads it: the task at the event).
	Comm string
}

// textEvent is one event the reader knows, with the fields it reads.
type textEvent struct {
	layout *TextLayout
	needed []int // the fields the triggers read, each in the layout
}

// textEvents lays out the events the machine reads and checks that the
// text gives every field its triggers read, in a fixed form: an error
// names the event, the field and why.
func (m *Machine) textEvents(longSize int) (map[string]*textEvent, error) {
	out := map[string]*textEvent{}
	for _, k := range m.Events() {
		sys, name, _ := strings.Cut(k, "/")
		t := m.byEvent[k][0]
		ev := t.ev
		if prev, dup := out[name]; dup {
			return nil, fmt.Errorf("events %s and %s have one name, which is all trace_pipe prints of an event", prev.layout.Event.FullName(), ev.FullName())
		}
		l, err := NewTextLayout(ev, longSize)
		if err != nil {
			return nil, err
		}
		te := &textEvent{layout: l}
		for _, i := range m.uses(sys, name, true) {
			f := ev.Fields[i]
			if f.Name == "common_pid" {
				continue // the line's pid
			}
			if f.IsCommon() {
				return nil, fmt.Errorf("%s: trace_pipe does not print the field %s", ev.FullName(), f.Name)
			}
			if why := l.Missing(i); why != "" {
				return nil, fmt.Errorf("%s: the field %s cannot be read from trace_pipe's text: %s", ev.FullName(), f.Name, why)
			}
			te.needed = append(te.needed, i)
		}
		out[name] = te
	}
	return out, nil
}

// NewTextReader makes a reader of trace_pipe lines for the machine;
// longSize is the bytes of the target's long.
func NewTextReader(m *Machine, longSize int) (*TextReader, error) {
	evs, err := m.textEvents(longSize)
	if err != nil {
		return nil, err
	}
	return &TextReader{byName: evs}, nil
}

// Event reads one line: the event, or nil for a line of no event the
// machine reads (counted in Lost or Unread).
func (r *TextReader) Event(line string) *Event {
	line = strings.TrimRight(line, "\r\n")
	if n, ok := lostLine(line); ok {
		r.Lost += n
		return nil
	}
	rec, ok := tracefs.ParseTraceLine(line)
	if !ok {
		r.Unread++
		return nil
	}
	te := r.byName[rec.Event]
	if te == nil {
		if rec.Event != "tracing_mark_write" {
			r.Unread++
		}
		return nil
	}
	vals, ok := te.layout.Read(rec.Body)
	if !ok {
		r.Unread++
		return nil
	}
	r.Comm = strings.TrimLeft(rec.Comm, " ")
	ev := &Event{Def: te.layout.Event, TS: uint64(rec.Micros) * 1000, CPU: rec.CPU, PID: rec.PID,
		Fields: make([]Value, len(te.layout.Event.Fields))}
	for i, f := range te.layout.Event.Fields {
		if f.Name == "common_pid" {
			ev.Fields[i] = Num(uint64(int64(rec.PID)))
		}
	}
	for _, i := range te.needed {
		f := te.layout.Event.Fields[i]
		text := vals[i]
		if f.IsString() {
			ev.Fields[i] = Text(text)
			continue
		}
		var v TextValue
		for _, tv := range te.layout.Values {
			if tv.Field == i {
				v = tv
			}
		}
		n, ok := v.Number(text, f)
		if !ok {
			r.Unread++
			return nil
		}
		ev.Fields[i] = Num(n)
	}
	return ev
}

// lostLine reads "CPU:N [LOST M EVENTS]".
func lostLine(line string) (uint64, bool) {
	rest, ok := strings.CutPrefix(line, "CPU:")
	if !ok {
		return 0, false
	}
	_, rest, ok = strings.Cut(rest, " [LOST ")
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(rest, " EVENTS]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil
}
