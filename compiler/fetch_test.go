package compiler

import (
	"testing"

	"github.com/sqlhist/sqlhist/source"
)

// TestFetchValues: each fetch argument is read into a value that says
// where it reads, and renders back to the text as written.
func TestFetchValues(t *testing.T) {
	for _, c := range []struct {
		probe, fetch string
		kind         FetchKind
		check        func(*Fetch) bool
	}{
		{"kprobe(vfs_read", "%di", FetchReg, func(f *Fetch) bool { return f.Name == "di" }},
		{"kprobe(vfs_read", "$arg2", FetchArg, func(f *Fetch) bool { return f.N == 2 }},
		{"kretprobe(vfs_read", "$retval", FetchRetval, nil},
		{"kprobe(vfs_read", "$comm", FetchComm, nil},
		{"kprobe(vfs_read", "$COMM", FetchComm, func(f *Fetch) bool { return f.Name == "COMM" }},
		{"kprobe(vfs_read", "$stack", FetchStack, nil},
		{"kprobe(vfs_read", "$stack3", FetchStackN, func(f *Fetch) bool { return f.N == 3 }},
		{"eprobe(sched.sched_switch", "$prev_pid", FetchField, func(f *Fetch) bool { return f.Name == "prev_pid" }},
		{"kprobe(vfs_read", `\0x10`, FetchImm, func(f *Fetch) bool { return f.N == 16 }},
		{"kprobe(vfs_read", `\-1`, FetchImm, func(f *Fetch) bool { return f.N == ^uint64(0) }},
		{"kprobe(vfs_read", `\"hi"`, FetchImmString, func(f *Fetch) bool { return f.Name == "hi" }},
		{"kprobe(vfs_read", "@0xffff0000", FetchAddr, func(f *Fetch) bool { return f.N == 0xffff0000 }},
		{"kprobe(vfs_read", "@jiffies", FetchSym, func(f *Fetch) bool { return f.Name == "jiffies" && f.Text == "" }},
		{"kprobe(vfs_read", "@jiffies-0x8", FetchSym, func(f *Fetch) bool { return f.N == 8 && f.Neg }},
		{"uprobe('/bin/sh', main", "@+0x20", FetchFileOff, func(f *Fetch) bool { return f.N == 0x20 }},
		{"kprobe(vfs_read", "+0x10(%si)", FetchDeref, func(f *Fetch) bool { return f.N == 16 && f.X.Kind == FetchReg }},
		{"kprobe(vfs_read", "-8(+0($arg1))", FetchDeref, func(f *Fetch) bool { return f.Neg && f.X.Kind == FetchDeref && f.X.X.Kind == FetchArg }},
		{"kprobe(vfs_read", "+u4($arg2)", FetchDeref, func(f *Fetch) bool { return f.User && f.N == 4 }},
	} {
		sql := "SELECT a FROM " + c.probe + ", a=" + c.fetch + ")"
		if c.kind == FetchRetval {
			sql = "SELECT a FROM " + c.probe + ", a=" + c.fetch + ":s64)"
		}
		script, err := Parse(source.NewSource("q.sql", sql))
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		a := script.Stmts[0].From.Probe.Args[0]
		switch {
		case a.Loc == nil:
			t.Errorf("%s: no value", sql)
		case a.Loc.Kind != c.kind:
			t.Errorf("%s: kind %d, want %d", sql, a.Loc.Kind, c.kind)
		case a.Loc.String() != c.fetch:
			t.Errorf("%s: renders %q", sql, a.Loc.String())
		case c.check != nil && !c.check(a.Loc):
			t.Errorf("%s: %+v", sql, a.Loc)
		}
	}
}
