package vm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppendBootconfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "initrd")
	os.WriteFile(p, []byte("12345"), 0o644)
	if err := AppendBootconfig(p, "a.b = 1\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if len(b)%4 != 0 || !strings.HasSuffix(string(b), "#BOOTCONFIG\n") {
		t.Fatalf("size %d, tail %q", len(b), b[max(0, len(b)-16):])
	}
	hdr := b[len(b)-12-8:]
	size, sum := binary.LittleEndian.Uint32(hdr), binary.LittleEndian.Uint32(hdr[4:])
	data := b[len(b)-12-8-int(size) : len(b)-12-8]
	if string(b[:5]) != "12345" || !strings.HasPrefix(string(data), "a.b = 1\n\x00") || strings.Trim(string(data[8:]), "\x00") != "" {
		t.Errorf("data %q after %q", data, b[:len(b)-12-8-int(size)])
	}
	var s uint32
	for _, c := range data {
		s += uint32(c)
	}
	if s != sum {
		t.Errorf("checksum %d, want %d", sum, s)
	}
}
