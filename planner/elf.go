package planner

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"slices"
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
// file: the offset of the symbol's address within the executable PT_LOAD
// segment holding it (sym.Value - seg.Vaddr + seg.Off), which is what
// uprobe_events wants.
func symbolOffset(data []byte, name string) (uint64, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("not an ELF file: %v", err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	if len(syms) == 0 && len(dyn) == 0 {
		return 0, fmt.Errorf("no symbol table (the binary is stripped): give the file offset instead of %q", name)
	}
	var addrs []uint64
	var names []string
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		names = append(names, s.Name)
		if s.Name == name && !slices.Contains(addrs, s.Value) {
			addrs = append(addrs, s.Value)
		}
	}
	switch len(addrs) {
	case 0:
		msg := fmt.Sprintf("no function %q in the symbol table", name)
		if s := nearest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return 0, errors.New(msg)
	case 1:
	default:
		return 0, fmt.Errorf("%d functions are named %q: give the file offset instead", len(addrs), name)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addrs[0] >= p.Vaddr && addrs[0] < p.Vaddr+p.Memsz {
			return addrs[0] - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("function %q (0x%x) is in no executable segment", name, addrs[0])
}
