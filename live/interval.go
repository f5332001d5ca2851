package live

import (
	"time"

	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// intervals reads the results at each tick and hands the difference with
// the reading before to OnInterval. Counts, sums and the latency's
// distribution of an interval are exact (the difference of two readings
// of the same entries); its maximum is exact when a new maximum arrived
// in it, else it is bounded by the entry's bucket and the maximum so far
// (Row.Stats.MaxBound).
type intervals struct {
	r     *runState
	ticks <-chan time.Time
	stop  func()
	began time.Time
	n     int
	prev  *snapshot
}

func (r *runState) newIntervals() *intervals {
	iv := &intervals{r: r, stop: func() {}, began: time.Now()}
	if r.opt.Interval <= 0 || (r.opt.OnInterval == nil && r.opt.OnTotal == nil) {
		return iv
	}
	tick := r.opt.Tick
	if tick == nil {
		tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	iv.ticks, iv.stop = tick(r.opt.Interval)
	return iv
}

// take reads the results now and reports the interval that ends.
func (iv *intervals) take(partial bool) error {
	iv.r.eng.sync()
	snap, err := iv.r.snapshot()
	if err != nil {
		return err
	}
	iv.report(snap, partial)
	return nil
}

// last reports the interval that the end of the collection cut short,
// from the final reading.
func (iv *intervals) last(final []*results.Result) {
	snap := &snapshot{}
	for _, res := range final {
		snap.units = append(snap.units, res.Unit)
		snap.hists = append(snap.hists, res.Hist)
		snap.got = append(snap.got, res.Read)
		snap.neg = append(snap.neg, res.Negative)
	}
	iv.report(snap, true)
}

func (iv *intervals) report(snap *snapshot, partial bool) {
	iv.n++
	start := time.Duration(iv.n-1) * iv.r.opt.Interval
	end := time.Duration(iv.n) * iv.r.opt.Interval
	if partial {
		end = max(start, time.Since(iv.began).Round(time.Millisecond))
	}
	delta := snap
	if iv.prev != nil {
		delta = snap.minus(iv.prev)
	}
	iv.prev = snap
	lost := iv.r.eng.lost() // so far; final at the end
	engine := func(rs []*results.Result) []*results.Result {
		if name := iv.r.eng.name(); name != EngineKernel {
			for _, res := range rs {
				res.Engine, res.EngineReason, res.Lost = name, iv.r.opt.EngineReason, lost
			}
		}
		return rs
	}
	if iv.r.opt.OnInterval != nil {
		iv.r.opt.OnInterval(&results.Interval{N: iv.n, Start: start, End: end, Partial: partial, Results: engine(delta.results())})
	}
	if iv.r.opt.OnTotal != nil {
		iv.r.opt.OnTotal(engine(snap.results()))
	}
}

// minus returns what s counted since prev: each entry's counts and sums
// less the same entry's in prev (entries prev did not have are new).
func (s *snapshot) minus(prev *snapshot) *snapshot {
	out := &snapshot{units: s.units, hists: s.hists}
	for i, got := range s.got {
		var before *tracefs.Histogram
		var neg uint64
		if i < len(prev.got) {
			before, neg = prev.got[i], prev.neg[i]
		}
		out.got = append(out.got, results.HistMinus(got, before))
		out.neg = append(out.neg, s.neg[i]-min(neg, s.neg[i]))
	}
	return out
}
