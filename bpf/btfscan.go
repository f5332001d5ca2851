package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
)

// The raw tracepoints' fields (rawtp.go) are members of the kernel's
// struct task_struct, whose offsets only the kernel's BTF gives. Parsing
// the whole of /sys/kernel/btf/vmlinux with cilium/ebpf costs a run
// 20-40 ms and megabytes; a run needs three numbers. structMembers walks
// the type section once, skipping each type by its kind's size, and
// reads the members of one struct: a few milliseconds, no types built.

// btfHeader is struct btf_header.
type btfHeader struct {
	Magic   uint16
	Version uint8
	Flags   uint8
	HdrLen  uint32
	TypeOff uint32
	TypeLen uint32
	StrOff  uint32
	StrLen  uint32
}

const (
	btfMagic      = 0xeb9f
	btfKindStruct = 4
)

// btfKindExtra is the bytes after a type's 12-byte header, by kind, for
// vlen items of its kind (BTF_KIND_*: linux/btf.h).
func btfKindExtra(kind, vlen uint32) (int, error) {
	switch kind {
	case 1: // INT
		return 4, nil
	case 2, 7, 8, 9, 10, 11, 12, 16, 18: // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
		return 0, nil
	case 3: // ARRAY
		return 12, nil
	case 4, 5: // STRUCT, UNION
		return 12 * int(vlen), nil
	case 6: // ENUM
		return 8 * int(vlen), nil
	case 13: // FUNC_PROTO
		return 8 * int(vlen), nil
	case 14: // VAR
		return 4, nil
	case 15: // DATASEC
		return 12 * int(vlen), nil
	case 17: // DECL_TAG
		return 4, nil
	case 19: // ENUM64
		return 12 * int(vlen), nil
	}
	return 0, fmt.Errorf("BTF kind %d is not known", kind)
}

// structMembers returns the byte offsets of the named members of struct
// name in the BTF blob b (a member not found is left out; a bitfield
// member is left out too). Only the first struct of that name counts
// (vmlinux has one task_struct).
func structMembers(b []byte, name string, members ...string) (map[string]int, error) {
	var h btfHeader
	if len(b) < 24 {
		return nil, errors.New("BTF: too short")
	}
	h.Magic = binary.LittleEndian.Uint16(b)
	if h.Magic != btfMagic {
		return nil, errors.New("BTF: not little-endian BTF (magic)")
	}
	h.HdrLen = binary.LittleEndian.Uint32(b[4:])
	h.TypeOff = binary.LittleEndian.Uint32(b[8:])
	h.TypeLen = binary.LittleEndian.Uint32(b[12:])
	h.StrOff = binary.LittleEndian.Uint32(b[16:])
	h.StrLen = binary.LittleEndian.Uint32(b[20:])
	tStart, sStart := uint64(h.HdrLen)+uint64(h.TypeOff), uint64(h.HdrLen)+uint64(h.StrOff)
	if tStart+uint64(h.TypeLen) > uint64(len(b)) || sStart+uint64(h.StrLen) > uint64(len(b)) {
		return nil, errors.New("BTF: sections past the end")
	}
	types, strs := b[tStart:tStart+uint64(h.TypeLen)], b[sStart:sStart+uint64(h.StrLen)]
	str := func(off uint32) string {
		if uint64(off) >= uint64(len(strs)) {
			return ""
		}
		s := strs[off:]
		for i, c := range s {
			if c == 0 {
				return string(s[:i])
			}
		}
		return ""
	}
	want := map[string]bool{}
	for _, m := range members {
		want[m] = true
	}
	for p := 0; p+12 <= len(types); {
		nameOff := binary.LittleEndian.Uint32(types[p:])
		info := binary.LittleEndian.Uint32(types[p+4:])
		kind, vlen, kflag := (info>>24)&0x1f, info&0xffff, info>>31 == 1
		extra, err := btfKindExtra(kind, vlen)
		if err != nil {
			return nil, err
		}
		next := p + 12 + extra
		if next > len(types) {
			return nil, errors.New("BTF: a type runs past the type section")
		}
		if kind == btfKindStruct && str(nameOff) == name {
			out := map[string]int{}
			for i := 0; i < int(vlen); i++ {
				m := types[p+12+12*i:]
				mname := str(binary.LittleEndian.Uint32(m))
				off := binary.LittleEndian.Uint32(m[8:])
				if kflag {
					if off>>24 != 0 {
						continue // a bitfield
					}
					off &= 0xffffff
				}
				if want[mname] && off%8 == 0 {
					out[mname] = int(off / 8)
				}
			}
			return out, nil
		}
		p = next
	}
	return nil, fmt.Errorf("BTF: no struct %s", name)
}

// taskFields are the offsets in struct task_struct of the members the
// raw tracepoints read, from the running kernel's BTF: read once.
var taskFields = sync.OnceValues(func() (map[string]int, error) {
	b, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		return nil, err
	}
	return structMembers(b, "task_struct", "pid", "prio", "comm")
})
