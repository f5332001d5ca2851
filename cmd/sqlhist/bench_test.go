package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

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
		stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		dir:      func(string) (fs.FS, error) { return fsys, nil },
		readFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist },
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
