package compiler

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/source"
)

// fill repeats unit between head and tail up to MaxSourceBytes: the
// longest script Parse reads.
func fill(head, unit, tail string) string {
	n := (MaxSourceBytes - len(head) - len(tail)) / len(unit)
	return head + strings.Repeat(unit, n) + tail
}

// worstParses are the slowest inputs found for Parse. They were built by
// filling the size limit with one shape each (nesting, chains, lists,
// statements, errors), timing every shape, profiling the slowest and fixing
// what grew faster than the input (a unary chain's span was recomputed at
// each level: 16,000 "-" took 480 ms), until each cost is linear in the
// size. What remains is the tidb parser's own cost, about a microsecond a
// byte. Before the fix, prefix_run alone (64 KiB of "-") took over 7 s.
var worstParses = []struct{ name, text string }{
	{"prefix_run", fill("SELECT pid FROM e WHERE pid == ", "-", "1")},
	{"nested_100_per_statement", fill("", "SELECT pid FROM e WHERE "+strings.Repeat("-(", 50)+"pid == 1"+strings.Repeat(")", 50)+";", "")},
	{"or_chain", fill("SELECT pid FROM e WHERE ", "pid == 1 || ", "pid == 2")},
	{"sum_chain", fill("SELECT (a", " + a", ") AS x FROM e")},
	{"select_list", fill("SELECT ", "a, ", "a FROM e")},
	{"statements", fill("", "SELECT a FROM e;", "")},
	{"joins", fill("SELECT a FROM b", " JOIN c ON a = b", "")},
	{"casts", fill("SELECT ", "CAST(a AS HEX), ", "a FROM e")},
	{"bad_bytes", fill("", "\x97", "")},
	{"bad_statements", fill("", "SELECT a FROM;", "")},
	{"probe_args", fill("SELECT a FROM kprobe(f", ", a=+0(+0($arg1)):u32", ")")},
}

// BenchmarkWorstParse times Parse on each worst input; each should stay
// well under 100 ms (figures, not assertions: machines are noisy).
func BenchmarkWorstParse(b *testing.B) {
	for _, w := range worstParses {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(len(w.text)))
			for b.Loop() {
				Parse(source.NewSource("worst.sql", w.text))
			}
		})
	}
}

// BenchmarkOversized is a script one byte past the limit: refused before
// any token is read.
func BenchmarkOversized(b *testing.B) {
	text := strings.Repeat("-", MaxSourceBytes+1)
	for b.Loop() {
		Parse(source.NewSource("big.sql", text))
	}
}
