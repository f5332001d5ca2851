package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perfRings are the stream engine's sources on this machine's kernel when
// no tracefs instance is needed: one perf event a CPU for each of the
// run's tracepoints, counting every hit (sample_period 1) and recording
// the event's raw record (the bytes a tracefs ring buffer holds, at the
// offsets of the event's format) and its time, each CPU's events
// redirected into one ring buffer mapped into this process. They live as
// file descriptors of the process: a run killed at any point leaves
// nothing in tracefs, and nothing is made or removed there (an instance's
// mkdir and rmdir cost a 6.1 guest 75 ms of CPU, e2e/FINDINGS.md).
type perfRings struct {
	fds   []int
	leads []int // each ring's own event: the one a reader polls
	rings []*perfRing
	lost  atomic.Uint64 // PERF_RECORD_LOST's counts, every ring, and foreign's
	// foreign counts the records that were none of the run's events.
	foreign atomic.Uint64
	// readLost says each event reads its samples lost (PERF_FORMAT_LOST,
	// Linux 6.0): a loss the kernel has not written a PERF_RECORD_LOST
	// for yet (it writes one with the next record that fits, and a
	// filtered event may have none) is counted too.
	readLost bool
}

// perfRing is one CPU's ring buffer.
type perfRing struct {
	cpu  int
	mem  []byte // the mapping: the control page, then the data pages
	meta *unix.PerfEventMmapPage
	data []byte
}

// openPerfRings opens the events on every online CPU, with rings of
// about bufferKB each (a power of two of pages), disabled until enable.
func openPerfRings(events []perfEvent, bufferKB int) (_ *perfRings, err error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	page := os.Getpagesize()
	pages := 1
	for pages*page < bufferKB*1024 && pages < 1<<18 {
		pages *= 2
	}
	p := &perfRings{readLost: true}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	for _, cpu := range cpus {
		lead := -1
		for _, ev := range events {
			attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_TRACEPOINT, Config: uint64(ev.id),
				Sample: 1, Sample_type: unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_RAW,
				Bits: unix.PerfBitDisabled, Wakeup: 1 << 30}
			if lead < 0 {
				// The ring's own event wakes a poller each time
				// half the ring has been written (watch).
				attr.Bits |= unix.PerfBitWatermark
				attr.Wakeup = uint32(pages * page / 2)
			}
			attr.Size = uint32(unsafe.Sizeof(attr))
			if p.readLost {
				attr.Read_format = unix.PERF_FORMAT_LOST
			}
			fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err == unix.EINVAL && p.readLost && len(p.fds) == 0 {
				// Before 6.0: the PERF_RECORD_LOST records alone.
				p.readLost, attr.Read_format = false, 0
				fd, err = unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			}
			if err != nil {
				return nil, fmt.Errorf("opening a perf event on %s, CPU %d: %v", ev.name, cpu, err)
			}
			p.fds = append(p.fds, fd)
			if ev.filter != "" {
				if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, ev.filter); err != nil {
					return nil, fmt.Errorf("the filter of %s on a perf event (%q): %v", ev.name, ev.filter, err)
				}
			}
			if lead >= 0 {
				if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, lead); err != nil {
					return nil, fmt.Errorf("sharing CPU %d's perf ring buffer with %s: %v", cpu, ev.name, err)
				}
				continue
			}
			lead = fd
			p.leads = append(p.leads, fd)
			mem, err := unix.Mmap(fd, 0, (pages+1)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return nil, fmt.Errorf("mapping CPU %d's perf ring buffer (%d KiB): %v", cpu, pages*page/1024, err)
			}
			r := &perfRing{cpu: cpu, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
			off, size := r.meta.Data_offset, r.meta.Data_size
			if off == 0 || size == 0 {
				// Kernels before 4.1 do not say: the data follows
				// the control page.
				off, size = uint64(page), uint64(pages*page)
			}
			r.data = mem[off : off+size]
			p.rings = append(p.rings, r)
		}
	}
	return p, nil
}

// enable starts every event recording.
func (p *perfRings) enable() error {
	for _, fd := range p.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fmt.Errorf("enabling a perf event: %v", err)
		}
	}
	return nil
}

// disable stops every event: what the rings hold then is all there is.
func (p *perfRings) disable() error {
	var errs []error
	for _, fd := range p.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("disabling the perf events: %v", errors.Join(errs...))
	}
	return nil
}

// lostNow is the events lost so far: every event's samples lost where
// the kernel counts them (readLost), else the PERF_RECORD_LOST records
// read; and the records that were none of the run's events.
func (p *perfRings) lostNow() uint64 {
	if !p.readLost {
		return p.lost.Load()
	}
	var total uint64
	var buf [16]byte // value, lost
	for _, fd := range p.fds {
		if n, err := unix.Read(fd, buf[:]); err == nil && n == len(buf) {
			total += binary.NativeEndian.Uint64(buf[8:])
		}
	}
	return total + p.foreign.Load()
}

// watch signals wake, without waiting, each time the kernel wakes a
// reader of a ring: when half of it has been written since the last
// such wakeup (its watermark), so that a burst is read before the next
// drain is due. It runs until the returned stop, which waits for it.
func (p *perfRings) watch(wake chan<- struct{}) (stop func(), err error) {
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	fds := []unix.PollFd{{Fd: int32(pipe[0]), Events: unix.POLLIN}}
	for _, fd := range p.leads {
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return
			}
			if fds[0].Revents != 0 {
				return // stop
			}
			woken := false
			for _, f := range fds[1:] {
				if f.Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
					return // no event to wait for: the ticks drain it
				}
				woken = woken || f.Revents&unix.POLLIN != 0
			}
			if woken {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return func() {
		unix.Write(pipe[1], []byte{0})
		<-done
		unix.Close(pipe[0])
		unix.Close(pipe[1])
	}, nil
}

func (p *perfRings) close() {
	for _, r := range p.rings {
		unix.Munmap(r.mem)
	}
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.rings, p.fds, p.leads = nil, nil, nil
}

// Offsets in a PERF_RECORD_SAMPLE of sample_type TIME|RAW: the header
// (type, misc, size), the time, the raw record's size and its bytes.
const (
	perfHeaderSize = 8
	perfTimeOff    = 8
	perfRawSizeOff = 16
	perfRawOff     = 20
)

// read hands each record the ring holds now to rec (its time and raw
// bytes, valid during the call; a record the ring's end splits is copied
// into scratch first), counts what the kernel lost, and frees the space
// read. It returns the bytes read.
func (r *perfRing) read(scratch *[]byte, lost *uint64, rec func(ts uint64, raw []byte)) int {
	c := r.cursor()
	for {
		ts, raw, ok := c.next(scratch, lost)
		if !ok {
			break
		}
		rec(ts, raw)
	}
	return c.done()
}

// ringCursor walks the records a ring held when it was made (cursor):
// next gives each sample in turn, done frees the space read.
type ringCursor struct {
	r                *perfRing
	head, tail, from uint64
}

// cursor is a walk of the records the ring holds now.
func (r *perfRing) cursor() ringCursor {
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := atomic.LoadUint64(&r.meta.Data_tail)
	return ringCursor{r: r, head: head, tail: tail, from: tail}
}

// next is the next sample's time and raw bytes (valid until the next
// call; a record the ring's end splits is copied into scratch), adding a
// PERF_RECORD_LOST's count to lost on the way; ok is false at the end,
// or where what follows is not a record (nothing sane follows).
func (c *ringCursor) next(scratch *[]byte, lost *uint64) (ts uint64, raw []byte, ok bool) {
	r := c.r
	size := uint64(len(r.data))
	for c.tail < c.head {
		off := c.tail % size
		var typ uint32
		var sz uint64
		if off+perfHeaderSize <= size {
			typ = binary.NativeEndian.Uint32(r.data[off:])
			sz = uint64(binary.NativeEndian.Uint16(r.data[off+6:]))
		} else {
			var hdr [perfHeaderSize]byte
			r.copyOut(hdr[:], off)
			typ = binary.NativeEndian.Uint32(hdr[0:])
			sz = uint64(binary.NativeEndian.Uint16(hdr[6:]))
		}
		if sz < perfHeaderSize || sz > c.head-c.tail {
			c.head = c.tail // not a record: stop here
			break
		}
		var b []byte
		if off+sz <= size {
			b = r.data[off : off+sz]
		} else {
			if cap(*scratch) < int(sz) {
				*scratch = make([]byte, sz)
			}
			b = (*scratch)[:sz]
			r.copyOut(b, off)
		}
		c.tail += sz
		switch typ {
		case unix.PERF_RECORD_SAMPLE:
			if len(b) >= perfRawOff {
				n := int(binary.NativeEndian.Uint32(b[perfRawSizeOff:]))
				if perfRawOff+n <= len(b) {
					return binary.NativeEndian.Uint64(b[perfTimeOff:]), b[perfRawOff : perfRawOff+n], true
				}
			}
		case unix.PERF_RECORD_LOST:
			if len(b) >= 24 {
				*lost += binary.NativeEndian.Uint64(b[16:])
			}
		}
	}
	return 0, nil, false
}

// free gives the kernel back the space of the records walked so far:
// those next returned are no longer read.
func (c *ringCursor) free() {
	atomic.StoreUint64(&c.r.meta.Data_tail, c.tail)
}

// done frees the space of the records walked, for the kernel to write
// again, and returns its bytes.
func (c *ringCursor) done() int {
	c.free()
	return int(c.tail - c.from)
}

// copyOut copies the ring's bytes from off on into b, across its end.
func (r *perfRing) copyOut(b []byte, off uint64) {
	n := copy(b, r.data[off:])
	copy(b[n:], r.data)
}

// onlineCPUs lists the CPUs online now (/sys/devices/system/cpu/online:
// "0-3,6").
func onlineCPUs() ([]int, error) {
	data, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(data)))
}
