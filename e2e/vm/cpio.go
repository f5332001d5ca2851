package vm

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// File modes for cpio entries (the type bits of st_mode).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
	modeTypeMsk = 0o170000
)

// CpioEntry is one member of a newc ("070701") cpio archive.
type CpioEntry struct {
	Name  string // path without a leading "/"
	Mode  uint32 // type bits | permission bits
	Data  []byte // file contents, or the target of a symlink
	Major uint32 // device numbers for character devices
	Minor uint32
}

// CpioWriter writes a newc cpio archive, the format the kernel unpacks
// as an initramfs.
type CpioWriter struct {
	w      *bufio.Writer
	n      int64
	ino    uint32
	closed bool
}

// NewCpioWriter returns a writer of a newc archive to w.
func NewCpioWriter(w io.Writer) *CpioWriter {
	return &CpioWriter{w: bufio.NewWriter(w), ino: 1}
}

func (c *CpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return err
}

func (c *CpioWriter) pad() error {
	if r := c.n % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// WriteEntry appends one entry.
func (c *CpioWriter) WriteEntry(e CpioEntry) error {
	if c.closed {
		return fmt.Errorf("cpio: write after close")
	}
	name := strings.TrimPrefix(e.Name, "/")
	if name == "" {
		return fmt.Errorf("cpio: empty name")
	}
	nlink := 1
	if e.Mode&modeTypeMsk == modeDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.Mode, 0, 0, nlink, 0, len(e.Data), 0, 0, e.Major, e.Minor, len(name)+1, 0)
	if err := c.write([]byte(hdr)); err != nil {
		return err
	}
	if err := c.write(append([]byte(name), 0)); err != nil {
		return err
	}
	if err := c.pad(); err != nil {
		return err
	}
	if err := c.write(e.Data); err != nil {
		return err
	}
	return c.pad()
}

// Close writes the trailer and flushes; it does not close the underlying writer.
func (c *CpioWriter) Close() error {
	if c.closed {
		return nil
	}
	if err := c.WriteEntry(CpioEntry{Name: "TRAILER!!!"}); err != nil {
		return err
	}
	c.closed = true
	return c.w.Flush()
}

// ReadCpio parses a newc archive (up to the trailer). It exists to test the
// writer and to inspect initramfs images.
func ReadCpio(r io.Reader) ([]CpioEntry, error) {
	br := bufio.NewReader(r)
	var off int64
	read := func(n int) ([]byte, error) {
		b := make([]byte, n)
		_, err := io.ReadFull(br, b)
		off += int64(n)
		return b, err
	}
	skipPad := func() error {
		if r := off % 4; r != 0 {
			_, err := read(int(4 - r))
			return err
		}
		return nil
	}
	var out []CpioEntry
	for {
		hdr, err := read(110)
		if err != nil {
			return out, fmt.Errorf("cpio: header at %d: %w", off-110, err)
		}
		if string(hdr[:6]) != "070701" {
			return out, fmt.Errorf("cpio: bad magic %q at %d", hdr[:6], off-110)
		}
		field := func(i int) (uint32, error) {
			v, err := strconv.ParseUint(string(hdr[6+8*i:14+8*i]), 16, 32)
			return uint32(v), err
		}
		var f [13]uint32
		for i := range f {
			if f[i], err = field(i); err != nil {
				return out, fmt.Errorf("cpio: header field %d: %w", i, err)
			}
		}
		nameb, err := read(int(f[11]))
		if err != nil {
			return out, err
		}
		name := strings.TrimRight(string(nameb), "\x00")
		if err := skipPad(); err != nil {
			return out, err
		}
		data, err := read(int(f[6]))
		if err != nil {
			return out, err
		}
		if err := skipPad(); err != nil {
			return out, err
		}
		if name == "TRAILER!!!" {
			return out, nil
		}
		out = append(out, CpioEntry{Name: name, Mode: f[1], Data: data, Major: f[9], Minor: f[10]})
	}
}
