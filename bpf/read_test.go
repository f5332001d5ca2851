package bpf

import (
	"encoding/binary"
	"sort"
	"testing"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
	"github.com/sqlhist/sqlhist/tracefs"
)

// fuzzEngines are engines compiled (not loaded) from the samples, whose
// map readers FuzzReadMaps feeds.
func fuzzEngines(t testing.TB) []*Engine {
	t.Helper()
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	names := make([]string, 0, len(samples()))
	for n := range samples() {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*Engine
	for _, n := range names {
		ts, synths := samples()[n]()
		e, err := New(ts, synths, cat.Event, Options{Syscall: func(nr uint64) string { return "" },
			Sym: func(a uint64, off bool) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// FuzzReadMaps feeds arbitrary map contents (any key and value bytes, as
// many entries as the input holds) to the reader of each sample's maps:
// it must not panic, and must give every entry with its keys and values,
// and totals that add them up.
func FuzzReadMaps(f *testing.F) {
	engines := fuzzEngines(f)
	f.Add([]byte{0, 0}, uint64(0))
	f.Add([]byte{1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 1}, uint64(5))
	f.Add(make([]byte, 600), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, drops uint64) {
		fuzzguard.Run(fuzzguard.Limit, string(data), func() { readMaps(t, engines, data, drops) })
	})
}

func readMaps(t *testing.T, engines []*Engine, data []byte, drops uint64) {
	if len(data) < 2 {
		return
	}
	e := engines[int(data[0])%len(engines)]
	ct := e.ctrigs[int(data[1])%len(e.ctrigs)]
	data = data[2:]
	m := ct.m
	var raws []rawEntry
	var hits uint64
	for len(data) > 0 {
		k, v := make([]byte, m.keySize), make([]byte, m.valSize)
		n := copy(k, data)
		data = data[n:]
		n = copy(v, data)
		data = data[n:]
		hits += binary.NativeEndian.Uint64(v)
		raws = append(raws, rawEntry{k, v})
	}
	h := e.histogram(ct, raws, drops)
	if len(h.Entries) != len(raws) || h.Totals.Entries != uint64(len(raws)) || h.Totals.Hits != hits || h.Totals.Dropped != drops {
		t.Fatalf("%d entries of %d, totals %+v (hits %d, drops %d)", len(h.Entries), len(raws), h.Totals, hits, drops)
	}
	values := len(ct.vals)
	if !ct.t.NoHitcount {
		values++
	}
	for _, ent := range h.Entries {
		if len(ent.Keys) != len(ct.t.Keys) || len(ent.Values) < values {
			t.Fatalf("an entry with %d keys and %d values; the trigger has %d keys and %d values", len(ent.Keys), len(ent.Values), len(ct.t.Keys), values)
		}
	}
}
