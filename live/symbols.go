package live

import (
	"fmt"
	"github.com/sqlhist/sqlhist/tracefs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Sym is a kernel text symbol as /proc/kallsyms gives it (defined in
// tracefs, so that the transport in live/remote names it too).
type Sym = tracefs.Sym

// symCache names the kernel addresses the stream engine prints (.sym,
// .sym-offset, stack frames). Addresses are resolved in batches by
// prefetch, from this machine's /proc/kallsyms or, through a transport,
// by the target itself (Target.Symbols: only the addresses seen cross the
// line, never the whole of kallsyms); name only looks them up.
type symCache struct {
	mu      sync.Mutex
	resolve func(addrs []uint64) (map[uint64]Sym, error)
	known   map[uint64]Sym
	tried   map[uint64]bool
}

func newSymCache(t *Target) *symCache {
	c := &symCache{known: map[uint64]Sym{}, tried: map[uint64]bool{}}
	if t.Symbols != nil {
		c.resolve = t.Symbols
	} else {
		var once sync.Once
		var table *kallsyms
		c.resolve = func(addrs []uint64) (map[uint64]Sym, error) {
			once.Do(func() {
				data, err := os.ReadFile("/proc/kallsyms")
				if err == nil {
					table = parseKallsyms(string(data))
				}
			})
			if table == nil {
				return nil, fmt.Errorf("/proc/kallsyms cannot be read")
			}
			return table.lookup(addrs), nil
		}
	}
	return c
}

// prefetch resolves the addresses not tried yet, in one batch.
func (c *symCache) prefetch(addrs []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var todo []uint64
	for _, a := range addrs {
		if !c.tried[a] {
			c.tried[a] = true
			todo = append(todo, a)
		}
	}
	if len(todo) == 0 || c.resolve == nil {
		return
	}
	got, err := c.resolve(todo)
	if err != nil {
		return // printed as addresses
	}
	for a, s := range got {
		c.known[a] = s
	}
}

// name is the symbol of a resolved address: "func", or with offset
// "func+0x1c/0x80" as the kernel's %pS prints it; "" when unknown.
func (c *symCache) name(addr uint64, offset bool) string {
	c.mu.Lock()
	s, ok := c.known[addr]
	c.mu.Unlock()
	if !ok {
		return ""
	}
	if !offset {
		return s.Name
	}
	return fmt.Sprintf("%s+0x%x/0x%x", s.Name, addr-s.Addr, s.Size)
}

// kallsyms is the text symbols of /proc/kallsyms, by address.
type kallsyms struct {
	addrs []uint64
	names []string
}

// parseKallsyms reads the text symbols (types t, T, w, W) of a
// /proc/kallsyms. Of symbols at one address (aliases: the same code), it
// keeps the first in the file's order, the one the kernel's own %pS
// prints (kallsyms' get_symbol_pos goes back to the first of the same
// address), so that the stream engine names a stack as a hist trigger
// does. A name at several addresses (static functions of different
// files) names each of them, as the kernel prints it too: the offset and
// size that .sym-offset adds tell them apart.
func parseKallsyms(text string) *kallsyms {
	type sym struct {
		a uint64
		n string
	}
	var syms []sym
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || (f[1] != "t" && f[1] != "T" && f[1] != "W" && f[1] != "w") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		syms = append(syms, sym{a, f[2]})
	}
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].a < syms[j].a })
	k := &kallsyms{}
	for _, s := range syms {
		if n := len(k.addrs); n > 0 && k.addrs[n-1] == s.a {
			continue // an alias: the kernel's %pS names the first
		}
		k.addrs, k.names = append(k.addrs, s.a), append(k.names, s.n)
	}
	return k
}

// lookup finds the symbol at or before each address.
func (k *kallsyms) lookup(addrs []uint64) map[uint64]Sym {
	out := map[uint64]Sym{}
	for _, a := range addrs {
		i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > a }) - 1
		if i < 0 {
			continue
		}
		s := Sym{Name: k.names[i], Addr: k.addrs[i]}
		if i+1 < len(k.addrs) {
			s.Size = k.addrs[i+1] - k.addrs[i]
		}
		out[a] = s
	}
	return out
}
