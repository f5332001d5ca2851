package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
	"golang.org/x/tools/txtar"
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

// buildELF writes the ELF file a golden case's elf/ section describes. A
// first line "machine arm64" (or arm, riscv64) makes a binary of that
// architecture: 32-bit for arm. The default is x86_64.
func buildELF(desc string) ([]byte, error) {
	type sym struct {
		name  string
		value uint64
	}
	var syms []sym
	machine, class := elf.EM_X86_64, elf.ELFCLASS64
	for _, l := range strings.Split(strings.TrimSpace(desc), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "machine" {
			a, err := tracefs.LookupArch(f[1])
			if err != nil {
				return nil, fmt.Errorf("elf line %q: %v", l, err)
			}
			machine, class = a.Machine, a.Class
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("elf line %q: want SYMBOL ADDRESS", l)
		}
		v, err := strconv.ParseUint(f[1], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("elf line %q: %v", l, err)
		}
		syms = append(syms, sym{f[0], v})
	}
	is64 := class == elf.ELFCLASS64
	le := binary.LittleEndian
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, le, v) }
	// addr writes an address or offset: 8 bytes in ELF64, 4 in ELF32.
	addr := func(v uint64) {
		if is64 {
			w(v)
		} else {
			w(uint32(v))
		}
	}
	symSize, ehdr, phdr, shdr := 24, 64, 56, 64
	if !is64 {
		symSize, ehdr, phdr, shdr = 16, 52, 32, 40
	}
	strtab := []byte{0}
	var symtab bytes.Buffer
	symtab.Write(make([]byte, symSize)) // symbol 0 is the null symbol
	info := byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC)
	for _, s := range syms {
		e := make([]byte, symSize)
		le.PutUint32(e[0:], uint32(len(strtab)))
		if is64 {
			e[4] = info
			le.PutUint16(e[6:], uint16(elf.SHN_ABS))
			le.PutUint64(e[8:], s.value)
			le.PutUint64(e[16:], 16)
		} else {
			le.PutUint32(e[4:], uint32(s.value))
			le.PutUint32(e[8:], 16)
			e[12] = info
			le.PutUint16(e[14:], uint16(elf.SHN_ABS))
		}
		symtab.Write(e)
		strtab = append(strtab, s.name+"\x00"...)
	}
	shstrtab := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	symOff := uint64(ehdr + phdr)
	strOff := symOff + uint64(symtab.Len())
	shstrOff := strOff + uint64(len(strtab))
	shOff := (shstrOff + uint64(len(shstrtab)) + 7) &^ 7

	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(class), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	b.Write(make([]byte, 9))
	w(uint16(elf.ET_EXEC))
	w(uint16(machine))
	w(uint32(elf.EV_CURRENT))
	addr(elfSegVaddr)  // entry
	addr(uint64(ehdr)) // phoff
	addr(shOff)
	w(uint32(0))
	w(uint16(ehdr))
	w(uint16(phdr))
	w(uint16(1))
	w(uint16(shdr))
	w(uint16(4)) // null, .symtab, .strtab, .shstrtab
	w(uint16(3))
	// The executable segment (ELF32 puts p_flags after p_memsz).
	w(uint32(elf.PT_LOAD))
	if is64 {
		w(uint32(elf.PF_R | elf.PF_X))
	}
	addr(elfSegOff)
	addr(elfSegVaddr)
	addr(elfSegVaddr)
	addr(elfSegSize)
	addr(elfSegSize)
	if !is64 {
		w(uint32(elf.PF_R | elf.PF_X))
	}
	addr(0x1000)
	b.Write(symtab.Bytes())
	b.Write(strtab)
	b.Write(shstrtab)
	b.Write(make([]byte, int(shOff)-b.Len()))
	section := func(name uint32, typ elf.SectionType, off, size uint64, link, info uint32, entsize uint64) {
		w(name)
		w(uint32(typ))
		addr(0) // flags
		addr(0) // addr
		addr(off)
		addr(size)
		w(link)
		w(info)
		addr(1)
		addr(entsize)
	}
	section(0, elf.SHT_NULL, 0, 0, 0, 0, 0)
	section(1, elf.SHT_SYMTAB, symOff, uint64(symtab.Len()), 2, 1, uint64(symSize))
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
	for _, m := range []struct {
		name    string
		machine elf.Machine
		class   elf.Class
	}{{"arm64", elf.EM_AARCH64, elf.ELFCLASS64}, {"arm", elf.EM_ARM, elf.ELFCLASS32}} {
		data, err := buildELF("machine " + m.name + "\nmain.main 0x402401\n")
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		syms, err := f.Symbols()
		if err != nil || len(syms) != 1 {
			t.Fatalf("%s: symbols %v, %v", m.name, syms, err)
		}
		got := fmt.Sprint(f.Machine, f.Class, syms[0].Name, syms[0].Value, elf.ST_TYPE(syms[0].Info), len(f.Progs), f.Progs[0].Off, f.Progs[0].Vaddr, f.Progs[0].Flags)
		want := fmt.Sprint(m.machine, m.class, "main.main", 0x402401, elf.STT_FUNC, 1, elfSegOff, elfSegVaddr, elf.PF_R|elf.PF_X)
		if got != want {
			t.Errorf("%s: read back %s, want %s", m.name, got, want)
		}
	}
}

// For 32-bit arm (--kernel 6.1 --arch arm): a Thumb function (odd symbol
// address) is refused, an ARM-mode one resolves to its file offset, x86
// registers are refused with arm's, and so is $argN, which the kernel's
// kprobes lack there.
func TestArmTarget(t *testing.T) {
	a := txtar.Parse([]byte(`-- query.sql --
SELECT n FROM uprobe('/opt/app', "thumbfn", n=%r0:s32);
SELECT n FROM uprobe('/opt/app', "armfn", n=%r0:s32);
SELECT n FROM uprobe('/opt/app', "armfn", n=%di:s32);
SELECT n FROM kprobe(do_sys_openat2, n=$arg1:s32);
SELECT n FROM uprobe('/opt/app', 0x1346, n=%r0:s32)
-- elf/opt/app --
machine arm
thumbfn 0x402345
armfn 0x402344
`))
	got := runCaseOn(t, a, "6.1-armhf")
	for _, want := range []string{
		`query.sql:1:34: /opt/app: function "thumbfn" is Thumb code (its symbol's address 0x402345 is odd): uprobes on 32-bit arm probe ARM-mode code only`,
		"query.sql:3:45: arm has no register %di: its probes read %r0 %r1",
		"hint: the target is arm (--arch)",
		"query.sql:4:40: this kernel cannot read $argN: its architecture (arm) has no function-argument access for kprobes",
		"hint: read the argument's register instead: %r0 %r1 %r2 %r3 hold the first arguments at the function's entry",
		"query.sql:5:34: /opt/app: offset 0x1346 is not 4-byte aligned",
	} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
		}
	}
	if strings.Contains(got.stderr, "query.sql:2:") || got.code != exitQuery {
		t.Errorf("exit %d; the ARM-mode function was refused:\n%s", got.code, got.stderr)
	}
	// Alone, the ARM-mode function compiles to its file offset.
	a.Files[0].Data = []byte(`SELECT n FROM uprobe('/opt/app', "armfn", n=%r0:s32)`)
	got = runCaseOn(t, a, "6.1-armhf")
	if got.code != exitOK || !strings.Contains(got.stdout, "/opt/app:0x1344 n=%r0:s32") {
		t.Errorf("exit %d:\n%s%s", got.code, got.stdout, got.stderr)
	}
}
