package live_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// withFiles is fsys with more files at its root.
type withFiles struct {
	fs.FS
	more fstest.MapFS
}

func (w withFiles) Open(name string) (fs.File, error) {
	if _, ok := w.more[name]; ok {
		return w.more.Open(name)
	}
	return w.FS.Open(name)
}

const funcList = "vfs_read\nvfs_readv\nvfs_write\nksys_read\ndo_sys_openat2\nnvme_setup_cmd [nvme_core]\nnvme_complete_rq [nvme_core]\n"

// funcsCase compiles query for the place, the event formats the
// embedded 6.1 catalog's plus files at the root.
func funcsCase(t *testing.T, p *live.Place, h live.Host, files fstest.MapFS, query string) (*planner.Plan, string, string) {
	t.Helper()
	emb, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(withFiles{emb, files})
	src := source.NewSource("q.sql", query)
	var log strings.Builder
	plan, diags := p.Compile(h, src, cat, planner.Options{}, &log)
	return plan, diags.Render(src), log.String()
}

// A kprobe's function is checked against the target's
// available_filter_functions where a tracefs (or a copy of one) has it:
// a misspelled one is an error at the function, with the nearest listed
// name; a module's function is looked up in that module; the file with
// addresses (Linux 6.5 and later) serves as well.
func TestKprobeFunctionsChecked(t *testing.T) {
	addrs := ""
	for _, l := range strings.Split(strings.TrimSpace(funcList), "\n") {
		addrs += "ffffffff81234560 " + l + "\n"
	}
	for _, list := range []fstest.MapFS{
		{"available_filter_functions": {Data: []byte(funcList)}},
		{"available_filter_functions_addrs": {Data: []byte(addrs)}},
	} {
		for _, c := range []struct{ query, err string }{
			{"SELECT filename FROM kprobe(vfs_raed, filename=+0($arg2):string)",
				"q.sql:1:29: unknown kernel function \"vfs_raed\": not in available_filter_functions of --formats /copy; did you mean vfs_read?\n" +
					"  1 | SELECT filename FROM kprobe(vfs_raed, filename=+0($arg2):string)\n    |                             ^~~~~~~~\n"},
			{"SELECT ret FROM kretprobe(ksys_rad, ret=$retval:s64)", "q.sql:1:27: unknown kernel function \"ksys_rad\": not in available_filter_functions of --formats /copy; did you mean ksys_read?"},
			{"SELECT ret FROM kretprobe(vfs_read, ret=$retval:s64)", ""},
			{"SELECT common_pid, COUNT(*) FROM kprobe(vfs_read+4)", ""},
			{"SELECT common_pid, COUNT(*) FROM kprobe(nvme_core:nvme_setup_cmd)", ""},
			{"SELECT common_pid, COUNT(*) FROM kprobe(nvme_core:vfs_read)", "unknown kernel function \"vfs_read\" of module nvme_core"},
			{"SELECT common_pid, COUNT(*) FROM kprobe(zzz_nothing_like_it)", "unknown kernel function \"zzz_nothing_like_it\": not in available_filter_functions of --formats /copy\n"},
		} {
			plan, diags, log := funcsCase(t, &live.Place{Formats: "/copy"}, live.Host{}, list, c.query)
			switch {
			case c.err == "" && (plan == nil || diags != "" || log != ""):
				t.Errorf("%s: refused:\n%s%s", c.query, diags, log)
			case c.err != "" && (plan != nil || !strings.Contains(diags, c.err) || !strings.Contains(diags, "hint: the function may still exist and take a kprobe, untraceable by ftrace (notrace)")):
				t.Errorf("%s: plan %v, diagnostics\n%s\nwant\n%s", c.query, plan != nil, diags, c.err)
			}
		}
	}
	// A module that lists nothing is not loaded: the kernel keeps the
	// probe until it loads, and a warning says so.
	plan, diags, _ := funcsCase(t, &live.Place{Formats: "/copy"}, live.Host{}, fstest.MapFS{"available_filter_functions": {Data: []byte(funcList)}},
		"SELECT common_pid, COUNT(*) FROM kprobe(xfs:xfs_file_read_iter)")
	if plan == nil || !strings.Contains(diags, "warning: module \"xfs\" lists no function") {
		t.Errorf("unloaded module: plan %v:\n%s", plan != nil, diags)
	}
}

// kallsyms is a /proc/kallsyms: notrace_fn is a text symbol the list
// does not have, do_int3 one the blacklist has, vfs_data a data symbol,
// nvme_quiet a module's.
const kallsyms = "ffffffff81234560 T vfs_read\nffffffff81234600 t notrace_fn\nffffffff81234700 T do_int3\nffffffff82000000 D vfs_data\n" +
	"ffffffffc0001000 t nvme_quiet\t[nvme_core]\n"

const blacklist = "0xffffffff81234700-0xffffffff81234780\tdo_int3\n0xffffffff81234800-0xffffffff81234880\tvfs_write\n0xffffffffc0002000-0xffffffffc0002040\tnvme_irq [nvme_core]\n"

// On this machine's tracefs, a function available_filter_functions does
// not list is looked for among the text symbols of /proc/kallsyms: one
// there is a warning (ftrace cannot trace it, a kprobe can attach), unless
// the kprobe blacklist (debugfs's, where it can be read) has it, an error
// that says so (as for a listed one); in neither is the error with the
// nearest listed name.
func TestKprobeFunctionsKallsyms(t *testing.T) {
	files := fstest.MapFS{"available_filter_functions": {Data: []byte(funcList)}}
	dirs := func(bl bool) live.Host {
		return live.Host{Dir: func(p string) (fs.FS, error) {
			switch {
			case p == "/proc":
				return fstest.MapFS{"kallsyms": {Data: []byte(kallsyms)}}, nil
			case p == "/sys/kernel/debug/kprobes" && bl:
				return fstest.MapFS{"blacklist": {Data: []byte(blacklist)}}, nil
			}
			return nil, fs.ErrNotExist
		}}
	}
	const where = "available_filter_functions of tracefs /sys/kernel/tracing"
	for _, c := range []struct {
		query     string
		noBL      bool // no blacklist can be read
		err, warn string
	}{
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(vfs_read)"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(notrace_fn)",
			warn: "sqlhist: warning: kernel function \"notrace_fn\" is not in " + where + ", but is a text symbol in /proc/kallsyms: ftrace cannot trace it (notrace), a kprobe may still attach; the kernel refuses it if it is on its kprobe blacklist\n"},
		{query: "SELECT ret FROM kretprobe(nvme_core:nvme_quiet, ret=$retval:s64)", warn: "\"nvme_quiet\" is not in"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(do_int3)",
			err: "q.sql:1:41: kernel function \"do_int3\" is on the kernel's kprobe blacklist (/sys/kernel/debug/kprobes/blacklist): the kernel refuses a kprobe on it\n"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(do_int3)", noBL: true, warn: "\"do_int3\" is not in"},
		// listed, but blacklisted: the kernel refuses it all the same
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(vfs_write)", err: "kernel function \"vfs_write\" is on the kernel's kprobe blacklist"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(vfs_write)", noBL: true},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(vfs_data)",
			err: "q.sql:1:41: unknown kernel function \"vfs_data\": not in " + where + " nor a text symbol in /proc/kallsyms\n"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(nvme_core:notrace_fn)", err: "unknown kernel function \"notrace_fn\" of module nvme_core: not in " + where + " nor a text symbol in /proc/kallsyms\n"},
		{query: "SELECT common_pid, COUNT(*) FROM kprobe(vfs_raed)",
			err: "unknown kernel function \"vfs_raed\": not in " + where + " nor a text symbol in /proc/kallsyms; did you mean vfs_read?"},
	} {
		place := &live.Place{Root: "/sys/kernel/tracing", Formats: "/sys/kernel/tracing", Machine: true}
		plan, diags, log := funcsCase(t, place, dirs(!c.noBL), files, c.query)
		switch {
		case c.err == "" && (plan == nil || diags != "" || !strings.Contains(log, c.warn) || (c.warn == "") != (log == "")):
			t.Errorf("%s: plan %v, diagnostics\n%s\nlog\n%s\nwant the warning\n%s", c.query, plan != nil, diags, log, c.warn)
		case c.err != "" && (plan != nil || !strings.Contains(diags, c.err) || log != ""):
			t.Errorf("%s: plan %v, diagnostics\n%s\nlog %s\nwant\n%s", c.query, plan != nil, diags, log, c.err)
		}
	}
	// Printing from this machine's tracefs (no flag chose a catalog),
	// the list is named by its directory.
	plan, diags, _ := funcsCase(t, &live.Place{Root: "/sys/kernel/tracing"}, dirs(true), files, "SELECT common_pid, COUNT(*) FROM kprobe(vfs_raed)")
	if plan != nil || !strings.Contains(diags, "not in "+where+" nor a text symbol in /proc/kallsyms; did you mean vfs_read?") {
		t.Errorf("printing from this machine's tracefs: %s", diags)
	}
	// A copy of a tracefs that holds the target's kallsyms beside its
	// list serves as well (it has no blacklist).
	files["kallsyms"] = &fstest.MapFile{Data: []byte(kallsyms)}
	plan, diags, log := funcsCase(t, &live.Place{Formats: "/copy"}, live.Host{}, files, "SELECT common_pid, COUNT(*) FROM kprobe(do_int3)")
	if plan == nil || diags != "" || !strings.Contains(log, "is a text symbol in kallsyms of --formats /copy") {
		t.Errorf("--formats with kallsyms: %s%s", diags, log)
	}
	plan, diags, _ = funcsCase(t, &live.Place{Formats: "/copy"}, live.Host{}, files, "SELECT common_pid, COUNT(*) FROM kprobe(vfs_raed)")
	if plan != nil || !strings.Contains(diags, "nor a text symbol in kallsyms of --formats /copy; did you mean vfs_read?") {
		t.Errorf("--formats with kallsyms, vfs_raed: %s", diags)
	}
}

// The blacklist beside a tracefs (mounted in debugfs) is read first.
func TestDefaultBlacklists(t *testing.T) {
	for root, want := range map[string]string{
		"/sys/kernel/tracing":       "[/sys/kernel/kprobes/blacklist /sys/kernel/debug/kprobes/blacklist]",
		"/sys/kernel/debug/tracing": "[/sys/kernel/debug/kprobes/blacklist]",
		"/mnt/debug/tracing":        "[/mnt/debug/kprobes/blacklist /sys/kernel/debug/kprobes/blacklist]",
	} {
		if got := fmt.Sprint(live.DefaultBlacklists(root)); got != want {
			t.Errorf("%s: %s, want %s", root, got, want)
		}
	}
}

// Where no list is known the functions are not checked, and a warning
// says so once, naming what would check them; the query is printed.
func TestKprobeFunctionsUnchecked(t *testing.T) {
	const q = "SELECT a.common_pid AS pid, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(vfs_raed) AS a JOIN kretprobe(ksys_rad) AS b ON a.common_pid = b.common_pid"
	for _, c := range []struct {
		place *live.Place
		want  string
	}{
		{&live.Place{Kernel: "6.1"}, "sqlhist: warning: the functions of kprobes are not checked: the embedded catalog of Linux 6.1.0-57-cloud-amd64 x86_64 lists no kernel functions (read the target's available_filter_functions with --formats DIR, a copy of its tracefs that holds it, or --via COMMAND)\n"},
		{&live.Place{Formats: "/copy"}, "sqlhist: warning: the functions of kprobes are not checked: --formats /copy holds no available_filter_functions (copy it from the target's tracefs to check them)\n"},
		{&live.Place{Formats: "/tmp/tfs", Machine: true}, "sqlhist: warning: the functions of kprobes are not checked: tracefs /tmp/tfs has no available_filter_functions (a kernel without the function tracer lists none)\n"},
	} {
		plan, diags, log := funcsCase(t, c.place, live.Host{}, nil, q)
		if plan == nil || diags != "" || log != c.want {
			t.Errorf("%+v: plan %v, diagnostics %q, log\n%s\nwant\n%s", c.place, plan != nil, diags, log, c.want)
		}
	}
}

// Through --via, the target's shell is asked: whether its list has the
// function, and a bounded number of names that share its first letters;
// the command runs under busybox sh and dash over a real file. A
// uprobe's binary must exist on the target.
func TestKprobeFunctionsVia(t *testing.T) {
	dir := t.TempDir()
	var list strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&list, "vfs_other_%d\n", i)
	}
	list.WriteString(funcList)
	for name, data := range map[string]string{"available_filter_functions": list.String(), "kallsyms": kallsyms, "blacklist": blacklist} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, shell := range [][]string{{"busybox", "sh"}, {"dash"}} {
		if _, err := exec.LookPath(shell[0]); err != nil {
			t.Errorf("%v: %v", shell, err)
			continue
		}
		// Under busybox, its own grep and head answer too (a board has
		// nothing else).
		bin := t.TempDir()
		if shell[0] == "busybox" {
			bb, _ := exec.LookPath("busybox")
			for _, applet := range []string{"grep", "head"} {
				if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
					t.Fatal(err)
				}
			}
		}
		var cmds []string
		run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
			cmds = append(cmds, cmd)
			c := exec.Command(shell[0], append(shell[1:], "-c", cmd)...)
			c.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := c.CombinedOutput()
			return string(out), err
		}
		h := live.Host{Shell: run, Via: "ssh board"}
		fns := &live.ShellFunctions{Run: run, Root: dir, Via: "ssh board", MaxNear: 50, Kallsyms: filepath.Join(dir, "kallsyms"), Blacklists: []string{filepath.Join(dir, "none"), filepath.Join(dir, "blacklist")}}
		l, err := fns.Lookup("vfs_raed", "")
		if err != nil || l.Found || len(l.Near) != 50 {
			t.Errorf("%v: %+v, %v: want not found, 50 names near", shell, l, err)
		}
		// the near names are the first 50 with the prefix: vfs_read is
		// past them, and the cap holds
		l, err = fns.Lookup("nvme_setup_cmd", "nvme_core")
		if err != nil || !l.Found || !l.Module {
			t.Errorf("%v: module function: %+v, %v", shell, l, err)
		}
		l, _ = fns.Lookup("nvme_setup_cmd", "xfs")
		if l.Found || l.Module {
			t.Errorf("%v: another module: %+v", shell, l)
		}
		l, _ = fns.Lookup("vfs.read", "")
		if l.Found {
			t.Errorf("%v: a dot matched any character", shell)
		}
		// Not listed, the function is looked for in the target's
		// kallsyms, a text symbol of the kernel or of its module, and
		// then on the first blacklist that can be read.
		for _, c := range []struct {
			fn, mod   string
			text      bool
			blacklist string
		}{
			{"notrace_fn", "", true, ""},
			{"nvme_quiet", "nvme_core", true, ""},
			{"nvme_quiet", "xfs", false, ""},
			{"do_int3", "", true, filepath.Join(dir, "blacklist") + " of the target"},
			{"vfs_data", "", false, ""},
			{"vfs_raed", "", false, ""},
		} {
			l, err := fns.Lookup(c.fn, c.mod)
			if err != nil || l.Found || l.Kallsyms != filepath.Join(dir, "kallsyms")+" of the target" || l.Text != c.text || l.Blacklist != c.blacklist {
				t.Errorf("%v: %s:%s: %+v, %v", shell, c.mod, c.fn, l, err)
			}
		}
		if l, _ := fns.Lookup("vfs_read", ""); !l.Found || l.Kallsyms != "" || l.Blacklist != "" {
			t.Errorf("%v: vfs_read: %+v: kallsyms searched for a listed function", shell, l)
		}
		if l, _ := fns.Lookup("vfs_write", ""); !l.Found || l.Blacklist != filepath.Join(dir, "blacklist")+" of the target" {
			t.Errorf("%v: vfs_write: %+v: a listed function on the blacklist", shell, l)
		}
		fns.MaxNear = 0
		l, _ = fns.Lookup("ksys_rad", "")
		if l.Found || nearest(l.Near) != "ksys_read" {
			t.Errorf("%v: ksys_rad: %+v", shell, l)
		}
		p := &live.Place{Root: dir}
		plan, diags, _ := funcsCase(t, p, h, nil, "SELECT common_pid, COUNT(*) FROM kprobe(ksys_rad)")
		if plan != nil || !strings.Contains(diags, "unknown kernel function \"ksys_rad\": not in available_filter_functions of the target's tracefs "+dir+" (--via ssh board)") ||
			!strings.Contains(diags, "; did you mean ksys_read?") {
			t.Errorf("%v: %s", shell, diags)
		}
		plan, diags, _ = funcsCase(t, p, h, nil, "SELECT n FROM uprobe('/no/such/app', 0x10, n=%di:s64)")
		if plan != nil || !strings.Contains(diags, "no file /no/such/app on the target") {
			t.Errorf("%v: uprobe: %s", shell, diags)
		}
		plan, diags, _ = funcsCase(t, &live.Place{Root: filepath.Join(dir, "none")}, h, nil, "SELECT common_pid, COUNT(*) FROM kprobe(ksys_rad)")
		if plan == nil || diags != "" {
			t.Errorf("%v: no list on the target: %s", shell, diags)
		}
		// A shell without grep (dash with an empty PATH): not checked,
		// and a warning says why.
		nogrep := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
			c := exec.Command(shell[0], append(shell[1:], "-c", cmd)...)
			c.Env = append(os.Environ(), "PATH="+t.TempDir())
			out, err := c.CombinedOutput()
			return string(out), err
		}
		plan, diags, log := funcsCase(t, p, live.Host{Shell: nogrep, Via: "ssh board"}, nil, "SELECT common_pid, COUNT(*) FROM kprobe(ksys_rad)")
		// (busybox's sh runs its own grep and head without a PATH)
		if shell[0] != "busybox" && (plan == nil || diags != "" || !strings.Contains(log, "warning: the functions of kprobes are not checked: the target's shell has no grep or head")) {
			t.Errorf("%v: no grep: %s%s", shell, diags, log)
		}
		for _, c := range cmds {
			if strings.Contains(c, "cat ") {
				t.Errorf("a command reads a whole file: %s", c)
			}
		}
	}
}

// nearest finds ksys_read among names, as the check would suggest it.
func nearest(names []string) string {
	for _, n := range names {
		if n == "ksys_read" {
			return n
		}
	}
	return ""
}

// A uprobe at an offset names a binary the planner does not read: on
// this machine's tracefs (-e, -r) it must exist here; printing for
// another machine, a note says it is not checked.
func TestUprobeBinaryChecked(t *testing.T) {
	h := live.Host{Dir: func(p string) (fs.FS, error) {
		if p == "/usr/bin" {
			return fstest.MapFS{"app": {Data: []byte("\x7fELF")}}, nil
		}
		return nil, fs.ErrNotExist
	}}
	machine := &live.Place{Formats: "/sys/kernel/tracing", Machine: true}
	if plan, diags, log := funcsCase(t, machine, h, nil, "SELECT common_pid, COUNT(*) FROM uprobe('/usr/bin/app', 0x10)"); plan == nil || diags != "" || log != "" {
		t.Errorf("/usr/bin/app: %s%s", diags, log)
	}
	plan, diags, _ := funcsCase(t, machine, h, nil, "SELECT common_pid, COUNT(*) FROM uprobe('/usr/bin/ap', 0x10)")
	if plan != nil || !strings.Contains(diags, "q.sql:1:41: no file /usr/bin/ap on the target") {
		t.Errorf("/usr/bin/ap: %s", diags)
	}
	plan, diags, log := funcsCase(t, &live.Place{Kernel: "6.1"}, live.Host{}, nil, "SELECT common_pid, COUNT(*) FROM uprobe('/usr/bin/ap', 0x10)")
	if plan == nil || diags != "" || log != "sqlhist: note: uprobe: /usr/bin/ap is not checked: the target's files are not reached (printing for another machine: --via COMMAND reaches them)\n" {
		t.Errorf("printing: %s%s", diags, log)
	}
}

// stopsAt is a file of list whose reads fail past its first limit bytes:
// a scan that reads further than it needs fails.
type stopsAt struct {
	fs.File
	data  string
	limit int
	off   int
}

func (s *stopsAt) Read(p []byte) (int, error) {
	if s.off >= len(s.data) {
		return 0, io.EOF
	}
	if s.off >= s.limit {
		return 0, fmt.Errorf("read past byte %d: the scan went on after the function", s.limit)
	}
	n := copy(p, s.data[s.off:s.limit])
	s.off += n
	return n, nil
}

func (s *stopsAt) Close() error { return nil }

type stopsAtFS struct {
	name, data string
	limit      int
	opens      *int
}

func (f stopsAtFS) Open(name string) (fs.File, error) {
	if name != f.name {
		return nil, fs.ErrNotExist
	}
	*f.opens++
	return &stopsAt{data: f.data, limit: f.limit}, nil
}

// TestFunctionScanStops: a function the list has is found by a scan that
// reads no further than its line (the kernel formats the list on each
// read), in either form of the list, with or without its module; one
// the list lacks reads it whole, once, for the nearest names.
func TestFunctionScanStops(t *testing.T) {
	var big strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&big, "filler_function_%d\n", i)
	}
	plain := "vfs_read\nnvme_setup_cmd [nvme_core]\n" + big.String()
	addrs := "ffffffff81000000 vfs_read\nffffffffc0000000 nvme_setup_cmd [nvme_core]\n" + big.String()
	for _, tt := range []struct {
		file, data, fn, mod string
	}{
		{"available_filter_functions", plain, "vfs_read", ""},
		{"available_filter_functions", plain, "nvme_setup_cmd", "nvme_core"},
		{"available_filter_functions", plain, "nvme_setup_cmd", ""},
		{"available_filter_functions_addrs", addrs, "vfs_read", ""},
		{"available_filter_functions_addrs", addrs, "nvme_setup_cmd", "nvme_core"},
	} {
		opens := 0
		// The reads stop being served a page after the function's line.
		limit := strings.Index(tt.data, tt.fn) + 4096
		f := &live.FSFunctions{FS: stopsAtFS{tt.file, tt.data, limit, &opens}, Name: "test"}
		l, err := f.Lookup(tt.fn, tt.mod)
		if err != nil || !l.Found || l.Module != (tt.mod != "") || opens != 1 {
			t.Errorf("%s: %s [%s]: %+v, %v, %d opens; want found by one partial read", tt.file, tt.fn, tt.mod, l, err, opens)
		}
	}
	// Not there (or not in that module): the whole list, for the
	// nearest names.
	for _, tt := range []struct{ fn, mod string }{{"vfs_raed", ""}, {"vfs_read", "nvme_core"}} {
		opens := 0
		f := &live.FSFunctions{FS: stopsAtFS{"available_filter_functions", plain, len(plain), &opens}, Name: "test"}
		l, err := f.Lookup(tt.fn, tt.mod)
		if err != nil || l.Found || len(l.Near) != 20002 || opens != 2 {
			t.Errorf("%s [%s]: found %v, %d names near, %v, %d opens; want not found, the whole list once more", tt.fn, tt.mod, l.Found, len(l.Near), err, opens)
		}
	}
	// A read error is said.
	opens := 0
	f := &live.FSFunctions{FS: stopsAtFS{"available_filter_functions", plain, 100, &opens}, Name: "test"}
	if _, err := f.Lookup("filler_function_19999", ""); err == nil || !strings.Contains(err.Error(), "read past byte 100") {
		t.Errorf("a failing read: %v", err)
	}
}

// A kprobe's function that names several text symbols in kallsyms
// (static functions of different files) is ambiguous: a warning at the
// function says how many and what the kernel does with such a name, on
// this machine's tracefs and through a shell (--via), for a function the
// list has and for one only kallsyms has; a unique one has none.
func TestKprobeFunctionAmbiguous(t *testing.T) {
	syms := kallsyms + "ffffffff81235000 t show_stat\nffffffff81236000 t show_stat\nffffffff81237000 t quiet_dup\nffffffff81238000 t quiet_dup\n" +
		"ffffffffc0003000 t show_stat\t[nvme_core]\n"
	list := funcList + "show_stat\nshow_stat\nshow_stat [nvme_core]\n"
	files := fstest.MapFS{"available_filter_functions": {Data: []byte(list)}}
	host := live.Host{Dir: func(p string) (fs.FS, error) {
		if p == "/proc" {
			return fstest.MapFS{"kallsyms": {Data: []byte(syms)}}, nil
		}
		return nil, fs.ErrNotExist
	}}
	place := &live.Place{Root: "/sys/kernel/tracing", Formats: "/sys/kernel/tracing", Machine: true}
	for _, c := range []struct{ query, warn string }{
		{"SELECT common_pid, COUNT(*) FROM kprobe(show_stat)", "q.sql:1:41: warning: kernel function \"show_stat\" is ambiguous: 3 text symbols have that name in /proc/kallsyms"},
		{"SELECT common_pid, COUNT(*) FROM kprobe(nvme_core:show_stat)", ""},
		{"SELECT common_pid, COUNT(*) FROM kprobe(quiet_dup)", "warning: kernel function \"quiet_dup\" is ambiguous: 2 text symbols"},
		{"SELECT common_pid, COUNT(*) FROM kprobe(vfs_read)", ""},
	} {
		plan, diags, _ := funcsCase(t, place, host, files, c.query)
		if plan == nil || (c.warn == "") != (diags == "") || !strings.Contains(diags, c.warn) {
			t.Errorf("%s: plan %v, diagnostics\n%s\nwant\n%s", c.query, plan != nil, diags, c.warn)
		}
	}

	dir := t.TempDir()
	for name, data := range map[string]string{"available_filter_functions": list, "kallsyms": syms} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, shell := range [][]string{{"busybox", "sh"}, {"dash"}} {
		if _, err := exec.LookPath(shell[0]); err != nil {
			t.Errorf("%v: %v", shell, err)
			continue
		}
		bin := t.TempDir()
		if shell[0] == "busybox" {
			bb, _ := exec.LookPath("busybox")
			for _, applet := range []string{"grep", "head"} {
				os.Symlink(bb, filepath.Join(bin, applet))
			}
		}
		run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
			c := exec.Command(shell[0], append(shell[1:], "-c", cmd)...)
			c.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := c.CombinedOutput()
			return string(out), err
		}
		fns := &live.ShellFunctions{Run: run, Root: dir, Via: "ssh board", Kallsyms: filepath.Join(dir, "kallsyms"), Blacklists: []string{filepath.Join(dir, "none")}}
		for _, c := range []struct {
			fn, mod string
			same    int
		}{{"show_stat", "", 3}, {"show_stat", "nvme_core", 0}, {"quiet_dup", "", 2}, {"vfs_read", "", 0}, {"notrace_fn", "", 0}} {
			l, err := fns.Lookup(c.fn, c.mod)
			if err != nil || l.Same != c.same || c.same > 0 && l.Kallsyms != filepath.Join(dir, "kallsyms")+" of the target" {
				t.Errorf("%v: %s:%s: %+v, %v; want %d the same", shell, c.mod, c.fn, l, err, c.same)
			}
		}
	}
}

// countingFS counts the opens of each file.
type countingFS struct {
	fs.FS
	opens map[string]int
}

func (c countingFS) Open(name string) (fs.File, error) {
	c.opens[name]++
	return c.FS.Open(name)
}

// A function two probes name (a kprobe JOIN kretprobe on it) is looked
// up once: the kernel formats its lists on each read. An unknown one is
// still an error at each probe that names it.
func TestKprobeFunctionLookedUpOnce(t *testing.T) {
	proc := countingFS{fstest.MapFS{"kallsyms": {Data: []byte(kallsyms)}}, map[string]int{}}
	host := live.Host{Dir: func(p string) (fs.FS, error) {
		if p == "/proc" {
			return proc, nil
		}
		return nil, fs.ErrNotExist
	}}
	files := fstest.MapFS{"available_filter_functions": {Data: []byte(funcList)}}
	place := &live.Place{Root: "/sys/kernel/tracing", Formats: "/sys/kernel/tracing", Machine: true}
	join := "SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(FN) AS start JOIN kretprobe(FN) AS end ON start.common_pid = end.common_pid GROUP BY ns"
	plan, diags, _ := funcsCase(t, place, host, files, strings.ReplaceAll(join, "FN", "vfs_read"))
	if plan == nil || diags != "" || proc.opens["kallsyms"] != 1 {
		t.Errorf("vfs_read twice: plan %v, kallsyms read %d times, diagnostics:\n%s", plan != nil, proc.opens["kallsyms"], diags)
	}
	proc.opens["kallsyms"] = 0
	_, diags, _ = funcsCase(t, place, host, files, strings.ReplaceAll(join, "FN", "vfs_raed"))
	if n := strings.Count(diags, `unknown kernel function "vfs_raed"`); n != 2 || proc.opens["kallsyms"] != 1 || !strings.Contains(diags, "did you mean vfs_read?") {
		t.Errorf("vfs_raed twice: %d errors, kallsyms read %d times:\n%s", n, proc.opens["kallsyms"], diags)
	}
}
