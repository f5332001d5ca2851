package bpf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// structMembersAt is structMembers reading the blob through r only as
// far as it must: the string section up to the first place of each name,
// then the type section up to the struct named by that first place.
// vmlinux's BTF holds each string once and lists task_struct among its
// first types (type 114 of 6.18's, its names in the first 2.5 KB of
// strings), so a run reads kilobytes of the 5 MB, with 40 KB of buffers,
// where reading it whole made the run's heap 5 MB larger (page faults as
// it was read, pages freed as the run exits: both paid by every run).
// Where the first places do not give the struct or every member (a blob
// that names a string twice), the blob is read whole and structMembers
// decides.
func structMembersAt(r io.ReaderAt, name string, members ...string) (map[string]int, error) {
	var hb [24]byte
	if n, _ := r.ReadAt(hb[:], 0); n < len(hb) {
		return nil, errors.New("BTF: too short")
	}
	if binary.LittleEndian.Uint16(hb[:]) != btfMagic {
		return nil, errors.New("BTF: not little-endian BTF (magic)")
	}
	hdrLen := int64(binary.LittleEndian.Uint32(hb[4:]))
	tStart := hdrLen + int64(binary.LittleEndian.Uint32(hb[8:]))
	tLen := int64(binary.LittleEndian.Uint32(hb[12:]))
	sStart := hdrLen + int64(binary.LittleEndian.Uint32(hb[16:]))
	sLen := int64(binary.LittleEndian.Uint32(hb[20:]))
	// The sections' last byte is there (the blob is not cut short).
	end := max(tStart+tLen, sStart+sLen)
	if n, _ := r.ReadAt(hb[:1], end-1); n < 1 || end > 1<<28 {
		return nil, errors.New("BTF: sections past the end")
	}
	whole := func() (map[string]int, error) {
		b := make([]byte, end)
		if n, _ := r.ReadAt(b, 0); n < len(b) {
			return nil, errors.New("BTF: sections past the end")
		}
		return structMembers(b, name, members...)
	}

	// The first place of each name in the string section.
	want := append([]string{name}, members...)
	first := map[string]uint32{}
	sr := bufio.NewReaderSize(io.NewSectionReader(r, sStart, sLen), 8<<10)
	pos := uint32(0)
	for long := false; len(first) < len(want); {
		s, err := sr.ReadSlice(0)
		if err == bufio.ErrBufferFull {
			// Longer than the buffer: none of the names; skip to its end.
			pos += uint32(len(s))
			long = true
			continue
		}
		if err != nil {
			pos += uint32(len(s))
			break // the section's end: the names not found are in no string
		}
		if !long {
			for _, w := range want {
				if _, ok := first[w]; !ok && string(s[:len(s)-1]) == w {
					first[w] = pos
				}
			}
		}
		pos += uint32(len(s))
		long = false
	}
	at, ok := first[name]
	if !ok {
		if int64(pos) < sLen {
			return nil, errors.New("BTF: sections past the end")
		}
		// The whole string section read: no type has that name.
		return nil, fmt.Errorf("BTF: no struct %s", name)
	}

	// The type section, up to the struct of that name.
	tr := bufio.NewReaderSize(io.NewSectionReader(r, tStart, tLen), 32<<10)
	var th [12]byte
	for {
		if _, err := io.ReadFull(tr, th[:]); err != nil {
			if err == io.EOF {
				return whole() // named by another copy of the string, or absent
			}
			return nil, errors.New("BTF: a type runs past the type section")
		}
		nameOff := binary.LittleEndian.Uint32(th[:])
		info := binary.LittleEndian.Uint32(th[4:])
		kind, vlen, kflag := (info>>24)&0x1f, info&0xffff, info>>31 == 1
		extra, err := btfKindExtra(kind, vlen)
		if err != nil {
			return nil, err
		}
		if kind != btfKindStruct || nameOff != at {
			if n, _ := tr.Discard(extra); n < extra {
				return nil, errors.New("BTF: a type runs past the type section")
			}
			continue
		}
		ms := make([]byte, extra)
		if _, err := io.ReadFull(tr, ms); err != nil {
			return nil, errors.New("BTF: a type runs past the type section")
		}
		out := map[string]int{}
		for i := 0; i < int(vlen); i++ {
			m := ms[12*i:]
			mOff, off := binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[8:])
			if kflag {
				if off>>24 != 0 {
					continue // a bitfield
				}
				off &= 0xffffff
			}
			for _, w := range members {
				if f, ok := first[w]; ok && f == mOff && off%8 == 0 {
					out[w] = int(off / 8)
				}
			}
		}
		for _, w := range members {
			if _, ok := out[w]; !ok {
				return whole() // a member not found may be named by another copy
			}
		}
		return out, nil
	}
}

// taskFields are the offsets in struct task_struct of the members the
// raw tracepoints read, from the running kernel's BTF: read once.
var taskFields = sync.OnceValues(func() (map[string]int, error) {
	f, err := os.Open("/sys/kernel/btf/vmlinux")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return structMembersAt(f, "task_struct", "pid", "prio", "comm")
})
