package remote

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzAnswer feeds arbitrary output around a framed answer: whatever
// comes before the begin marker (echo, noise, other answers' markers)
// is ignored, and the text is given back as it was (a line's \r\n as
// \n), or the reader says what is wrong; it never panics.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte("noise\nR 1 x 1\n"), []byte("hello\n"), 0)
	f.Add([]byte("MARK 1 B\n"), []byte("a\r\nb"), 3)
	f.Add([]byte(""), []byte("MARK 1 E 0\n"), 0)
	f.Add([]byte("MARK 2 X\nMARK 1 E 1\n"), []byte("\n\n"), 255)
	f.Fuzz(func(t *testing.T, before, body []byte, status int) {
		const mark = "MARK"
		a := newAnswer(mark, "1", 1<<20)
		stream := append([]byte{}, before...)
		stream = append(stream, "\n"+mark+" 1 B\n"...)
		stream = append(stream, body...)
		stream = append(stream, "\n"+mark+" 1 E "...)
		st := status & 0xff
		stream = append(stream, []byte(itoa(st)+"\n")...)
		var done bool
		var err error
		for _, l := range bytes.SplitAfter(stream, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			if done, err = a.feed(l); done || err != nil {
				break
			}
		}
		if err != nil {
			if bytes.Contains(before, []byte(mark)) || bytes.Contains(body, []byte(mark)) {
				return // the fuzzer forged a marker: an error is right
			}
			t.Fatalf("an honest answer failed: %v", err)
		}
		if !done {
			t.Fatal("the answer never ended")
		}
		if bytes.Contains(before, []byte(mark)) || bytes.Contains(body, []byte(mark)) {
			return
		}
		want := strings.ReplaceAll(string(body), "\r\n", "\n")
		if bytes.HasSuffix(body, []byte("\r")) && !bytes.HasSuffix(body, []byte("\r\n")) {
			// The end marker's newline turns a final \r into \r\n.
			want = strings.TrimSuffix(want, "\r")
		}
		if a.out != want || a.status != st {
			t.Fatalf("got %q status %d, want %q status %d", a.out, a.status, want, st)
		}
	})
}

// FuzzListing: whatever a target prints for a listing, the entries are
// names without a slash, each once, sorted.
func FuzzListing(f *testing.F) {
	f.Add("dfoo\nfbar\nd..\nf/x\n\nx")
	f.Fuzz(func(t *testing.T, out string) {
		ents := parseListing(out)
		seen := map[string]bool{}
		for i, e := range ents {
			if e.Name() == "" || strings.Contains(e.Name(), "/") || strings.Contains(e.Name(), "\n") || seen[e.Name()] || e.Name() == "." || e.Name() == ".." {
				t.Fatalf("bad entry %q", e.Name())
			}
			if i > 0 && ents[i-1].Name() >= e.Name() {
				t.Fatalf("not sorted: %q before %q", ents[i-1].Name(), e.Name())
			}
			seen[e.Name()] = true
		}
	})
}
