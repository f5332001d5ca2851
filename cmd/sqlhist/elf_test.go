package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Golden cases describe the binaries their uprobes read as text: a
// section elf/PATH holds one "SYMBOL ADDRESS" line per function. The
// harness turns it into a small x86_64 ELF file with those function
// symbols and one executable PT_LOAD segment mapping file offset
// elfSegOff at address elfSegVaddr, served at /PATH.
const (
	elfSegOff   = 0x1000
	elfSegVaddr = 0x402000
	elfSegSize  = 0x10000
)

// buildELF writes the ELF file a golden case's elf/ section describes.
func buildELF(desc string) ([]byte, error) {
	type sym struct {
		name  string
		value uint64
	}
	var syms []sym
	for _, l := range strings.Split(strings.TrimSpace(desc), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("elf line %q: want SYMBOL ADDRESS", l)
		}
		v, err := strconv.ParseUint(f[1], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("elf line %q: %v", l, err)
		}
		syms = append(syms, sym{f[0], v})
	}
	le := binary.LittleEndian
	strtab := []byte{0}
	symtab := make([]byte, 24) // symbol 0 is the null symbol
	for _, s := range syms {
		e := make([]byte, 24)
		le.PutUint32(e[0:], uint32(len(strtab)))
		e[4] = byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC)
		le.PutUint16(e[6:], uint16(elf.SHN_ABS))
		le.PutUint64(e[8:], s.value)
		le.PutUint64(e[16:], 16)
		symtab = append(symtab, e...)
		strtab = append(strtab, s.name+"\x00"...)
	}
	shstrtab := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	const ehdr, phdr = 64, 56
	symOff := uint64(ehdr + phdr)
	strOff := symOff + uint64(len(symtab))
	shstrOff := strOff + uint64(len(strtab))
	shOff := (shstrOff + uint64(len(shstrtab)) + 7) &^ 7

	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, le, v) }
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	b.Write(make([]byte, 9))
	w(uint16(elf.ET_EXEC))
	w(uint16(elf.EM_X86_64))
	w(uint32(elf.EV_CURRENT))
	w(uint64(elfSegVaddr)) // entry
	w(uint64(ehdr))        // phoff
	w(shOff)
	w(uint32(0))
	w(uint16(ehdr))
	w(uint16(phdr))
	w(uint16(1))
	w(uint16(64))
	w(uint16(4)) // null, .symtab, .strtab, .shstrtab
	w(uint16(3))
	// The executable segment.
	w(uint32(elf.PT_LOAD))
	w(uint32(elf.PF_R | elf.PF_X))
	w(uint64(elfSegOff))
	w(uint64(elfSegVaddr))
	w(uint64(elfSegVaddr))
	w(uint64(elfSegSize))
	w(uint64(elfSegSize))
	w(uint64(0x1000))
	b.Write(symtab)
	b.Write(strtab)
	b.Write(shstrtab)
	b.Write(make([]byte, int(shOff)-b.Len()))
	section := func(name uint32, typ elf.SectionType, off, size uint64, link, info uint32, entsize uint64) {
		w(name)
		w(uint32(typ))
		w(uint64(0))
		w(uint64(0))
		w(off)
		w(size)
		w(link)
		w(info)
		w(uint64(1))
		w(entsize)
	}
	section(0, elf.SHT_NULL, 0, 0, 0, 0, 0)
	section(1, elf.SHT_SYMTAB, symOff, uint64(len(symtab)), 2, 1, 24)
	section(9, elf.SHT_STRTAB, strOff, uint64(len(strtab)), 0, 0, 0)
	section(17, elf.SHT_STRTAB, shstrOff, uint64(len(shstrtab)), 0, 0, 0)
	return b.Bytes(), nil
}

// The harness's ELF files read back with debug/elf as described.
func TestBuildELF(t *testing.T) {
	data, err := buildELF("main.work 0x402345\nmain.main 0x402400\n")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(syms), syms[0].Name, syms[0].Value, syms[1].Name, elf.ST_TYPE(syms[1].Info), len(f.Progs), f.Progs[0].Vaddr)
	if want := fmt.Sprint(2, "main.work", 0x402345, "main.main", elf.STT_FUNC, 1, elfSegVaddr); got != want {
		t.Errorf("read back %s, want %s", got, want)
	}
}
