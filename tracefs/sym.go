package tracefs

// Sym is a kernel text symbol as /proc/kallsyms gives it: its name, its
// address and its size (the distance to the next text symbol).
type Sym struct {
	Name       string
	Addr, Size uint64
}
