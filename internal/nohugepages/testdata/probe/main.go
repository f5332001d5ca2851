// Command probe prints how many of its memory mappings are marked not
// to use huge pages (VmFlags nh in /proc/self/smaps) once its heap is
// in use.
package main

import (
	"fmt"
	"os"
	"strings"
)

var sink [][]byte

func main() {
	for range 64 {
		sink = append(sink, make([]byte, 64<<10))
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmFlags:") && strings.Contains(l+" ", " nh ") {
			n++
		}
	}
	fmt.Println(n)
}
