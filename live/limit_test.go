package live_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// LIMIT means the same printed and run: the command a printed script's
// closing line gives (emit.LimitHist), run by busybox's awk, mawk and
// gawk over the kernel's hist file, keeps exactly the rows -r shows with
// the LIMIT, and its output is still a hist file (header and totals).
func TestLimitPrintedIsRun(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	awks := map[string][]string{"busybox": {"busybox", "awk"}, "mawk": {"mawk"}, "gawk": {"gawk"}}
	for _, c := range []struct {
		name, query, hist, file string
		limit, rows             int
	}{
		{"buckets", "SELECT CAST(bytes_req AS BUCKETS=64) AS req, CAST(bytes_alloc AS BUCKETS=128) AS alloc, COUNT(*) AS n FROM kmalloc GROUP BY req, alloc LIMIT 3",
			"hist-6.1-buckets.txt", "events/kmem/kmalloc/hist", 3, 3},
		{"stacks", "SELECT common_cpu, STACKTRACE FROM sched_switch WHERE prev_state == 1 LIMIT 4",
			"hist-6.1-stacktrace.txt", "events/sched/sched_switch/hist", 4, 4},
		{"syscalls", "SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC LIMIT 5",
			"hist-6.1-syscall-descending.txt", "events/raw_syscalls/sys_enter/hist", 5, 5},
		{"more than there are", "SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC LIMIT 100",
			"hist-6.1-syscall-descending.txt", "events/raw_syscalls/sys_enter/hist", 100, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, err := os.ReadFile("../tracefs/testdata/" + c.hist)
			if err != nil {
				t.Fatal(err)
			}
			limited := runTable(t, fsys, c.query, c.file, string(full))
			if n := strings.Count(limited, "\n") - 4; c.name != "stacks" && n != c.rows {
				t.Errorf("-r with LIMIT %d shows %d rows:\n%s", c.limit, n, limited)
			}
			unlimited := c.query[:strings.LastIndex(c.query, " LIMIT ")]
			path := filepath.Join(t.TempDir(), "hist")
			if err := os.WriteFile(path, full, 0o644); err != nil {
				t.Fatal(err)
			}
			for name, argv := range awks {
				if _, err := exec.LookPath(argv[0]); err != nil {
					t.Errorf("%s: %v (the test needs busybox, mawk and gawk)", name, err)
					continue
				}
				cmd := strings.Join(argv[:len(argv)-1], " ") + " " + emit.LimitHist(c.limit) + " " + emit.Quote(path)
				out, err := exec.Command("sh", "-c", strings.TrimSpace(cmd)).Output()
				if err != nil {
					t.Fatalf("%s: %s: %v", name, cmd, err)
				}
				if got := strings.Count(string(out), "\n{"); got != c.rows {
					t.Errorf("%s: %d entries kept, want %d:\n%s", name, got, c.rows, out)
				}
				if !strings.HasSuffix(string(out), "Dropped: 0\n") || !strings.HasPrefix(string(out), "# event histogram\n") {
					t.Errorf("%s: the header or the totals are lost:\n%s", name, out)
				}
				if got := runTable(t, fsys, unlimited, c.file, string(out)); got != limited {
					t.Errorf("%s: the printed LIMIT's entries, read by -r without LIMIT:\n%s\nwant what -r with the LIMIT shows:\n%s", name, got, limited)
				}
			}
		})
	}
}

// runTable is the table -r prints for query when the kernel's hist file
// (file, under the run's instance) holds hist.
func runTable(t *testing.T, fsys fs.FS, query, file, hist string) string {
	t.Helper()
	src := source.NewSource("q.sql", query)
	plan, diags := live.Compile(src, tracefs.Open(fsys), live.Prepare(planner.Options{}, 9))
	if plan == nil {
		t.Fatal(diags.Render(src))
	}
	f := newFake()
	f.Files["instances/sqlhist_9/"+file] = hist
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := live.Run(ctx, &live.Target{Root: "/t", FS: f, W: f}, plan, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := results.Write(&b, rep.Results, "table"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
