package emit

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// bootMagic ends an initrd that carries a bootconfig.
const bootMagic = "#BOOTCONFIG\n"

// A bootconfig rides at the end of the initrd (Documentation/admin-guide/
// bootconfig.rst; init/main.c reads it):
//
//	[initrd][text NUL][NUL padding][size le32][checksum le32][#BOOTCONFIG\n]
//
// size counts the text, its NUL and the padding, which makes the whole
// file a multiple of 4 bytes long; checksum is the 32-bit sum of those
// size bytes.

// BootBlockError is a bootconfig block that cannot be read: a file whose
// end says it carries one that is not whole.
type BootBlockError struct{ Msg string }

func (e *BootBlockError) Error() string { return e.Msg }

// SplitBootconfig returns the initrd without its bootconfig block, the
// block's text (without its NUL padding) and whether there was a block.
// A file that ends in the magic word but whose size or checksum is wrong
// is an error: replacing it could cut the initrd.
func SplitBootconfig(data []byte) (initrd []byte, text string, found bool, err error) {
	n := len(data)
	if n < len(bootMagic) || !bytes.Equal(data[n-len(bootMagic):], []byte(bootMagic)) {
		return data, "", false, nil
	}
	end := n - len(bootMagic)
	if end < 8 {
		return nil, "", true, &BootBlockError{fmt.Sprintf("the file ends in %q but has no room for the size and checksum before it", bootMagic)}
	}
	size := binary.LittleEndian.Uint32(data[end-8:])
	sum := binary.LittleEndian.Uint32(data[end-4:])
	start := int64(end-8) - int64(size)
	if size == 0 || start < 0 {
		return nil, "", true, &BootBlockError{fmt.Sprintf("its bootconfig block claims %d bytes; the file has %d before the block's size field", size, end-8)}
	}
	block := data[start : end-8]
	if got := bootChecksum(block); got != sum {
		return nil, "", true, &BootBlockError{fmt.Sprintf("its bootconfig block's checksum is %#08x; the %d bytes sum to %#08x", sum, size, got)}
	}
	return data[:start], string(bytes.TrimRight(block, "\x00")), true, nil
}

func bootChecksum(b []byte) uint32 {
	var s uint32
	for _, c := range b {
		s += uint32(c)
	}
	return s
}

// AttachBootconfig returns initrd (which must carry no block) followed by
// a block holding text.
func AttachBootconfig(initrd []byte, text string) []byte {
	var b bytes.Buffer
	b.Write(initrd)
	b.WriteString(text)
	b.WriteByte(0)
	for (b.Len()+8+len(bootMagic))%4 != 0 {
		b.WriteByte(0)
	}
	block := b.Bytes()[len(initrd):]
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(block)))
	binary.LittleEndian.PutUint32(hdr[4:], bootChecksum(block))
	b.Write(hdr[:])
	b.WriteString(bootMagic)
	return b.Bytes()
}
