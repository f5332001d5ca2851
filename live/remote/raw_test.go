package remote

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

// odDump is what od -Ad -tx1 prints for data, with its "*" lines.
func odDump(data []byte) string {
	var b strings.Builder
	var prev []byte
	star := false
	for off := 0; off < len(data); off += 16 {
		line := data[off:min(off+16, len(data))]
		if prev != nil && bytes.Equal(line, prev) {
			if !star {
				b.WriteString("*\n")
				star = true
			}
			continue
		}
		star = false
		b.WriteString(padOffset(off))
		for _, c := range line {
			b.WriteString(" " + hex2(c))
		}
		b.WriteString("\n")
		prev = line
	}
	b.WriteString(padOffset(len(data)) + "\n")
	return b.String()
}

func padOffset(n int) string {
	return fmt.Sprintf("%07d", n)
}

func hex2(c byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[c>>4], h[c&15]})
}

// TestParseOD: a page of a few bytes then zeros crosses as a handful of
// lines and reads back whole; what is not od's output is refused.
func TestParseOD(t *testing.T) {
	page := make([]byte, 4096)
	copy(page, []byte("\x01\x02\x03 ring buffer page header and two records"))
	page = append(page, page...) // two pages, the second equal
	dump := odDump(page)
	if n := strings.Count(dump, "\n"); n > 12 {
		t.Errorf("the dump of two mostly-zero pages is %d lines, want the zeros folded", n)
	}
	got, err := ParseOD(strings.Split(dump, "\n"), 1<<20)
	if err != nil || !bytes.Equal(got, page) {
		t.Fatalf("ParseOD: %v; %d bytes, want %d equal", err, len(got), len(page))
	}
	if got, err := ParseOD([]string{"0000000"}, 100); err != nil || len(got) != 0 {
		t.Errorf("an empty dump: %v %v", got, err)
	}
	for _, bad := range []string{
		"*\n0000016",             // a star without a line before
		"0000000 01 02\n0000004", // the end at the wrong offset
		"0000000 zz\n0000001",    // not hex
		"0000000 01\n*",          // ends in a star run
		"0000000 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17\n0000017", // 17 bytes
		"0000000 0102\n0000002",  // not one byte a field
		"0000000 01\n*\n9999999", // a star run past the limit
	} {
		if _, err := ParseOD(strings.Split(bad, "\n"), 4096); err == nil {
			t.Errorf("ParseOD(%q) accepted it", bad)
		}
	}
}

// TestParseRaw: the answer of ReadRaw for two CPUs, in either encoding:
// the encoding's line, then each CPU's "cpu I" line and its pages; a CPU
// named twice or out of range, an unknown encoding, or a gzip stream that
// holds more than the limit is refused.
func TestParseRaw(t *testing.T) {
	a, b := []byte("first cpu's bytes"), []byte{}
	out := "enc od\ncpu 0\n" + odDump(a) + "cpu 1\n" + odDump(b)
	got, err := parseRaw(out, 2, 4096)
	if err != nil || !bytes.Equal(got[0], a) || len(got[1]) != 0 {
		t.Fatalf("parseRaw: %q %v", got, err)
	}
	page := make([]byte, 4096)
	copy(page[16:], "a page of events, then zeros")
	out = "enc gzip\ncpu 0\n" + gzipBase64(append(page, page...)) + "cpu 1\n" + gzipBase64(nil)
	got, err = parseRaw(out, 2, 8192)
	if err != nil || len(got[0]) != 8192 || !bytes.Equal(got[0][:4096], page) || len(got[1]) != 0 {
		t.Fatalf("parseRaw of gzip: %d, %d bytes, %v", len(got[0]), len(got[1]), err)
	}
	if _, err := parseRaw(out, 2, 4096); err == nil {
		t.Errorf("parseRaw of 8192 gzipped bytes with a limit of 4096 accepted it")
	}
	for _, bad := range []string{
		"enc od\ncpu 0\n0000000\ncpu 0\n0000000\n", "enc od\ncpu 2\n0000000\n", "enc od\n0000000\n",
		"enc od\ncpu 1\n0000000\ncpu 0\n0000000\n", "cpu 0\n0000000\n", "enc zip\ncpu 0\n",
		"enc gzip\ncpu 0\n!!!!\n", "enc gzip\ncpu 0\nAAAA\n", "enc gzip\ncpu 0\ncpu 0\n",
	} {
		if _, err := parseRaw(bad, 2, 4096); err == nil {
			t.Errorf("parseRaw(%q) accepted it", bad)
		}
	}
}

// gzipBase64 is what gzip -1 | base64 prints for data.
func gzipBase64(data []byte) string {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, 1)
	w.Write(data)
	w.Close()
	enc := base64.StdEncoding.EncodeToString(z.Bytes())
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\n")
	return b.String()
}

// TestRawScript: the request reads each CPU's pages without a read that
// waits, bounded, and names the encoding.
func TestRawScript(t *testing.T) {
	s := rawScript("/sys/kernel/tracing", []string{"instances/x/per_cpu/cpu0", "instances/x/per_cpu/cpu1"}, 4096, 256)
	for _, want := range []string{"P 'enc gzip'", "P 'enc od'", "M=128;", "M=16;", "P 'cpu 0'; D='/sys/kernel/tracing/instances/x/per_cpu/cpu0';",
		"P 'cpu 1'", "n=$(( (n + 4079) / 4080 - 1 ))", "count=$n", "grep -q '^entries: [1-9]'", "| eval \"$E\" | cat;"} {
		if !strings.Contains(s, want) {
			t.Errorf("the request lacks %q:\n%s", want, s)
		}
	}
}

// FuzzParseOD: any text is read or refused, never more than the limit.
func FuzzParseOD(f *testing.F) {
	f.Add(odDump(make([]byte, 100)))
	f.Add(odDump([]byte("sqlhist")))
	f.Add("0000000 01\n*\n0000032\n")
	// What a target with gzip and base64 answers: the pages compressed.
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(make([]byte, 4096))
	w.Close()
	f.Add("enc gzip\ncpu 0\n" + base64.StdEncoding.EncodeToString(z.Bytes()) + "\ncpu 1\n")
	f.Add("enc od\ncpu 0\n" + odDump([]byte("a page")) + "cpu 1\n0000000\n")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseOD(strings.Split(text, "\n"), 8192)
		if err == nil && len(got) > 8192 {
			t.Fatalf("%d bytes past the limit", len(got))
		}
		if _, err := parseRaw(text, 4, 8192); err != nil {
			return
		}
	})
}

// TestNextRawPages: a slow request halves the pages, a fast one that read
// all it could doubles them, within bounds.
func TestNextRawPages(t *testing.T) {
	for _, c := range []struct {
		pages int
		took  time.Duration
		full  bool
		want  int
	}{
		{128, 5 * time.Second, true, 64},
		{rawPagesMin, 20 * time.Second, true, rawPagesMin},
		{128, time.Second, true, 256},
		{rawPagesMax, time.Second, true, rawPagesMax},
		{128, time.Second, false, 128},
		{128, 2 * time.Second, true, 128},
	} {
		if got := nextRawPages(c.pages, c.took, c.full); got != c.want {
			t.Errorf("nextRawPages(%d, %v, %v) = %d, want %d", c.pages, c.took, c.full, got, c.want)
		}
	}
}
