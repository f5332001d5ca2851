package live

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perfTestRing is a ring of size bytes whose writer appends records as
// the kernel lays them out, from start on (the ring's position, which
// runs past its end).
type perfTestRing struct {
	r    *perfRing
	head uint64
}

func newPerfTestRing(size int, start uint64) *perfTestRing {
	meta := &unix.PerfEventMmapPage{}
	meta.Data_head, meta.Data_tail = start, start
	return &perfTestRing{r: &perfRing{cpu: 3, meta: meta, data: make([]byte, size)}, head: start}
}

func (w *perfTestRing) put(rec []byte) {
	size := uint64(len(w.r.data))
	for i, b := range rec {
		w.r.data[(w.head+uint64(i))%size] = b
	}
	w.head += uint64(len(rec))
	w.r.meta.Data_head = w.head
}

// putFast is put of a record that does not cross the ring's end.
func (w *perfTestRing) putFast(rec []byte) {
	size := uint64(len(w.r.data))
	if off := w.head % size; off+uint64(len(rec)) <= size {
		copy(w.r.data[off:], rec)
		w.head += uint64(len(rec))
		w.r.meta.Data_head = w.head
		return
	}
	w.put(rec)
}

// sample is a PERF_RECORD_SAMPLE of sample_type TIME|RAW, padded to 8
// bytes as the kernel pads it.
func sample(ts uint64, raw []byte) []byte {
	n := (perfRawOff + len(raw) + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint32(b[0:], unix.PERF_RECORD_SAMPLE)
	binary.NativeEndian.PutUint16(b[6:], uint16(n))
	binary.NativeEndian.PutUint64(b[perfTimeOff:], ts)
	binary.NativeEndian.PutUint32(b[perfRawSizeOff:], uint32(len(raw)))
	copy(b[perfRawOff:], raw)
	return b
}

func lostRecord(n uint64) []byte {
	b := make([]byte, 24)
	binary.NativeEndian.PutUint32(b[0:], unix.PERF_RECORD_LOST)
	binary.NativeEndian.PutUint16(b[6:], 24)
	binary.NativeEndian.PutUint64(b[8:], 77) // the event's id
	binary.NativeEndian.PutUint64(b[16:], n)
	return b
}

func TestPerfRingRead(t *testing.T) {
	type rec struct {
		ts  uint64
		raw string
	}
	// A ring of 256 bytes whose position starts 4 bytes before its end:
	// the first record, its header too, is split by the end and the
	// others follow it; then a loss.
	w := newPerfTestRing(256, 1<<20*256-4)
	want := []rec{{100, "a record split by the ring end"}, {200, "second"}, {300, "third"}}
	for _, r := range want {
		w.put(sample(r.ts, []byte(r.raw)))
	}
	w.put(lostRecord(5))
	var got []rec
	var scratch []byte
	var lost uint64
	n := w.r.read(&scratch, &lost, func(ts uint64, raw []byte) { got = append(got, rec{ts, string(raw)}) })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records: got %v, want %v", got, want)
	}
	if lost != 5 {
		t.Errorf("lost %d, want 5", lost)
	}
	if n != int(w.head-(1<<20*256-4)) || w.r.meta.Data_tail != w.head {
		t.Errorf("read %d bytes, tail %d; want %d bytes, tail at the head %d", n, w.r.meta.Data_tail, w.head-(1<<20*256-4), w.head)
	}
	if len(scratch) == 0 {
		t.Error("the split record was not copied out")
	}
	// Nothing new: nothing read, the tail where it was.
	if n := w.r.read(&scratch, &lost, func(uint64, []byte) { t.Error("a record from an empty ring") }); n != 0 {
		t.Errorf("an empty ring read %d bytes", n)
	}
	// A header whose size is past the head is not a record: reading
	// stops there and does not run past what the kernel wrote.
	bad := sample(400, []byte("x"))
	binary.NativeEndian.PutUint16(bad[6:], 120)
	w.put(bad)
	calls := 0
	w.r.read(&scratch, &lost, func(uint64, []byte) { calls++ })
	if calls != 0 {
		t.Errorf("a record of a bad size was handed on %d times", calls)
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"", nil, true},
	} {
		got, err := parseCPUList(c.in)
		if (err != nil) != c.bad || !bytes.Equal([]byte(fmt.Sprint(got)), []byte(fmt.Sprint(c.want))) && !c.bad {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

// TestPerfRingWatch: a ring whose own event wakes its reader past a
// watermark makes watch signal, before any tick, once the workload has
// written past it; stop ends the watcher at once. The ring is this
// machine's: a software event counting context switches on CPU 0
// (tracepoints need tracefs for their ids), its records made by two
// threads on CPU 0 handing a byte to each other.
func TestPerfRingWatch(t *testing.T) {
	page := unix.Getpagesize()
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES,
		Sample: 1, Sample_type: unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_RAW,
		Bits: unix.PerfBitWatermark | unix.PerfBitDisabled, Wakeup: uint32(page / 2)}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		t.Skipf("no perf event here: %v", err)
	}
	defer unix.Close(fd)
	mem, err := unix.Mmap(fd, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	p := &perfRings{leads: []int{fd}}
	wake := make(chan struct{}, 1)
	stop, err := p.watch(wake)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing written while it is disabled: no signal.
	select {
	case <-wake:
		t.Fatal("woken with the event disabled")
	case <-time.After(50 * time.Millisecond):
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	var pp [2][2]int
	for i := range pp {
		if err := unix.Pipe2(pp[i][:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(pp[i][0])
		defer unix.Close(pp[i][1])
	}
	pong := func(in, out int, n int) {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		unix.SchedSetaffinity(0, &set)
		b := []byte{0}
		for range n {
			unix.Read(in, b)
			unix.Write(out, b)
		}
	}
	const rounds = 2000 // 4,000 switches: far past half a page
	go pong(pp[0][0], pp[1][1], rounds)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		unix.SchedSetaffinity(0, &set)
		b := []byte{0}
		for range rounds {
			unix.Write(pp[0][1], b)
			unix.Read(pp[1][0], b)
		}
	}()
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken: the ring passed its watermark and watch did not signal")
	}
	start := time.Now()
	stop()
	if d := time.Since(start); d > time.Second {
		t.Errorf("stop took %v", d)
	}
}
