package main

import (
	"strings"
	"testing"
	"time"
)

// A killed run's synthetic event is in the way of the same -r -n: the
// compiler refuses the query before any write, and the note before it
// names --cleanup.
func TestRunAfterKilledRunNamesCleanup(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files["dynamic_events"] = "p:sqlhist_77/vfs_read vfs_read\ns:synthetic/wl\tu64 lat\n"
	f.files["events/synthetic/wl/format"] = "name: wl\nID: 1500\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:u64 lat;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n"
	f.timer <- time.Time{}
	e, _, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-n", "wl", wakeupSQL}, e); code != exitQuery {
		t.Errorf("exit %d", code)
	}
	note := strings.Index(stderr.String(), "killed runs (pids [77]) left tracing behind; sqlhist --cleanup removes it")
	refusal := strings.Index(stderr.String(), `a synthetic event named "wl" already exists`)
	if note < 0 || refusal < note || len(f.Writes)+len(f.lease) != 0 {
		t.Errorf("writes %q %q, stderr:\n%s", f.Writes, f.lease, stderr)
	}
}
