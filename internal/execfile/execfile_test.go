package execfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Many goroutines write scripts and run them at once, as the suites
// do: every run succeeds and prints what its script says.
func TestWriteThenRunConcurrently(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(dir, "s"+string(rune('a'+i%26))+string(rune('a'+i/26)))
			want := "script " + p
			if err := Write(p, []byte("#!/bin/sh\necho 'script '\"$0\"\n")); err != nil {
				errs <- err
				return
			}
			out, err := exec.Command(p).Output()
			if err != nil {
				errs <- err
				return
			}
			if string(out) != want+"\n" {
				errs <- &os.PathError{Op: "run", Path: p, Err: os.ErrInvalid}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWriteMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	if err := Write(p, []byte("data")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(p)
	if string(b) != "data" {
		t.Errorf("content %q", b)
	}
	if err := Write(filepath.Join(t.TempDir(), "no", "such"), []byte("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
