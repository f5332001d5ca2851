package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDigestOfARealRun runs a small suite with go test -json (in
// testdata/suite, its own module) and reads it through testlog: the
// relayed log is what go test -v prints, and the digest names the two
// failed leaves with their messages, not their parents, not the test
// that passed, and cuts long lines.
func TestDigestOfARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	dir, _ := filepath.Abs("testdata/suite")
	run := func(args ...string) []byte {
		cmd := exec.Command("go", append([]string{"test", "-count=1"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		out, err := cmd.Output()
		if _, ok := err.(*exec.ExitError); !ok && err != nil {
			t.Fatal(err)
		}
		return out
	}
	js := run("-json", ".")
	var relayed bytes.Buffer
	w := bufio.NewWriter(&relayed)
	d := newDigest()
	if err := relay(bytes.NewReader(js), w, d); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	log := relayed.String()
	for _, want := range []string{"=== RUN   TestKernels/7.2-arm64/queries", "--- FAIL: TestKernels/7.2-arm64/queries", "passing output is not repeated", "FAIL\texample.com/suite"} {
		if !strings.Contains(log, want) {
			t.Errorf("the relayed log lacks %q:\n%s", want, log)
		}
	}
	got := d.render(3, 120)
	for _, want := range []string{
		"(2 test(s))",
		"--- TestKernels/7.2-arm64/queries (example.com/suite)\n",
		"case_x on 7.2-arm64: did not fire: synthetic lines map[]",
		"7.2-arm64 queries: a line of the log",
		"--- TestAlone (example.com/suite)\n",
		"line 4", "stopped", "… 4 lines left out",
		" more bytes)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the digest lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"--- TestKernels (", "--- TestKernels/7.2-arm64 (", "6.1 audit", "passing output", "line 1", "=== RUN", "--- FAIL"} {
		if strings.Contains(got, not) {
			t.Errorf("the digest has %q:\n%s", not, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if len(l) > 120+len(" … (9999 more bytes)") {
			t.Errorf("a line of %d bytes was not cut: %q", len(l), l)
		}
	}
}

// TestQuietRelay: -quiet prints what go test without -v prints, a
// package's line and a failed test's output, not a passed test's.
func TestQuietRelay(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: fine\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: wrong\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
{"Action":"output","Package":"q","Output":"PASS\n"}
{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}
{"Action":"pass","Package":"q"}
`
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	d := newDigest()
	d.quiet = true
	if err := relay(strings.NewReader(in), w, d); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	want := "=== RUN   TestB\n    b_test.go:9: wrong\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tp\t0.01s\nok  \tq\t0.01s\n"
	if out.String() != want {
		t.Errorf("quiet relay:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := d.render(40, 400); !strings.Contains(got, "--- TestB (p)\n    b_test.go:9: wrong\n") {
		t.Errorf("digest:\n%s", got)
	}
}

// TestDigestBuildFailure: a package that does not build says why in the
// digest, from go test's build-output events, in both relays.
func TestDigestBuildFailure(t *testing.T) {
	in := `{"ImportPath":"x/p [x/p.test]","Action":"build-output","Output":"# x/p [x/p.test]\n"}
{"ImportPath":"x/p [x/p.test]","Action":"build-output","Output":"p/a_test.go:3:2: undefined: nope\n"}
{"ImportPath":"x/p [x/p.test]","Action":"build-fail"}
{"Action":"start","Package":"x/p"}
{"Action":"output","Package":"x/p","Output":"FAIL\tx/p [build failed]\n"}
{"Action":"fail","Package":"x/p","FailedBuild":"x/p [x/p.test]"}
`
	for _, quiet := range []bool{false, true} {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		d := newDigest()
		d.quiet = quiet
		if err := relay(strings.NewReader(in), w, d); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !strings.Contains(out.String(), "undefined: nope") || !strings.Contains(out.String(), "[build failed]") {
			t.Errorf("quiet %v relayed:\n%s", quiet, out.String())
		}
		if got := d.render(40, 400); !strings.Contains(got, "--- package x/p failed outside its tests:\n# x/p [x/p.test]\np/a_test.go:3:2: undefined: nope\n") {
			t.Errorf("quiet %v digest:\n%s", quiet, got)
		}
	}
}

// TestDigestEmptyWhenAllPass: nothing failed, nothing is added.
func TestDigestEmptyWhenAllPass(t *testing.T) {
	d := newDigest()
	for _, ev := range []event{
		{Action: "run", Package: "p", Test: "TestA"},
		{Action: "output", Package: "p", Test: "TestA", Output: "    a_test.go:3: fine\n"},
		{Action: "pass", Package: "p", Test: "TestA"},
		{Action: "pass", Package: "p"},
	} {
		d.add(ev)
	}
	if got := d.render(40, 400); got != "" {
		t.Errorf("want no digest, got:\n%s", got)
	}
}

// TestDigestPackageFailedOutsideTests: a build failure or a timeout's
// panic fails the package with no failed test; its output is repeated.
func TestDigestPackageFailedOutsideTests(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestLong"}
{"Action":"output","Package":"p","Test":"TestLong","Output":"=== RUN   TestLong\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 85m0s\n"}
{"Action":"output","Package":"p","Output":"\trunning tests:\n\t\tTestLong (85m0s)\n"}
{"Action":"fail","Package":"p","Elapsed":5100}
not json: a line go test printed itself
`
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	d := newDigest()
	if err := relay(strings.NewReader(in), w, d); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if !strings.Contains(out.String(), "not json: a line go test printed itself\n") || !strings.Contains(out.String(), "panic: test timed out") {
		t.Errorf("relayed:\n%s", out.String())
	}
	got := d.render(40, 400)
	if !strings.Contains(got, "--- package p failed outside its tests:") || !strings.Contains(got, "panic: test timed out after 85m0s") || !strings.Contains(got, "TestLong (85m0s)") {
		t.Errorf("digest:\n%s", got)
	}
}
