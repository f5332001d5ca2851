// Command testlog turns `go test -json` into what `go test -v` prints,
// and ends it with what failed: every failed test's own messages again,
// gathered in one place.
//
//	go test -json ./e2e -run TestKernels | go run ./tools/testlog [-save F]
//
// A failing kernel suite prints its reasons where they happen, in the
// middle of tens of thousands of lines of 12 kernels' logs, and CI shows
// only the end of a run: the last submission's failure read "FAIL:
// TestKernels/7.2-arm64/queries (0.42s)" with nothing to say why. The
// digest names each failed test that has no failed subtest and repeats
// its output (its t.Log and t.Error lines, up to -lines of each: the
// first quarter of them and the last three quarters, each line cut to
// -width bytes), so that the end of the log says why.
//
// -quiet relays as go test without -v prints: each package's result
// line, and a failed test's output when it fails (make unit).
//
// -save F also writes the digest to F (empty when nothing failed):
// `make test` prints the kernels' and the unit tests' digests last, after
// both logs. testlog exits 0 whatever it read: the exit code is go test's
// (the Makefile keeps it).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	save := flag.String("save", "", "also write the digest to this file")
	lines := flag.Int("lines", 40, "the most output lines of one failed test repeated")
	width := flag.Int("width", 400, "the most bytes of one repeated line")
	quiet := flag.Bool("quiet", false, "print as go test without -v does: each package's line, and a failed test's output when it fails")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout)
	d := newDigest()
	d.quiet = *quiet
	if err := relay(os.Stdin, out, d); err != nil {
		fmt.Fprintln(out, "testlog:", err)
	}
	text := d.render(*lines, *width)
	out.WriteString(text)
	out.Flush()
	if *save != "" {
		if err := os.WriteFile(*save, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testlog:", err)
			os.Exit(1)
		}
	}
}

// event is one line of test2json's stream (go doc test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // of a build-output event
	FailedBuild string // of a package that failed because this did not build
}

// relay copies each event's output to w as go test -v would print it, and
// records it in d. A line that is not JSON (a build error printed before
// the stream, a panic of go test itself) is copied as it is.
func relay(r io.Reader, w *bufio.Writer, d *digest) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			w.Write(line)
			w.WriteByte('\n')
			d.stray = append(d.stray, string(line))
			continue
		}
		if d.quiet {
			d.add(ev)
			switch {
			case ev.Action == "fail" && ev.Test != "":
				w.WriteString(strings.Join(d.output[ev.Package+" "+ev.Test], ""))
				w.Flush()
			case ev.Action == "build-output" || ev.Action == "output" && ev.Test == "" && ev.Output != "PASS\n":
				w.WriteString(ev.Output)
				w.Flush()
			}
			continue
		}
		if ev.Output != "" {
			w.WriteString(ev.Output)
			// Seen at once by whoever follows the log (tail -f, CI's live
			// view): go test -v's output is not held back either.
			if strings.HasSuffix(ev.Output, "\n") {
				w.Flush()
			}
		}
		d.add(ev)
	}
	return sc.Err()
}

// digest keeps each test's output until it ends, and the order in which
// tests failed.
type digest struct {
	output map[string][]string // "pkg test" → its output lines
	failed []string            // "pkg test", in the order they failed
	pkgs   map[string]string   // package → its last action (pass, fail, skip)
	build  map[string][]string // import path → what building it printed
	stray  []string            // lines that were not events
	quiet  bool                // relay as go test without -v
}

func newDigest() *digest {
	return &digest{output: map[string][]string{}, pkgs: map[string]string{}, build: map[string][]string{}}
}

func (d *digest) add(ev event) {
	key := ev.Package + " " + ev.Test
	switch ev.Action {
	case "build-output":
		d.build[ev.ImportPath] = append(d.build[ev.ImportPath], ev.Output)
	case "output":
		d.output[key] = append(d.output[key], ev.Output)
	case "fail":
		if ev.Test == "" {
			d.pkgs[ev.Package] = "fail"
			if ev.FailedBuild != "" {
				d.output[key] = append(d.build[ev.FailedBuild], d.output[key]...)
			}
			return
		}
		d.failed = append(d.failed, key)
	case "pass", "skip":
		if ev.Test == "" {
			d.pkgs[ev.Package] = ev.Action
			return
		}
		// Only failures are repeated: a passed test's output is dropped,
		// so that a suite of many tests is not held in memory twice.
		delete(d.output, key)
	}
}

// render returns the digest: "" when no test and no package failed.
func (d *digest) render(maxLines, width int) string {
	var b strings.Builder
	var leaves []string
	for _, key := range d.failed {
		if !d.hasFailedChild(key) {
			leaves = append(leaves, key)
		}
	}
	var failedPkgs []string
	for pkg, action := range d.pkgs {
		if action == "fail" {
			failedPkgs = append(failedPkgs, pkg)
		}
	}
	if len(leaves) == 0 && len(failedPkgs) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "=== what failed (%d test(s)), each failed test's own output again:\n", len(leaves))
	for _, key := range leaves {
		pkg, test, _ := strings.Cut(key, " ")
		fmt.Fprintf(&b, "--- %s (%s)\n", test, pkg)
		msgs := messages(d.output[key])
		if len(msgs) == 0 {
			b.WriteString("    (it printed nothing of its own)\n")
		}
		// The first lines and the last: a check's error comes after
		// the logs of what it checked, most often at the end.
		head, tail := len(msgs), 0
		if len(msgs) > maxLines {
			head = max(maxLines/4, 1)
			tail = maxLines - head
		}
		for _, m := range msgs[:head] {
			b.WriteString(cut(m, width) + "\n")
		}
		if tail > 0 {
			fmt.Fprintf(&b, "    … %d lines left out (the whole log has them)\n", len(msgs)-head-tail)
			for _, m := range msgs[len(msgs)-tail:] {
				b.WriteString(cut(m, width) + "\n")
			}
		}
	}
	sort.Strings(failedPkgs)
	// A package that failed with no failed test: it did not build, or
	// its test binary died (a panic, a timeout) outside any test's
	// record. Its package-level output says why.
	for _, pkg := range failedPkgs {
		if d.anyFailedIn(pkg) {
			continue
		}
		fmt.Fprintf(&b, "--- package %s failed outside its tests:\n", pkg)
		msgs := messages(d.output[pkg+" "])
		if len(msgs) > maxLines {
			msgs = msgs[len(msgs)-maxLines:]
		}
		for _, m := range msgs {
			b.WriteString(cut(m, width) + "\n")
		}
	}
	return b.String()
}

func (d *digest) hasFailedChild(key string) bool {
	for _, k := range d.failed {
		if strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

func (d *digest) anyFailedIn(pkg string) bool {
	for _, k := range d.failed {
		if strings.HasPrefix(k, pkg+" ") {
			return true
		}
	}
	return false
}

// messages returns a test's output as lines, without go test's own
// framing (=== RUN, --- PASS and the like), which the digest's heading
// already says.
func messages(chunks []string) []string {
	var out []string
	for _, l := range strings.Split(strings.Join(chunks, ""), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- PASS") ||
			strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	return out
}

// cut shortens a line to width bytes, at a rune boundary, saying so.
func cut(s string, width int) string {
	if len(s) <= width {
		return s
	}
	i := width
	for i > 0 && s[i]&0xc0 == 0x80 {
		i--
	}
	return s[:i] + fmt.Sprintf(" … (%d more bytes)", len(s)-i)
}
