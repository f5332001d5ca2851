package tracefs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The regular expressions keyNames and valNames stand for.
var (
	keyNameRE = regexp.MustCompile(`(?:^|, )([A-Za-z_0-9][A-Za-z0-9_.+*/-]*):(?: |$)`)
	valNameRE = regexp.MustCompile(`(?:^|\s)([A-Za-z_$0-9][A-Za-z0-9_.$+*/-]*|)( \(%\))?:`)
)

// TestNameScanners: keyNames and valNames find what their regular
// expressions find, on every line of the hist files of testdata (and its
// parts after "{ " and "}") and on random text of the characters that
// matter.
func TestNameScanners(t *testing.T) {
	var texts []string
	files, _ := filepath.Glob("testdata/hist-*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			texts = append(texts, l)
			if k, ok := strings.CutPrefix(l, "{ "); ok {
				texts = append(texts, k)
				if i := strings.LastIndex(k, " }"); i >= 0 {
					texts = append(texts, k[:i], k[i+2:])
				}
			}
		}
	}
	if len(texts) < 1000 {
		t.Fatalf("%d lines of hist files in testdata", len(texts))
	}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "ab_Z09$.+*/-:, ()%\t\n\r\f}{[]~x"
	for range 50000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		var keys, vals [][]int
		for _, m := range keyNames(s) {
			keys = append(keys, m[:])
		}
		for _, m := range valNames(s) {
			vals = append(vals, m[:])
		}
		if want := keyNameRE.FindAllStringSubmatchIndex(s, -1); !slices.EqualFunc(keys, want, slices.Equal) {
			t.Fatalf("keyNames(%q) = %v, the regular expression finds %v", s, keys, want)
		}
		if want := valNameRE.FindAllStringSubmatchIndex(s, -1); !slices.EqualFunc(vals, want, slices.Equal) {
			t.Fatalf("valNames(%q) = %v, the regular expression finds %v", s, vals, want)
		}
	}
}

func BenchmarkParseHist(b *testing.B) {
	var texts []string
	files, _ := filepath.Glob("testdata/hist-6.1-*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	for b.Loop() {
		for _, s := range texts {
			ParseHist(s)
		}
	}
}
