package planner

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/sqlhist/sqlhist/tracefs"
)

// readBinary reads a uprobe's binary with read (the command's file
// reader; nil when the planner was given none).
func readBinary(read func(string) ([]byte, error), name string) ([]byte, error) {
	if read == nil {
		return nil, fmt.Errorf("%s: sqlhist was given no way to read files", name)
	}
	data, err := read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file", name)
	}
	return data, err
}

// symbolOffset returns the file offset of a function symbol of an ELF
// file (see [elfFuncs.offset]).
func symbolOffset(data []byte, name string) (uint64, error) {
	b, err := readFuncs(data)
	if err != nil {
		return 0, err
	}
	return b.offset(name)
}

// elfFuncs is what uprobes need of a binary, read once per binary: the
// addresses of its functions by name and its executable segments.
type elfFuncs struct {
	addrs   map[string][]uint64
	names   []string
	progs   []*elf.Prog // executable PT_LOAD segments
	machine elf.Machine
	class   elf.Class
}

// readFuncs reads the function symbols and executable segments of an ELF
// file.
func readFuncs(data []byte) (*elfFuncs, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not an ELF file: %v", err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	b := &elfFuncs{addrs: map[string][]uint64{}, machine: f.Machine, class: f.Class}
	if len(syms) == 0 && len(dyn) == 0 {
		return b, nil // stripped: offset says so
	}
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		b.names = append(b.names, s.Name)
		if !slices.Contains(b.addrs[s.Name], s.Value) {
			b.addrs[s.Name] = append(b.addrs[s.Name], s.Value)
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			b.progs = append(b.progs, p)
		}
	}
	return b, nil
}

// offset returns the file offset of the function name: the offset of its
// address within the executable PT_LOAD segment holding it
// (sym.Value - seg.Vaddr + seg.Off), which is what uprobe_events wants.
func (b *elfFuncs) offset(name string) (uint64, error) {
	if len(b.names) == 0 {
		return 0, fmt.Errorf("no symbol table (the binary is stripped): give the file offset instead of %q", name)
	}
	addrs := b.addrs[name]
	switch len(addrs) {
	case 0:
		msg := fmt.Sprintf("no function %q in the symbol table", name)
		if s := nearest(name, b.names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return 0, errors.New(msg)
	case 1:
	default:
		return 0, fmt.Errorf("%d functions are named %q: give the file offset instead", len(addrs), name)
	}
	for _, p := range b.progs {
		if addrs[0] >= p.Vaddr && addrs[0] < p.Vaddr+p.Memsz {
			return addrs[0] - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("function %q (0x%x) is in no executable segment", name, addrs[0])
}

// checkArch refuses a binary built for another machine than the target:
// the kernel would place the probe at an offset that means nothing there.
func (b *elfFuncs) checkArch(arch *tracefs.Arch) error {
	if b.machine == arch.Machine && b.class == arch.Class {
		return nil
	}
	return fmt.Errorf("a binary of %s, and the target is %s: probe a binary built for the target", elfArchName(b.machine, b.class), arch.Name)
}

// elfArchName names an ELF machine and class: an architecture sqlhist
// knows, else the ELF constants.
func elfArchName(m elf.Machine, c elf.Class) string {
	for _, a := range tracefs.Arches {
		if a.Machine == m && a.Class == c {
			return a.Name
		}
	}
	bits := "32-bit"
	if c == elf.ELFCLASS64 {
		bits = "64-bit"
	}
	return fmt.Sprintf("%v (%s)", m, bits)
}

// thumbOnArm refuses Thumb code on 32-bit arm: the kernel's arm uprobes
// decode ARM-mode instructions only and refuse an address that is not
// 4-byte aligned (arch_uprobe_analyze_insn) when the probe is enabled,
// not when it is defined. A Thumb function's symbol has its low bit set.
func thumbOnArm(arch *tracefs.Arch, name string, addr uint64) error {
	if arch.Machine != elf.EM_ARM {
		return nil
	}
	if addr&1 != 0 {
		return fmt.Errorf("function %q is Thumb code (its symbol's address 0x%x is odd): uprobes on 32-bit arm probe ARM-mode code only", name, addr)
	}
	if addr&3 != 0 {
		return fmt.Errorf("offset 0x%x of %q is not 4-byte aligned: uprobes on 32-bit arm probe ARM-mode instructions only", addr, name)
	}
	return nil
}
