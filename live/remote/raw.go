package remote

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
)

// maxRawPages bounds the pages one request reads from a CPU's buffer.
const maxRawPages = 256

// ReadRaw reads, for each CPU directory of dirs (per_cpu/cpuN of an
// instance, under root), the ring-buffer pages its trace_pipe_raw holds
// now: while the CPU's stats count entries not read, one page a read,
// at most maxRawPages a CPU. The pages cross the transport as od's
// hexadecimal dump (busybox, toybox and coreutils od alike), in which the
// zeros that pad a page's end fold into one "*" line. The reads never
// wait: a page is read only while the buffer holds an entry (the run's
// instance waits for none: its buffer_percent is 0).
func (s *Session) ReadRaw(root string, dirs []string, pageSize int) ([][]byte, error) {
	var b strings.Builder
	for i, d := range dirs {
		q := emit.Quote(root + "/" + d)
		fmt.Fprintf(&b, "P 'cpu %d'; i=0; while [ $i -lt %d ] && grep -q '^entries: [1-9]' %s/stats; do dd if=%s/trace_pipe_raw bs=%d count=1 2>/dev/null; i=$((i+1)); done | od -Ad -tx1; ", i, maxRawPages, q, q, pageSize)
	}
	out, err := s.request(context.Background(), "reading the ring buffers", b.String())
	if err != nil {
		return nil, err
	}
	return parseRaw(out, len(dirs), pageSize*maxRawPages)
}

// parseRaw splits ReadRaw's answer: for each CPU "cpu I" (its index in
// dirs) on a line of its own, then od's dump of what was read. limit bounds a CPU's bytes.
func parseRaw(out string, n, limit int) ([][]byte, error) {
	res := make([][]byte, n)
	cur := -1
	var dump []string
	flush := func() error {
		if cur < 0 {
			return nil
		}
		data, err := ParseOD(dump, limit)
		if err != nil {
			return fmt.Errorf("the dump of CPU directory %d: %v", cur, err)
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
