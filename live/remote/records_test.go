package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// A killed session's record is found and removed by another session's
// --cleanup; a live session's, a young one, an unknown file and the
// session's own are left. Under each shell a target may have.
func TestDeadRecords(t *testing.T) {
	eachShell(t, func(t *testing.T, sh string) {
		dir := t.TempDir()
		gone := exec.Command("true")
		if err := gone.Run(); err != nil {
			t.Fatal(err)
		}
		dead := strconv.Itoa(gone.Process.Pid)
		alive := strconv.Itoa(os.Getpid())
		now := time.Now()
		files := []struct {
			name, line string
			age        time.Duration
			listed     bool
		}{
			{"sqh00000000000000a1", "7 E 0 P" + dead, 2 * time.Minute, true},   // its shell gone, 2 min old
			{"sqh00000000000000a2", "7 B P" + alive, 5 * time.Minute, false},   // its shell alive
			{"sqh00000000000000a8", "7 B P" + alive, 20 * time.Minute, true},   // its shell alive (a serial line's), unwritten for 20 min
			{"sqh00000000000000a3", "3 E 0 P" + dead, 10 * time.Second, false}, // gone, but young: a restarting line
			{"sqh00000000000000a4", "3 E 0", 2 * time.Hour, true},              // an older sqlhist's, old
			{"sqh00000000000000a5", "3 E 0", 5 * time.Minute, false},           // an older sqlhist's, young
			{"sqh0000000000000zz6", "3 E 0 P" + dead, 2 * time.Hour, false},    // not a record's name
			{"sqh00000000000000a", "3 E 0 P" + dead, 2 * time.Hour, false},     // 15 digits
			{"other", "3 E 0 P" + dead, 2 * time.Hour, false},                  // not ours
			{"sqh00000000000000a7", "'; touch pwned; '", 2 * time.Hour, true},  // hostile: names no shell
		}
		for _, f := range files {
			p := filepath.Join(dir, f.name)
			if err := os.WriteFile(p, []byte(f.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, now.Add(-f.age), now.Add(-f.age)); err != nil {
				t.Fatal(err)
			}
		}
		s := dial(t, "TMPDIR="+emit.Quote(dir)+" exec "+sh, Options{Timeout: 10 * time.Second})
		// A request writes the session's own record, naming its shell.
		if _, err := s.Run(context.Background(), "a write", "true"); err != nil {
			t.Fatal(err)
		}
		own := filepath.Join(dir, "sqh"+s.m2)
		b, err := os.ReadFile(own)
		if !regexp.MustCompile(`^[0-9]+ E 0 P[0-9]+\n$`).Match(b) {
			t.Fatalf("the session's own record: %q, %v", b, err)
		}
		// Made old, it still is not listed: it is this session's (its
		// shell is alive too, but so is a2's).
		os.Chtimes(own, now.Add(-2*time.Hour), now.Add(-2*time.Hour))
		recs, err := s.DeadRecords(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, r := range recs {
			got = append(got, filepath.Base(r.Path)+" "+strconv.Itoa(r.PID))
		}
		for _, f := range files {
			if f.listed {
				pid := "0"
				if m := regexp.MustCompile(` P([0-9]+)$`).FindStringSubmatch(f.line); m != nil {
					pid = m[1]
				}
				want = append(want, f.name+" "+pid)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("dead records: got %q, want %q", got, want)
		}
		if err := s.RemoveRecords(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		for _, f := range append(files, struct {
			name, line string
			age        time.Duration
			listed     bool
		}{filepath.Base(own), "", 0, false}) {
			_, err := os.Stat(filepath.Join(dir, f.name))
			if f.listed != os.IsNotExist(err) {
				t.Errorf("%s: removed %v, want %v (%v)", f.name, os.IsNotExist(err), f.listed, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Error("a record's text ran")
		}
		// Nothing left to find.
		if recs, err := s.DeadRecords(context.Background()); err != nil || len(recs) != 0 {
			t.Errorf("after the removal: %v, %v", recs, err)
		}
	})
}
