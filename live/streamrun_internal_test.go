package live

import (
	"cmp"
	"encoding/binary"
	"math/rand"
	"slices"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// TestSortPending: the runs a stream run's pending records come in (the
// ones left, then each CPU's) merged as a stable sort orders them, equal
// timestamps in the order read; with one run nothing moves, and records
// in no order at all (more runs than merging is for) are sorted too.
func TestSortPending(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 300 {
		var evs []rawEvent
		runs := 1 + rng.Intn(6)
		if round%50 == 49 {
			runs = 400
		}
		for r := range runs {
			ts := uint64(rng.Intn(50))
			for range rng.Intn(40) {
				ts += uint64(rng.Intn(3)) // equal timestamps too
				evs = append(evs, rawEvent{ts: ts, cpu: int32(r), off: uint32(len(evs))})
			}
		}
		want := slices.Clone(evs)
		slices.SortStableFunc(want, func(a, b rawEvent) int { return cmp.Compare(a.ts, b.ts) })
		s := &streamRun{pending: evs}
		s.sortPending()
		if !slices.Equal(s.pending, want) {
			t.Fatalf("round %d (%d runs): merged\n%v\nwant\n%v", round, runs, s.pending, want)
		}
		// Again, with the buffers of the first: a run's next feed.
		s.pending = append(s.pending[:0], evs...)
		rng.Shuffle(len(s.pending)/3, func(i, j int) { s.pending[i], s.pending[j] = s.pending[j], s.pending[i] })
		again := slices.Clone(s.pending)
		slices.SortStableFunc(again, func(a, b rawEvent) int { return cmp.Compare(a.ts, b.ts) })
		s.sortPending()
		if !slices.Equal(s.pending, again) {
			t.Fatalf("round %d, again: merged\n%v\nwant\n%v", round, s.pending, again)
		}
	}
}

// TestStreamInt: a stream run's integer read is the field decoder's, for
// every size, signed or not, inside the record or past its end.
func TestStreamInt(t *testing.T) {
	s := &streamRun{decoder: tracefs.FieldDecoder{Order: binary.NativeEndian, LongSize: 8}, native: true}
	rng := rand.New(rand.NewSource(2))
	data := make([]byte, 24)
	for range 2000 {
		rng.Read(data)
		for _, size := range []int{1, 2, 3, 4, 8} {
			for off := 0; off <= len(data); off += 3 {
				for _, signed := range []bool{false, true} {
					f := &tracefs.Field{Name: "f", Offset: off, Size: size, Signed: signed}
					want, _ := s.decoder.Int(f, data)
					if got := s.int(f, data); got != want {
						t.Fatalf("size %d at %d, signed %v: %d, want %d", size, off, signed, got, want)
					}
				}
			}
		}
	}
}
