package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// liveOptions are the flags of --run.
type liveOptions struct {
	duration string // -d: seconds ("10", "0.5") or a Go duration ("1m30s")
	events   bool   // --events: stream the synthetic events' trace lines
	output   string // -o: table, json or csv
	size     int    // --size: entries of the histograms read
}

// parseDuration reads -d: a number of seconds, as the kprobe tool's -d,
// or a Go duration.
func parseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > 1e9 {
			return 0, fmt.Errorf("-d %s: too long", s)
		}
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("-d %q: give seconds (10, 0.5) or a duration (1m30s, 500ms)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("-d %s: the duration must be positive", s)
	}
	return d, nil
}

// checkLive validates the --run flags against the others.
func (o *options) checkLive(e env, fl changed) (time.Duration, int) {
	if !o.run {
		for _, f := range []string{"duration", "events", "output", "size"} {
			if fl(f) {
				return 0, usageError(e, "--%s goes with --run (-r)", f)
			}
		}
		return 0, exitOK
	}
	if o.execute || o.teardown {
		return 0, usageError(e, "--run applies, collects and tears down by itself: drop -e and --teardown")
	}
	switch o.live.output {
	case "table", "json", "csv":
	default:
		return 0, usageError(e, "-o %q: use table, json or csv", o.live.output)
	}
	if fl("size") && (o.live.size < 128 || o.live.size > 131072) {
		return 0, usageError(e, "--size %d: the kernel takes 128 to 131072 entries", o.live.size)
	}
	if o.live.duration == "" {
		return 0, exitOK
	}
	d, err := parseDuration(o.live.duration)
	if err != nil {
		return 0, usageError(e, "%v", err)
	}
	return d, exitOK
}

// changed reports whether a flag was given.
type changed func(name string) bool

// liveRun is one --run in progress.
type liveRun struct {
	e        env
	root     string // the tracefs
	instance string // the instance everything is in
	src      *source.Source
	plan     *planner.Plan
	cmds     []Command
	opt      *liveOptions
	duration time.Duration
}

// instanceDir is the directory of the instance, relative to the root.
func (r *liveRun) instanceDir() string { return "instances/" + r.instance }

// run applies the commands, waits for the duration or a signal while the
// kernel collects (streaming the synthetic events with --events), reads
// the results, tears everything down and prints the results. Once the
// apply succeeded, the teardown runs on every way out.
func (r *liveRun) run() int {
	e := r.e
	sigs, stop := e.signals()
	defer stop()
	if code := apply(e, r.root, r.src, r.cmds, false); code != exitOK {
		return code
	}
	// The teardown runs in two steps: first the end triggers are removed,
	// which stops the synthetic events at their source, so that what is
	// read afterwards is final; then the rest, after reading.
	undo := emit.Teardown(r.cmds)
	var first, rest []Command
	for _, c := range undo {
		if c.Role == "end" {
			first = append(first, c)
		} else {
			rest = append(rest, c)
		}
	}
	stopped, tornDown := false, false
	stopSources := func() int {
		if stopped {
			return exitOK
		}
		stopped = true
		// The end triggers first: then no synthetic event fires, and
		// pausing the histograms (over kernel events or over views) stops
		// the rest.
		code := apply(e, r.root, r.src, first, true)
		r.pauseHistograms()
		return code
	}
	teardown := func() int {
		code := stopSources()
		if tornDown {
			return code
		}
		tornDown = true
		if c := apply(e, r.root, r.src, rest, true); c != exitOK {
			code = c
		}
		return code
	}
	defer teardown()

	until := "until Ctrl-C"
	var timeout <-chan time.Time
	if r.duration > 0 {
		until = "for " + r.duration.String()
		timeout = e.after(r.duration)
	}
	fmt.Fprintf(e.stderr, "sqlhist: collecting %s in instance %s; Ctrl-C to stop\n", until, r.instance)

	var st *streamer
	if r.opt.events {
		p, err := e.pipe(path.Join(r.root, r.instanceDir(), "trace_pipe"))
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
			teardown()
			return exitQuery
		}
		st = newStreamer(e.stdout, r.plan, r.opt.output)
		st.marker = "sqlhist-end-" + strconv.Itoa(e.pid)
		st.pipe = p
		defer p.Close()
		go st.copy(p)
	}
	select {
	case <-timeout:
	case s := <-sigs:
		fmt.Fprintf(e.stderr, "sqlhist: %v: reading what was collected and cleaning up\n", s)
	case <-st.doneChan():
		fmt.Fprintln(e.stderr, "sqlhist: trace_pipe ended; reading what was collected and cleaning up")
	}
	// Stop the synthetic events at their source, let trace_pipe hand over
	// what is left, then read: the kernel's count and the lines streamed
	// cover the same events.
	code := stopSources()
	if st != nil {
		// A marker written after the sources stopped comes out of
		// trace_pipe after every event before it: once the streamer has
		// seen it, everything was streamed.
		if err := e.writer(r.root).Append(r.instanceDir()+"/trace_marker", st.marker); err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: writing the end marker: %v\n", err)
		}
		st.wait(5 * time.Second)
	}
	results, rerr := r.read()
	if st != nil {
		st.stop()
	}
	if c := teardown(); c != exitOK {
		code = c
	}
	if rerr != nil {
		fmt.Fprintf(e.stderr, "sqlhist: reading the results: %v\n", rerr)
		return exitQuery
	}
	for _, res := range results {
		res.warn(e.stderr)
	}
	if st != nil {
		st.summary(e.stderr, results)
	} else if err := render(e.stdout, results, r.opt.output); err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	if st == nil && r.opt.output == "csv" {
		// CSV has no place for them; the table and JSON carry them.
		for _, res := range results {
			t := res.hist.Totals
			fmt.Fprintf(e.stderr, "sqlhist: %s: hits %d, entries %d, dropped %d\n", res.title, t.Hits, t.Entries, t.Dropped)
		}
	}
	return code
}

// pauseHistograms pauses the trigger of each histogram query, so that the
// entries and the Totals read from its hist file count the same events
// (the kernel prints them one after the other while events keep coming).
// A JOIN's results need no pause: removing the end triggers stops them.
// A trigger with variables could not be paused this way (the kernel parses
// the spec as a new trigger first and finds them defined); a histogram
// has none.
func (r *liveRun) pauseHistograms() {
	w := r.e.writer(r.root)
	for _, u := range r.plan.Units {
		h := u.Start
		if u.End != nil || h == nil || len(h.Vars) > 0 {
			continue
		}
		if err := w.Append(h.TriggerFile(), h.PauseSpec()); err != nil {
			fmt.Fprintf(r.e.stderr, "sqlhist: warning: pausing the histogram on %s/%s: %v (its counts may differ slightly from its Totals)\n", h.System, h.Event, errnoText(err))
		}
	}
}

// read reads the histogram of each unit: a JOIN's results histogram or a
// histogram query's own.
func (r *liveRun) read() ([]*result, error) {
	fsys, err := r.e.dir(r.root)
	if err != nil {
		return nil, err
	}
	var out []*result
	for _, u := range r.plan.Units {
		h := u.Results
		if h == nil {
			h = u.Start
		}
		file := h.HistFile()
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		hs, err := tracefs.ParseHist(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		got := findHist(hs, h)
		if got == nil {
			return nil, fmt.Errorf("%s: no histogram keyed by %s", file, strings.Join(h.Keys, ","))
		}
		out = append(out, newResult(u, h, got))
	}
	return out, nil
}

// findHist picks, among the histograms of a hist file, the one of the
// trigger sqlhist wrote: the one keyed as it is (other tools may have
// triggers on the same event when -B names a shared instance).
func findHist(hs []*tracefs.Histogram, h *planner.Hist) *tracefs.Histogram {
	for _, got := range hs {
		if strings.Join(got.KeyFields(), ",") == strings.Join(h.Keys, ",") {
			return got
		}
	}
	if len(hs) == 1 {
		return hs[0]
	}
	return nil
}

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
		if u.Synth == nil {
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
func (s *streamer) wait(limit time.Duration) {
	select {
	case <-s.done:
	case <-time.After(limit):
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
		writeEventJSON(s.w, rec, fields)
	case "csv":
		fields, _ := tracefs.ParseFields(rec.Body, names)
		if !s.header {
			s.header = true
			writeCSV(s.w, append([]string{"event", "timestamp", "cpu", "task", "pid"}, s.order...))
		}
		row := []string{rec.Event, rec.Timestamp, strconv.Itoa(rec.CPU), rec.Comm, strconv.Itoa(rec.PID)}
		byName := map[string]string{}
		for _, f := range fields {
			byName[f.Name] = f.Value
		}
		for _, n := range s.order {
			row = append(row, byName[n])
		}
		writeCSV(s.w, row)
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

// summary tells, after streaming, how many events were shown and what the
// kernel counted, which should agree.
func (s *streamer) summary(w io.Writer, results []*result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, res := range results {
		if res.unit.Synth == nil {
			continue
		}
		t := res.hist.Totals
		fmt.Fprintf(w, "sqlhist: synthetic/%s: %d events streamed; the kernel counted %d (entries %d, dropped %d)\n",
			res.unit.Synth.Name, s.counts[res.unit.Synth.Name], t.Hits, t.Entries, t.Dropped)
	}
	if s.lost > 0 {
		fmt.Fprintf(w, "sqlhist: warning: the kernel lost %d events before they were read (the buffer was full): enlarge instances/<name>/buffer_size_kb\n", s.lost)
	}
}

// osSignals, osPipe: the real machine's, for osEnv.

// osPipe opens trace_pipe for blocking reads. Not through os.OpenFile:
// that registers the file with the runtime poller, and trace_pipe's poll
// only reports data once the buffer is buffer_percent full, so the last
// events would never be read.
func osPipe(p string) (io.ReadCloser, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
