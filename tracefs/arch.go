package tracefs

import (
	"debug/elf"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Arch is a target machine as far as tracing cares: the register names
// probes may read, the size of a long and a pointer, and the ELF machine
// and class of its binaries (for uprobes).
type Arch struct {
	Name   string // as uname -m names it, but "arm" for every 32-bit arm
	Debian string // Debian's architecture: amd64, arm64, armhf, riscv64
	Bits   int    // 64 or 32: unsigned long and pointers are Bits/8 bytes

	// Regs are the register names kprobes and uprobes accept after %
	// (regs_query_register_offset of the architecture's ptrace.c).
	Regs []string
	// ArgRegs are the registers of the first integer arguments in the
	// calling convention: what a uprobe reads instead of $argN.
	ArgRegs []string

	Machine elf.Machine
	Class   elf.Class
}

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// Arches are the architectures sqlhist knows, x86_64 first (the default).
var Arches = []*Arch{
	{
		Name: "x86_64", Debian: "amd64", Bits: 64,
		Regs: []string{"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11",
			"r12", "r13", "r14", "r15", "ip", "flags", "cs", "ss", "orig_ax"},
		ArgRegs: []string{"di", "si", "dx", "cx", "r8", "r9"},
		Machine: elf.EM_X86_64, Class: elf.ELFCLASS64,
	},
	{
		Name: "arm64", Debian: "arm64", Bits: 64,
		Regs:    append(numbered("x", 0, 30), "lr", "sp", "pc", "pstate"),
		ArgRegs: numbered("x", 0, 7),
		Machine: elf.EM_AARCH64, Class: elf.ELFCLASS64,
	},
	{
		Name: "arm", Debian: "armhf", Bits: 32,
		Regs:    append(numbered("r", 0, 10), "fp", "ip", "sp", "lr", "pc", "cpsr", "ORIG_r0"),
		ArgRegs: numbered("r", 0, 3),
		Machine: elf.EM_ARM, Class: elf.ELFCLASS32,
	},
	{
		Name: "riscv64", Debian: "riscv64", Bits: 64,
		Regs: append(append(append([]string{"epc", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1"},
			numbered("a", 0, 7)...), numbered("s", 2, 11)...), "t3", "t4", "t5", "t6"),
		ArgRegs: numbered("a", 0, 7),
		Machine: elf.EM_RISCV, Class: elf.ELFCLASS64,
	},
}

// archAliases maps the names people and tools use to Arches' names.
var archAliases = map[string]string{
	"x86_64": "x86_64", "amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64",
	"arm64": "arm64", "aarch64": "arm64",
	"arm": "arm", "armhf": "arm", "armv7": "arm", "armv7l": "arm", "armv8l": "arm", "armv6l": "arm", "armel": "arm",
	"riscv64": "riscv64",
}

// LookupArch returns the architecture of a name: x86_64 or amd64, arm64
// or aarch64, arm or armhf (or uname -m's armv7l), riscv64.
func LookupArch(name string) (*Arch, error) {
	if n, ok := archAliases[strings.ToLower(strings.TrimSpace(name))]; ok {
		for _, a := range Arches {
			if a.Name == n {
				return a, nil
			}
		}
	}
	var names []string
	for _, a := range Arches {
		names = append(names, a.Name)
	}
	return nil, fmt.Errorf("unknown architecture %q (known: %s)", name, strings.Join(names, ", "))
}

// HasReg reports whether the architecture's probes read register name.
func (a *Arch) HasReg(name string) bool { return slices.Contains(a.Regs, name) }

// RegList is the registers as a probe writes them: "%x0 %x1 … %pstate".
func (a *Arch) RegList() string {
	out := make([]string, len(a.Regs))
	for i, r := range a.Regs {
		out[i] = "%" + r
	}
	return strings.Join(out, " ")
}

// ArgRegList is the calling convention's argument registers: "%di %si …".
func (a *Arch) ArgRegList() string {
	out := make([]string, len(a.ArgRegs))
	for i, r := range a.ArgRegs {
		out[i] = "%" + r
	}
	return strings.Join(out, " ")
}

// LongSize is the size of unsigned long and of pointers.
func (a *Arch) LongSize() int { return a.Bits / 8 }

// SetArch records the target's architecture and where it was learned
// ("--arch", "the running machine"); it overrides what the catalog tells.
func (c *Catalog) SetArch(a *Arch, how string) { c.arch, c.archHow = a, how }

// Arch returns the target's architecture and how it was learned: given
// (SetArch), the catalog's ARCH file (uname -m at capture), the kernel
// release's Debian suffix (-amd64, -arm64, -armmp…), or what the event
// formats show (the size of raw_syscalls' args, events only one
// architecture has). When nothing tells, it is x86_64, "assumed".
func (c *Catalog) Arch() (*Arch, string) {
	if c.arch != nil {
		return c.arch, c.archHow
	}
	c.archOnce.Do(func() { c.inferred, c.inferredHow = c.inferArch() })
	return c.inferred, c.inferredHow
}

func (c *Catalog) inferArch() (*Arch, string) {
	if data, err := fs.ReadFile(c.fsys, "ARCH"); err == nil {
		if a, err := LookupArch(string(data)); err == nil {
			return a, "the catalog's ARCH"
		}
	}
	release := c.release
	if data, err := fs.ReadFile(c.fsys, "VERSION"); err == nil {
		release = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
	}
	if a := archOfRelease(release); a != nil {
		return a, "the kernel release"
	}
	if a := c.archOfEvents(); a != nil {
		return a, "the event formats"
	}
	return Arches[0], "assumed"
}

// archOfRelease reads a Debian kernel release's flavour suffix.
func archOfRelease(release string) *Arch {
	for _, s := range []struct{ suffix, arch string }{
		{"-amd64", "x86_64"}, {"-arm64", "arm64"}, {"-armmp", "arm"}, {"-armmp-lpae", "arm"},
		{"-rpi", "arm"}, {"-riscv64", "riscv64"},
	} {
		if strings.HasSuffix(release, s.suffix) {
			a, _ := LookupArch(s.arch)
			return a
		}
	}
	return nil
}

// archOfEvents tells the architecture from the event catalog: events of
// one architecture only, and the word size (raw_syscalls/sys_enter has six
// unsigned long args: 48 bytes on 64-bit, 24 on 32-bit).
func (c *Catalog) archOfEvents() *Arch {
	bits := 0
	if ev, err := c.Event("raw_syscalls", "sys_enter"); err == nil {
		if f := ev.Field("args"); f != nil {
			switch f.Size {
			case 48:
				bits = 64
			case 24:
				bits = 32
			}
		}
	}
	has := func(system, event string) bool { return c.exists("events/" + system + "/" + event) }
	pick := func(name string) *Arch { a, _ := LookupArch(name); return a }
	switch {
	case c.exists("events/irq_vectors") || c.exists("events/x86_fpu") || has("syscalls", "sys_enter_arch_prctl"):
		if bits != 32 {
			return pick("x86_64")
		}
	case has("syscalls", "sys_enter_riscv_flush_icache"):
		return pick("riscv64")
	case bits == 32 && (has("syscalls", "sys_enter_arm_fadvise64_64") || has("syscalls", "sys_enter_sync_file_range2")):
		return pick("arm")
	case bits == 64 && c.hasArm64Events():
		return pick("arm64")
	}
	return nil
}

// hasArm64Events looks for the systems only arm64 kernels have.
func (c *Catalog) hasArm64Events() bool {
	for _, s := range arm64Systems {
		if c.exists("events/" + s) {
			return true
		}
	}
	return false
}

// arm64Systems are event systems of Debian's arm64 kernels (6.1, 6.12,
// 7.2) that its x86_64 and armhf ones do not have.
var arm64Systems = []string{"emulation", "rpmh", "scmi"}

// exists reports whether the catalog has a file or directory.
func (c *Catalog) exists(name string) bool {
	_, err := fs.Stat(c.fsys, name)
	return err == nil
}

// ArgAccess reports whether kprobes of the architecture read $argN
// (HAVE_FUNCTION_ARG_ACCESS_API, Linux 4.20): x86_64 and arm64 have it,
// 32-bit arm and riscv64 in the kernels sqlhist knows do not.
func (a *Arch) ArgAccess() bool { return a.Name == "x86_64" || a.Name == "arm64" }
