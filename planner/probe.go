package planner

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// ProbeGroup is the event group of the probes sqlhist creates; a --run
// uses ProbeGroup_<Suffix>, so that concurrent runs do not collide.
const ProbeGroup = "sqlhist"

// probeGroup is the group of this plan's probes.
func (p *planner) probeGroup() string {
	if p.opt.ProbeGroup != "" {
		return p.opt.ProbeGroup
	}
	if p.opt.Suffix != "" {
		return ProbeGroup + "_" + p.opt.Suffix
	}
	return ProbeGroup
}

// maxEventNameLen is the longest name of a probe event: the kernel's
// MAX_EVENT_NAME_LEN (64) holds its terminating NUL, so a 64-character
// name is refused ("Event name is too long", seen in 6.1 and by the
// refusal audit, e2e/audit_test.go).
const maxEventNameLen = 63

// Probe is a dynamic event (kprobe, kretprobe, uprobe, uretprobe or
// eprobe) that the script creates before the triggers that use it.
type Probe struct {
	Kind     compiler.ProbeKind
	Group    string // the event group: ProbeGroup, or ProbeGroup_<Suffix> for a --run
	Name     string // the event name in Group
	Line     string // the dynamic_events definition: "p:sqlhist/NAME PLACE ARGS" (Definition)
	Pos, End source.Pos
	// Module and Symbol are a kprobe's function as written (Module ""
	// when none); Path and Symbol a uprobe's binary and function (Symbol
	// "" for an offset). SymPos, SymEnd span the function, TargetPos,
	// TargetEnd a uprobe's binary: where a target that lacks them is
	// told (the planner checks what it can read: a uprobe's ELF file).
	Module, Symbol, Path string
	SymPos, SymEnd       source.Pos
	TargetPos, TargetEnd source.Pos
	// The definition as values, which Line writes as text: Return is
	// set on a return probe (kretprobe, uretprobe, SYMBOL%return);
	// Offset is a kprobe's SYMBOL+OFFSET or a uprobe's offset in the
	// file Path; Event an eprobe's event, "system.event"; Args the
	// fields the probe records.
	Return bool
	Offset uint64
	Event  string
	Args   []ProbeArg
}

// ProbeArg is one field a probe records: NAME=FETCHARG[:TYPE].
type ProbeArg struct {
	Name  string
	Type  string // "" for the kernel's default (the word)
	Fetch *compiler.Fetch
}

// String renders the argument as the probe's definition writes it.
func (a ProbeArg) String() string {
	s := a.Name + "=" + a.Fetch.String()
	if a.Type != "" {
		s += ":" + a.Type
	}
	return s
}

// Definition renders the probe's definition from its values: Line.
func (pr *Probe) Definition() string {
	var letter, place string
	switch pr.Kind {
	case compiler.KProbe, compiler.KRetProbe:
		letter, place = "p", pr.Symbol
		if pr.Module != "" {
			place = pr.Module + ":" + place
		}
		if pr.Offset != 0 {
			place += "+" + strconv.FormatUint(pr.Offset, 10)
		}
		switch {
		case pr.Kind == compiler.KRetProbe:
			letter = "r"
		case pr.Return:
			place += "%return"
		}
	case compiler.UProbe, compiler.URetProbe:
		letter, place = "p", fmt.Sprintf("%s:0x%x", pr.Path, pr.Offset)
		if pr.Kind == compiler.URetProbe {
			letter = "r"
		}
	case compiler.EProbe:
		letter, place = "e", pr.Event
	}
	parts := []string{letter + ":" + pr.Group + "/" + pr.Name, place}
	for _, a := range pr.Args {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, " ")
}

// binary is a uprobe binary as read for this compile: once per path,
// however many probes name it.
type binary struct {
	funcs             *elfFuncs
	readErr, parseErr error
}

// binary reads and parses the ELF file at path, or returns it from the
// first time.
func (p *planner) binary(path string) *binary {
	if b, ok := p.probes.binaries[path]; ok {
		return b
	}
	b := &binary{}
	data, err := readBinary(p.opt.ReadFile, path)
	if err != nil {
		b.readErr = err
	} else {
		b.funcs, b.parseErr = readFuncs(data)
	}
	if p.probes.binaries == nil {
		p.probes.binaries = map[string]*binary{}
	}
	p.probes.binaries[path] = b
	return b
}

// probeState is what the planner knows about the probes of a script:
// their definitions by name, to share identical ones and keep names unique.
type probeState struct {
	byDef    map[string]*Probe // "PLACE ARGS" (with the type letter) → probe
	byName   map[string]*Probe
	binaries map[string]*binary // uprobe binaries read, by path
}

// probeSource plans the probe named in t: it checks the definition
// against the catalog, names the event, defines it in the catalog with
// the fields the kernel will create, and points t.Name at it. New probes
// are appended to *out. It returns false after reporting an error.
func (p *planner) probeSource(t *compiler.TableRef, out *[]*Probe) bool {
	pr := t.Probe
	before := len(p.diags.Errors())
	var place, base, letter, event string
	var offset uint64
	var src *tracefs.Event
	switch pr.Kind {
	case compiler.KProbe, compiler.KRetProbe:
		if arch, _ := p.cat.Arch(); arch.Name == "riscv64" {
			x := p.diags.Add(pr.Pos, pr.End, "kprobes record nothing on riscv64: the kernel takes a kprobe's breakpoint as an NMI, and its ring buffer refuses writes in NMI context there (RISC-V has no NMI-safe cmpxchg, the reason it has no hist triggers either); a probe at a function's entry is refused besides (no KPROBES_ON_FTRACE), seen in Debian's 6.12 riscv64 kernel")
			x.Hint = "trace a tracepoint (sqlhist --list-events), or a uprobe, which records there"
			return false
		}
		place, base, letter = p.kprobePlace(pr)
		offset = pr.Offset
	case compiler.UProbe, compiler.URetProbe:
		place, base, letter, offset = p.uprobePlace(pr)
	case compiler.EProbe:
		src = p.eprobeSource(pr)
		if src != nil {
			event = src.System + "." + src.Name
			place, base, letter = event, src.Name, "e"
		}
	}
	p.checkArgs(pr)
	if len(p.diags.Errors()) > before {
		return false
	}
	args := make([]string, len(pr.Args))
	for i, a := range pr.Args {
		args[i] = a.Text()
	}
	where := strings.TrimSpace(place + " " + strings.Join(args, " ")) // PLACE ARGS
	def := letter + " " + where
	probe := p.probes.byDef[def]
	if probe == nil {
		name := sanitizeEventName(base)
		if len(name) > maxEventNameLen {
			p.diags.Add(pr.TargetPos, pr.TargetEnd, "probe event name %q is %d characters; the kernel takes at most %d", name, len(name), maxEventNameLen)
			return false
		}
		name = p.uniqueProbeName(name)
		probe = &Probe{Kind: pr.Kind, Group: p.probeGroup(), Name: name, Pos: pr.Pos, End: pr.End,
			Module: pr.Module, Symbol: pr.Symbol, Path: pr.Path,
			SymPos: pr.SymPos, SymEnd: pr.SymEnd, TargetPos: pr.TargetPos, TargetEnd: pr.TargetEnd,
			Return: pr.Return, Offset: offset, Event: event}
		for _, a := range pr.Args {
			probe.Args = append(probe.Args, ProbeArg{Name: a.Name, Type: a.Type, Fetch: a.Loc})
		}
		probe.Line = probe.Definition()
		p.probes.byDef[def] = probe
		p.probes.byName[name] = probe
		*out = append(*out, probe)
		p.cat.Define(p.probeEvent(probe, pr))
	}
	t.Name = &compiler.Name{Pos: t.Name.Pos, End: t.Name.End, Parts: []*compiler.Ident{
		{Name: p.probeGroup(), Pos: t.Name.Pos, End: t.Name.End},
		{Name: probe.Name, Pos: t.Name.Pos, End: t.Name.End}}}
	return true
}

// uniqueProbeName returns name, or name_2, name_3 … when another probe
// of the script already has it.
func (p *planner) uniqueProbeName(name string) string {
	n := name
	for i := 2; p.probes.byName[n] != nil; i++ {
		suffix := fmt.Sprintf("_%d", i)
		n = name[:min(len(name), maxEventNameLen-len(suffix))] + suffix
	}
	return n
}

// sanitizeEventName makes s a C identifier: other bytes become '_', and a
// leading digit gets a '_' in front.
func sanitizeEventName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// kprobePlace returns the kernel place of a kprobe or kretprobe, the base
// of its event name and its type letter.
func (p *planner) kprobePlace(pr *compiler.Probe) (place, base, letter string) {
	place = pr.Symbol
	if pr.Module != "" {
		place = pr.Module + ":" + place
	}
	base = pr.Symbol
	if pr.Offset != 0 {
		place += fmt.Sprintf("+%d", pr.Offset)
		base += fmt.Sprintf("_%d", pr.Offset)
	}
	letter = "p"
	switch {
	case pr.Kind == compiler.KRetProbe:
		letter = "r"
		base += "__return"
	case pr.Return:
		place += "%return"
		base += "__return"
	}
	return place, base, letter
}

// uprobePlace resolves a uprobe's symbol to a file offset in its binary.
func (p *planner) uprobePlace(pr *compiler.Probe) (place, base, letter string, off uint64) {
	off = pr.Address
	base = path.Base(pr.Path) + "_" + pr.Symbol
	if pr.HasAddress {
		base = path.Base(pr.Path) + fmt.Sprintf("_0x%x", pr.Address)
		if arch, _ := p.cat.Arch(); thumbOnArm(arch, fmt.Sprintf("0x%x", pr.Address), pr.Address) != nil {
			p.diags.Add(pr.SymPos, pr.SymEnd, "%s: offset 0x%x is not 4-byte aligned: uprobes on 32-bit arm probe ARM-mode instructions only", pr.Path, pr.Address)
			return "", "", "", 0
		}
	} else {
		bin := p.binary(pr.Path)
		if bin.readErr != nil {
			p.diags.Add(pr.TargetPos, pr.TargetEnd, "cannot read the binary: %v", bin.readErr)
			return "", "", "", 0
		}
		arch, how := p.cat.Arch()
		if bin.parseErr == nil {
			if err := bin.funcs.checkArch(arch); err != nil {
				x := p.diags.Add(pr.TargetPos, pr.TargetEnd, "%s is %v", pr.Path, err)
				x.Hint = archHint(arch, how)
				return "", "", "", 0
			}
		}
		err := bin.parseErr
		if err == nil {
			off, err = bin.funcs.offset(pr.Symbol)
		}
		if err == nil {
			err = thumbOnArm(arch, pr.Symbol, bin.funcs.addrs[pr.Symbol][0])
		}
		if err != nil {
			p.diags.Add(pr.SymPos, pr.SymEnd, "%s: %v", pr.Path, err)
			return "", "", "", 0
		}
		p.note("uprobe: %s in %s is at file offset 0x%x", pr.Symbol, pr.Path, off)
	}
	letter = "p"
	if pr.Kind == compiler.URetProbe {
		letter = "r"
		base += "__return"
	}
	return fmt.Sprintf("%s:0x%x", pr.Path, off), base, letter, off
}

// eprobeSource resolves the event an eprobe attaches to.
func (p *planner) eprobeSource(pr *compiler.Probe) *tracefs.Event {
	if !p.feat.Eprobes {
		p.diags.Add(pr.Pos, pr.End, "%s", p.feat.Lacks("an event probe (eprobe)", "eprobes"))
		return nil
	}
	r := &resolver{cat: p.cat, feat: p.feat, diags: p.diags}
	ev := r.event(pr.Event)
	if ev == nil {
		return nil
	}
	arch, _ := p.cat.Arch()
	for _, a := range pr.Args {
		for _, f := range a.Fields {
			fl := ev.Field(f.Name)
			if fl == nil {
				errUnknownField(p.diags, f.Pos, f.End, f.Name, ev.FullName(), ev.FieldNames())
				continue
			}
			if arch.Bits == 32 && strings.Contains(fl.Decl, "*") {
				// Seen in Debian's armhf 6.1: $filename of
				// sys_enter_openat read as 0x34, 0xc, 0x6d (the trace shows
				// 0x15b411c), its string as (fault); int fields are right.
				x := p.diags.Add(f.Pos, f.End, "%s is a pointer (%s), and on 32-bit %s the kernel's eprobes misread pointer fields", f.Name, fl.Decl, arch.Name)
				x.Hint = "seen in Linux 6.1 on arm; read the value with a kprobe on the function that receives it instead"
			}
		}
	}
	return ev
}

// checkArgs applies the rules that depend on the kernel and on its
// architecture.
func (p *planner) checkArgs(pr *compiler.Probe) {
	arch, how := p.cat.Arch()
	for _, a := range pr.Args {
		if strings.Contains(a.Fetch, "$arg") && !p.feat.ProbeArgs && (pr.Kind == compiler.KProbe || pr.Kind == compiler.KRetProbe) {
			msg := p.feat.Lacks("reading $argN in a kprobe", "probe-args")
			if !arch.ArgAccess() {
				msg = fmt.Sprintf("this kernel cannot read $argN: its architecture (%s) has no function-argument access for kprobes", arch.Name)
			}
			x := p.diags.Add(a.FetchPos, a.End, "%s", msg)
			x.Hint = "read the argument's register instead: " + arch.ArgRegList() + " hold the first arguments at the function's entry"
			continue
		}
		for _, r := range a.Regs {
			if !arch.HasReg(r.Name) {
				x := p.diags.Add(r.Pos, r.End, "%s has no register %%%s: its probes read %s", arch.Name, r.Name, arch.RegList())
				x.Hint = archHint(arch, how)
			}
		}
		if pr.Kind == compiler.KRetProbe || pr.Return && pr.Kind == compiler.KProbe {
			if strings.Contains(a.Fetch, "$arg") && !p.feat.RetprobeArgs {
				x := p.diags.Add(a.FetchPos, a.End, "%s", p.feat.Lacks("reading $argN in a return probe", "retprobe-args"))
				x.Hint = "read the argument in a kprobe on the entry and JOIN the two"
			}
		}
	}
}

// probeEvent returns the event the kernel will create for a probe: the
// common fields, the probe's own fields, then one field per argument,
// typed as the kernel's format file types them.
func (p *planner) probeEvent(probe *Probe, pr *compiler.Probe) *tracefs.Event {
	arch, _ := p.cat.Arch()
	return probeFormat(probe, p.commonFields(), arch)
}

// ProbeFormat describes the event the kernel would create for a probe of
// the plan, as the planner typed it (the fields its triggers were checked
// against), with the kernel's common fields (nil: the default ones) on
// arch: what the BPF engine, which creates no probe event, reads the
// probe's record as.
func ProbeFormat(probe *Probe, common []*tracefs.Field, arch *tracefs.Arch) *tracefs.Event {
	if len(common) == 0 {
		common = defaultCommonFields()
	}
	if arch == nil {
		arch = tracefs.Arches[0]
	}
	return probeFormat(probe, common, arch)
}

func probeFormat(probe *Probe, common []*tracefs.Field, arch *tracefs.Arch) *tracefs.Event {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: 0\nformat:\n", probe.Name)
	off := 0
	for _, f := range common {
		fmt.Fprintf(&b, "\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", f.Decl, f.Name, f.Offset, f.Size, b2i(f.Signed))
		off = max(off, f.Offset+f.Size)
	}
	b.WriteString("\n")
	field := func(decl, name string, size int, signed bool) {
		fmt.Fprintf(&b, "\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", decl, name, off, size, b2i(signed))
		off += size
	}
	word := arch.LongSize()
	off = (off + word - 1) &^ (word - 1)
	switch {
	case probe.Kind == compiler.EProbe:
	case probe.Return:
		field("unsigned long", "__probe_func", word, false)
		field("unsigned long", "__probe_ret_ip", word, false)
	default:
		field("unsigned long", "__probe_ip", word, false)
	}
	for _, a := range probe.Args {
		decl, size, signed, count := argFieldType(a.Type, arch.Bits)
		name := a.Name
		if count > 0 {
			name += "[]"
			size *= count
		}
		field(decl, name, size, signed)
	}
	b.WriteString("\nprint fmt: \"\"\n")
	ev, err := tracefs.ParseFormat(probe.Group, b.String())
	if err != nil {
		panic("sqlhist internal error: probe event format: " + err.Error())
	}
	return ev
}

// argFieldType returns how the kernel declares an argument's field
// (traceprobe_define_arg_fields): x types show as u types, symbols and
// untyped arguments as the word (u64, or u32 on a 32-bit target), strings
// as __data_loc char[].
func argFieldType(typ string, bits int) (decl string, size int, signed bool, count int) {
	base := typ
	if k := strings.IndexByte(typ, '['); k >= 0 {
		fmt.Sscanf(typ[k:], "[%d]", &count)
		base = typ[:k]
	}
	switch {
	case base == "" || base == "symbol":
		return "u" + strconv.Itoa(bits), bits / 8, false, count
	case base == "string" || base == "ustring":
		return "__data_loc char[]", 4, true, count
	}
	var width int
	fmt.Sscanf(base[1:], "%d", &width)
	switch base[0] {
	case 's':
		return base, width / 8, true, count
	case 'x':
		return "u" + base[1:], width / 8, false, count
	}
	return base, width / 8, false, count
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// commonFields returns the common_ fields of the catalog's events (every
// event of a kernel has the same), read from sched_switch.
func (p *planner) commonFields() []*tracefs.Field {
	var out []*tracefs.Field
	if ev, err := p.cat.Event("sched", "sched_switch"); err == nil {
		for _, f := range ev.Fields {
			if f.IsCommon() {
				out = append(out, f)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	return defaultCommonFields()
}

// archHint says where the target's architecture was learned and how to
// choose another.
func archHint(arch *tracefs.Arch, how string) string {
	if how == "--arch" {
		return "the target is " + arch.Name + " (--arch)"
	}
	if how == "assumed" {
		return "nothing tells the target's architecture, so it is taken to be " + arch.Name + "; --arch NAME gives it"
	}
	return "the target is " + arch.Name + ", as " + how + " tells; --arch NAME gives another"
}

// wordSize is the size of unsigned long and pointers on the target.
func (p *planner) wordSize() int {
	arch, _ := p.cat.Arch()
	return arch.LongSize()
}
