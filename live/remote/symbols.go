package remote

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/tracefs"
)

// maxSymbols bounds the addresses one request resolves.
const maxSymbols = 4096

// Symbols names kernel addresses from the target's /proc/kallsyms
// without copying it: the target sorts its text symbols together with
// the addresses asked (fixed-width hexadecimal sorts as numbers), and
// awk prints, for each address, the symbol before it and the one after
// (its size). Only the addresses and their names cross the line.
// Symbols at one address (aliases) are named as the kernel's own %pS
// names them: the first in kallsyms' order (each symbol goes into the
// sort with its line number after its address).
func (s *Session) Symbols(addrs []uint64) (map[uint64]tracefs.Sym, error) {
	out := map[uint64]tracefs.Sym{}
	for len(addrs) > 0 {
		n := min(len(addrs), maxSymbols)
		if err := s.symbols(addrs[:n], out); err != nil {
			return nil, err
		}
		addrs = addrs[n:]
	}
	return out, nil
}

func (s *Session) symbols(addrs []uint64, out map[uint64]tracefs.Sym) error {
	ans, err := s.read(context.Background(), "naming kernel addresses", symbolsScript(addrs, "/proc/kallsyms"))
	if err != nil {
		return err
	}
	return parseSymbols(ans, out)
}

// symbolsScript is the shell program of Symbols on the kallsyms file.
func symbolsScript(addrs []uint64, file string) string {
	// The width of kallsyms' addresses is the target's: 16 hex digits on
	// 64-bit kernels, 8 on 32-bit; the first line tells.
	q := emit.Quote(file)
	var b strings.Builder
	b.WriteString(`w=$(head -n 1 ` + q + `); w=${w%% *}; { awk '$2 ~ /^[tTwW]$/ { printf "%s %09d %s\n", $1, NR, $3 }' ` + q + `; for a in`)
	for _, a := range addrs {
		fmt.Fprintf(&b, " %016x", a)
	}
	b.WriteString(`; do [ ${#w} = 8 ] && a=${a#????????}; echo "$a ~ ~want"; done; } | LC_ALL=C sort | awk '$3=="~want" { w[n++]=$1; next } $1==pa { next } { for (i = 0; i < n; i++) if (pa != "") print w[i], pa, $1, pn; n = 0; pa = $1; pn = $3 } END { for (i = 0; i < n; i++) if (pa != "") print w[i], pa, "-", pn }'`)
	return b.String()
}

// parseSymbols reads Symbols' lines "WANT ADDR NEXT NAME" (NEXT "-" for
// the last symbol).
func parseSymbols(ans string, out map[uint64]tracefs.Sym) error {
	for _, l := range strings.Split(ans, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 {
			return fmt.Errorf("naming kernel addresses: unexpected line %q", clip(l))
		}
		want, err1 := strconv.ParseUint(f[0], 16, 64)
		addr, err2 := strconv.ParseUint(f[1], 16, 64)
		if err1 != nil || err2 != nil || addr > want || len(f[3]) > 512 {
			return fmt.Errorf("naming kernel addresses: unexpected line %q", clip(l))
		}
		sym := tracefs.Sym{Name: f[3], Addr: addr}
		if next, err := strconv.ParseUint(f[2], 16, 64); err == nil && next > addr {
			sym.Size = next - addr
		}
		out[want] = sym
	}
	return nil
}
