package live

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The files of a tracefs root that list the functions the kernel can
// trace, one a line: "NAME" or "NAME [MODULE]"; the second (Linux 6.5
// and later) has each line's address first.
const (
	filterFunctions      = "available_filter_functions"
	filterFunctionsAddrs = "available_filter_functions_addrs"
)

// Functions looks a target's kernel functions up, for kprobes: in a
// tracefs (this machine's, or a copy given with --formats) or through a
// shell on the target (--via).
type Functions interface {
	// Lookup says whether the target lists fn (in module mod, when mod
	// is not "") and the listed names close to it.
	Lookup(fn, mod string) (FuncLookup, error)
	// Where names the list in messages ("available_filter_functions of
	// tracefs /sys/kernel/tracing").
	Where() string
}

// FuncLookup is what Functions.Lookup found.
type FuncLookup struct {
	Found bool
	// Module is set when the module asked for has some function listed
	// (it is loaded).
	Module bool
	// Near are listed names that share a prefix with the one asked for
	// (a bounded number of them through a shell).
	Near []string
	// NoList is set when the target has no list of functions.
	NoList bool
	// Unchecked says why the list could not be searched ("" when it
	// was).
	Unchecked string
	// Kallsyms names the kernel's symbol table searched for a function
	// the list does not have ("/proc/kallsyms"; "" when none could be
	// read, as for a --formats copy without one): Text says the function
	// is a text symbol there, which a kprobe may attach to although
	// ftrace cannot trace it (notrace).
	Kallsyms string
	Text     bool
	// Same is the number of text symbols of that name (in that module)
	// in Kallsyms when there are several (static functions of different
	// files): a kprobe on the name attaches to one of them, or is refused
	// (0 when there is one, or it was not counted).
	Same int
	// Blacklist names the kprobe blacklist that lists the function, a
	// listed or a Text one ("" when none read does): the kernel refuses
	// a kprobe on it either way.
	Blacklist string
}

// KernelSyms reads a kernel's text symbols (/proc/kallsyms) and its
// kprobe blacklist, for a function its available_filter_functions does
// not list: kprobe_events takes any text symbol not blacklisted.
type KernelSyms struct {
	// Open opens a file of the machine that holds them.
	Open func(name string) (io.ReadCloser, error)
	// Kallsyms is the symbol table's file; Name names it in messages
	// ("" means Kallsyms).
	Kallsyms, Name string
	// Blacklists are where the kprobe blacklist may be (debugfs's
	// kprobes/blacklist); the first that opens is read.
	Blacklists []string
}

// DefaultBlacklists are the places of the kprobe blacklist for a
// tracefs at root: kprobes/blacklist beside root (where root is
// debugfs's tracing directory), then debugfs's usual place.
func DefaultBlacklists(root string) []string {
	const std = "/sys/kernel/debug/kprobes/blacklist"
	if b := path.Join(path.Dir(root), "kprobes", "blacklist"); b != std {
		return []string{b, std}
	}
	return []string{std}
}

// text counts the text symbols (type t or T) named fn (of module mod,
// when not "") in the table, read a line at a time. Without a module, a
// module's symbol counts too: the kernel looks a kprobe's name up in both.
// Every kprobe run reads the whole table (to find a name two symbols
// share), 150,000 lines or more: the lines are matched as bytes, with
// nothing allocated for them (splitting each into fields cost a 6.1
// guest 173 ms and grew the heap by megabytes that the exit then freed).
func (k *KernelSyms) text(fn, mod string) (int, error) {
	r, err := k.Open(k.Kallsyms)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<16)
	n := 0
	for sc.Scan() {
		if name, typ, m, ok := kallsymsLine(sc.Bytes()); ok && (typ == 't' || typ == 'T') &&
			string(name) == fn && (mod == "" || string(m) == mod) {
			n++
		}
	}
	return n, sc.Err()
}

// kallsymsLine splits a line of kallsyms, "ADDRESS TYPE NAME" with
// "\t[MODULE]" after a module's symbol, into the symbol's name, type and
// module (nil for the kernel's own); ok is false for a line of another
// shape.
func kallsymsLine(line []byte) (name []byte, typ byte, mod []byte, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
		return nil, 0, nil, false
	}
	typ, rest := line[sp+1], line[sp+3:]
	if i := bytes.IndexAny(rest, " \t"); i >= 0 {
		name, rest = rest[:i], bytes.TrimLeft(rest[i:], " \t")
		if len(rest) > 2 && rest[0] == '[' {
			if j := bytes.IndexByte(rest, ']'); j > 0 {
				mod = rest[1:j]
			}
		}
	} else {
		name = rest
	}
	return name, typ, mod, len(name) > 0
}

// name is how messages name the table.
func (k *KernelSyms) name() string {
	if k.Name != "" {
		return k.Name
	}
	return k.Kallsyms
}

// same sets l.Same (and l.Kallsyms) when the table has several text
// symbols named fn: for a function the list has.
func (k *KernelSyms) same(l *FuncLookup, fn, mod string) {
	if k == nil || k.Open == nil {
		return
	}
	if n, err := k.text(fn, mod); err == nil && n > 1 {
		l.Same, l.Kallsyms = n, k.name()
	}
}

// blacklisted names the blacklist that lists fn ("" when none read
// does, or none could be read). Its lines are "0xSTART-0xEND\tname",
// with " [module]" after a module's.
func (k *KernelSyms) blacklisted(fn string) string {
	for _, b := range k.Blacklists {
		r, err := k.Open(b)
		if err != nil {
			continue
		}
		listed := false
		sc := bufio.NewScanner(r)
		for sc.Scan() && !listed {
			f := strings.Fields(sc.Text())
			listed = len(f) > 1 && f[1] == fn
		}
		r.Close()
		if listed {
			return b
		}
		return ""
	}
	return ""
}

// lookup fills l's Kallsyms, Text and Blacklist for fn; a table that
// cannot be read leaves them unset.
func (k *KernelSyms) lookup(l *FuncLookup, fn, mod string) {
	if k == nil || k.Open == nil {
		return
	}
	n, err := k.text(fn, mod)
	if err != nil {
		return
	}
	l.Kallsyms, l.Text = k.name(), n > 0
	if n > 1 {
		l.Same = n
	}
	if l.Text {
		l.Blacklist = k.blacklisted(fn)
	}
}

// FSFunctions reads the list of a tracefs directory, once, on the first
// Lookup.
type FSFunctions struct {
	FS   fs.FS
	Name string // where the directory is, for messages ("tracefs /sys/kernel/tracing")
	// Syms, when not nil, are the kernel's text symbols and kprobe
	// blacklist, searched for a function the list does not have.
	Syms  *KernelSyms
	names map[string][]string
	mods  map[string]bool
	all   []string
	err   error
	read  bool
}

// HasFunctionList reports whether fsys holds a list of the kernel's
// functions.
func HasFunctionList(fsys fs.FS) bool {
	for _, f := range []string{filterFunctions, filterFunctionsAddrs} {
		if _, err := fs.Stat(fsys, f); err == nil {
			return true
		}
	}
	return false
}

// Where names the list.
func (f *FSFunctions) Where() string { return filterFunctions + " of " + f.Name }

func (f *FSFunctions) load() {
	f.read = true
	f.names, f.mods = map[string][]string{}, map[string]bool{}
	r, addrs, err := f.open()
	if err != nil {
		f.err = err
		return
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<16)
	for sc.Scan() {
		name, mod := parseFuncLine(sc.Text(), addrs)
		if name == "" {
			continue
		}
		if _, seen := f.names[name]; !seen {
			f.all = append(f.all, name)
		}
		f.names[name] = append(f.names[name], mod)
		if mod != "" {
			f.mods[mod] = true
		}
	}
	f.err = sc.Err()
}

// parseFuncLine reads a line of the list: the function and its module.
func parseFuncLine(line string, addrs bool) (name, mod string) {
	fields := strings.Fields(line)
	if addrs && len(fields) > 0 {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return "", ""
	}
	if len(fields) > 1 && strings.HasPrefix(fields[1], "[") {
		mod = strings.Trim(fields[1], "[]")
	}
	return fields[0], mod
}

// open opens the list: available_filter_functions, or the list with
// addresses (addrs).
func (f *FSFunctions) open() (r fs.File, addrs bool, err error) {
	r, err = f.FS.Open(filterFunctions)
	if errors.Is(err, fs.ErrNotExist) {
		r, err = f.FS.Open(filterFunctionsAddrs)
		addrs = true
	}
	return r, addrs, err
}

// scan reports whether the list names fn (in mod, when given), reading
// no further than the first line that does: the kernel formats the list
// (a megabyte or two) on each read, and a function that is there, the
// common case, costs half of it on average, with nothing kept.
func (f *FSFunctions) scan(fn, mod string) (bool, error) {
	r, addrs, err := f.open()
	if err != nil {
		return false, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && funcLineIs(line, addrs, fn, mod) {
			return true, nil
		}
		switch {
		case err == io.EOF:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer names no function: skip it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				return false, nil
			}
		}
		if err != nil {
			return false, err
		}
	}
}

// funcLineIs reports whether a line of the list (as parseFuncLine reads
// it) names fn, in mod when mod is given, without allocating.
func funcLineIs(line []byte, addrs bool, fn, mod string) bool {
	next := func() []byte {
		line = bytes.TrimLeft(line, " \t\r\n")
		i := bytes.IndexAny(line, " \t\r\n")
		if i < 0 {
			i = len(line)
		}
		w := line[:i]
		line = line[i:]
		return w
	}
	if addrs {
		next()
	}
	if string(next()) != fn {
		return false
	}
	if mod == "" {
		return true
	}
	m := next()
	return len(m) > 1 && m[0] == '[' && string(bytes.Trim(m, "[]")) == mod
}

// Lookup looks fn up in the list: by a scan that stops where fn is
// (scan), else in the whole list, read once, for the nearest names, the
// modules and the kernel's symbols.
func (f *FSFunctions) Lookup(fn, mod string) (FuncLookup, error) {
	if !f.read {
		found, err := f.scan(fn, mod)
		if found {
			l := FuncLookup{Found: true, Module: mod != ""}
			if f.Syms != nil && f.Syms.Open != nil {
				l.Blacklist = f.Syms.blacklisted(fn)
				f.Syms.same(&l, fn, mod)
			}
			return l, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return FuncLookup{}, fmt.Errorf("reading %s: %v", f.Where(), err)
		}
		f.load()
	}
	if errors.Is(f.err, fs.ErrNotExist) {
		return FuncLookup{NoList: true}, nil
	}
	if f.err != nil {
		return FuncLookup{}, fmt.Errorf("reading %s: %v", f.Where(), f.err)
	}
	l := FuncLookup{Module: mod != "" && f.mods[mod]}
	for _, m := range f.names[fn] {
		l.Found = l.Found || mod == "" || m == mod
	}
	if !l.Found {
		l.Near = f.all
		f.Syms.lookup(&l, fn, mod)
	} else if f.Syms != nil && f.Syms.Open != nil {
		l.Blacklist = f.Syms.blacklisted(fn)
		f.Syms.same(&l, fn, mod)
	}
	return l, nil
}

// ShellFunctions asks a shell on the target (--via) about each function:
// whether its list has it, and at most MaxNear names that share its
// first letters, never the whole list (megabytes, over a serial line).
//
// For a function the list does not have, the same command searches the
// target's /proc/kallsyms for it as a text symbol (a grep that stops at
// the first match and prints nothing of the file); a listed function or
// a text symbol is looked for on the kprobe blacklist.
type ShellFunctions struct {
	Run     ShellRunner
	Root    string // the target's tracefs
	Via     string // the --via command, for messages
	MaxNear int    // 0: 200
	// Kallsyms is the target's symbol table ("": /proc/kallsyms);
	// Blacklists are where its kprobe blacklist may be (nil:
	// DefaultBlacklists(Root)).
	Kallsyms   string
	Blacklists []string
}

// Where names the list.
func (f *ShellFunctions) Where() string {
	return filterFunctions + " of the target's tracefs " + f.Root + " (--via " + f.Via + ")"
}

// funcName is what a kernel function or module name is made of; a name
// that is not is looked up as a name the list cannot have.
var funcName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })

// Lookup asks the target.
func (f *ShellFunctions) Lookup(fn, mod string) (FuncLookup, error) {
	if !funcName().MatchString(fn) || mod != "" && !funcName().MatchString(mod) {
		return FuncLookup{}, nil
	}
	re := func(s string) string { return strings.ReplaceAll(s, ".", `\.`) }
	n := f.MaxNear
	if n <= 0 {
		n = 200
	}
	tail := `( \[[^]]*\])?$`
	if mod != "" {
		tail = ` \[` + re(mod) + `\]$`
	}
	cmd := "f=" + emit.Quote(f.Root+"/"+filterFunctions) + "; [ -r \"$f\" ] || f=" + emit.Quote(f.Root+"/"+filterFunctionsAddrs) + "; " +
		"if [ ! -r \"$f\" ]; then echo '@nolist'; elif ! command -v grep >/dev/null 2>&1 || ! command -v head >/dev/null 2>&1; then echo '@nogrep'; else " +
		"if grep -q -E " + emit.Quote(`^([0-9a-f]+ )?`+re(fn)+tail) + " \"$f\"; then echo '@found'; " + f.blacklistCmd(re(fn)) + "; " + f.sameCmd(re(fn), re(mod)) + "; else " + f.symsCmd(re(fn), re(mod)) + "; fi; "
	if mod != "" {
		cmd += "grep -q -E " + emit.Quote(` \[`+re(mod)+`\]$`) + " \"$f\" && echo '@module'; "
	}
	prefix := fn[:min(len(fn), 4)]
	cmd += fmt.Sprintf("grep -E %s \"$f\" | head -n %d; fi", emit.Quote(`^([0-9a-f]+ )?`+re(prefix)), n)
	out, err := f.Run(context.Background(), "looking up "+fn+" in "+filterFunctions, cmd, 30*time.Second)
	if err != nil {
		return FuncLookup{}, err
	}
	var l FuncLookup
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		switch line {
		case "@nolist":
			return FuncLookup{NoList: true}, nil
		case "@nogrep":
			return FuncLookup{Unchecked: "the target's shell has no grep or head to search " + f.Where() + " with"}, nil
		case "@found":
			l.Found = true
			continue
		case "@module":
			l.Module = true
			continue
		case "@kallsyms":
			l.Kallsyms = f.kallsyms() + " of the target"
			continue
		case "@text":
			l.Text = true
			continue
		}
		if n, ok := strings.CutPrefix(line, "@same "); ok {
			if v, err := strconv.Atoi(n); err == nil && v > 1 {
				l.Same, l.Kallsyms = v, f.kallsyms()+" of the target"
			}
			continue
		}
		if b, ok := strings.CutPrefix(line, "@blacklist "); ok {
			l.Blacklist = b + " of the target"
			continue
		}
		addrs := len(line) > 0 && strings.IndexByte(line, ' ') > 0 && isHex(line[:strings.IndexByte(line, ' ')]) && !strings.HasPrefix(line[strings.IndexByte(line, ' ')+1:], "[")
		if name, _ := parseFuncLine(line, addrs); name != "" && !seen[name] {
			seen[name] = true
			l.Near = append(l.Near, name)
		}
	}
	if l.Found {
		l.Near = nil
	}
	return l, nil
}

func (f *ShellFunctions) kallsyms() string {
	if f.Kallsyms == "" {
		return "/proc/kallsyms"
	}
	return f.Kallsyms
}

// symTail is the end of a kallsyms line's regular expression after the
// name: that module's, or any.
func symTail(mod string) string {
	if mod != "" {
		return `[[:space:]]+\[` + mod + `\]$`
	}
	return `([[:space:]]|$)`
}

// sameCmd is the shell command that prints "@same N" when the target's
// kallsyms has N > 1 text symbols named fn (of mod; both as regular
// expressions): grep -c reads it on the target, only the count crosses.
func (f *ShellFunctions) sameCmd(fn, mod string) string {
	k := emit.Quote(f.kallsyms())
	return "if [ -r " + k + " ]; then n=$(grep -c -E " + emit.Quote(` [tT] `+fn+symTail(mod)) + " " + k + "); [ \"$n\" -gt 1 ] 2>/dev/null && echo \"@same $n\"; fi"
}

// symsCmd is the shell command that searches the target's kallsyms for
// the function (fn and mod as regular expressions): "@kallsyms" when it
// can be read, "@text" when the function is a text symbol, "@blacklist
// FILE" when the first blacklist that can be read lists it.
func (f *ShellFunctions) symsCmd(fn, mod string) string {
	tail := `([[:space:]]|$)`
	if mod != "" {
		tail = `[[:space:]]+\[` + mod + `\]$`
	}
	k := emit.Quote(f.kallsyms())
	return "if [ -r " + k + " ]; then echo '@kallsyms'; " +
		"if grep -q -E " + emit.Quote(` [tT] `+fn+tail) + " " + k + "; then echo '@text'; " + f.blacklistCmd(fn) + "; " + f.sameCmd(fn, mod) + "; fi; fi"
}

// blacklistCmd is the shell command that prints "@blacklist FILE" when
// the first kprobe blacklist of the target that can be read lists the
// function (fn as a regular expression).
func (f *ShellFunctions) blacklistCmd(fn string) string {
	bl := f.Blacklists
	if bl == nil {
		bl = DefaultBlacklists(f.Root)
	}
	var quoted []string
	for _, b := range bl {
		quoted = append(quoted, emit.Quote(b))
	}
	return "for b in " + strings.Join(quoted, " ") + "; do if [ -r \"$b\" ]; then " +
		"grep -q -E " + emit.Quote(`[[:space:]]`+fn+`( |$)`) + " \"$b\" && echo \"@blacklist $b\"; break; fi; done"
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return s != ""
}

// CheckProbes checks the functions of plan's kprobes and kretprobes
// against funcs (nil: none known, which a warning on log says once,
// with noFuncs), and the binaries of its uprobes with exists (the
// target's files; nil: none reachable, which a note on log says for a
// uprobe at an offset, whose binary the planner did not read, with
// noFiles). It returns the errors (and warnings) positioned in the SQL:
// a function the target neither lists nor has as a text symbol, with
// the nearest listed names, or one on its kprobe blacklist; a binary it
// does not have. A text symbol the list does not have (notrace) is a
// warning on log.
func CheckProbes(plan *planner.Plan, funcs Functions, exists func(path string) (bool, error), noFuncs, noFiles string, log io.Writer) source.Diags {
	remote := false
	if sf, ok := funcs.(*ShellFunctions); ok && sf != nil {
		remote = true
	}
	var d source.Diags
	warned := false
	seen := map[*planner.Probe]bool{}
	// A function is looked up once however many probes name it (a
	// kprobe JOIN kretprobe on one function, the common latency
	// question): each lookup has the kernel format its lists again, 0.27
	// s of a 6.1 guest's CPU for do_sys_openat2.
	if funcs != nil {
		funcs = &onceFunctions{Functions: funcs, done: map[[2]string]onceLookup{}}
	}
	for _, u := range plan.Units {
		for _, pr := range u.Probes {
			if seen[pr] {
				continue
			}
			seen[pr] = true
			switch pr.Kind {
			case compiler.KProbe, compiler.KRetProbe:
				if funcs == nil {
					if !warned && noFuncs != "" && log != nil {
						fmt.Fprintf(log, "sqlhist: warning: the functions of kprobes are not checked: %s\n", noFuncs)
					}
					warned = true
					continue
				}
				checkFunction(&d, pr, funcs, &warned, log)
			case compiler.UProbe, compiler.URetProbe:
				if exists == nil {
					if pr.Symbol == "" && noFiles != "" && log != nil {
						fmt.Fprintf(log, "sqlhist: note: uprobe: %s is not checked: %s\n", pr.Path, noFiles)
					}
					continue
				}
				ok, err := exists(pr.Path)
				switch {
				case err != nil:
					d.Add(pr.TargetPos, pr.TargetEnd, "cannot check the binary %s on the target: %v", pr.Path, err)
				case !ok:
					x := d.Add(pr.TargetPos, pr.TargetEnd, "no file %s on the target", pr.Path)
					x.Hint = "a uprobe's binary is the target's: give its path there"
				case pr.Symbol != "" && log != nil && remote:
					fmt.Fprintf(log, "sqlhist: note: uprobe: the file offset of %s was read from this machine's %s; the target's file exists, its symbols are not checked (it must be the same build)\n", pr.Symbol, pr.Path)
				}
			}
		}
	}
	d.Sort()
	return d
}

// onceFunctions looks each function up once.
type onceFunctions struct {
	Functions
	done map[[2]string]onceLookup
}

type onceLookup struct {
	l   FuncLookup
	err error
}

func (o *onceFunctions) Lookup(fn, mod string) (FuncLookup, error) {
	k := [2]string{fn, mod}
	if r, ok := o.done[k]; ok {
		return r.l, r.err
	}
	l, err := o.Functions.Lookup(fn, mod)
	o.done[k] = onceLookup{l, err}
	return l, err
}

// checkFunction checks one kprobe's function.
func checkFunction(d *source.Diags, pr *planner.Probe, funcs Functions, warned *bool, log io.Writer) {
	l, err := funcs.Lookup(pr.Symbol, pr.Module)
	switch {
	case err != nil:
		d.Add(pr.SymPos, pr.SymEnd, "cannot check the function %q: %v", pr.Symbol, err)
		return
	case l.NoList || l.Unchecked != "":
		why := l.Unchecked
		if why == "" {
			why = "no " + funcs.Where()
		}
		if !*warned && log != nil {
			fmt.Fprintf(log, "sqlhist: warning: the functions of kprobes are not checked: %s\n", why)
		}
		*warned = true
		return
	}
	if l.Same > 1 {
		x := d.Add(pr.SymPos, pr.SymEnd, "kernel function %q is ambiguous: %d text symbols have that name in %s; a kprobe on the name attaches to one of them (the first the kernel finds), or the kernel refuses it (EADDRNOTAVAIL, since Linux 6.6 and in the stable kernels that took that change)", pr.Symbol, l.Same, l.Kallsyms)
		x.Warning = true
		x.Hint = "static functions of different files may share a name; its counts are then one function's, not all of them: probe a caller, or a function with a name of its own"
	}
	switch {
	case l.Blacklist != "":
		x := d.Add(pr.SymPos, pr.SymEnd, "kernel function %q is on the kernel's kprobe blacklist (%s): the kernel refuses a kprobe on it", pr.Symbol, l.Blacklist)
		x.Hint = "the kernel keeps kprobes off the functions they themselves run through (exception, NMI and entry code); probe one of its callers instead"
		return
	case l.Found:
		return
	case l.Text:
		if log != nil {
			fmt.Fprintf(log, "sqlhist: warning: kernel function %q is not in %s, but is a text symbol in %s: ftrace cannot trace it (notrace), a kprobe may still attach; the kernel refuses it if it is on its kprobe blacklist\n", pr.Symbol, funcs.Where(), l.Kallsyms)
		}
		return
	case pr.Module != "" && !l.Module:
		x := d.Add(pr.SymPos, pr.SymEnd, "module %q lists no function in %s: it is not loaded, and the kprobe on %s:%s waits for it", pr.Module, funcs.Where(), pr.Module, pr.Symbol)
		x.Warning = true
		return
	}
	in := ""
	if pr.Module != "" {
		in = " of module " + pr.Module
	}
	x := d.Add(pr.SymPos, pr.SymEnd, "unknown kernel function %q%s: not in %s", pr.Symbol, in, funcs.Where())
	if l.Kallsyms != "" {
		x.Msg += " nor a text symbol in " + l.Kallsyms
	}
	if s := nearestFunc(pr.Symbol, l.Near); s != "" {
		x.Msg += fmt.Sprintf("; did you mean %s?", s)
	}
	if l.Kallsyms != "" {
		x.Hint = "kprobes attach to the kernel's text symbols: that file lists those ftrace can trace, kallsyms the rest (an inlined function is in neither; a static one may be renamed, as NAME.isra.0)"
		return
	}
	x.Hint = "the function may still exist and take a kprobe, untraceable by ftrace (notrace): that file does not list those, the kernel's /proc/kallsyms does. " +
		"To check it there, compile on the target (-e, -r) or through --via COMMAND, or put a copy of the target's /proc/kallsyms in the --formats directory as kallsyms"
}

// nearestFunc is the candidate nearest to fn by edit distance, when it is
// close enough to be a typo (of equally near ones, the first in sorted
// order).
func nearestFunc(fn string, candidates []string) string {
	limit := max(1, len(fn)/3)
	best, bestD := "", limit+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if diff := len(c) - len(fn); diff > limit || -diff > limit {
			continue
		}
		if dist := planner.EditDistance(fn, c); dist < bestD {
			best, bestD = c, dist
		}
	}
	return best
}

// Compile is [Compile] for the place's target, then its probes checked
// where the target is known ([CheckProbes]): kprobe functions against
// the target's available_filter_functions (this machine's tracefs, a
// --formats copy that has it, or asked through --via's shell, h.Shell)
// and, for one not listed there, its kallsyms and kprobe blacklist
// (this machine's /proc and debugfs, DIR/kallsyms of a --formats copy,
// the target's through --via),
// a uprobe's binary on a --via target. Where only an embedded catalog is
// known, a warning on log says the functions are not checked. A
// teardown is not checked.
func (p *Place) Compile(h Host, src *source.Source, cat *tracefs.Catalog, opt planner.Options, log io.Writer) (*planner.Plan, source.Diags) {
	plan, diags := Compile(src, cat, opt)
	if plan == nil || opt.Teardown || !hasProbes(plan) {
		return plan, diags
	}
	var funcs Functions
	var exists func(string) (bool, error)
	noFuncs, noFiles := "", ""
	switch {
	case h.Shell != nil && (p.Formats == "" || p.Machine):
		funcs = &ShellFunctions{Run: h.Shell, Root: p.Root, Via: h.Via}
		exists = func(path string) (bool, error) {
			out, err := h.Shell(context.Background(), "looking for "+path, "if [ -e "+emit.Quote(path)+" ]; then echo yes; else echo no; fi", 30*time.Second)
			return strings.TrimSpace(out) == "yes", err
		}
	case cat.FS() != nil && HasFunctionList(cat.FS()):
		name := p.CatalogName()
		if p.Formats == "" && p.Kernel == "" { // the -t directory's, of this machine
			name = "tracefs " + p.Root
		}
		funcs = &FSFunctions{FS: cat.FS(), Name: name, Syms: p.kernelSyms(h, cat.FS())}
		noFiles = "the target's files are not reached (printing from " + p.CatalogName() + ": -e and -r on the target, or --via COMMAND, reach them)"
	case p.Formats != "" && p.Machine:
		noFuncs = p.CatalogName() + " has no " + filterFunctions + " (a kernel without the function tracer lists none)"
	case p.Formats != "":
		noFuncs = "--formats " + p.Formats + " holds no " + filterFunctions + " (copy it from the target's tracefs to check them)"
	default:
		noFuncs = "the embedded catalog of " + p.TargetName(cat) + " lists no kernel functions (read the target's " + filterFunctions +
			" with --formats DIR, a copy of its tracefs that holds it, or --via COMMAND)"
	}
	if p.Machine && h.Shell == nil && h.Dir != nil { // this machine is the target
		exists, noFiles = func(file string) (bool, error) {
			d, err := h.Dir(path.Dir(file))
			if err == nil {
				_, err = fs.Stat(d, path.Base(file))
			}
			return err == nil, nil
		}, ""
	} else if funcs == nil && exists == nil {
		noFiles = "the target's files are not reached (printing for another machine: --via COMMAND reaches them)"
	}
	more := CheckProbes(plan, funcs, exists, noFuncs, noFiles, log)
	if len(more.Errors()) > 0 {
		plan = nil
	}
	diags = append(diags, more...)
	diags.Sort()
	return plan, diags
}

// kernelSyms is where the kernel of a catalog read from a tracefs (fsys)
// has its text symbols and kprobe blacklist: this machine's /proc when
// the tracefs is this machine's, a file kallsyms beside a --formats
// copy's formats when it holds one (no blacklist), else nil.
func (p *Place) kernelSyms(h Host, fsys fs.FS) *KernelSyms {
	local := p.Via == "" && (p.Machine || p.Formats == "" && p.Kernel == "")
	switch {
	case local && h.Dir != nil:
		root := p.Root
		if p.Machine {
			root = p.Formats
		}
		open := func(file string) (io.ReadCloser, error) {
			d, err := h.Dir(path.Dir(file))
			if err != nil {
				return nil, err
			}
			return d.Open(path.Base(file))
		}
		return &KernelSyms{Open: open, Kallsyms: "/proc/kallsyms", Blacklists: DefaultBlacklists(root)}
	case p.Formats != "" && !p.Machine:
		if _, err := fs.Stat(fsys, "kallsyms"); err != nil {
			return nil
		}
		open := func(file string) (io.ReadCloser, error) { return fsys.Open(file) }
		return &KernelSyms{Open: open, Kallsyms: "kallsyms", Name: "kallsyms of --formats " + p.Formats}
	}
	return nil
}

func hasProbes(plan *planner.Plan) bool {
	for _, u := range plan.Units {
		if len(u.Probes) > 0 {
			return true
		}
	}
	return false
}
