package results

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/planner"
)

// liveResult is a JOIN's results as -r reads them: three comms, their
// latencies in log2 buckets.
func liveResult(t *testing.T) *Result {
	h := &planner.Hist{System: "synthetic", Event: "wakeup", Keys: planner.MustExprs("comm", "lat.log2"), Vals: planner.MustExprs("lat"), Columns: []planner.Column{
		{Label: "comm", Kind: planner.ColKey, Index: 0}, {Label: "count", Kind: planner.ColCount}, {Label: "lat", Kind: planner.ColLatency, Index: 1, Unit: "us"}}}
	const info = "hist:keys=comm,lat.log2:vals=hitcount,lat:sort=hitcount:size=8192"
	return NewResult(&planner.Unit{}, h, parseOne(t, histText(info,
		"{ comm: sh                                                 , lat: ~ 2^4  } hitcount:          3  lat:         36\n\tmax:         12  lat:         12\n"+
			"{ comm: kworker/0:1                                        , lat: ~ 2^3  } hitcount:          2  lat:         10\n\tmax:          5  lat:          5\n"+
			"{ comm: sh                                                 , lat: ~ 2^7  } hitcount:          1  lat:        100\n\tmax:        100  lat:        100\n"+
			"{ comm: rcu_preempt                                        , lat: ~ 2^11 } hitcount:          2  lat:       3000\n\tmax:       1500  lat:       1500\n", 8, 4)))
}

// A --live screen is the cursor home, the screen cleared below it, the
// header (elapsed, interval, engine, lost, totals) and -r's table with
// its distribution, most first: the same bytes for the same results.
func TestLiveFrame(t *testing.T) {
	res := liveResult(t)
	var b strings.Builder
	if err := WriteLiveFrame(&b, LiveFrame{Elapsed: 3 * time.Second, Every: time.Second}, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	want := "\x1b[H\x1b[J" + `sqlhist --live: 3.0 s, every 1s; engine kernel; events 8, dropped 0, lost 0; Ctrl-C ends

synthetic/wakeup
comm         count  avg lat (us)  p50    p90    p99    max lat
--------------------------------------------------------------
sh               4          34.0  ~12    ~100   ~100       100
kworker/0:1      2           5.0  ~5     ~5     ~5           5
rcu_preempt      2        1500.0  ~1144  ~1500  ~1500     1500
Totals: hits 8, entries 4, dropped 0

lat (us):
(4, 8]            2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |
(8, 16]           3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
(16, 32]          0 |                                                    |
(32, 64]          0 |                                                    |
(64, 128]         1 |@@@@@@@@@@@@@@@@@                                   |
(128, 256]        0 |                                                    |
(256, 512]        0 |                                                    |
(512, 1K]         0 |                                                    |
(1K, 2K]          2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |
`
	got := b.String()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frame (-want +got):\n%s\nwhole frame:\n%s", diff, got)
	}
	var again strings.Builder
	WriteLiveFrame(&again, LiveFrame{Elapsed: 3 * time.Second, Every: time.Second}, []*Result{res})
	if again.String() != got {
		t.Error("the same results drew different bytes")
	}
	// The stream engine's results name it and their losses in the header,
	// not above the table; the last screen says the run ended.
	s := *res
	s.Engine, s.Lost = EngineStream, 7
	var done strings.Builder
	WriteLiveFrame(&done, LiveFrame{Elapsed: 4200 * time.Millisecond, Every: time.Second, Done: true}, []*Result{&s})
	head, rest, _ := strings.Cut(strings.TrimPrefix(done.String(), "\x1b[H\x1b[J"), "\n")
	if head != "sqlhist --live: ended after 4.2 s; engine stream; events 8, dropped 0, lost 7" || strings.Contains(rest, "engine:") {
		t.Errorf("last screen of a stream run:\n%s", done.String())
	}
}

// The screen is cut to the terminal: lines to its columns, and to one
// line fewer than its rows (the cursor's), the last saying how many did
// not fit, so that the screen never scrolls.
func TestLiveFrameCut(t *testing.T) {
	var b strings.Builder
	WriteLiveFrame(&b, LiveFrame{Elapsed: time.Second, Every: time.Second, Cols: 40, Rows: 8}, []*Result{liveResult(t)})
	lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(b.String(), "\x1b[H\x1b[J"), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines on a screen of 8 rows:\n%s", len(lines), b.String())
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("%d columns on a screen of 40: %q", n, l)
		}
	}
	if lines[0] != "sqlhist --live: 1.0 s, every 1s; engine…" || lines[6] != "… 14 more lines: a taller terminal show…" {
		t.Errorf("first and last lines: %q, %q", lines[0], lines[6])
	}
}

// The view hides the cursor once, draws each reading over the last, and
// its end draws the last screen and shows the cursor once, whatever
// else closes it after.
func TestLiveViewSequence(t *testing.T) {
	var b strings.Builder
	clock := time.Unix(1000, 0)
	v := &LiveView{W: &b, Every: 500 * time.Millisecond, Now: func() time.Time { return clock }}
	v.Start()
	res := []*Result{liveResult(t)}
	// The apply takes 300 ms, a reading every 500 ms, then the final
	// reading 200 ms after the last, and a teardown of 1234 ms: the
	// last screen says the 1.2 s collected.
	clock = clock.Add(800 * time.Millisecond)
	v.Update(res)
	clock = clock.Add(500 * time.Millisecond)
	v.Update(res)
	clock = clock.Add(200 * time.Millisecond)
	v.Update(res)
	clock = clock.Add(1234 * time.Millisecond)
	v.End(res)
	v.Close()
	out := b.String()
	if !strings.HasPrefix(out, "\x1b[?25l\x1b[H\x1b[J") || !strings.HasSuffix(out, "\x1b[?25h") {
		t.Errorf("not hidden first and shown last: %q…%q", out[:20], out[len(out)-20:])
	}
	if strings.Count(out, "\x1b[?25l") != 1 || strings.Count(out, "\x1b[?25h") != 1 || strings.Count(out, "\x1b[H\x1b[J") != 4 {
		t.Errorf("cursor hidden %d times, shown %d, %d screens (want 1, 1, 4)", strings.Count(out, "\x1b[?25l"), strings.Count(out, "\x1b[?25h"), strings.Count(out, "\x1b[H\x1b[J"))
	}
	for _, s := range []string{"sqlhist --live: 0.5 s, every 500ms;", "sqlhist --live: 1.0 s, every 500ms;", "sqlhist --live: ended after 1.2 s"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in the screens", s)
		}
	}
	// A view that ends another way (an error, a panic unwinding) shows
	// the cursor on Close.
	var c strings.Builder
	v = &LiveView{W: &c, Every: time.Second}
	v.Start()
	v.Close()
	if c.String() != "\x1b[?25l\x1b[?25h" {
		t.Errorf("Start then Close wrote %q", c.String())
	}
}
