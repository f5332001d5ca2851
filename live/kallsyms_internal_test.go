package live

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// fieldsText is text as it was written before: each line split into
// fields. The byte scan must count as it did.
func fieldsText(table, fn, mod string) int {
	n := 0
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[2] != fn || f[1] != "t" && f[1] != "T" {
			continue
		}
		if mod == "" || len(f) > 3 && f[3] == "["+mod+"]" {
			n++
		}
	}
	return n
}

const kallsymsTable = `ffffffff81000000 T startup_64
ffffffff81234560 t name_show
ffffffff81234570 T vfs_read
ffffffff81234580 t name_show
ffffffff81234590 d name_show
ffffffff812345a0 W weak_fn
ffffffff812345b0 t trailing_space 
ffffffff812345c0 t tab_after	
00000000 t short_addr
garbage
ffffffff81234600 T
ffffffff81234610 TT doubled_type
 t leading_space
ffffffffc0001000 t name_show	[nvme_core]
ffffffffc0001010 t nvme_irq	[nvme_core]
ffffffffc0001020 T nvme_irq	[nvme]
ffffffffc0001030 t broken_mod	[nvme
ffffffffc0001040 t name_show	[]
ffffffffc0001050 t vfs_read.cold	[ext4]`

func TestKallsymsText(t *testing.T) {
	k := &KernelSyms{Kallsyms: "kallsyms", Open: func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(kallsymsTable)), nil
	}}
	for _, c := range []struct {
		fn, mod string
		want    int
	}{
		{"name_show", "", 4}, {"name_show", "nvme_core", 1}, {"name_show", "nvme", 0},
		{"vfs_read", "", 1}, {"vfs_read.cold", "ext4", 1}, {"weak_fn", "", 0},
		{"trailing_space", "", 1}, {"tab_after", "", 1}, {"short_addr", "", 1},
		{"nvme_irq", "", 2}, {"nvme_irq", "nvme", 1}, {"broken_mod", "", 1}, {"broken_mod", "nvme", 0},
		{"doubled_type", "", 0}, {"leading_space", "", 0}, {"", "", 0}, {"garbage", "", 0},
	} {
		got, err := k.text(c.fn, c.mod)
		if err != nil {
			t.Fatal(err)
		}
		if ref := fieldsText(kallsymsTable, c.fn, c.mod); got != c.want || got != ref {
			t.Errorf("%q of %q: %d text symbols, want %d (split into fields: %d)", c.fn, c.mod, got, c.want, ref)
		}
	}
}

// bigKallsyms is a table of the size of a distribution kernel's.
func bigKallsyms() string {
	var b strings.Builder
	for i := range 150000 {
		typ := "tTdDbr"[i%6]
		fmt.Fprintf(&b, "ffffffff%08x %c symbol_number_%d", 0x81000000+16*i, typ, i)
		if i%10 == 0 {
			fmt.Fprintf(&b, "\t[mod%d]", i%7)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestKallsymsTextBig(t *testing.T) {
	table := bigKallsyms()
	k := &KernelSyms{Kallsyms: "kallsyms", Open: func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(table)), nil
	}}
	for _, fn := range []string{"symbol_number_149994", "symbol_number_10", "symbol_number_3"} {
		for _, mod := range []string{"", "mod3"} {
			got, err := k.text(fn, mod)
			if ref := fieldsText(table, fn, mod); err != nil || got != ref {
				t.Errorf("%s of %q: %d, %v; split into fields: %d", fn, mod, got, err, ref)
			}
		}
	}
	if got, _ := k.text("symbol_number_149995", ""); got != 1 {
		t.Errorf("the last line's symbol: %d", got)
	}
}

// BenchmarkKallsymsText reads a table of 150,000 symbols for one name
// (every kprobe run does, to find a name two symbols share).
func BenchmarkKallsymsText(b *testing.B) {
	table := bigKallsyms()
	k := &KernelSyms{Kallsyms: "kallsyms", Open: func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(table)), nil
	}}
	b.ReportAllocs()
	for b.Loop() {
		if n, err := k.text("symbol_number_149995", ""); n != 1 || err != nil {
			b.Fatal(n, err)
		}
	}
}
