package results

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultLiveEvery is how often --live redraws without -i.
const DefaultLiveEvery = time.Second

// The terminal's controls --live writes (ANSI, which every terminal
// emulator and the Linux console read).
const (
	ansiHome       = "\x1b[H"    // cursor to the top left
	ansiClearBelow = "\x1b[J"    // erase from the cursor to the end of the screen
	ansiHideCursor = "\x1b[?25l" // while the view is drawn
	ansiShowCursor = "\x1b[?25h" // on every way out
)

// LiveFrame says what the header of a --live screen tells besides the
// results: how long the run has collected, how often it is read, the
// engine and the events its ring buffers lost, and whether the run has
// ended (the last screen).
type LiveFrame struct {
	Elapsed time.Duration
	Every   time.Duration
	Engine  string // EngineKernel, EngineStream or EngineAwk
	Lost    int
	Done    bool
	// Cols and Rows are the terminal's size: lines are cut to Cols
	// columns and the screen to Rows lines (0: not cut).
	Cols, Rows int
}

// WriteLiveFrame writes one screen of --live: the cursor home and the
// screen cleared below it, a header line (elapsed time, engine, events
// lost, the totals of every statement), then the results as -r's tables
// show them (most first unless ORDER BY says otherwise) with the
// latency's distribution, without the note on what is exact (-r's
// last table says it). The events are every statement's (in rows,
// dropped for a full map, negative latencies); lost are those the stream
// engine's ring buffers lost before they were read. The screen is cut to the terminal's size, the
// last line saying how many lines did not fit. Its bytes depend only on
// its input.
func WriteLiveFrame(w io.Writer, f LiveFrame, results []*Result) error {
	var events, dropped uint64
	shown := make([]*Result, len(results))
	for i, res := range results {
		t := res.Read.Totals
		events += t.Hits + t.Dropped + t.Failed + res.Negative
		dropped += t.Dropped + t.Failed
		if res.Engine != "" && f.Engine == "" {
			f.Engine = res.Engine
		}
		f.Lost = max(f.Lost, res.Lost)
		// The engine is in the header, not above each table.
		c := *res
		c.Engine = ""
		shown[i] = &c
	}
	if f.Engine == "" {
		f.Engine = EngineKernel
	}
	var head strings.Builder
	if f.Done {
		fmt.Fprintf(&head, "sqlhist --live: ended after %.1f s", f.Elapsed.Seconds())
	} else {
		fmt.Fprintf(&head, "sqlhist --live: %.1f s, every %s", f.Elapsed.Seconds(), f.Every)
	}
	fmt.Fprintf(&head, "; engine %s; events %d, dropped %d, lost %d", f.Engine, events, dropped, f.Lost)
	if !f.Done {
		head.WriteString("; Ctrl-C ends")
	}
	var body strings.Builder
	if err := renderTablesNoted(&body, shown, false); err != nil {
		return err
	}
	lines := append([]string{head.String(), ""}, strings.Split(strings.TrimRight(body.String(), "\n"), "\n")...)
	if f.Rows > 0 && len(lines) > f.Rows-1 {
		// One line is left for the cursor, so that the screen does not
		// scroll.
		keep := max(f.Rows-2, 1)
		more := len(lines) - keep
		lines = append(lines[:keep:keep], fmt.Sprintf("… %d more lines: a taller terminal shows them (or LIMIT n)", more))
	}
	var b strings.Builder
	b.WriteString(ansiHome + ansiClearBelow)
	for _, l := range lines {
		b.WriteString(cutColumns(l, f.Cols))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cutColumns cuts a line to n columns (runes), ending it with "…" when
// it was longer; n <= 0 keeps it whole.
func cutColumns(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// LiveView draws --live: the results every interval, in place, on a
// terminal. Start hides the cursor; Update draws what the run collected
// so far (Options.OnTotal); End draws the last screen, which stays, and
// shows the cursor; Close shows it on any other way out (it can be
// deferred: once shown, it writes nothing).
type LiveView struct {
	W      io.Writer
	Every  time.Duration
	Engine string // the engine -r picked (the results' own wins)
	// Size is the terminal's size now (read at each frame: a resized
	// window is followed); nil does not cut.
	Size func() (cols, rows int, ok bool)
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	began   time.Time // Start, then the collection's start (a tick before the first reading)
	updated time.Time // the last reading
	reads   int
	hidden  bool
}

func (v *LiveView) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Start hides the cursor and starts the clock.
func (v *LiveView) Start() {
	v.began = v.now()
	v.hidden = true
	io.WriteString(v.W, ansiHideCursor)
}

// Update draws the results read at a tick: everything the run has
// collected so far. The elapsed time is the ticks' (reads × Every), as
// -i counts its intervals.
func (v *LiveView) Update(results []*Result) {
	v.reads++
	v.updated = v.now()
	if v.reads == 1 {
		// The collection began a tick before its first reading (the
		// apply before it is not collecting).
		v.began = v.updated.Add(-v.Every)
	}
	v.draw(LiveFrame{Elapsed: time.Duration(v.reads) * v.Every}, results)
}

// End draws the last screen from the run's final results and shows the
// cursor below it. Its elapsed time is the collection's, to its last
// reading (the run's final one, before the teardown), or without a
// reading since Start.
func (v *LiveView) End(results []*Result) {
	end := v.updated
	if end.IsZero() {
		end = v.now()
	}
	elapsed := end.Sub(v.began).Round(100 * time.Millisecond)
	v.draw(LiveFrame{Elapsed: elapsed, Done: true}, results)
	v.Close()
}

// Close shows the cursor if the view hid it.
func (v *LiveView) Close() {
	if v.hidden {
		v.hidden = false
		io.WriteString(v.W, ansiShowCursor)
	}
}

func (v *LiveView) draw(f LiveFrame, results []*Result) {
	f.Every, f.Engine = v.Every, v.Engine
	if v.Size != nil {
		if c, r, ok := v.Size(); ok {
			f.Cols, f.Rows = c, r
		}
	}
	WriteLiveFrame(v.W, f, results)
}
