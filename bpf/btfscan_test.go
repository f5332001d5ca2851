package bpf

import (
	"bytes"
	"encoding/binary"
	"io"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// structMembers agrees with cilium/ebpf's full parse of this machine's
// BTF on task_struct's members, and on another struct's; bad blobs are
// refused, not read past their end.
func TestStructMembersAgreesWithCilium(t *testing.T) {
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF here: %v", err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for name, members := range map[string][]string{
		"task_struct": {"pid", "prio", "comm", "tgid"},
		"file":        {"f_mode", "f_flags"},
	} {
		var st *btf.Struct
		if err := spec.TypeByName(name, &st); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, m := range st.Members {
			for _, n := range members {
				if m.Name == n && m.BitfieldSize == 0 {
					want[n] = int(m.Offset.Bytes())
				}
			}
		}
		got, err := structMembers(raw, name, members...)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
		for n, o := range want {
			if got[n] != o {
				t.Errorf("%s.%s: got %d, want %d", name, n, got[n], o)
			}
		}
	}
	tf, err := taskFields()
	if err != nil || tf["pid"] == 0 || tf["comm"] == 0 || tf["prio"] == 0 {
		t.Errorf("taskFields: %v, %v", tf, err)
	}
	if _, err := structMembers(raw, "no_such_struct_here", "x"); err == nil {
		t.Error("a struct that does not exist was found")
	}
	for _, cut := range []int{0, 10, 24, len(raw) / 2} {
		if _, err := structMembers(raw[:cut], "task_struct", "pid"); err == nil {
			t.Errorf("BTF cut at %d read", cut)
		}
	}
	bad := append([]byte(nil), raw...)
	bad[0] = 0
	if _, err := structMembers(bad, "task_struct", "pid"); err == nil {
		t.Error("a blob without BTF's magic read")
	}
}

func BenchmarkTaskFields(b *testing.B) {
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if _, err := structMembers(raw, "task_struct", "pid", "prio", "comm"); err != nil {
			b.Fatal(err)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r     io.ReaderAt
	bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes += int64(n)
	return n, err
}

// btfBlob builds a little-endian BTF blob: an int type, struct name
// (members pid at byte 8 and comm at byte 16, a bitfield prio),
// then filler ints; strs is the string section, names found in it by
// their index-th place (0: first).
func btfBlob(t *testing.T, fillers int, strs string, nameAt, pidAt int) []byte {
	t.Helper()
	place := func(s string, nth int) uint32 {
		off := 0
		for i := 0; ; i++ {
			j := strings.Index(strs[off:], "\x00"+s+"\x00")
			if j < 0 {
				t.Fatalf("%q not in the strings %d times", s, nth+1)
			}
			if i == nth {
				return uint32(off + j + 1)
			}
			off += j + 1
		}
	}
	var types []byte
	u32 := func(v uint32) { types = binary.LittleEndian.AppendUint32(types, v) }
	u32(place("int", 0))
	u32(1 << 24) // INT
	u32(4)
	u32(0x20)
	u32(place("task_struct", nameAt))
	u32(btfKindStruct<<24 | 1<<31 | 3) // kflag: bitfield sizes in offsets
	u32(64)
	u32(place("pid", pidAt))
	u32(1)
	u32(8 * 8)
	u32(place("comm", 0))
	u32(1)
	u32(16 * 8)
	u32(place("prio", 0))
	u32(1)
	u32(3<<24 | 24*8) // a bitfield of 3 bits
	for i := 0; i < fillers; i++ {
		u32(0)
		u32(1 << 24)
		u32(4)
		u32(0x20)
	}
	h := make([]byte, 24)
	binary.LittleEndian.PutUint16(h, btfMagic)
	h[2] = 1
	binary.LittleEndian.PutUint32(h[4:], 24)
	binary.LittleEndian.PutUint32(h[8:], 0)
	binary.LittleEndian.PutUint32(h[12:], uint32(len(types)))
	binary.LittleEndian.PutUint32(h[16:], uint32(len(types)))
	binary.LittleEndian.PutUint32(h[20:], uint32(len(strs)))
	return append(append(h, types...), strs...)
}

// structMembersAt gives what structMembers gives, reading only the start
// of a blob whose struct and names come first, and the whole of one that
// names the struct or a member by a second copy of a string; cut or bad
// blobs are refused as structMembers refuses them.
func TestStructMembersAt(t *testing.T) {
	filler := strings.Repeat("x", 40000) + "\x00"
	plain := "\x00int\x00task_struct\x00pid\x00comm\x00prio\x00" + filler
	twice := "\x00int\x00task_struct\x00pid\x00comm\x00prio\x00" + filler + "task_struct\x00pid\x00"
	cases := []struct {
		name          string
		blob          []byte
		whole         bool
		want          map[string]int
		refuse, wrong bool
	}{
		{name: "first places", blob: btfBlob(t, 20000, plain, 0, 0), want: map[string]int{"pid": 8, "comm": 16}},
		{name: "struct named by a second copy", blob: btfBlob(t, 200, twice, 1, 0), whole: true, want: map[string]int{"pid": 8, "comm": 16}},
		{name: "member named by a second copy", blob: btfBlob(t, 200, twice, 0, 1), whole: true, want: map[string]int{"pid": 8, "comm": 16}},
	}
	for _, c := range cases {
		cr := &countingReader{r: bytes.NewReader(c.blob)}
		got, err := structMembersAt(cr, "task_struct", "pid", "comm", "prio")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ref, err := structMembers(c.blob, "task_struct", "pid", "comm", "prio")
		if err != nil {
			t.Fatalf("%s: structMembers: %v", c.name, err)
		}
		if !maps.Equal(got, c.want) || !maps.Equal(got, ref) {
			t.Errorf("%s: got %v, structMembers %v, want %v", c.name, got, ref, c.want)
		}
		// prio is a bitfield: left out, which sends the scan to the
		// whole blob; without it, the first places suffice.
		cr2 := &countingReader{r: bytes.NewReader(c.blob)}
		if _, err := structMembersAt(cr2, "task_struct", "pid", "comm"); err != nil {
			t.Fatal(err)
		}
		if read := cr2.bytes; c.whole != (read >= int64(len(c.blob))) {
			t.Errorf("%s: read %d bytes of %d (whole: %t)", c.name, read, len(c.blob), c.whole)
		}
		if !c.whole && cr2.bytes > 100<<10 {
			t.Errorf("%s: read %d bytes of %d for a struct and names at the start", c.name, cr2.bytes, len(c.blob))
		}
	}
	blob := btfBlob(t, 20000, plain, 0, 0)
	if _, err := structMembersAt(bytes.NewReader(blob), "no_such_struct_here", "x"); err == nil || !strings.Contains(err.Error(), "no struct") {
		t.Errorf("a struct that does not exist: %v", err)
	}
	for _, cut := range []int{0, 10, 24, 100, len(blob) / 2, len(blob) - 10} {
		if _, err := structMembersAt(bytes.NewReader(blob[:cut]), "task_struct", "pid", "prio"); err == nil {
			t.Errorf("BTF cut at %d of %d read", cut, len(blob))
		}
	}
	bad := append([]byte(nil), blob...)
	bad[0] = 0
	if _, err := structMembersAt(bytes.NewReader(bad), "task_struct", "pid"); err == nil {
		t.Error("a blob without BTF's magic read")
	}
	huge := append([]byte(nil), blob...)
	binary.LittleEndian.PutUint32(huge[12:], 1<<31)
	if _, err := structMembersAt(bytes.NewReader(huge), "task_struct", "pid"); err == nil {
		t.Error("a blob whose type section runs past its end read")
	}
	// This machine's BTF, where there is one: the same as the whole read.
	if raw, err := os.ReadFile("/sys/kernel/btf/vmlinux"); err == nil {
		cr := &countingReader{r: bytes.NewReader(raw)}
		got, err := structMembersAt(cr, "task_struct", "pid", "prio", "comm")
		ref, rerr := structMembers(raw, "task_struct", "pid", "prio", "comm")
		if err != nil || rerr != nil || !maps.Equal(got, ref) || len(got) != 3 {
			t.Errorf("vmlinux: %v %v, whole: %v %v", got, err, ref, rerr)
		}
		t.Logf("vmlinux: %d bytes read of %d", cr.bytes, len(raw))
	}
}
