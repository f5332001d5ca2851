package live_test

import (
	"context"
	"fmt"
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
func funcsCase(t *testing.T, p *live.Place, h live.Host, files fstest.MapFS, query string) (*live.Plan, string, string) {
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
			case c.err != "" && (plan != nil || !strings.Contains(diags, c.err) || !strings.Contains(diags, "hint: kprobes attach to the functions")):
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

// Where no list is known the functions are not checked, and a warning
// says so once, naming what would check them; the query is printed.
func TestKprobeFunctionsUnchecked(t *testing.T) {
	const q = "SELECT a.common_pid AS pid, TIMESTAMP_DELTA_USECS AS lat FROM kprobe(vfs_raed) AS a JOIN kretprobe(ksys_rad) AS b ON a.common_pid = b.common_pid"
	for _, c := range []struct {
		place *live.Place
		want  string
	}{
		{&live.Place{Kernel: "6.1"}, "sqlhist: warning: the functions of kprobes are not checked: the embedded catalog of Linux 6.1.0-56-cloud-amd64 x86_64 lists no kernel functions (read the target's available_filter_functions with --formats DIR, a copy of its tracefs that holds it, or --via COMMAND)\n"},
		{&live.Place{Formats: "/copy"}, "sqlhist: warning: the functions of kprobes are not checked: --formats /copy holds no available_filter_functions (copy it from the target's tracefs to check them)\n"},
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
	if err := os.WriteFile(filepath.Join(dir, "available_filter_functions"), []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
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
		fns := &live.ShellFunctions{Run: run, Root: dir, Via: "ssh board", MaxNear: 50}
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
		fns.MaxNear = 0
		l, _ = fns.Lookup("ksys_rad", "")
		if l.Found || nearest(l.Near) != "ksys_read" {
			t.Errorf("%v: ksys_rad: %+v", shell, l)
		}
		p := &live.Place{Root: dir}
		plan, diags, _ := funcsCase(t, p, h, nil, "SELECT common_pid, COUNT(*) FROM kprobe(ksys_rad)")
		if plan != nil || !strings.Contains(diags, "unknown kernel function \"ksys_rad\": not in available_filter_functions of the target's tracefs "+dir+" (--via ssh board); did you mean ksys_read?") {
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
