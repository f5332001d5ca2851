package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/emit"
)

// renameSQL is the wakeup JOIN of one task name, whose term on the end's
// next_comm the planner puts on the start's comm too (planner/pushdown.go).
const renameSQL = `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_comm == "x"`

// TestRenamePushdown shows in Debian's 6.1 (one CPU, hist triggers) what
// the start's pushed name term changes: e2e/testdata/rename makes 200
// wakeups of a thread named "a" that another thread renames "x" before
// it is switched in. The JOIN as printed (the start keeps only the
// wakeups of tasks named x) counts none of them; the same triggers
// without the pushed term count all 200, under x. (docs/kernels.md says
// why the term is pushed all the same.)
func TestRenamePushdown(t *testing.T) {
	needKernels(t)
	const n = 200
	pushed := costCompile(t, "6.1", "wl", renameSQL, costPrinted)
	var unpushed []emit.Command
	found := false
	for _, c := range pushed {
		if strings.HasSuffix(c.File, "sched_waking/trigger") {
			cut := strings.Replace(c.Line, ` if comm == "x"`, "", 1)
			found = cut != c.Line
			c.Line, c.Undo = cut, "!"+cut
		}
		unpushed = append(unpushed, c)
	}
	if !found {
		t.Fatalf("the printed plan's start trigger has no pushed term:\n%s", costWrites(pushed, false))
	}
	var b strings.Builder
	b.WriteString("T=/sys/kernel/tracing\nset -e\n")
	for _, v := range []struct {
		name string
		cmds []emit.Command
	}{{"pushed", pushed}, {"unpushed", unpushed}} {
		b.WriteString(costWrites(v.cmds, false))
		b.WriteString("echo 'hist:keys=comm' >> $T/events/synthetic/wl/trigger\n")
		fmt.Fprintf(&b, "echo \"@@%s-load $(/work/rename %d)\"\n", v.name, n)
		fmt.Fprintf(&b, "echo \"@@%s-hits $(sed -n 's/^ *Hits: //p' $T/events/synthetic/wl/hist)\"\n", v.name)
		fmt.Fprintf(&b, "echo '@@%s-hist'; cat $T/events/synthetic/wl/hist\n", v.name)
		b.WriteString("echo '!hist:keys=comm' >> $T/events/synthetic/wl/trigger\n")
		b.WriteString(costWrites(v.cmds, true))
	}
	b.WriteString("echo \"@@errorlog $(cat $T/error_log | wc -l)\"\n")
	res := boot(t, "6.1", vm.Guest{Script: b.String(), CombinedOutput: true, Timeout: 10 * time.Minute, CPUs: 1,
		Files: []vm.File{{Path: "/work/rename", Mode: 0o755, Data: cBuildStatic(t, "testdata/rename/rename.c", "-pthread")}}})
	out := res.Stdout
	t.Logf("guest:\n%s", out)
	for _, w := range []string{fmt.Sprintf("@@pushed-load renamed %d", n), fmt.Sprintf("@@unpushed-load renamed %d", n), "@@errorlog 0"} {
		if !strings.Contains(out, w) {
			t.Fatalf("no %q in the guest's output", w)
		}
	}
	hits := func(v string) string {
		m := regexp.MustCompile(`(?m)^@@` + v + `-hits (\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no hits of %s", v)
		}
		return m[1]
	}
	if got := hits("pushed"); got != "0" {
		t.Errorf("the JOIN as printed counted %s wakeups of the renamed thread, want 0", got)
	}
	if got := hits("unpushed"); got != fmt.Sprint(n) {
		t.Errorf("the JOIN without the pushed term counted %s wakeups of the renamed thread, want %d", got, n)
	}
}
