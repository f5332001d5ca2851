package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/live/remote"
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

// Through --via, --cleanup also removes the record files killed
// sessions left on the target (their paths quoted in the printed
// script); --dry-run only prints them.
func TestCleanupRecordsOfKilledSessions(t *testing.T) {
	for _, dry := range []bool{false, true} {
		f := newLiveFake(t, 0)
		e, stdout, stderr := liveEnv(f)
		recs := []remote.DeadRecord{{Path: "/tmp/sqh00000000000000a1", PID: 812}, {Path: "/tmp/it's/sqh00000000000000a2", PID: 0}}
		var removed []remote.DeadRecord
		e.StaleRecords = func() ([]remote.DeadRecord, error) { return recs, nil }
		e.RemoveRecords = func(r []remote.DeadRecord) error { removed = append(removed, r...); return nil }
		args := []string{"--cleanup"}
		if dry {
			args = append(args, "--dry-run")
		}
		if code := run(args, e); code != exitOK {
			t.Errorf("exit %d: %s", code, stderr)
		}
		want := "# the record of a killed --via session: its shell (process 812) is gone, or no request wrote it for ten minutes\nrm -f '/tmp/sqh00000000000000a1'\n" +
			"# the record of a killed --via session: it names no shell, and no request wrote it for ten minutes\nrm -f '/tmp/it'\\''s/sqh00000000000000a2'\n"
		if stdout.String() != want {
			t.Errorf("dry-run %v: stdout\n%s\nwant\n%s", dry, stdout, want)
		}
		if wantN := map[bool]int{false: 2, true: 0}[dry]; len(removed) != wantN {
			t.Errorf("dry-run %v: removed %v", dry, removed)
		}
		if !strings.Contains(stderr.String(), "records of killed --via sessions above") {
			t.Errorf("stderr: %s", stderr)
		}
	}
}
