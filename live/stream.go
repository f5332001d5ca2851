package live

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// streamer copies the synthetic events from trace_pipe to stdout as they
// come.
type streamer struct {
	w      io.Writer
	format string
	fields map[string][]string // synthetic event → its field names
	order  []string            // all field names, for csv
	done   chan struct{}
	pipe   io.Closer
	mu     sync.Mutex     // guards the counts against summary
	marker string         // written to trace_marker to end the stream
	counts map[string]int // events streamed, by synthetic event
	lost   int            // events the kernel reported lost
	header bool
}

func newStreamer(w io.Writer, plan *planner.Plan, format string) *streamer {
	s := &streamer{w: w, format: format, fields: map[string][]string{}, done: make(chan struct{}), counts: map[string]int{}}
	seen := map[string]bool{}
	for _, u := range plan.Units {
		if u.Synth == nil || u.Intermediate {
			continue
		}
		var names []string
		for _, f := range u.Synth.Fields {
			names = append(names, f.Name)
			if !seen[f.Name] {
				seen[f.Name] = true
				s.order = append(s.order, f.Name)
			}
		}
		s.fields[u.Synth.Name] = names
		s.counts[u.Synth.Name] = 0
	}
	return s
}

// doneChan is nil (never ready) without a streamer.
func (s *streamer) doneChan() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.done
}

// copy reads trace_pipe until it ends or is closed.
func (s *streamer) copy(r io.Reader) {
	defer close(s.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s.marker) {
			return
		}
		s.mu.Lock()
		s.line(sc.Text())
		s.mu.Unlock()
	}
}

// wait waits for the copy to end (the marker seen, or trace_pipe ended),
// at most limit.
func (s *streamer) wait(limit time.Duration) bool {
	select {
	case <-s.done:
		return true
	case <-time.After(limit):
		return false
	}
}

// stop ends the copy: closing trace_pipe ends a blocked read.
func (s *streamer) stop() {
	if s.pipe != nil {
		s.pipe.Close()
	}
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		// A read the close did not interrupt: leave it, the process ends.
	}
}

// line writes one trace line if it is one of the query's events.
func (s *streamer) line(l string) {
	if n, ok := lostEvents(l); ok {
		s.lost += n
		return
	}
	rec, ok := tracefs.ParseTraceLine(l)
	if !ok {
		return
	}
	names, ours := s.fields[rec.Event]
	if !ours {
		return
	}
	s.counts[rec.Event]++
	switch s.format {
	case "table":
		fmt.Fprintln(s.w, strings.TrimLeft(l, " "))
	case "json":
		fields, _ := tracefs.ParseFields(rec.Body, names)
		results.WriteEventJSON(s.w, rec, fields)
	case "csv":
		fields, _ := tracefs.ParseFields(rec.Body, names)
		if !s.header {
			s.header = true
			results.WriteCSV(s.w, append([]string{"event", "timestamp", "cpu", "task", "pid"}, s.order...))
		}
		row := []string{rec.Event, rec.Timestamp, strconv.Itoa(rec.CPU), rec.Comm, strconv.Itoa(rec.PID)}
		byName := map[string]string{}
		for _, f := range fields {
			byName[f.Name] = f.Value
		}
		for _, n := range s.order {
			row = append(row, byName[n])
		}
		results.WriteCSV(s.w, row)
	}
}

// lostEvents recognizes trace_pipe's "CPU:1 [LOST 12 EVENTS]".
func lostEvents(l string) (int, bool) {
	l = strings.TrimSpace(l)
	i := strings.Index(l, "[LOST ")
	if !strings.HasPrefix(l, "CPU:") || i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(l[i+len("[LOST "):], " EVENTS]"))
	if err != nil {
		return 0, false
	}
	return n, true
}
