package main

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// TestPrintAwk: printing for a catalog without hist triggers (riscv64's)
// gives the awk engine's script, the same bytes every time; so does
// --engine stream on any catalog; -d and -i need one of them; what the text
// cannot answer is refused at the query.
func TestPrintAwk(t *testing.T) {
	runIt := func(args ...string) (int, string, string) {
		e, stdout, stderr := testEnv(&tracefs.Recorder{}, "")
		code := run(args, e)
		return code, stdout.String(), stderr.String()
	}
	code, first, errs := runIt("--kernel", "6.12", "--arch", "riscv64", "-d", "2", wakeupSQL)
	if code != exitOK || !strings.Contains(first, "LC_ALL=C awk $sqlhist_w '") || !strings.Contains(first, "# sqlhist: compiled for Linux 6.12.118+deb13-riscv64 riscv64 (event formats: embedded --kernel 6.12)\n# The query (<args>), computed by awk") || !strings.Contains(first, "*mawk*) sqlhist_w='-W interactive'") || !strings.Contains(first, "sleep 2 &") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, first, errs)
	}
	if _, again, _ := runIt("--kernel", "6.12", "--arch", "riscv64", "-d", "2", wakeupSQL); again != first {
		t.Error("the script differs from run to run")
	}
	if code, out, errs := runIt("--kernel", "6.1", "--engine", "stream", wakeupSQL); code != exitOK || !strings.Contains(out, "wait $sqlhist_awk") {
		t.Errorf("--engine stream on 6.1: exit %d\n%s%s", code, out, errs)
	}
	// -i: the script prints the results every interval too.
	if code, out, errs := runIt("--kernel", "6.1", "--engine", "stream", "-d", "3", "-i", "1", wakeupSQL); code != exitOK || !strings.Contains(out, "# Every 1 s it prints them") || !strings.Contains(out, "while [ $sqlhist_n -lt 2 ]; do sleep 1 & sqlhist_s=$!; wait $sqlhist_s; [ -d \"$sqlhist_own\" ] || exit; echo 'sqlhist-awk-tick'") {
		t.Errorf("--engine stream -d 3 -i 1 on 6.1: exit %d\n%s%s", code, out, errs)
	}
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--kernel", "6.1", "-d", "2", wakeupSQL}, exitUsage, "--duration goes with --run (-r), or with --engine stream"},
		{[]string{"--kernel", "6.1", "-i", "2", wakeupSQL}, exitUsage, "--interval goes with --run (-r), or with --engine stream"},
		{[]string{"--kernel", "6.1", "--engine", "stream", "-i", "x", wakeupSQL}, exitUsage, "-i:"},
		{[]string{"--kernel", "6.1", "--engine", "kernel", wakeupSQL}, exitUsage, "--engine goes with --run"},
		{[]string{"--kernel", "6.1", "--engine", "stream", "-o", "json", wakeupSQL}, exitUsage, "drop -e, --teardown, --teardown-out, --plan, --plan-out and -o"},
		{[]string{"--kernel", "6.1", "--engine", "stream", "--teardown-out", "td.sh", wakeupSQL}, exitUsage, "drop -e, --teardown, --teardown-out"},
		{[]string{"--kernel", "6.1", "-r", "--teardown-out", "td.sh", wakeupSQL}, exitUsage, "--run removes what it creates"},
		{[]string{"--kernel", "6.1", "--teardown", "--teardown-out", "td.sh", wakeupSQL}, exitUsage, "--teardown prints the teardown"},
		{[]string{"--kernel", "6.1", "-o", "json", "--plan-out", "p.json", wakeupSQL}, exitUsage, "give it without -o json"},
		{[]string{"--kernel", "6.1", "--plan-out", "x", "--teardown-out", "x", wakeupSQL}, exitUsage, "name the same file x"},
		{[]string{"--plan", "p.json", "--plan-out", "q.json"}, exitUsage, "--plan FILE replays a plan"},
		{[]string{"--kernel", "6.12", "--arch", "riscv64", "SELECT prev_state, COUNT(*) FROM sched_switch GROUP BY prev_state"}, exitQuery, "the field prev_state cannot be read from trace_pipe's text"},
		{[]string{"--kernel", "6.12", "--arch", "riscv64", "SELECT end.next_comm, TIMESTAMP_DELTA AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"}, exitQuery, "trace_pipe prints timestamps in µs"},
	} {
		code, out, errs := runIt(tt.args...)
		if code != tt.code || out != "" || !strings.Contains(errs, tt.err) {
			t.Errorf("%q: exit %d (want %d), stdout %q, stderr:\n%s", tt.args, code, tt.code, out, errs)
		}
	}
}
