package bpf

import (
	"os"
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
