package main

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/tracefs"
)

// overlay is fsys with more files at its root.
type overlay struct {
	fs.FS
	more fstest.MapFS
}

func (o overlay) Open(name string) (fs.File, error) {
	if _, ok := o.more[name]; ok {
		return o.more.Open(name)
	}
	return o.FS.Open(name)
}

// TestKprobeTypo: printing against a copy of a tracefs that holds
// available_filter_functions, a misspelled kprobe function is an error
// at its place in the SQL, with the line, a caret and the listed name
// nearest to it, exit 1, and nothing printed; spelled right, the script
// is printed without a word on stderr.
func TestKprobeTypo(t *testing.T) {
	emb, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	copyFS := overlay{emb, fstest.MapFS{"available_filter_functions": {Data: []byte("vfs_read\nvfs_write\nksys_read\nnvme_setup_cmd [nvme_core]\n")}}}
	env := func() (env, *bytes.Buffer, *bytes.Buffer) {
		e, stdout, stderr := testEnv(nil, "")
		e.Dir = func(p string) (fs.FS, error) {
			if p == "/copy" {
				return copyFS, nil
			}
			return nil, fs.ErrNotExist
		}
		return e, stdout, stderr
	}
	e, out, errw := env()
	code := run([]string{"--formats", "/copy", "-f", "q.sql"}, withFile(e, "q.sql", "SELECT common_pid, COUNT(*)\nFROM kprobe(vfs_raed)\n"))
	want := "q.sql:2:13: unknown kernel function \"vfs_raed\": not in available_filter_functions of --formats /copy; did you mean vfs_read?\n" +
		"  2 | FROM kprobe(vfs_raed)\n" +
		"    |             ^~~~~~~~\n" +
		"hint: the function may still exist and take a kprobe, untraceable by ftrace (notrace): that file does not list those, the kernel's /proc/kallsyms does. " +
		"To check it there, compile on the target (-e, -r) or through --via COMMAND, or put a copy of the target's /proc/kallsyms in the --formats directory as kallsyms\n"
	if code != exitQuery || out.Len() != 0 || errw.String() != want {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errw, want)
	}
	e, out, errw = env()
	if code := run([]string{"--formats", "/copy", "SELECT common_pid, COUNT(*) FROM kprobe(vfs_read)"}, e); code != exitOK || errw.Len() != 0 || !strings.Contains(out.String(), "p:sqlhist/vfs_read vfs_read") {
		t.Errorf("vfs_read: exit %d, stderr %s", code, errw)
	}
}

// withFile makes e's ReadFile serve one file.
func withFile(e env, name, text string) env {
	e.ReadFile = func(p string) ([]byte, error) {
		if p == name {
			return []byte(text), nil
		}
		return nil, fs.ErrNotExist
	}
	return e
}
