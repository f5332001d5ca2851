package compiler

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/source"
)

// A probe written as bpftrace writes it is one error naming it, with
// sqlhist's spelling as the hint, not an error for each colon.
func TestBpftraceProbeSyntax(t *testing.T) {
	for in, hint := range map[string]string{
		"SELECT COUNT(*) FROM tracepoint:sched:sched_switch": "in sqlhist: FROM sched.sched_switch",
		"SELECT common_pid, COUNT(*) FROM kprobe:vfs_read":   "in sqlhist: FROM kprobe(vfs_read)",
		"SELECT common_pid, COUNT(*) FROM kr:vfs_read":       "in sqlhist: FROM kretprobe(vfs_read)",
		"SELECT common_pid FROM uprobe:/bin/bash:readline":   "in sqlhist: FROM uprobe('/bin/bash', readline)",
		"SELECT common_pid FROM t:syscalls:sys_enter_openat": "in sqlhist: FROM syscalls.sys_enter_openat",
	} {
		_, err := Parse(source.NewSource("q", in))
		d, ok := err.(source.Diags)
		if !ok || len(d) != 1 || d[0].Hint != hint || !strings.Contains(d[0].Msg, "bpftrace's probe syntax") {
			t.Errorf("%s: %v (%#v), want one error with the hint %q", in, err, d, hint)
		}
	}
}
