package live

import (
	"fmt"
	"strconv"
	"strings"
)

// perfEvent is one tracepoint the stream engine's perf rings record
// (perfRings, Linux only): its id and the filter the kernel applies
// before recording ("" for none).
type perfEvent struct {
	name   string // system/event, for messages
	id     int
	filter string
}

// parseCPUList reads the kernel's CPU list format ("0-3,6").
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
