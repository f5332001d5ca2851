package vm

import (
	"encoding/binary"
	"os"
)

// AppendBootconfig appends a bootconfig to an initrd the way the kernel
// reads it back (tools/bootconfig's layout): the text, a NUL, padding
// NULs so the whole file's size is a multiple of 4, then the size of that
// data and the sum of its bytes (little-endian u32 each) and the magic
// "#BOOTCONFIG\n". The kernel reads it when its command line has
// "bootconfig".
func AppendBootconfig(path, text string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	const magic = "#BOOTCONFIG\n"
	data := append([]byte(text), 0)
	for (st.Size()+int64(len(data))+8+int64(len(magic)))%4 != 0 {
		data = append(data, 0)
	}
	var sum uint32
	for _, c := range data {
		sum += uint32(c)
	}
	tail := binary.LittleEndian.AppendUint32(nil, uint32(len(data)))
	tail = binary.LittleEndian.AppendUint32(tail, sum)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(append(data, tail...), magic...)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
