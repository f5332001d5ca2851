package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/emit"
)

// The pages one request reads, all CPUs together (at least minRawPages a
// CPU): a request must end within a few seconds, well before the run's
// heartbeat goes stale (live.BeatStale) or the request times out, and
// what it takes depends on the line and on how much of the target's CPU
// its processes get. So ReadRaw starts at rawPagesStart and halves the
// pages after a request that took over rawSlow, doubles them after one
// that read as many as it could in under rawFast, within rawPagesMin and
// rawPagesMax; od's dump (14.3 KB a full page, against 0.4-1.3 KB
// compressed) reads at most rawPagesOD. Through the 5.10 guest's serial
// line, 256 pages took 0.9-3.9 s, and 10-18 s with the guest's CPUs
// taken by a load making as many system calls as it could. What is left
// is read by the next request.
const (
	rawPagesStart = 128
	rawPagesMin   = 16
	rawPagesMax   = 512
	rawPagesOD    = 32
	minRawPages   = 2
	rawSlow       = 4 * time.Second
	rawFast       = 1500 * time.Millisecond
)

// rawScript is the shell text of ReadRaw's request. It picks the encoding
// (gzip -1 | base64 where the target has both, else od -Ad -tx1, which
// busybox, toybox and coreutils all have; the zeros that pad a page fold
// into one "*" line of od's dump) and prints "enc gzip" or "enc od",
// then for each CPU directory "cpu I" and the encoded pages.
//
// A CPU's pages are read with one dd for as many pages as its stats'
// "bytes" (the unread bytes of its events) certainly fill, less one, and
// then one page a read while its stats count unread entries: a read of
// trace_pipe_raw waits while the buffer is empty, and nothing must wait
// (the run's instance waits for none: its buffer_percent is 0). So a
// request runs a handful of processes a CPU, however many pages it reads:
// what a stream run of raw_syscalls or the scheduler's events reads back
// of its own reading. Through a terminal (a serial line, adb's pty) the
// encoder writes into cat, not to the transport: od writes a line at a
// time there, 256 write calls a page (Debian 5.10's busybox: 2561 writes
// for 10 pages; through cat 37).
func rawScript(root string, dirs []string, pageSize, pages int) string {
	var b strings.Builder
	n := max(1, len(dirs))
	fmt.Fprintf(&b, "if command -v gzip >/dev/null 2>&1 && command -v base64 >/dev/null 2>&1; then E='gzip -1 | base64'; M=%d; P 'enc gzip'; else E='od -Ad -tx1'; M=%d; P 'enc od'; fi; ",
		max(minRawPages, pages/n), max(minRawPages, min(pages, rawPagesOD)/n))
	data := pageSize - 16 // a page's events: the page less its header (16 bytes on 64-bit, 12 on 32-bit)
	for i, d := range dirs {
		fmt.Fprintf(&b, "P 'cpu %d'; D=%s; n=0; k=; for w in $(cat \"$D/stats\"); do [ \"$k\" = bytes: ] && n=$w; k=$w; done; "+
			"n=$(( (n + %d) / %d - 1 )); [ $n -lt 0 ] && n=0; [ $n -gt $M ] && n=$M; "+
			"{ [ $n -gt 0 ] && dd if=\"$D/trace_pipe_raw\" bs=%d count=$n 2>/dev/null; "+
			"while [ $n -lt $M ] && grep -q '^entries: [1-9]' \"$D/stats\"; do dd if=\"$D/trace_pipe_raw\" bs=%d count=1 2>/dev/null; n=$((n+1)); done; } | eval \"$E\" | cat; ",
			i, emit.Quote(root+"/"+d), data-1, data, pageSize, pageSize)
	}
	return b.String()
}

// ReadRaw reads, for each CPU directory of dirs (per_cpu/cpuN of an
// instance, under root), the ring-buffer pages its trace_pipe_raw holds
// now, up to a bound a request (see rawScript).
func (s *Session) ReadRaw(root string, dirs []string, pageSize int) ([][]byte, error) {
	pages := int(s.rawPages.Load())
	if pages == 0 {
		pages = rawPagesStart
	}
	start := time.Now()
	out, err := s.request(context.Background(), "reading the ring buffers", rawScript(root, dirs, pageSize, pages))
	if err != nil {
		return nil, err
	}
	data, err := parseRaw(out, len(dirs), pageSize*max(minRawPages, pages))
	if err != nil {
		return nil, err
	}
	full := false
	for _, d := range data {
		full = full || len(d) >= pageSize*max(minRawPages, pages/max(1, len(dirs)))
	}
	s.rawPages.Store(int64(nextRawPages(pages, time.Since(start), full)))
	return data, nil
}

// nextRawPages is the pages to ask for after a request for pages that
// took took and did (full) or did not read as many as it could.
func nextRawPages(pages int, took time.Duration, full bool) int {
	switch {
	case took > rawSlow:
		return max(rawPagesMin, pages/2)
	case full && took < rawFast:
		return min(rawPagesMax, pages*2)
	}
	return pages
}

// parseRaw splits ReadRaw's answer: "enc gzip" or "enc od" on the first
// line, then for each CPU "cpu I" (its index in dirs) on a line of its
// own and what was read, encoded. limit bounds a CPU's bytes.
func parseRaw(out string, n, limit int) ([][]byte, error) {
	res := make([][]byte, n)
	cur := -1
	enc := ""
	var dump []string
	flush := func() error {
		if cur < 0 {
			return nil
		}
		var data []byte
		var err error
		if enc == "gzip" {
			data, err = parseGzip(dump, limit)
		} else {
			data, err = ParseOD(dump, limit)
		}
		if err != nil {
			return fmt.Errorf("the pages of CPU directory %d: %v", cur, err)
		}
		if data == nil {
			data = []byte{}
		}
		res[cur] = data
		dump = dump[:0]
		return nil
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			continue
		}
		if enc == "" {
			e, ok := strings.CutPrefix(l, "enc ")
			if !ok || e != "gzip" && e != "od" {
				return nil, fmt.Errorf("reading the ring buffers: unexpected line %q", clip(l))
			}
			enc = e
			continue
		}
		if c, ok := strings.CutPrefix(l, "cpu "); ok {
			i, err := strconv.Atoi(c)
			if err != nil || i < 0 || i >= n || res[i] != nil || i <= cur {
				return nil, fmt.Errorf("reading the ring buffers: unexpected line %q", clip(l))
			}
			if err := flush(); err != nil {
				return nil, err
			}
			cur = i
			continue
		}
		if cur < 0 {
			return nil, fmt.Errorf("reading the ring buffers: unexpected line %q", clip(l))
		}
		dump = append(dump, l)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return res, nil
}

// parseGzip reads base64 lines of a gzip stream: the bytes it holds, at
// most limit of them.
func parseGzip(lines []string, limit int) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.Join(lines, ""))
	if err != nil {
		return nil, fmt.Errorf("base64: %v", err)
	}
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("gzip: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(z, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %v", err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("gzip: more than %d bytes", limit)
	}
	return data, nil
}

// ParseOD reads the lines of `od -Ad -tx1`: each a decimal offset and up
// to 16 bytes in hexadecimal; "*" for lines equal to the one before, up
// to the next offset; the last line the total length alone. It returns
// the bytes, at most limit of them.
func ParseOD(lines []string, limit int) ([]byte, error) {
	var out []byte
	var prev []byte
	star := false
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "*" && len(f) == 1 {
			if prev == nil || star {
				return nil, fmt.Errorf("od: a * line without a line before it")
			}
			star = true
			continue
		}
		off, err := strconv.Atoi(f[0])
		if err != nil || off < len(out) || off > limit {
			return nil, fmt.Errorf("od: bad offset in %q", clip(l))
		}
		if star {
			// Repeat the line before up to this offset.
			if len(prev) == 0 || (off-len(out))%len(prev) != 0 {
				return nil, fmt.Errorf("od: a * run that does not end on a line at %d", off)
			}
			for len(out) < off {
				out = append(out, prev...)
			}
			star = false
		}
		if off != len(out) {
			return nil, fmt.Errorf("od: offset %d, want %d", off, len(out))
		}
		if len(f) == 1 {
			continue // the total length: the end
		}
		if len(f) > 17 {
			return nil, fmt.Errorf("od: more than 16 bytes in %q", clip(l))
		}
		line := make([]byte, 0, 16)
		for _, h := range f[1:] {
			v, err := strconv.ParseUint(h, 16, 8)
			if err != nil || len(h) != 2 {
				return nil, fmt.Errorf("od: bad byte %q", clip(h))
			}
			line = append(line, byte(v))
		}
		if len(out)+len(line) > limit {
			return nil, fmt.Errorf("od: more than %d bytes", limit)
		}
		out = append(out, line...)
		prev = line
	}
	if star {
		return nil, fmt.Errorf("od: the dump ends in a * run")
	}
	return out, nil
}
