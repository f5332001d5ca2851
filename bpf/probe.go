package bpf

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Probes: a kprobe, kretprobe, uprobe or uretprobe of the plan is not
// created as a probe event (nothing is written to kprobe_events or
// uprobe_events): a BPF program of type kprobe is attached to the
// function through the kernel's perf kprobe or uprobe PMU (a perf event
// opened with the PMU's type, /sys/bus/event_source/devices/kprobe/type),
// whose probe lives as long as the perf event's file descriptor. The
// program first computes the probe's record, the fields the planner
// typed the probe event with (planner.ProbeFormat), from the registers
// (struct pt_regs) and memory, as the kernel's fetch arguments would;
// the triggers on the event then read them as they read a synthetic
// event's fields.

// probeInfo is a probe of the plan the engine attaches.
type probeInfo struct {
	p  *planner.Probe
	ev *tracefs.Event
	// nargs is the kernel function's arguments, from the kernel's BTF,
	// when its triggers may run on fentry/fexit instead of a kprobe: -1
	// when not.
	nargs int
}

// user says whether the probe is in user space (a uprobe or uretprobe).
func (pi *probeInfo) user() bool {
	return pi.p.Kind == compiler.UProbe || pi.p.Kind == compiler.URetProbe
}

// regOffsets are the offsets in struct pt_regs (the kprobe program's
// context: bpf_user_pt_regs_t) of the registers the kernel's fetch
// arguments name (regs_query_register_offset), by architecture.
var regOffsets = map[string]map[string]int16{
	"x86_64": {"r15": 0, "r14": 8, "r13": 16, "r12": 24, "bp": 32, "bx": 40, "r11": 48, "r10": 56,
		"r9": 64, "r8": 72, "ax": 80, "cx": 88, "dx": 96, "si": 104, "di": 112, "orig_ax": 120,
		"ip": 128, "cs": 136, "flags": 144, "sp": 152, "ss": 160},
	"arm64": arm64Regs(),
}

func arm64Regs() map[string]int16 {
	m := map[string]int16{"lr": 30 * 8, "sp": 31 * 8, "pc": 32 * 8, "pstate": 33 * 8}
	for i := range 31 {
		m["x"+strconv.Itoa(i)] = int16(8 * i)
	}
	return m
}

// argRegs are the registers of a kernel function's first arguments, as
// the kernel's regs_get_kernel_argument reads $argN; retReg the return
// value's (regs_return_value); x86-64 reads the arguments after the
// sixth from the stack, arm64 gives 0 after the eighth.
var (
	argRegs = map[string][]string{"x86_64": {"di", "si", "dx", "cx", "r8", "r9"},
		"arm64": {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"}}
	retReg = map[string]string{"x86_64": "ax", "arm64": "x0"}
)

// hostArch is the architecture this process runs on, as tracefs names it.
func hostArch() *tracefs.Arch {
	name := map[string]string{"amd64": "x86_64", "arm64": "arm64", "arm": "arm", "riscv64": "riscv64"}[runtime.GOARCH]
	if a, err := tracefs.LookupArch(name); err == nil {
		return a
	}
	return tracefs.Arches[0]
}

// probeEvents describes the plan's probes as events (their formats as the
// planner typed them), by "group/name"; common are the kernel's common
// fields.
func (e *Engine) probeEvents(common []*tracefs.Field) {
	e.probes = map[string]*probeInfo{}
	for _, p := range e.opt.Probes {
		ev := planner.ProbeFormat(p, common, e.opt.Arch)
		e.probes[p.Group+"/"+p.Name] = &probeInfo{p: p, ev: ev, nargs: -1}
		for _, a := range p.Args {
			f := ev.Field(a.Name)
			if f == nil || !f.IsString() {
				continue
			}
			switch a.Fetch.Kind {
			case compiler.FetchComm:
				e.fcaps[f] = 16
			case compiler.FetchImmString:
				e.fcaps[f] = align8(len(a.Fetch.Name) + 1)
			}
		}
	}
}

// fentryArgs finds, in the kernel's BTF, the arguments of the functions
// of the kprobes and kretprobes whose triggers may run on fentry/fexit
// (at a function's entry or return, not in a module, on this machine's
// architecture, with at most 6 arguments of at most 8 bytes each).
func (e *Engine) fentryArgs() {
	if e.opt.NoFentry || e.opt.Arch.Name != hostArch().Name {
		return
	}
	var spec *btf.Spec
	for _, pi := range e.probes {
		p := pi.p
		if p.Kind != compiler.KProbe && p.Kind != compiler.KRetProbe || p.Module != "" || p.Offset != 0 {
			continue
		}
		if !readsContext(p) {
			// No $argN, no $retval: the count of arguments is not
			// needed (the kernel checks the function when it loads the
			// program), and the kernel's BTF is not parsed here.
			pi.nargs = 0
			continue
		}
		if spec == nil {
			s, err := btf.LoadKernelSpec()
			if err != nil {
				return // no BTF: kprobes
			}
			spec = s
		}
		var fn *btf.Func
		if err := spec.TypeByName(p.Symbol, &fn); err != nil {
			continue
		}
		proto, ok := fn.Type.(*btf.FuncProto)
		if !ok || len(proto.Params) > 6 {
			continue
		}
		fits := true
		for _, a := range proto.Params {
			if n, err := btf.Sizeof(a.Type); err != nil || n > 8 {
				fits = false
			}
		}
		if fits {
			pi.nargs = len(proto.Params)
		}
	}
}

// readsContext says whether a probe's fetches read the function's
// arguments or return value.
func readsContext(p *planner.Probe) bool {
	var walk func(f *compiler.Fetch) bool
	walk = func(f *compiler.Fetch) bool {
		switch {
		case f == nil:
			return false
		case f.Kind == compiler.FetchArg || f.Kind == compiler.FetchRetval:
			return true
		}
		return walk(f.X)
	}
	for _, a := range p.Args {
		if walk(a.Fetch) {
			return true
		}
	}
	return false
}

// probeErr is a refusal of a probe's argument.
func (ct *ctrig) probeErr(pi *probeInfo, what, format string, args ...any) *Error {
	e := ct.errf(what, format, args...)
	e.Probe = pi.p
	return e
}

// probeRecord computes the probe's fields into a record on the frame:
// their offsets by name, as a synthetic event's fired (numbers in 8
// bytes, as the field's type truncates and extends them; strings in
// their bytes, zero after the NUL).
func (g *gen) probeRecord(ct *ctrig, pi *probeInfo) (map[string]int16, error) {
	arch := g.e.opt.Arch
	regs := regOffsets[arch.Name]
	if regs == nil {
		return nil, ct.probeErr(pi, "", "the BPF engine compiles probes' fetch arguments for x86_64 and arm64, not %s", arch.Name)
	}
	rec := map[string]int16{}
	tmp := g.alloc(8)
	for _, a := range pi.p.Args {
		g.origin = a.String()
		f := pi.ev.Field(a.Name)
		if f == nil || strings.Contains(a.Type, "[") {
			return nil, ct.probeErr(pi, a.String(), "an array of a probe's argument is not compiled by the BPF engine")
		}
		fc := &fetchGen{g: g, ct: ct, pi: pi, regs: regs, arch: arch.Name, tmp: tmp, fentry: g.fentry}
		if f.IsString() {
			n := g.e.fieldBytes(pi.ev, f)
			off := g.alloc(n)
			g.zero(off, n)
			rec[a.Name] = off
			if err := fc.str(a, off, n); err != nil {
				return nil, err
			}
			continue
		}
		off := g.alloc(8)
		rec[a.Name] = off
		if err := fc.num(a.Fetch, f.Size); err != nil {
			return nil, err
		}
		g.truncate(asm.R1, f)
		g.ins(asm.StoreMem(g.fp, off, asm.R1, asm.DWord))
	}
	return rec, nil
}

// fetchGen compiles one fetch argument.
type fetchGen struct {
	g    *gen
	ct   *ctrig
	pi   *probeInfo
	regs map[string]int16
	arch string
	tmp  int16 // an 8-byte slot of the frame
	// fentry: the context is the function's arguments as u64s (then,
	// on fexit, its return value), not pt_regs.
	fentry bool
}

func (fc *fetchGen) refuse(x *compiler.Fetch, format string, args ...any) error {
	return fc.ct.probeErr(fc.pi, x.String(), format, args...)
}

// reg loads a register of pt_regs into R1.
func (fc *fetchGen) reg(x *compiler.Fetch, name string) error {
	if fc.fentry {
		return fc.refuse(x, "a register is not in a fentry program's context")
	}
	off, ok := fc.regs[name]
	if !ok {
		return fc.refuse(x, "%s has no register %%%s", fc.arch, name)
	}
	fc.g.ins(asm.LoadMem(asm.R1, rCtx, off, asm.DWord))
	return nil
}

// read reads size bytes at the address in R3 into R1 (zero where the
// read faults): bpf_probe_read_user for user memory, else
// bpf_probe_read_kernel.
func (fc *fetchGen) read(size int, user bool) {
	g := fc.g
	fn := asm.FnProbeReadKernel
	if user {
		fn = asm.FnProbeReadUser
	}
	g.ins(storeImm(g.fp, fc.tmp, 0),
		asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(fc.tmp)),
		asm.Mov.Imm(asm.R2, int32(size)),
		fn.Call(),
		asm.LoadMem(asm.R1, g.fp, fc.tmp, asm.DWord))
}

// num computes a number fetch argument into R1: size is the bytes of
// its type, which a read from memory reads (the upper bytes zero).
func (fc *fetchGen) num(x *compiler.Fetch, size int) error {
	g := fc.g
	kprobe := !fc.pi.user()
	switch x.Kind {
	case compiler.FetchReg:
		return fc.reg(x, x.Name)
	case compiler.FetchArg:
		if !kprobe {
			return fc.refuse(x, "a uprobe has no $argN")
		}
		if fc.pi.p.Return {
			return fc.refuse(x, "$argN in a return probe is not compiled by the BPF engine: read it in a kprobe on the entry and JOIN the two")
		}
		n := int(x.N) - 1
		if fc.fentry {
			if n >= fc.pi.nargs {
				return fc.refuse(x, "the function has %d arguments", fc.pi.nargs)
			}
			g.ins(asm.LoadMem(asm.R1, rCtx, int16(8*n), asm.DWord))
			return nil
		}
		regs := argRegs[fc.arch]
		switch {
		case n < len(regs):
			return fc.reg(x, regs[n])
		case fc.arch == "x86_64":
			// regs_get_kernel_stack_nth(regs, n - 6 + 1).
			if err := fc.reg(x, "sp"); err != nil {
				return err
			}
			g.ins(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Imm(asm.R3, int32(8*(n-len(regs)+1))))
			fc.read(8, false)
		default:
			g.ins(asm.Mov.Imm(asm.R1, 0))
		}
		return nil
	case compiler.FetchRetval:
		if fc.fentry {
			// fexit: the return value follows the arguments.
			g.ins(asm.LoadMem(asm.R1, rCtx, int16(8*fc.pi.nargs), asm.DWord))
			return nil
		}
		return fc.reg(x, retReg[fc.arch])
	case compiler.FetchStack:
		return fc.reg(x, "sp")
	case compiler.FetchStackN:
		if err := fc.reg(x, "sp"); err != nil {
			return err
		}
		g.ins(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Imm(asm.R3, int32(8*x.N)))
		fc.read(8, !kprobe)
		return nil
	case compiler.FetchImm:
		g.ins(asm.LoadImm(asm.R1, int64(x.N), asm.DWord))
		return nil
	case compiler.FetchDeref, compiler.FetchAddr:
		user, err := fc.addr(x)
		if err != nil {
			return err
		}
		fc.read(size, user)
		return nil
	case compiler.FetchSym:
		return fc.refuse(x, "@SYMBOL is not compiled by the BPF engine")
	case compiler.FetchFileOff:
		return fc.refuse(x, "@+FILE_OFFSET is not compiled by the BPF engine")
	}
	return fc.refuse(x, "%s is not a number the BPF engine compiles", x)
}

// addr computes the address a memory fetch reads into R3; user says
// whether it is user memory (a uprobe's, or +u…).
func (fc *fetchGen) addr(x *compiler.Fetch) (user bool, err error) {
	g := fc.g
	switch x.Kind {
	case compiler.FetchAddr:
		g.ins(asm.LoadImm(asm.R3, int64(x.N), asm.DWord))
		return fc.pi.user(), nil
	case compiler.FetchDeref:
		if x.N > 1<<31-1 {
			return false, fc.refuse(x, "the offset is too large")
		}
		// What holds the address: a word.
		if err := fc.num(x.X, 8); err != nil {
			return false, err
		}
		off := int32(x.N)
		if x.Neg {
			off = -off
		}
		g.ins(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Imm(asm.R3, off))
		return fc.pi.user() || x.User, nil
	}
	return false, fc.refuse(x, "%s is not memory", x)
}

// str computes a string fetch argument into the n zeroed bytes at off:
// $comm (bpf_get_current_comm), an immediate string, or the string at a
// memory fetch's address (bpf_probe_read_kernel_str, or _user_str for a
// uprobe's memory, :ustring or a +u… dereference).
func (fc *fetchGen) str(a planner.ProbeArg, off int16, n int) error {
	g := fc.g
	x := a.Fetch
	switch x.Kind {
	case compiler.FetchComm:
		g.ins(asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(off)), asm.Mov.Imm(asm.R2, int32(min(n, 16))),
			asm.FnGetCurrentComm.Call())
		return nil
	case compiler.FetchImmString:
		b := append([]byte(x.Name), 0)
		for i := 0; i < len(b) && i < n; i++ {
			g.ins(asm.StoreImm(g.fp, off+int16(i), int64(b[i]), asm.Byte))
		}
		return nil
	case compiler.FetchDeref, compiler.FetchAddr:
	default:
		return fc.ct.probeErr(fc.pi, a.String(), "a string is read from memory")
	}
	// The last dereference is where the string is: its address.
	user := fc.pi.user() || a.Type == "ustring"
	if x.Kind == compiler.FetchDeref {
		if x.N > 1<<31-1 {
			return fc.refuse(x, "the offset is too large")
		}
		if err := fc.num(x.X, 8); err != nil {
			return err
		}
		o := int32(x.N)
		if x.Neg {
			o = -o
		}
		g.ins(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Imm(asm.R3, o))
		user = user || x.User
	} else {
		g.ins(asm.LoadImm(asm.R3, int64(x.N), asm.DWord))
	}
	g.ins(asm.Mov.Reg(asm.R1, g.fp), asm.Add.Imm(asm.R1, int32(off)),
		asm.Mov.Imm(asm.R2, int32(n)))
	if user {
		g.ins(asm.FnProbeReadUserStr.Call())
		return nil
	}
	// A kprobe's :string at a user address (below TASK_SIZE: the top
	// bit clear, on x86-64 and arm64) is read from user memory, as the
	// kernel's fetch_store_string does on architectures whose address
	// spaces do not overlap (a file name passed to a system call).
	kernel, done := g.label(), g.label()
	g.ins(asm.JSLT.Imm(asm.R3, 0, kernel),
		asm.FnProbeReadUserStr.Call(),
		asm.Ja.Label(done))
	g.at(kernel)
	g.ins(asm.FnProbeReadKernelStr.Call())
	g.at(done)
	return nil
}

// pmuDir is where the kernel lists its perf PMUs.
var pmuDir = "/sys/bus/event_source/devices"

// pmu returns the perf event type of the kprobe or uprobe PMU and, for a
// return probe, the config bit that makes one; an error says why the
// kernel has none (then nothing is attached: the probe is never made
// through tracefs).
func pmu(kind string, ret bool) (typ uint32, config uint64, err error) {
	data, err := os.ReadFile(filepath.Join(pmuDir, kind, "type"))
	if err != nil {
		return 0, 0, fmt.Errorf("this kernel has no perf %s PMU (%v): the BPF engine attaches %ss only through it, never through tracefs", kind, err, kind)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("the perf %s PMU's type %q: %v", kind, strings.TrimSpace(string(data)), err)
	}
	if ret {
		data, err := os.ReadFile(filepath.Join(pmuDir, kind, "format", "retprobe"))
		if err != nil {
			return 0, 0, fmt.Errorf("this kernel's perf %s PMU makes no return probes (%v)", kind, err)
		}
		bit, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(data)), "config:"), 10, 6)
		if err != nil {
			return 0, 0, fmt.Errorf("the perf %s PMU's retprobe bit %q: %v", kind, strings.TrimSpace(string(data)), err)
		}
		config = 1 << bit
	}
	return uint32(n), config, nil
}

// checkPMU says why a probe cannot be attached on this kernel, or nil.
func (pi *probeInfo) checkPMU() error {
	kind := "kprobe"
	if pi.user() {
		kind = "uprobe"
	}
	_, _, err := pmu(kind, pi.p.Return)
	return err
}
