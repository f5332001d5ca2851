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

// TestReadKinds decodes a made-up entry of the log2-sums sample (an
// .execname key, a .log2 key, a sum) and of the syscount and
// onchange-save samples as the kernel's hist file shows them.
func TestReadKinds(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	ne := binary.NativeEndian
	engine := func(name string) *Engine {
		ts, synths := samples()[name]()
		e, err := New(ts, synths, cat.Event, Options{Syscall: func(nr uint64) string { return map[uint64]string{1: "write"}[nr] }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	e := engine("log2-sums")
	m := e.maps[0]
	k, v := make([]byte, m.keySize), make([]byte, m.valSize)
	ne.PutUint64(k[m.parts[0].off:], 1234)
	ne.PutUint64(k[m.parts[1].off:], 7)
	ne.PutUint64(v, 3)
	ne.PutUint64(v[m.sums[0]:], 300)
	copy(v[m.comm[0]:], "bash\x00")
	h := e.histogram(e.ctrigs[0], []rawEntry{{k, v}}, 2)
	ent := h.Entries[0]
	want := []tracefs.HistValue{
		{Name: "common_pid", Kind: tracefs.HistExecname, Num: 1234, Text: "bash", Raw: "bash            [      1234]"},
		{Name: "bytes_alloc", Kind: tracefs.HistLog2, Num: 7, Raw: "~ 2^7"},
	}
	for i, w := range want {
		if g := ent.Keys[i]; g.Name != w.Name || g.Kind != w.Kind || g.Num != w.Num || g.Text != w.Text || g.Raw != w.Raw {
			t.Errorf("key %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(ent.Values) != 2 || ent.Values[0].Name != "hitcount" || ent.Values[0].Num != 3 || ent.Values[1].Name != "bytes_req" || ent.Values[1].Num != 300 {
		t.Errorf("values %+v", ent.Values)
	}
	if h.Totals != (tracefs.HistTotals{Hits: 3, Entries: 1, Dropped: 2}) {
		t.Errorf("totals %+v", h.Totals)
	}

	e = engine("syscount")
	m = e.maps[0]
	var raws []rawEntry
	for nr, c := range map[uint64]uint64{1: 5, 999: 9} {
		k, v := make([]byte, m.keySize), make([]byte, m.valSize)
		ne.PutUint64(k, nr)
		ne.PutUint64(v, c)
		raws = append(raws, rawEntry{k, v})
	}
	h = e.histogram(e.ctrigs[0], raws, 0)
	// sort=hitcount.descending.
	if k := h.Entries[0].Keys[0]; k.Kind != tracefs.HistSyscall || k.Num != 999 || k.Text != "unknown_syscall" {
		t.Errorf("first key %+v", k)
	}
	if k := h.Entries[1].Keys[0]; k.Num != 1 || k.Text != "write" || k.Raw != "write                         [  1]" {
		t.Errorf("second key %+v", k)
	}

	e = engine("onchange-save")
	m = e.maps[0]
	k, v = make([]byte, m.keySize), make([]byte, m.valSize)
	ne.PutUint64(k, 42)
	ne.PutUint64(v, 1)
	ne.PutUint64(v[m.tracks[0]:], 120)
	ne.PutUint64(v[m.tracks[0]+8:], 7)
	ne.PutUint64(v[m.tracks[1]:], 139)
	ne.PutUint64(v[m.tracks[1]+8:], 8)
	ne.PutUint64(v[m.tracks[1]+16:], 100)
	h = e.histogram(e.ctrigs[0], []rawEntry{{k, v}}, 0)
	tr := h.Entries[0].Tracked
	if len(tr) != 2 || tr[0].Handler != "changed" || tr[0].Value != 120 || tr[0].Saved[0].Name != "prev_pid" || tr[0].Saved[0].Num != 7 ||
		tr[1].Handler != "max" || tr[1].Value != 139 || tr[1].Saved[1].Name != "next_prio" || tr[1].Saved[1].Num != 100 {
		t.Errorf("tracked %+v", tr)
	}
}

// failure names what the stats map kept of an insert that failed with its
// map not full: the errno by its name, or the entry gone after the insert.
func TestFailureNames(t *testing.T) {
	for code, want := range map[uint64]string{
		16:  "the kernel's map update returned EBUSY (device or resource busy)",
		12:  "the kernel's map update returned ENOMEM (cannot allocate memory)",
		0:   "the entry just inserted was not found",
		999: "the kernel's map update returned errno 999 (errno 999)",
	} {
		if got := failure(code); got != want {
			t.Errorf("failure(%d) = %q, want %q", code, got, want)
		}
	}
}
