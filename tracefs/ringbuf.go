package tracefs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The kernel's ring buffer, as per_cpu/cpuN/trace_pipe_raw gives it out.
//
// A read of trace_pipe_raw returns one sub-buffer ("page") of one CPU's
// buffer: a header (a u64 timestamp, then a local_t commit: a long) and the
// data, zero-filled after the commit. A read of at least a page returns
// exactly one whole page: the page size is PAGE_SIZE (4096 on Debian's
// x86-64, arm64 and armhf kernels), and from 6.8 on the instance's
// buffer_subbuf_size_kb. A shorter read gets a page holding only the
// events that fit in it, cut to the size asked for, and the next read the
// rest of that page (zeros): read whole pages. events/header_page gives the layout: data at 16
// and 4080 bytes of it on a 64-bit kernel, at 12 and 4084 bytes on a
// 32-bit one (local_t is a long), so the page size is the data's offset
// plus its size.
//
// The commit's low bits are the number of data bytes used. Bit 31 says
// events were lost (overwritten or dropped) between the page before and
// this one; bit 30 that their count is stored, as a long, right after the
// used data (the kernel stores it only when it fits in the page).
//
// The data is a run of records, each a 32-bit word (5 bits type_len, 27
// bits time_delta, in the kernel's bitfield order: type_len in the low bits
// of a little-endian word, in the high bits of a big-endian one) and, for
// most types, a 32-bit array[0] after it:
//
//   - type_len 1..28: an event of type_len*4 bytes from array[0] on;
//   - type_len 0: an event of array[0]-4 bytes from array[1] on (array[0]
//     counts itself: the kernel writes the record's length less the 4-byte
//     header word; a 64-bit kernel without efficient unaligned access
//     writes every event this way, 8-byte aligned);
//   - 29, padding: a discarded event of 4+array[0] bytes, or with a zero
//     time_delta the filler at the end of a page, after which nothing
//     counts;
//   - 30, time extend: 8 bytes, a delta of array[0]<<27 | time_delta for
//     deltas that do not fit in 27 bits;
//   - 31, time stamp: 8 bytes, the absolute time array[0]<<27 | time_delta
//     (59 bits), which replaces the running time. The kernel writes one
//     (since 4.17) before every event of a buffer in absolute mode, which
//     the hist triggers of 4.17 to 5.11 turn on for the whole instance while
//     a trigger reads common_timestamp (5.12 dropped that); and (since the
//     5.10 rework of nested writes) before an event that interrupted
//     another's reservation, in any buffer. The 5.10 reader takes the 59
//     bits as they are; since 5.19 the kernel drops the 5 high bits of a
//     64-bit clock from it and a reader takes them from the time before it
//     (rb_fix_abs_ts), which changes nothing for clocks below 2^59.
//
// An event's time is the page's timestamp plus every delta before it on
// the page, its own included; a time stamp sets the running time instead.
// libtraceevent's kbuffer also adds the delta of a discarded event (kept
// by the kernel, made non-zero when it was zero: the events after it count
// from its time), and so does DecodePage; the kernel's own reader, behind
// the trace file, skips it.

// Ring-buffer record types of a 5-bit type_len, as events/header_event
// prints them; [DefaultEventHeader] has them.
const (
	rbPadding        = 29
	rbTimeExtend     = 30
	rbTimeStamp      = 31
	rbDataTypeLenMax = 28
)

// The flags in a page's commit.
const (
	rbMissedEvents = 1 << 31
	rbMissedStored = 1 << 30
)

// LostUnknown is [Page.Lost] when the kernel flagged lost events before
// the page without storing how many.
const LostUnknown = -1

// PageHeader is the layout of a ring-buffer page, as events/header_page
// declares it. Offsets and sizes are in bytes from the page's start.
type PageHeader struct {
	TimestampOffset, TimestampSize int // the page's u64 time
	CommitOffset, CommitSize       int // local_t commit: 8 on 64-bit kernels, 4 on 32-bit
	DataOffset, DataSize           int // the records; DataSize is what a page holds
}

// DefaultPageHeader returns the layout of a 4096-byte page of a kernel
// whose long is longSize bytes (4 or 8): what header_page says on
// Debian's x86-64, arm64 (8) and armhf (4) kernels.
func DefaultPageHeader(longSize int) *PageHeader {
	return &PageHeader{
		TimestampOffset: 0, TimestampSize: 8,
		CommitOffset: 8, CommitSize: longSize,
		DataOffset: 8 + longSize, DataSize: 4096 - 8 - longSize,
	}
}

// PageSize is the size of a page: what one read of trace_pipe_raw
// returns when asked for at least as much.
func (h *PageHeader) PageSize() int { return h.DataOffset + h.DataSize }

// LongSize is the size of the kernel's long (the commit's): the size of
// the lost-events count a page stores.
func (h *PageHeader) LongSize() int { return h.CommitSize }

// maxPageSize bounds the page a header may declare: the kernel's largest
// sub-buffers are far smaller, and a commit has 27 bits for the size.
const maxPageSize = 1 << 27

func (h *PageHeader) check() error {
	switch {
	case h.TimestampSize != 8:
		return fmt.Errorf("page timestamp of %d bytes, not 8", h.TimestampSize)
	case h.CommitSize != 4 && h.CommitSize != 8:
		return fmt.Errorf("page commit of %d bytes, not 4 or 8", h.CommitSize)
	case h.TimestampOffset < 0 || h.CommitOffset < 0:
		return fmt.Errorf("negative offset in the page header")
	case h.DataSize <= 0 || h.DataOffset < 0 || h.DataOffset > maxPageSize || h.DataSize > maxPageSize:
		return fmt.Errorf("page data at %d, %d bytes: out of range", h.DataOffset, h.DataSize)
	case h.TimestampOffset+8 > h.DataOffset || h.CommitOffset+h.CommitSize > h.DataOffset:
		return fmt.Errorf("page header fields overlap the data at %d", h.DataOffset)
	}
	return nil
}

// ParseHeaderPage parses the text of events/header_page:
//
//	field: u64 timestamp;	offset:0;	size:8;	signed:0;
//	field: local_t commit;	offset:8;	size:8;	signed:1;
//	field: int overwrite;	offset:8;	size:1;	signed:1;
//	field: char data;	offset:16;	size:4080;	signed:1;
//
// The timestamp, commit and data fields are required; overwrite (a flag
// no reader needs) is ignored.
func ParseHeaderPage(text string) (*PageHeader, error) {
	h := &PageHeader{}
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		s := strings.TrimSpace(line)
		if !strings.HasPrefix(s, "field:") {
			continue
		}
		f, err := parseFieldLine(s)
		if err != nil {
			return nil, fmt.Errorf("header_page line %d: %v", i+1, err)
		}
		switch f.Name {
		case "timestamp":
			h.TimestampOffset, h.TimestampSize = f.Offset, f.Size
		case "commit":
			h.CommitOffset, h.CommitSize = f.Offset, f.Size
		case "data":
			h.DataOffset, h.DataSize = f.Offset, f.Size
		default:
			continue
		}
		seen[f.Name] = true
	}
	for _, name := range []string{"timestamp", "commit", "data"} {
		if !seen[name] {
			return nil, fmt.Errorf("header_page has no %s field", name)
		}
	}
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("header_page: %v", err)
	}
	return h, nil
}

// EventHeader is the record header of the ring buffer, as
// events/header_event declares it: the bits of type_len, time_delta and
// array[0], and the type_len values of the special records.
type EventHeader struct {
	TypeLenBits, TimeDeltaBits, ArrayBits int // 5, 27, 32
	Padding, TimeExtend, TimeStamp        int // 29, 30, 31
	DataMaxTypeLen                        int // 28: type_len 1..28 is an event's length in words
}

// DefaultEventHeader returns the record header every kernel since 2.6.31
// prints in header_event.
func DefaultEventHeader() *EventHeader {
	return &EventHeader{
		TypeLenBits: 5, TimeDeltaBits: 27, ArrayBits: 32,
		Padding: rbPadding, TimeExtend: rbTimeExtend, TimeStamp: rbTimeStamp,
		DataMaxTypeLen: rbDataTypeLenMax,
	}
}

var (
	headerBitsRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\w+)\s*:\s*(\d+)\s+bits$`) })
	headerTypeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\w+)\s*:\s*type\s*==\s*(\d+)$`) })
	headerMaxRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^data max type_len\s*==\s*(\d+)$`) })
)

// ParseHeaderEvent parses the text of events/header_event:
//
//	# compressed entry header
//		type_len    :    5 bits
//		time_delta  :   27 bits
//		array       :   32 bits
//
//		padding     : type == 29
//		time_extend : type == 30
//		time_stamp : type == 31
//		data max type_len  == 28
//
// A missing "data max" line means the type below the smallest special one.
func ParseHeaderEvent(text string) (*EventHeader, error) {
	h := &EventHeader{}
	vals := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		s := strings.TrimSpace(line)
		var key, num string
		if m := headerBitsRE().FindStringSubmatch(s); m != nil {
			key, num = m[1]+" bits", m[2]
		} else if m := headerTypeRE().FindStringSubmatch(s); m != nil {
			key, num = m[1], m[2]
		} else if m := headerMaxRE().FindStringSubmatch(s); m != nil {
			key, num = "data max", m[1]
		} else {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n > 64 {
			return nil, fmt.Errorf("header_event line %d: bad number %q", i+1, num)
		}
		vals[key] = n
	}
	for _, want := range []struct {
		key string
		dst *int
	}{
		{"type_len bits", &h.TypeLenBits}, {"time_delta bits", &h.TimeDeltaBits}, {"array bits", &h.ArrayBits},
		{"padding", &h.Padding}, {"time_extend", &h.TimeExtend}, {"time_stamp", &h.TimeStamp},
	} {
		v, ok := vals[want.key]
		if !ok {
			return nil, fmt.Errorf("header_event has no %s line", strings.TrimSuffix(want.key, " bits"))
		}
		*want.dst = v
	}
	if v, ok := vals["data max"]; ok {
		h.DataMaxTypeLen = v
	} else {
		h.DataMaxTypeLen = min(h.Padding, h.TimeExtend, h.TimeStamp) - 1
	}
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("header_event: %v", err)
	}
	return h, nil
}

func (h *EventHeader) check() error {
	switch {
	case h.TypeLenBits <= 0 || h.TimeDeltaBits <= 0 || h.TypeLenBits+h.TimeDeltaBits != 32:
		return fmt.Errorf("type_len of %d bits and time_delta of %d do not make a 32-bit word", h.TypeLenBits, h.TimeDeltaBits)
	case h.ArrayBits != 32:
		return fmt.Errorf("array of %d bits, not 32", h.ArrayBits)
	}
	types := []int{h.Padding, h.TimeExtend, h.TimeStamp}
	for i, t := range types {
		if t <= h.DataMaxTypeLen || t >= 1<<h.TypeLenBits {
			return fmt.Errorf("special type %d not above the data types (max %d) and within type_len", t, h.DataMaxTypeLen)
		}
		for _, u := range types[:i] {
			if t == u {
				return fmt.Errorf("special type %d given twice", t)
			}
		}
	}
	if h.DataMaxTypeLen < 1 {
		return fmt.Errorf("data max type_len %d", h.DataMaxTypeLen)
	}
	return nil
}

// Page is one decoded ring-buffer page.
type Page struct {
	// Timestamp is the page's time: the time of its first event less
	// that event's delta.
	Timestamp uint64
	// Commit is the number of data bytes the page holds, flags removed.
	Commit int
	// Lost is the number of events lost between the page before (of the
	// same CPU) and this one: 0 when none were, [LostUnknown] when the
	// kernel did not say how many.
	Lost int64
	// Records are the page's events in order, without time extends, time
	// stamps and padding.
	Records []Record
}

// Record is one event of a page.
type Record struct {
	// Timestamp is the event's time in the buffer clock's units
	// (nanoseconds for the local, global and mono clocks).
	Timestamp uint64
	// Offset is where Data starts, from the start of the page.
	Offset int
	// Data is the event's bytes (common_type first), a slice of the page
	// it was decoded from; it may end with alignment padding beyond the
	// event's format (up to 3 bytes, 7 where the kernel aligns events to 8).
	Data []byte
}

// isBigEndian reports whether order stores the high byte first.
func isBigEndian(order binary.ByteOrder) bool { return order.Uint16([]byte{0, 1}) == 1 }

// readUint reads an unsigned integer of size 1, 2, 4 or 8 bytes.
func readUint(order binary.ByteOrder, b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(order.Uint16(b))
	case 4:
		return uint64(order.Uint32(b))
	}
	return order.Uint64(b)
}

// DecodePage decodes one page read from trace_pipe_raw: page must hold
// the header and at least the committed data (a page cut shorter, a
// commit beyond the page's data, or a record running past the commit is an
// error). order is the kernel's byte order; ev is nil for
// [DefaultEventHeader]. The records' Data are slices of page.
//
// The work is linear in the commit: every record takes at least 4 bytes.
func (h *PageHeader) DecodePage(page []byte, order binary.ByteOrder, ev *EventHeader) (*Page, error) {
	p := &Page{}
	if err := h.DecodePageTo(p, page, order, ev); err != nil {
		return nil, err
	}
	return p, nil
}

// DecodePageTo is [PageHeader.DecodePage] into p, whose Records' memory
// it reuses: a reader of many pages allocates nothing a page.
func (h *PageHeader) DecodePageTo(p *Page, page []byte, order binary.ByteOrder, ev *EventHeader) error {
	recs := p.Records[:0]
	*p = Page{}
	if err := h.check(); err != nil {
		return err
	}
	if ev == nil {
		ev = DefaultEventHeader()
	} else if err := ev.check(); err != nil {
		return err
	}
	if len(page) < h.DataOffset {
		return fmt.Errorf("page of %d bytes is shorter than its %d-byte header", len(page), h.DataOffset)
	}
	p.Timestamp = order.Uint64(page[h.TimestampOffset:])
	commit := readUint(order, page[h.CommitOffset:], h.CommitSize)
	// The kernel adds its flag RB_MISSED_EVENTS, the int 1 << 31, to a
	// 64-bit commit as a negative number, which sets bits 32-63 with it
	// (Debian 5.10: 0xffffffff80000ff0 on the page after an overrun):
	// the size is the bits below the flags.
	size := commit & (rbMissedStored - 1)
	if size > uint64(h.DataSize) {
		return fmt.Errorf("page commit %#x: %d data bytes in a page of %d", commit, size, h.DataSize)
	}
	p.Commit = int(size)
	// Nothing past the page counts, not even a stored count.
	data := page[h.DataOffset:min(len(page), h.PageSize())]
	if len(data) < p.Commit {
		return fmt.Errorf("page cut at %d bytes of data, %d committed", len(data), p.Commit)
	}
	if commit&rbMissedEvents != 0 {
		p.Lost = LostUnknown
		if commit&rbMissedStored != 0 {
			end := p.Commit + h.CommitSize
			if end > len(data) {
				return fmt.Errorf("page stores a lost-events count past its end (%d+%d bytes of %d)", p.Commit, h.CommitSize, len(data))
			}
			n := readUint(order, data[p.Commit:], h.CommitSize)
			if n > math.MaxInt64 {
				return fmt.Errorf("page stores %d lost events", n)
			}
			p.Lost = int64(n)
		}
	}
	recs, err := decodeRecords(recs, data[:p.Commit], h.DataOffset, p.Timestamp, order, ev)
	if err != nil {
		return err
	}
	p.Records = recs
	return nil
}

// decodeRecords walks the committed data of a page; base is the data's
// offset in the page, ts the page's time.
// The records are appended to recs.
func decodeRecords(recs []Record, data []byte, base int, ts uint64, order binary.ByteOrder, ev *EventHeader) ([]Record, error) {
	big := isBigEndian(order)
	deltaBits := uint(ev.TimeDeltaBits)
	deltaMask := uint32(1)<<deltaBits - 1
	typeMask := uint32(1)<<uint(ev.TypeLenBits) - 1
	// The absolute time of a time stamp has deltaBits+32 bits; the bits
	// above come from the running time.
	absBits := deltaBits + uint(ev.ArrayBits)
	var msbMask uint64
	if absBits < 64 {
		msbMask = ^(uint64(1)<<absBits - 1)
	}
	off := 0
	for off < len(data) {
		if len(data)-off < 4 {
			return nil, fmt.Errorf("record header at %d crosses the commit (%d)", base+off, len(data))
		}
		w := order.Uint32(data[off:])
		var typeLen, delta uint32
		if big {
			typeLen, delta = w>>deltaBits, w&deltaMask
		} else {
			typeLen, delta = w&typeMask, w>>uint(ev.TypeLenBits)
		}
		// array0 reads the word after the header, which every type but a
		// small event's needs whole.
		array0 := func() (uint32, error) {
			if len(data)-off < 8 {
				return 0, fmt.Errorf("record of type %d at %d crosses the commit (%d)", typeLen, base+off, len(data))
			}
			return order.Uint32(data[off+4:]), nil
		}
		switch t := int(typeLen); {
		case t == ev.Padding:
			if delta == 0 {
				// The filler at the end of a page: nothing after it counts.
				return recs, nil
			}
			n, err := array0()
			if err != nil {
				return nil, err
			}
			if n < 4 || uint64(n) > uint64(len(data)-off-4) {
				return nil, fmt.Errorf("padding at %d of %d bytes runs past the commit (%d)", base+off, 4+uint64(n), len(data))
			}
			ts += uint64(delta)
			off += 4 + int(n)
		case t == ev.TimeExtend:
			n, err := array0()
			if err != nil {
				return nil, err
			}
			ts += uint64(n)<<deltaBits | uint64(delta)
			off += 8
		case t == ev.TimeStamp:
			n, err := array0()
			if err != nil {
				return nil, err
			}
			abs := uint64(n)<<deltaBits | uint64(delta)
			if ts&msbMask != 0 {
				// rb_fix_abs_ts: the high bits of the time before, one
				// more if the low bits wrapped since.
				abs |= ts & msbMask
				if abs < ts {
					abs += uint64(1) << absBits
				}
			}
			ts = abs
			off += 8
		case t == 0:
			n, err := array0()
			if err != nil {
				return nil, err
			}
			if n < 4 {
				return nil, fmt.Errorf("event at %d gives a length of %d, less than its length word", base+off, n)
			}
			length := uint64(n) - 4
			total := 8 + (length+3)&^3
			if total > uint64(len(data)-off) {
				return nil, fmt.Errorf("event at %d of %d bytes runs past the commit (%d)", base+off, total, len(data))
			}
			ts += uint64(delta)
			recs = append(recs, Record{Timestamp: ts, Offset: base + off + 8, Data: data[off+8 : off+8+int(length) : off+8+int(length)]})
			off += int(total)
		case t <= ev.DataMaxTypeLen:
			length := 4 * t
			if 4+length > len(data)-off {
				return nil, fmt.Errorf("event at %d of %d bytes runs past the commit (%d)", base+off, 4+length, len(data))
			}
			ts += uint64(delta)
			recs = append(recs, Record{Timestamp: ts, Offset: base + off + 4, Data: data[off+4 : off+4+length : off+4+length]})
			off += 4 + length
		default:
			return nil, fmt.Errorf("record at %d has unknown type %d", base+off, t)
		}
	}
	return recs, nil
}

// RecordReader reads the pages of one CPU's buffer from a reader, such
// as an open per_cpu/cpuN/trace_pipe_raw, and returns their records in
// order. Each page is read whole (PageSize bytes, with io.ReadFull) into a
// buffer of its own, so records stay valid after later reads.
type RecordReader struct {
	r      io.Reader
	header *PageHeader
	events *EventHeader
	order  binary.ByteOrder

	recs    []Record
	pages   int
	lost    int64
	unknown int
	err     error
}

// NewRecordReader returns a reader of the pages in r, laid out as h says,
// in the kernel's byte order; ev is nil for [DefaultEventHeader].
func NewRecordReader(r io.Reader, h *PageHeader, ev *EventHeader, order binary.ByteOrder) *RecordReader {
	return &RecordReader{r: r, header: h, events: ev, order: order}
}

// Next returns the next record. At the end of r it returns io.EOF, and
// io.ErrUnexpectedEOF when r ends inside a page. A page that does not
// decode gives a *PageError once; the next call goes on with the page
// after it. Other read errors are returned from every later call.
func (rr *RecordReader) Next() (Record, error) {
	for len(rr.recs) == 0 {
		if rr.err != nil {
			return Record{}, rr.err
		}
		if err := rr.header.check(); err != nil {
			rr.err = err
			return Record{}, err
		}
		buf := make([]byte, rr.header.PageSize())
		if _, err := io.ReadFull(rr.r, buf); err != nil {
			rr.err = err
			return Record{}, err
		}
		rr.pages++
		p, err := rr.header.DecodePage(buf, rr.order, rr.events)
		if err != nil {
			return Record{}, &PageError{Page: rr.pages - 1, Err: err}
		}
		switch {
		case p.Lost == LostUnknown:
			rr.unknown++
		case p.Lost > 0:
			rr.lost += p.Lost
		}
		rr.recs = p.Records
	}
	r := rr.recs[0]
	rr.recs = rr.recs[1:]
	return r, nil
}

// Pages is the number of pages read so far.
func (rr *RecordReader) Pages() int { return rr.pages }

// Lost returns the events the pages read so far said were lost: the
// counts given, and how many pages flagged losses without a count.
func (rr *RecordReader) Lost() (events int64, uncounted int) { return rr.lost, rr.unknown }

// PageError is a page a [RecordReader] could not decode.
type PageError struct {
	Page int // the page's index in the stream, from 0
	Err  error
}

func (e *PageError) Error() string { return fmt.Sprintf("ring-buffer page %d: %v", e.Page, e.Err) }

func (e *PageError) Unwrap() error { return e.Err }

// ErrFieldRange is wrapped by the errors of a [FieldDecoder] for a field
// or dynamic data that lies outside the record.
var ErrFieldRange = errors.New("outside the record")

// FieldDecoder reads the fields of an event's records, as the event's
// format lays them out, for a kernel of the given byte order and long
// size; Order must be set. Its methods never read past the record: a
// field that does not fit is an error wrapping [ErrFieldRange].
type FieldDecoder struct {
	Order    binary.ByteOrder
	LongSize int // 8 on 64-bit kernels, 4 on 32-bit: unsigned long and pointers
}

// EventID returns a record's common_type: the ID of its event (the
// unsigned short at offset 0 of every event).
func (d FieldDecoder) EventID(rec []byte) (int, error) {
	if len(rec) < 2 {
		return 0, fmt.Errorf("common_type: %w (%d bytes)", ErrFieldRange, len(rec))
	}
	return int(d.Order.Uint16(rec)), nil
}

// span returns rec[off:off+n], or an error naming the field.
func span(f *Field, rec []byte, off, n int) ([]byte, error) {
	if off < 0 || n < 0 || off > len(rec) || n > len(rec)-off {
		return nil, fmt.Errorf("field %s: %d bytes at %d: %w (%d bytes)", f.Name, n, off, ErrFieldRange, len(rec))
	}
	return rec[off : off+n], nil
}

// Int returns an integer or pointer field, sign-extended when the format
// says the field is signed (uint64(v) gives back an unsigned 64-bit
// value). Sizes 1, 2, 4 and 8 are read.
func (d FieldDecoder) Int(f *Field, rec []byte) (int64, error) {
	switch f.Size {
	case 1, 2, 4, 8:
	default:
		return 0, fmt.Errorf("field %s: an integer of %d bytes", f.Name, f.Size)
	}
	b, err := span(f, rec, f.Offset, f.Size)
	if err != nil {
		return 0, err
	}
	v := readUint(d.Order, b, f.Size)
	if f.Signed && f.Size < 8 {
		shift := uint(64 - 8*f.Size)
		return int64(v<<shift) >> shift, nil
	}
	return int64(v), nil
}

// isDynamic reports whether a field is a __data_loc or __rel_loc one, and
// whether it is the relative kind.
func isDynamic(f *Field) (dyn, rel bool) {
	switch {
	case strings.HasPrefix(f.Decl, "__data_loc "):
		return true, false
	case strings.HasPrefix(f.Decl, "__rel_loc "):
		return true, true
	}
	return false, false
}

// Bytes returns a field's bytes: a static field's Size bytes at its
// offset, or the data a __data_loc or __rel_loc field points at. The
// location is a u32: the low 16 bits the data's offset (from the record's
// start for __data_loc, from the end of the field for __rel_loc), the high
// 16 bits its length. The bytes are a slice of rec.
func (d FieldDecoder) Bytes(f *Field, rec []byte) ([]byte, error) {
	dyn, rel := isDynamic(f)
	if !dyn {
		return span(f, rec, f.Offset, f.Size)
	}
	if f.Size != 4 {
		return nil, fmt.Errorf("field %s: a location of %d bytes, not 4", f.Name, f.Size)
	}
	b, err := span(f, rec, f.Offset, 4)
	if err != nil {
		return nil, err
	}
	loc := d.Order.Uint32(b)
	off, n := int(loc&0xffff), int(loc>>16)
	if rel {
		off += f.Offset + f.Size
	}
	return span(f, rec, off, n)
}

// String returns a string field: a static char array or a dynamic
// string, up to its first NUL.
func (d FieldDecoder) String(f *Field, rec []byte) (string, error) {
	if f.Kind != KindString && f.Kind != KindDynString {
		return "", fmt.Errorf("field %s is a %s, not a string", f.Name, f.Kind)
	}
	b, err := d.Bytes(f, rec)
	if err != nil {
		return "", err
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
}

// elemSize returns the size of one element of an array of base, or 0 when
// the type is not known: the kernel's fixed-size names, C's integer types,
// and long and pointers by the kernel's long.
func (d FieldDecoder) elemSize(base string) int {
	b := strings.Join(strings.Fields(strings.NewReplacer("const ", "", "volatile ", "").Replace(base+" ")), " ")
	if strings.HasSuffix(b, "*") {
		return d.LongSize
	}
	switch b {
	case "u8", "s8", "__u8", "__s8", "char", "unsigned char", "signed char", "bool", "_Bool", "uint8_t", "int8_t":
		return 1
	case "u16", "s16", "__u16", "__s16", "short", "unsigned short", "signed short", "uint16_t", "int16_t",
		"__le16", "__be16":
		return 2
	case "u32", "s32", "__u32", "__s32", "int", "unsigned int", "unsigned", "signed int", "uint32_t", "int32_t",
		"pid_t", "uid_t", "gid_t", "__le32", "__be32", "dev_t", "gfp_t":
		return 4
	case "u64", "s64", "__u64", "__s64", "long long", "unsigned long long", "uint64_t", "int64_t",
		"__le64", "__be64", "loff_t", "sector_t":
		return 8
	case "long", "unsigned long", "signed long", "size_t", "ssize_t", "long int", "unsigned long int":
		return d.LongSize
	}
	return 0
}

// Array returns the elements of an array field, static or dynamic, each
// zero-extended (a dynamic array of unsigned long, such as a stack, gives
// one value per long). A static array's element size is its Size over its
// Len; a dynamic array's comes from its element type.
func (d FieldDecoder) Array(f *Field, rec []byte) ([]uint64, error) {
	if f.Kind != KindArray && f.Kind != KindDynArray {
		return nil, fmt.Errorf("field %s is a %s, not an array", f.Name, f.Kind)
	}
	var size int
	if f.Kind == KindArray && f.Len > 0 {
		size = f.Size / f.Len
	} else {
		size = d.elemSize(f.Base)
	}
	switch size {
	case 1, 2, 4, 8:
	default:
		return nil, fmt.Errorf("field %s: elements of %q have no known size", f.Name, f.Base)
	}
	b, err := d.Bytes(f, rec)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(b)/size)
	for i := range out {
		out[i] = readUint(d.Order, b[i*size:], size)
	}
	return out, nil
}

// Value returns a field's value by its kind: an int64 for integers and
// pointers (as [FieldDecoder.Int]), a string for strings, a []uint64 for
// arrays.
func (d FieldDecoder) Value(f *Field, rec []byte) (any, error) {
	switch f.Kind {
	case KindInt, KindPointer:
		return d.Int(f, rec)
	case KindString, KindDynString:
		return d.String(f, rec)
	case KindArray, KindDynArray:
		return d.Array(f, rec)
	}
	return nil, fmt.Errorf("field %s: kind %s", f.Name, f.Kind)
}
