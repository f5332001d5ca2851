package tracefs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sqlhist/sqlhist/internal/fuzzguard"
)

// pageBuilder writes a ring-buffer page as the kernel lays one out, for
// the decoder's tests.
type pageBuilder struct {
	h      *PageHeader
	order  binary.ByteOrder
	ts     uint64
	data   []byte
	flags  uint64 // rbMissedEvents, rbMissedStored
	lost   uint64 // written after the data with rbMissedStored
	commit int    // the commit to write instead of len(data), when not 0
}

func newPage(h *PageHeader, order binary.ByteOrder, ts uint64) *pageBuilder {
	return &pageBuilder{h: h, order: order, ts: ts}
}

func (b *pageBuilder) u32(v uint32) {
	var w [4]byte
	b.order.PutUint32(w[:], v)
	b.data = append(b.data, w[:]...)
}

// head writes a record's header word in the kernel's bitfield order.
func (b *pageBuilder) head(typeLen int, delta uint32) {
	if isBigEndian(b.order) {
		b.u32(uint32(typeLen)<<27 | delta&(1<<27-1))
	} else {
		b.u32(uint32(typeLen) | delta<<5)
	}
}

// pad4 appends payload and zeros up to a multiple of 4 bytes; it returns
// where payload starts in the page.
func (b *pageBuilder) pad4(payload []byte) int {
	off := b.h.DataOffset + len(b.data)
	b.data = append(b.data, payload...)
	for len(b.data)%4 != 0 {
		b.data = append(b.data, 0)
	}
	return off
}

// event writes a small event (type_len 1..28), or a type_len 0 one when
// the payload is over 112 bytes, as the kernel does.
func (b *pageBuilder) event(delta uint32, payload []byte) int {
	words := (len(payload) + 3) / 4
	if words > rbDataTypeLenMax {
		return b.bigEvent(delta, payload)
	}
	b.head(max(words, 1), delta)
	if len(payload) == 0 {
		payload = []byte{0}
	}
	return b.pad4(payload)
}

// bigEvent writes a type_len 0 event: array[0] is the payload's aligned
// length plus its own 4 bytes.
func (b *pageBuilder) bigEvent(delta uint32, payload []byte) int {
	b.head(0, delta)
	b.u32(uint32((len(payload)+3)&^3) + 4)
	return b.pad4(payload)
}

func (b *pageBuilder) extend(delta uint64) {
	b.head(rbTimeExtend, uint32(delta&(1<<27-1)))
	b.u32(uint32(delta >> 27))
}

func (b *pageBuilder) stamp(abs uint64) {
	b.head(rbTimeStamp, uint32(abs&(1<<27-1)))
	b.u32(uint32(abs >> 27))
}

// discard writes a discarded event of total bytes (at least 8).
func (b *pageBuilder) discard(delta uint32, total int) {
	b.head(rbPadding, delta)
	b.u32(uint32(total - 4))
	b.data = append(b.data, make([]byte, total-8)...)
}

func (b *pageBuilder) bytes() []byte {
	p := make([]byte, b.h.PageSize())
	b.order.PutUint64(p[b.h.TimestampOffset:], b.ts)
	commit := uint64(len(b.data))
	if b.commit != 0 {
		commit = uint64(b.commit)
	}
	commit |= b.flags
	if b.h.CommitSize == 8 {
		b.order.PutUint64(p[b.h.CommitOffset:], commit)
	} else {
		b.order.PutUint32(p[b.h.CommitOffset:], uint32(commit))
	}
	copy(p[b.h.DataOffset:], b.data)
	if at := b.h.DataOffset + len(b.data); b.flags&rbMissedStored != 0 && at+b.h.CommitSize <= len(p) {
		if b.h.CommitSize == 8 {
			b.order.PutUint64(p[at:], b.lost)
		} else {
			b.order.PutUint32(p[at:], uint32(b.lost))
		}
	}
	return p
}

const (
	headerPage64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n" +
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
		"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n"
	headerPageArmhf = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
		"\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n" +
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
		"\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n"
	headerEventText = "# compressed entry header\n" +
		"\ttype_len    :    5 bits\n" +
		"\ttime_delta  :   27 bits\n" +
		"\tarray       :   32 bits\n" +
		"\n" +
		"\tpadding     : type == 29\n" +
		"\ttime_extend : type == 30\n" +
		"\ttime_stamp : type == 31\n" +
		"\tdata max type_len  == 28\n"
)

func TestParseHeaderPage(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       *PageHeader
		long       int
	}{
		{"x86-64", headerPage64, &PageHeader{0, 8, 8, 8, 16, 4080}, 8},
		{"armhf", headerPageArmhf, &PageHeader{0, 8, 8, 4, 12, 4084}, 4},
	} {
		h, err := ParseHeaderPage(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, h); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
		if h.PageSize() != 4096 || h.LongSize() != c.long {
			t.Errorf("%s: page size %d, long %d", c.name, h.PageSize(), h.LongSize())
		}
		if diff := cmp.Diff(DefaultPageHeader(c.long), h); diff != "" {
			t.Errorf("%s: DefaultPageHeader (-want +got):\n%s", c.name, diff)
		}
	}
	for name, text := range map[string]string{
		"empty":        "",
		"no data":      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n",
		"commit of 2":  "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:2;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n",
		"overlap":      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4080;\tsigned:1;\n",
		"bad number":   "\tfield: u64 timestamp;\toffset:zero;\tsize:8;\tsigned:0;\n",
		"no data size": "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:0;\tsigned:1;\n",
	} {
		if h, err := ParseHeaderPage(text); err == nil {
			t.Errorf("%s: parsed as %+v", name, h)
		}
	}
}

func TestParseHeaderEvent(t *testing.T) {
	h, err := ParseHeaderEvent(headerEventText)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultEventHeader(), h); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Without the "data max" line, the type below the special ones.
	noMax, err := ParseHeaderEvent(headerEventText[:len(headerEventText)-len("\tdata max type_len  == 28\n")])
	if err != nil || noMax.DataMaxTypeLen != 28 {
		t.Errorf("without data max: %+v, %v", noMax, err)
	}
	for name, text := range map[string]string{
		"empty":          "",
		"no time_stamp":  "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\tpadding     : type == 29\n\ttime_extend : type == 30\n",
		"33 bits":        "\ttype_len    :    6 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n",
		"type too big":   "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 32\n",
		"same type":      "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\tpadding     : type == 30\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n",
		"data max above": headerEventText + "\tdata max type_len  == 29\n",
	} {
		if h, err := ParseHeaderEvent(text); err == nil {
			t.Errorf("%s: parsed as %+v", name, h)
		}
	}
}

// layouts are the pages of Debian's kernels (64- and 32-bit, little
// endian) and their big-endian twins.
var layouts = []struct {
	name  string
	h     *PageHeader
	order binary.ByteOrder
}{
	{"64-bit", DefaultPageHeader(8), binary.LittleEndian},
	{"32-bit", DefaultPageHeader(4), binary.LittleEndian},
	{"64-bit big-endian", DefaultPageHeader(8), binary.BigEndian},
	{"32-bit big-endian", DefaultPageHeader(4), binary.BigEndian},
}

// payload returns n bytes counting from seed.
func payload(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i)
	}
	return p
}

type wantRecord struct {
	ts      uint64
	offset  int
	payload []byte
}

func checkRecords(t *testing.T, name string, got []Record, want []wantRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d: %+v", name, len(got), len(want), got)
	}
	for i, w := range want {
		r := got[i]
		if r.Timestamp != w.ts || r.Offset != w.offset || !bytes.HasPrefix(r.Data, w.payload) || len(r.Data) > (len(w.payload)+3)&^3 {
			t.Errorf("%s: record %d: ts %d at %d (%d bytes %x), want ts %d at %d (%x)",
				name, i, r.Timestamp, r.Offset, len(r.Data), r.Data, w.ts, w.offset, w.payload)
		}
	}
}

func TestDecodePage(t *testing.T) {
	for _, l := range layouts {
		b := newPage(l.h, l.order, 1_000_000)
		var want []wantRecord
		add := func(ts uint64, off int, p []byte) { want = append(want, wantRecord{ts, off, p}) }

		// The first event of a page has the page's time.
		p := payload(12, 1)
		add(1_000_000, b.event(0, p), p)
		p = payload(5, 20) // 2 words
		add(1_000_010, b.event(10, p), p)
		// A delta over 27 bits: a time extend, then the event with 0.
		b.extend(1<<30 + 5)
		p = payload(8, 30)
		add(1_000_010+1<<30+5, b.event(0, p), p)
		// A discarded event: its delta counts (as in kbuffer).
		b.discard(7, 24)
		p = payload(200, 40) // type_len 0
		add(1_000_010+1<<30+5+7+3, b.bigEvent(3, p), p)
		p = payload(20, 50) // a small event written as type_len 0 (8-byte aligned kernels)
		add(1_000_010+1<<30+5+7+3+1, b.bigEvent(1, p), p)
		p = payload(112, 60) // the largest small event
		add(1_000_010+1<<30+5+7+3+1+2, b.event(2, p), p)
		// An absolute time stamp replaces the running time.
		b.stamp(5_000_000_000)
		p = payload(4, 70)
		add(5_000_000_000, b.event(0, p), p)
		// An empty event still takes a word; the largest 27-bit delta.
		add(5_000_000_000+1<<27-1, b.event(1<<27-1, nil), []byte{0})

		page, err := l.h.DecodePage(b.bytes(), l.order, nil)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if page.Timestamp != 1_000_000 || page.Commit != len(b.data) || page.Lost != 0 {
			t.Errorf("%s: page ts %d commit %d lost %d", l.name, page.Timestamp, page.Commit, page.Lost)
		}
		checkRecords(t, l.name, page.Records, want)
		// The type_len 0 event is exactly its length.
		if n := len(page.Records[3].Data); n != 200 {
			t.Errorf("%s: type_len 0 event of %d bytes", l.name, n)
		}
		// DecodePageTo into a page that holds another's records (more of
		// them, a lost count) gives the same page, in their memory.
		reused := &Page{Timestamp: 9, Commit: 9, Lost: 9, Records: make([]Record, 20, 32)}
		mem := &reused.Records[:1][0]
		if err := l.h.DecodePageTo(reused, b.bytes(), l.order, nil); err != nil {
			t.Fatalf("%s: DecodePageTo: %v", l.name, err)
		}
		if reused.Timestamp != page.Timestamp || reused.Commit != page.Commit || reused.Lost != 0 || &reused.Records[0] != mem {
			t.Errorf("%s: DecodePageTo: page ts %d commit %d lost %d, records reused %v", l.name, reused.Timestamp, reused.Commit, reused.Lost, &reused.Records[0] == mem)
		}
		checkRecords(t, l.name+" (DecodePageTo)", reused.Records, want)
	}
}

func TestDecodePageLost(t *testing.T) {
	for _, l := range layouts {
		for _, c := range []struct {
			flags uint64
			lost  uint64
			want  int64
		}{
			{0, 0, 0},
			{rbMissedEvents, 0, LostUnknown},
			{rbMissedEvents | rbMissedStored, 42, 42},
			{rbMissedEvents | rbMissedStored, 1<<32 - 1, 1<<32 - 1},
			// As a 64-bit kernel adds the int 1 << 31: sign-extended.
			{0xffffffff_00000000 | rbMissedEvents, 0, LostUnknown},
			{0xffffffff_00000000 | rbMissedEvents | rbMissedStored, 42, 42},
		} {
			b := newPage(l.h, l.order, 5)
			b.event(1, payload(8, 1))
			b.flags, b.lost = c.flags, c.lost
			page, err := l.h.DecodePage(b.bytes(), l.order, DefaultEventHeader())
			if err != nil {
				t.Fatalf("%s %#x: %v", l.name, c.flags, err)
			}
			if page.Lost != c.want || page.Commit != 12 || len(page.Records) != 1 {
				t.Errorf("%s %#x: lost %d, commit %d, %d records; want lost %d", l.name, c.flags, page.Lost, page.Commit, len(page.Records), c.want)
			}
		}
	}
}

// A padding with a zero delta ends the page: what follows is not read,
// even within the commit.
func TestDecodePageFiller(t *testing.T) {
	h := DefaultPageHeader(8)
	b := newPage(h, binary.LittleEndian, 100)
	off := b.event(3, payload(8, 1))
	b.head(rbPadding, 0)
	b.u32(0xffffffff) // garbage after the filler
	b.u32(0xffffffff)
	page, err := h.DecodePage(b.bytes(), binary.LittleEndian, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "filler", page.Records, []wantRecord{{103, off, payload(8, 1)}})
}

// A time stamp has 59 bits: the high 5 come from the time before it, one
// more when its low bits wrapped (the kernel's rb_fix_abs_ts).
func TestDecodePageStampHighBits(t *testing.T) {
	h := DefaultPageHeader(8)
	const msb = uint64(0xf8) << 56
	for _, c := range []struct {
		name       string
		page, abs  uint64
		want, next uint64
	}{
		{"low clock", 1000, 2000, 2000, 2001},
		{"high bits kept", msb | 1000, 2000, msb | 2000, msb | 2001},
		{"wrapped", 1<<59 | (1<<59 - 10), 5, 2<<59 | 5, 2<<59 | 6},
		{"earlier stamp", 5000, 100, 100, 101},
	} {
		b := newPage(h, binary.LittleEndian, c.page)
		b.stamp(c.abs)
		b.event(0, payload(4, 1))
		b.event(1, payload(4, 2))
		page, err := h.DecodePage(b.bytes(), binary.LittleEndian, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(page.Records) != 2 || page.Records[0].Timestamp != c.want || page.Records[1].Timestamp != c.next {
			t.Errorf("%s: %+v, want %#x then %#x", c.name, page.Records, c.want, c.next)
		}
	}
}

func TestDecodePageErrors(t *testing.T) {
	h := DefaultPageHeader(8)
	le := binary.LittleEndian
	valid := func() *pageBuilder {
		b := newPage(h, le, 1)
		b.event(1, payload(8, 1))
		return b
	}
	cases := map[string]func() []byte{
		"shorter than the header": func() []byte { return valid().bytes()[:10] },
		"commit past the page": func() []byte {
			b := valid()
			b.commit = 4081
			return b.bytes()
		},
		"commit with junk bits": func() []byte {
			b := valid()
			b.commit = 1<<29 | 12
			return b.bytes()
		},
		"cut before the commit": func() []byte {
			b := valid()
			b.event(1, payload(40, 1))
			return b.bytes()[:h.DataOffset+20]
		},
		"event past the commit": func() []byte {
			b := valid()
			b.commit = len(b.data) - 4
			return b.bytes()
		},
		"header past the commit": func() []byte {
			b := valid()
			b.commit = len(b.data) + 2
			return b.bytes()
		},
		"time extend past the commit": func() []byte {
			b := valid()
			b.extend(1 << 40)
			b.commit = len(b.data) - 4
			return b.bytes()
		},
		"type_len 0 shorter than its length word": func() []byte {
			b := valid()
			b.head(0, 1)
			b.u32(3)
			b.u32(0)
			return b.bytes()
		},
		"type_len 0 past the commit": func() []byte {
			b := valid()
			b.head(0, 1)
			b.u32(4000)
			b.u32(0)
			return b.bytes()
		},
		"padding past the commit": func() []byte {
			b := valid()
			b.head(rbPadding, 1)
			b.u32(64)
			return b.bytes()
		},
		"padding shorter than its length word": func() []byte {
			b := valid()
			b.head(rbPadding, 1)
			b.u32(0)
			return b.bytes()
		},
		"stored count past the page": func() []byte {
			b := newPage(h, le, 1)
			b.bigEvent(0, payload(h.DataSize-8-4, 1)) // leaves 4 bytes: no room for a long
			b.flags = rbMissedEvents | rbMissedStored
			return b.bytes()
		},
	}
	for name, page := range cases {
		if p, err := h.DecodePage(page(), le, nil); err == nil {
			t.Errorf("%s: decoded %+v", name, p)
		}
	}
	// A header or event header that makes no sense is refused, not used.
	if _, err := (&PageHeader{TimestampSize: 4, CommitOffset: 8, CommitSize: 8, DataOffset: 16, DataSize: 100}).DecodePage(valid().bytes(), le, nil); err == nil {
		t.Error("4-byte timestamp accepted")
	}
	if _, err := h.DecodePage(valid().bytes(), le, &EventHeader{TypeLenBits: 5, TimeDeltaBits: 27, ArrayBits: 32}); err == nil {
		t.Error("event header without special types accepted")
	}
}

const testFieldsFormat = `name: test_fields
ID: 1234
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:s8 small;	offset:24;	size:1;	signed:1;
	field:u8 usmall;	offset:25;	size:1;	signed:0;
	field:short half;	offset:26;	size:2;	signed:1;
	field:int neg;	offset:28;	size:4;	signed:1;
	field:long state;	offset:32;	size:8;	signed:1;
	field:u64 big;	offset:40;	size:8;	signed:0;
	field:__data_loc char[] name;	offset:48;	size:4;	signed:0;
	field:__rel_loc char[] rel;	offset:52;	size:4;	signed:0;
	field:__data_loc unsigned long[] stack;	offset:56;	size:4;	signed:0;
	field:__data_loc u8[] buf;	offset:60;	size:4;	signed:0;
	field:void * ptr;	offset:64;	size:8;	signed:0;
	field:unsigned int vec[3];	offset:72;	size:12;	signed:0;

print fmt: "comm=%s", REC->comm
`

// byteOrder is what binary.LittleEndian and BigEndian are.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// testFieldsRecord builds a record of test_fields: its dynamic data
// follows the fields at 84.
func testFieldsRecord(order byteOrder) []byte {
	rec := make([]byte, 84)
	order.PutUint16(rec[0:], 1234)
	order.PutUint32(rec[4:], 42)
	copy(rec[8:], "bash\x00xx")
	rec[24] = 0xfd // -3
	rec[25] = 0xfd // 253
	order.PutUint16(rec[26:], 0xfffe)
	order.PutUint32(rec[28:], 0x80000000)
	order.PutUint64(rec[32:], 0xffffffffffffffff)
	order.PutUint64(rec[40:], 1<<63|5)
	order.PutUint64(rec[64:], 0xdead)
	order.PutUint32(rec[72:], 1)
	order.PutUint32(rec[76:], 2)
	order.PutUint32(rec[80:], 3)

	loc := func(at int, off, n int) { order.PutUint32(rec[at:], uint32(n)<<16|uint32(off)) }
	loc(48, len(rec), 6)
	rec = append(rec, "sleep\x00"...)
	// __rel_loc counts from the end of the field: 52+4.
	loc(52, len(rec)-56, 5)
	rec = append(rec, "rel!\x00"...)
	for len(rec)%8 != 0 {
		rec = append(rec, 0)
	}
	loc(56, len(rec), 24)
	for _, v := range []uint64{0xffffffff81000000, 2, 3} {
		rec = order.AppendUint64(rec, v)
	}
	loc(60, len(rec), 0)
	return rec
}

func TestFieldDecoder(t *testing.T) {
	ev, err := ParseFormat("test", testFieldsFormat)
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
		bo := binary.ByteOrder(order)
		d := FieldDecoder{Order: bo, LongSize: 8}
		rec := testFieldsRecord(order)
		if id, err := d.EventID(rec); err != nil || id != 1234 {
			t.Errorf("%v: EventID %d, %v", bo, id, err)
		}
		want := map[string]any{
			"common_type": int64(1234),
			"common_pid":  int64(42),
			"comm":        "bash",
			"small":       int64(-3),
			"usmall":      int64(253),
			"half":        int64(-2),
			"neg":         int64(-1 << 31),
			"state":       int64(-1),
			"big":         int64(-1<<63 | 5),
			"name":        "sleep",
			"rel":         "rel!",
			"stack":       []uint64{0xffffffff81000000, 2, 3},
			"buf":         []uint64{},
			"ptr":         int64(0xdead),
			"vec":         []uint64{1, 2, 3},
		}
		for name, w := range want {
			f := ev.Field(name)
			if f == nil {
				t.Fatalf("no field %s", name)
			}
			got, err := d.Value(f, rec)
			if err != nil {
				t.Errorf("%v: %s: %v", bo, name, err)
				continue
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%v: %s (-want +got):\n%s", bo, name, diff)
			}
		}
		if v, _ := d.Int(ev.Field("big"), rec); uint64(v) != 1<<63|5 {
			t.Errorf("big as unsigned: %#x", uint64(v))
		}
		if b, err := d.Bytes(ev.Field("name"), rec); err != nil || string(b) != "sleep\x00" {
			t.Errorf("name bytes %q, %v", b, err)
		}
	}

	d := FieldDecoder{Order: binary.LittleEndian, LongSize: 8}
	rec := testFieldsRecord(binary.LittleEndian)
	bad := func(name string, f *Field, rec []byte, get func(*Field, []byte) error, wantRange bool) {
		t.Helper()
		err := get(f, rec)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if wantRange != errors.Is(err, ErrFieldRange) {
			t.Errorf("%s: %v (ErrFieldRange: %v)", name, err, errors.Is(err, ErrFieldRange))
		}
	}
	value := func(f *Field, rec []byte) error { _, err := d.Value(f, rec); return err }
	bad("cut record", ev.Field("big"), rec[:44], value, true)
	bad("cut comm", ev.Field("comm"), rec[:20], value, true)
	bad("empty record id", nil, rec[:1], func(*Field, []byte) error { _, err := d.EventID(rec[:1]); return err }, true)
	beyond := append([]byte(nil), rec...)
	binary.LittleEndian.PutUint32(beyond[48:], 6<<16|uint32(len(rec)-2))
	bad("data_loc past the end", ev.Field("name"), beyond, value, true)
	binary.LittleEndian.PutUint32(beyond[52:], 0xffff<<16|0xffff)
	bad("rel_loc past the end", ev.Field("rel"), beyond, value, true)
	bad("string of an int", ev.Field("neg"), rec, func(f *Field, r []byte) error { _, err := d.String(f, r); return err }, false)
	bad("array of a string", ev.Field("comm"), rec, func(f *Field, r []byte) error { _, err := d.Array(f, r); return err }, false)
	bad("3-byte int", &Field{Name: "odd", Offset: 8, Size: 3, Kind: KindInt}, rec, value, false)
	bad("unknown element", &Field{Name: "things", Decl: "__data_loc struct foo[]", Base: "struct foo", Offset: 48, Size: 4, Kind: KindDynArray}, rec, value, false)
	bad("location of 8 bytes", &Field{Name: "wide", Decl: "__data_loc char[]", Base: "char", Offset: 48, Size: 8, Kind: KindDynString}, rec, value, false)
	bad("negative offset", &Field{Name: "neg", Offset: -4, Size: 4, Kind: KindInt}, rec, value, true)
}

// On a 32-bit kernel an unsigned long is 4 bytes: a stack's frames and a
// long field.
func TestFieldDecoder32(t *testing.T) {
	ev, err := ParseFormat("test", `name: stack32
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:long state;	offset:4;	size:4;	signed:1;
	field:__data_loc unsigned long[] stack;	offset:8;	size:4;	signed:0;
	field:const char * file;	offset:12;	size:4;	signed:0;

print fmt: "x"
`)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	rec := make([]byte, 16)
	le.PutUint16(rec, 7)
	le.PutUint32(rec[4:], 0xfffffff6) // -10
	le.PutUint32(rec[8:], 12<<16|16)
	le.PutUint32(rec[12:], 0xc0de0000)
	for _, v := range []uint32{0xc0100000, 0xc0200000, 0} {
		rec = le.AppendUint32(rec, v)
	}
	d := FieldDecoder{Order: le, LongSize: 4}
	if v, err := d.Int(ev.Field("state"), rec); err != nil || v != -10 {
		t.Errorf("state %d, %v", v, err)
	}
	if v, err := d.Array(ev.Field("stack"), rec); err != nil || !cmp.Equal(v, []uint64{0xc0100000, 0xc0200000, 0}) {
		t.Errorf("stack %#x, %v", v, err)
	}
	if v, err := d.Int(ev.Field("file"), rec); err != nil || v != 0xc0de0000 {
		t.Errorf("pointer %#x, %v", v, err)
	}
	// The same stack read with 8-byte longs is one and a half frames:
	// the half is dropped.
	if v, err := (FieldDecoder{Order: le, LongSize: 8}).Array(ev.Field("stack"), rec); err != nil || len(v) != 1 {
		t.Errorf("stack with 8-byte longs: %#x, %v", v, err)
	}
}

// A stream of three pages: records in order, the lost counts summed, then
// io.EOF; a page that does not decode is reported once and skipped; a
// stream cut inside a page ends with io.ErrUnexpectedEOF.
func TestRecordReader(t *testing.T) {
	h := DefaultPageHeader(8)
	le := binary.LittleEndian
	p1 := newPage(h, le, 100)
	p1.event(0, payload(8, 1))
	p1.event(5, payload(8, 2))
	p2 := newPage(h, le, 200)
	p2.event(1, payload(8, 3))
	p2.flags, p2.lost = rbMissedEvents|rbMissedStored, 7
	p3 := newPage(h, le, 300)
	p3.event(2, payload(8, 4))
	p3.flags = rbMissedEvents
	bad := newPage(h, le, 400)
	bad.event(0, payload(8, 5))
	bad.commit = 5000

	read := func(stream []byte) (ts []uint64, errs []error) {
		rr := NewRecordReader(bytes.NewReader(stream), h, nil, le)
		for i := 0; i < 20; i++ {
			r, err := rr.Next()
			if err != nil {
				errs = append(errs, err)
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					break
				}
				continue
			}
			ts = append(ts, r.Timestamp)
		}
		return ts, errs
	}

	stream := append(append(p1.bytes(), p2.bytes()...), p3.bytes()...)
	rr := NewRecordReader(bytes.NewReader(stream), h, nil, le)
	var got []uint64
	for {
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Timestamp)
		// Records stay valid after later reads.
		if len(got) == 1 {
			defer func(r Record) {
				if !bytes.HasPrefix(r.Data, payload(8, 1)) {
					t.Errorf("first record changed: %x", r.Data)
				}
			}(r)
		}
	}
	if !cmp.Equal(got, []uint64{100, 105, 201, 302}) {
		t.Errorf("timestamps %v", got)
	}
	if n, unknown := rr.Lost(); n != 7 || unknown != 1 || rr.Pages() != 3 {
		t.Errorf("lost %d and %d uncounted over %d pages", n, unknown, rr.Pages())
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Errorf("after the end: %v", err)
	}

	ts, errs := read(append(append(p1.bytes(), bad.bytes()...), p3.bytes()...))
	var pe *PageError
	if !cmp.Equal(ts, []uint64{100, 105, 302}) || len(errs) != 2 || !errors.As(errs[0], &pe) || pe.Page != 1 || errs[1] != io.EOF {
		t.Errorf("with a bad page: %v, %v", ts, errs)
	}

	ts, errs = read(append(p1.bytes(), p2.bytes()[:100]...))
	if !cmp.Equal(ts, []uint64{100, 105}) || len(errs) != 1 || errs[0] != io.ErrUnexpectedEOF {
		t.Errorf("cut stream: %v, %v", ts, errs)
	}
}

// fuzzLayouts are small pages (256 bytes) of the four layouts, so that
// the fuzzer's inputs stay short.
var fuzzLayouts = []struct {
	h     *PageHeader
	order binary.ByteOrder
}{
	{&PageHeader{0, 8, 8, 8, 16, 240}, binary.LittleEndian},
	{&PageHeader{0, 8, 8, 4, 12, 244}, binary.LittleEndian},
	{&PageHeader{0, 8, 8, 8, 16, 240}, binary.BigEndian},
	{&PageHeader{0, 8, 8, 4, 12, 244}, binary.BigEndian},
}

// fuzzSeeds are valid small pages of every kind of record.
func fuzzSeeds() (pages [][]byte, layout []uint8) {
	for i, l := range fuzzLayouts {
		b := newPage(l.h, l.order, 1<<40)
		b.event(0, payload(12, 1))
		b.extend(1<<33 + 3)
		b.event(0, payload(5, 2))
		b.discard(4, 16)
		b.bigEvent(2, payload(30, 3))
		b.stamp(1 << 50)
		b.event(1, payload(4, 4))
		b.flags, b.lost = rbMissedEvents|rbMissedStored, 9
		pages, layout = append(pages, b.bytes()), append(layout, uint8(i))

		b = newPage(l.h, l.order, 7)
		b.bigEvent(0, payload(150, 5))
		b.event(3, payload(8, 6))
		b.head(rbPadding, 0)
		b.flags = rbMissedEvents
		pages, layout = append(pages, b.bytes()), append(layout, uint8(i))

		rec := testFieldsRecord(l.order.(byteOrder))
		b = newPage(l.h, l.order, 0xf8<<56)
		b.stamp(12345)
		b.event(0, rec)
		pages, layout = append(pages, b.bytes()), append(layout, uint8(i))
	}
	return pages, layout
}

func TestFuzzSeedsDecode(t *testing.T) {
	pages, layout := fuzzSeeds()
	for i, p := range pages {
		l := fuzzLayouts[layout[i]]
		page, err := l.h.DecodePage(p, l.order, nil)
		if err != nil || len(page.Records) == 0 {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

func FuzzDecodePage(f *testing.F) {
	pages, layout := fuzzSeeds()
	for i := range pages {
		f.Add(pages[i], layout[i])
	}
	f.Fuzz(func(t *testing.T, page []byte, layout uint8) {
		fuzzguard.Run(fuzzguard.Limit, fmt.Sprintf("layout %d page %x", layout, page), func() { checkPage(t, page, layout) })
	})
}

// checkPage is FuzzDecodePage's check of one page: every record lies in
// the committed data, after a header word and after the record before it;
// decoding is repeatable; a RecordReader gives the same records; and the
// fields of test_fields read from any record without a panic.
func checkPage(t *testing.T, page []byte, layout uint8) {
	l := fuzzLayouts[int(layout)%len(fuzzLayouts)]
	p, err := l.h.DecodePage(page, l.order, nil)
	if err != nil {
		return
	}
	if p.Commit < 0 || p.Commit > l.h.DataSize || p.Commit > len(page)-l.h.DataOffset {
		t.Fatalf("commit %d", p.Commit)
	}
	if p.Lost < LostUnknown {
		t.Fatalf("lost %d", p.Lost)
	}
	if len(p.Records) > p.Commit/8 {
		t.Fatalf("%d records in %d bytes", len(p.Records), p.Commit)
	}
	end := l.h.DataOffset
	for i, r := range p.Records {
		if r.Offset < end+4 || r.Offset+len(r.Data) > l.h.DataOffset+p.Commit {
			t.Fatalf("record %d at %d+%d: outside %d..%d", i, r.Offset, len(r.Data), end+4, l.h.DataOffset+p.Commit)
		}
		if len(r.Data) > 0 && &r.Data[0] != &page[r.Offset] {
			t.Fatalf("record %d does not alias the page at %d", i, r.Offset)
		}
		end = r.Offset + len(r.Data)
	}
	again, err := l.h.DecodePage(page, l.order, nil)
	if err != nil || !cmp.Equal(p, again) {
		t.Fatalf("second decode differs: %v", err)
	}

	ev, err := ParseFormat("test", testFieldsFormat)
	if err != nil {
		t.Fatal(err)
	}
	for _, long := range []int{4, 8} {
		d := FieldDecoder{Order: l.order, LongSize: long}
		for _, r := range p.Records {
			_, _ = d.EventID(r.Data)
			for _, f := range ev.Fields {
				v, err := d.Value(f, r.Data)
				if err == nil && v == nil {
					t.Fatalf("field %s: nil value without an error", f.Name)
				}
				if b, err := d.Bytes(f, r.Data); err == nil && len(b) > len(r.Data) {
					t.Fatalf("field %s: %d bytes of a %d-byte record", f.Name, len(b), len(r.Data))
				}
			}
		}
	}

	if len(page) < l.h.PageSize() {
		return
	}
	whole := page[:l.h.PageSize()]
	rr := NewRecordReader(bytes.NewReader(append(append([]byte(nil), whole...), whole...)), l.h, nil, l.order)
	n := 0
	for {
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
		w := p.Records[n%max(len(p.Records), 1)]
		if r.Timestamp != w.Timestamp || r.Offset != w.Offset || !bytes.Equal(r.Data, w.Data) {
			t.Fatalf("reader record %d: %+v, want %+v", n, r, w)
		}
		n++
	}
	if n != 2*len(p.Records) || rr.Pages() != 2 {
		t.Fatalf("reader: %d records from %d pages, want %d", n, rr.Pages(), 2*len(p.Records))
	}
}
