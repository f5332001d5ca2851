package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

const fakeKallsyms = `ffffffff81000000 T _stext
ffffffff81000100 t helper
ffffffff81000100 t z_alias_of_helper
ffffffff81000200 D some_data
ffffffff81000300 T schedule
ffffffff81000400 W weak_fn	[mod]
`

// TestSymbolsScript runs Symbols' shell program with this machine's sh,
// sort and awk on a kallsyms of six symbols: each address gets the text
// symbol at or before it (of two at one address, the first, as the
// kernel's %pS) and the distance to the next text symbol; an address
// before every symbol gets none.
func TestSymbolsScript(t *testing.T) {
	for _, tool := range []string{"sh", "sort", "awk", "head"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	file := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(file, []byte(fakeKallsyms), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs := []uint64{0xffffffff81000150, 0xffffffff81000300, 0xffffffff81000450, 0xffffffff80000000}
	out, err := exec.Command("sh", "-c", symbolsScript(addrs, file)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[uint64]tracefs.Sym{}
	if err := parseSymbols(string(out), got); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]tracefs.Sym{
		0xffffffff81000150: {Name: "helper", Addr: 0xffffffff81000100, Size: 0x200},
		0xffffffff81000300: {Name: "schedule", Addr: 0xffffffff81000300, Size: 0x100},
		0xffffffff81000450: {Name: "weak_fn", Addr: 0xffffffff81000400},
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("%x: %+v, want %+v", a, got[a], w)
		}
	}
	if err := parseSymbols("ffffffff81000150 ffffffff81000200 - helper\n", map[uint64]tracefs.Sym{}); err == nil {
		t.Error("a symbol after its address was accepted")
	}
}
