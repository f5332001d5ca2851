package planner

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// demoBinary builds the kernel suite's uprobe demo, a static Go program
// with a symbol table (test binaries have none), once for all the tests.
func demoBinary(t *testing.T) []byte {
	t.Helper()
	demo.once.Do(func() {
		dir, err := os.MkdirTemp("", "sqlhist-demo")
		if err != nil {
			demo.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "demo")
		cmd := exec.Command("go", "build", "-o", bin, "../e2e/testdata/demo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			demo.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		demo.data, demo.err = os.ReadFile(bin)
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	return demo.data
}

var demo struct {
	once sync.Once
	data []byte
	err  error
}

// A binary several probes name is read once per compile.
func TestUprobeBinaryReadOnce(t *testing.T) {
	data := demoBinary(t)
	reads := 0
	opt := Options{ReadFile: func(name string) ([]byte, error) {
		reads++
		return data, nil
	}}
	sql := `SELECT TIMESTAMP_DELTA AS lat FROM uprobe('/work/bin/demo', main.work, n=%ax) AS start
	        JOIN uretprobe('/work/bin/demo', main.work) AS end ON start.common_pid = end.common_pid;
	        SELECT n, COUNT(*) FROM uprobe('/work/bin/demo', main.work, n=%ax)`
	buildOK(t, embedded(t, "6.12"), sql, opt)
	if reads != 1 {
		t.Errorf("the binary was read %d times, want 1", reads)
	}
}

// symbolOffset on a real binary: the bytes at the returned file offset
// are the bytes the executable segment maps at the symbol's address.
func TestSymbolOffsetOnRealBinary(t *testing.T) {
	data := demoBinary(t)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	const name = "main.work"
	var value uint64
	for _, s := range syms {
		if s.Name == name {
			value = s.Value
		}
	}
	if value == 0 {
		t.Fatalf("%s not in the test binary's symbols", name)
	}
	off, err := symbolOffset(data, name)
	if err != nil {
		t.Fatal(err)
	}
	var seg *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && value >= p.Vaddr && value < p.Vaddr+p.Memsz {
			seg = p
		}
	}
	want := make([]byte, 16)
	if _, err := seg.ReadAt(want, int64(value-seg.Vaddr)); err != nil {
		t.Fatal(err)
	}
	if got := data[off : off+16]; !bytes.Equal(got, want) {
		t.Errorf("bytes at file offset 0x%x = %x, the segment maps %x at 0x%x", off, got, want, value)
	}
}

func TestSymbolOffsetErrors(t *testing.T) {
	data := demoBinary(t)
	tests := []struct {
		data       []byte
		name, want string
	}{
		{[]byte("#!/bin/sh\n"), "main", "not an ELF file"},
		{data, "main.wrok", `no function "main.wrok" in the symbol table; did you mean "main.work"?`},
		{data, "no_such_function_anywhere", `no function "no_such_function_anywhere"`},
	}
	for _, tt := range tests {
		_, err := symbolOffset(tt.data, tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("symbolOffset(%q) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
