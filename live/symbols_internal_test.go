package live

import "testing"

// TestKallsymsLookup: the text symbol at or before an address, its size
// the distance to the next text symbol; data symbols are not text; of
// two symbols at one address, the first (as the kernel's %pS names it).
func TestKallsymsLookup(t *testing.T) {
	k := parseKallsyms("ffffffff81000300 T schedule\nffffffff81000000 T _stext\nffffffff81000200 D data\nffffffff81000100 t helper\nffffffff81000100 t z_alias_of_helper\n")
	got := k.lookup([]uint64{0xffffffff81000150, 0xffffffff81000300, 0x10})
	if s := got[0xffffffff81000150]; s != (Sym{Name: "helper", Addr: 0xffffffff81000100, Size: 0x200}) {
		t.Errorf("helper: %+v", s)
	}
	if s := got[0xffffffff81000300]; s.Name != "schedule" || s.Size != 0 {
		t.Errorf("schedule (the last): %+v", s)
	}
	if _, ok := got[0x10]; ok {
		t.Error("an address before every symbol was named")
	}
	c := &symCache{known: map[uint64]Sym{}, tried: map[uint64]bool{}, resolve: func(a []uint64) (map[uint64]Sym, error) { return k.lookup(a), nil }}
	c.prefetch([]uint64{0xffffffff81000150})
	if n := c.name(0xffffffff81000150, true); n != "helper+0x50/0x200" {
		t.Errorf("sym-offset: %q, want helper+0x50/0x200 as %%pS prints it", n)
	}
}
