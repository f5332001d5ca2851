package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/internal/nohugepages"
	"github.com/sqlhist/sqlhist/tracefs"
)

const benchQuery = `SELECT end.next_comm AS name, start.pid,
  (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS latency
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`

// fullCatalog copies the newest embedded catalog into a MapFS laid out like
// a tracefs, padded with synthetic events up to at least 2,000 events.
func fullCatalog(b *testing.B) (fstest.MapFS, int) {
	src, err := tracefs.Embedded("")
	if err != nil {
		b.Fatal(err)
	}
	m := fstest.MapFS{}
	n := 0
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		m[p] = &fstest.MapFile{Data: data}
		if strings.HasSuffix(p, "/format") {
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	filler := m["events/sched/sched_switch/format"].Data
	for i := 0; n < 2000; i++ {
		name := "filler_" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i)
		m["events/filler/"+name+"/format"] = &fstest.MapFile{Data: bytes.Replace(filler, []byte("name: sched_switch"), []byte("name: "+name), 1)}
		n++
	}
	return m, n
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

func twoEvents(full fstest.MapFS) fstest.MapFS {
	m := fstest.MapFS{}
	for _, p := range []string{"events/sched/sched_waking/format", "events/sched/sched_switch/format", "README", "FILES"} {
		m[p] = full[p]
	}
	return m
}

// onDisk writes m under a temporary directory: a tracefs is a directory
// tree, and MapFS's Stat of a missing path scans the whole map.
func onDisk(b *testing.B, m fstest.MapFS) fs.FS {
	dir := b.TempDir()
	for p, f := range m {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, f.Data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return os.DirFS(dir)
}

func benchCompile(b *testing.B, m fstest.MapFS) {
	fsys := onDisk(b, m)
	b.ResetTimer()
	e := env{
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		Dir:      func(string) (fs.FS, error) { return fsys, nil },
		ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist },
	}
	args := []string{"--formats", "tracefs", "-n", "wakeup_lat", benchQuery}
	b.ReportAllocs()
	for b.Loop() {
		if code := run(args, e); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkCompileFullCatalog compiles the wakeup-latency query against a
// tracefs of 2,000+ events; BenchmarkCompileTwoEvents against a directory
// with only the two events it names. The catalog is lazy, so the two
// should cost about the same.
func BenchmarkCompileFullCatalog(b *testing.B) {
	full, n := fullCatalog(b)
	b.ReportMetric(float64(n), "events")
	benchCompile(b, full)
}

func BenchmarkCompileTwoEvents(b *testing.B) {
	full, _ := fullCatalog(b)
	benchCompile(b, twoEvents(full))
}

// fill repeats unit between head and tail up to the longest script sqlhist
// reads.
func fill(head, unit, tail string) string {
	n := (compiler.MaxSourceBytes - len(head) - len(tail)) / len(unit)
	return head + strings.Repeat(unit, n) + tail
}

// fillN writes unit(0), unit(1), … while they fit in the longest script.
func fillN(unit func(i int) string) string {
	var b strings.Builder
	for i := 0; ; i++ {
		u := unit(i)
		if b.Len()+len(u) > compiler.MaxSourceBytes {
			return b.String()
		}
		b.WriteString(u)
	}
}

const worstJoin = "SELECT start.pid, end.next_pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"

// worstCompiles are the slowest whole compiles found. Each fills the size
// limit with one shape; every shape was timed, the slowest profiled, and
// what grew faster than the input fixed, until each cost was linear:
// select_list_hist took 99 s (each duplicate key compared with every
// earlier one, a diagnostic per pair), select_list_join 23 s (variable
// names tried base, base_2, … from the start each time), regroup 23 s
// (products distributed over sums of thousands of terms), statements
// 260 ms (a stat in each of ~100 systems per statement to find the event).
var worstCompiles = []struct{ name, text string }{
	{"select_list_hist", fill("SELECT ", "pid, ", "pid FROM sched_waking")},
	{"select_list_join", fill("SELECT ", "start.pid, ", "start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid")},
	{"regroup", fill("SELECT start.pid, ((end.next_pid + end.prev_pid + end.next_prio + end.prev_prio)", " * 2", ") AS x FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid")},
	{"regroup_64", "SELECT start.pid, ((" + strings.Repeat("end.next_pid + ", 31) + "end.prev_pid)" + strings.Repeat(" * 2", 32) + ") AS x FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"},
	{"product_chain", fill("SELECT start.pid, (", "end.next_pid * ", "1) AS x FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid")},
	{"constants", fill("SELECT start.pid, (end.next_pid", " + 1", ") AS x FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid")},
	{"statements_hist", fill("", "SELECT pid FROM sched_waking;", "")},
	{"statements_join", fillN(func(i int) string { return "CREATE VIEW lat_" + itoa(i) + " AS " + worstJoin + ";" })},
	{"view_chain", fillN(func(i int) string {
		if i == 0 {
			return "CREATE VIEW lat_0 AS " + worstJoin + ";"
		}
		return "CREATE VIEW lat_" + itoa(i) + " AS SELECT start.pid, end.pid AS p FROM lat_" + itoa(i-1) + " AS start JOIN sched_waking AS end ON start.pid = end.pid;"
	})},
	{"where_or", fill("SELECT pid FROM sched_waking WHERE ", "pid == 1 || ", "pid == 2")},
	{"where_and_join", fill(worstJoin+" WHERE ", "start.pid == 1 AND end.next_pid == 1 AND ", "end.next_pid == 2")},
	{"on_pairs", fill("SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid", " AND start.pid = end.next_pid", "")},
	{"group_by", fill("SELECT pid FROM sched_waking GROUP BY ", "pid, ", "pid")},
	{"unknown_fields", fill("SELECT ", "nope, ", "nope FROM sched_waking")},
	{"nested_100_per_statement", fill("", "SELECT pid FROM sched_waking WHERE "+strings.Repeat("(", 99)+"pid == 1"+strings.Repeat(")", 99)+";", "")},
	{"probes", fill("", "SELECT a FROM kprobe(do_sys_openat2, a=+0(+0(+0($arg2))):u32);", "")},
}

// BenchmarkWorstCompile runs the whole command (parse, plan, print) on
// each worst input against a tracefs of 2,000+ events on disk; each should
// stay well under 100 ms.
func BenchmarkWorstCompile(b *testing.B) {
	full, _ := fullCatalog(b)
	fsys := onDisk(b, full)
	e := env{
		Stdout: io.Discard, Stderr: io.Discard,
		Dir:      func(string) (fs.FS, error) { return fsys, nil },
		ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist },
	}
	for _, w := range worstCompiles {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(len(w.text)))
			for b.Loop() {
				e.Stdin = strings.NewReader(w.text)
				if code := run([]string{"--formats", "tracefs", "-f", "-"}, e); code != exitOK && code != exitQuery {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

// BenchmarkProcessStart runs the built binary's --version: the time a
// process of sqlhist takes to start and end (every run pays it, and an
// emulated board ten times over), with the package initialisers' share
// that GODEBUG=inittrace=1 reports (init-ms/op, init-B/op, packages/op).
func BenchmarkProcessStart(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "sqlhist")
	if out, err := exec.Command("go", "build", "-ldflags="+nohugepages.LinkFlag, "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var initMs, initBytes, pkgs float64
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, "--version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		// "init PKG @T ms, C ms clock, B bytes, A allocs"
		for _, l := range strings.Split(stderr.String(), "\n") {
			f := strings.Fields(l)
			if len(f) < 8 || f[0] != "init" {
				continue
			}
			ms, _ := strconv.ParseFloat(f[4], 64)
			by, _ := strconv.ParseFloat(f[7], 64)
			initMs += ms
			initBytes += by
			pkgs++
		}
	}
	n := float64(b.N)
	b.ReportMetric(initMs/n, "init-ms/op")
	b.ReportMetric(initBytes/n, "init-B/op")
	b.ReportMetric(pkgs/n, "packages/op")
}
