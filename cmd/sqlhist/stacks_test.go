package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/sqlhist/sqlhist/live"
)

// stackSQL is the blocking-stack count that works on every kernel with
// hist triggers (6.1 here: the key is stacktrace).
const stackSQL = "SELECT common_cpu, STACKTRACE FROM sched_switch WHERE prev_state == 1"

const stackHistFile = runInst + "events/sched/sched_switch/hist"

// stackSample is what 6.1 printed for stackSQL (tracefs/testdata): nine
// stacks, 56 hits.
func stackSample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../tracefs/testdata/hist-6.1-stacktrace.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// foldedSum checks folded lines ("frames VALUE") and adds up their values.
func foldedSum(t *testing.T, text string) (lines int, sum uint64) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseUint(l[i+1:], 10, 64)
		if i < 0 || err != nil || !strings.HasSuffix(l[:i], ";schedule;__schedule") {
			t.Errorf("folded line %q", l)
			continue
		}
		lines++
		sum += v
	}
	return lines, sum
}

// TestRunFolded: -r -o folded prints a line per stack, adding up to the
// kernel's hits, which stderr tells as with CSV.
func TestRunFolded(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[stackHistFile] = stackSample(t)
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-o", "folded", stackSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	n, sum := foldedSum(t, stdout.String())
	if n != 9 || sum != 56 || !strings.Contains(stderr.String(), "sched/sched_switch: hits 56, entries 9, dropped 0") {
		t.Errorf("%d lines adding up to %d; stdout:\n%s\nstderr:\n%s", n, sum, stdout, stderr)
	}
	if !strings.HasPrefix(stdout.String(), "common_cpu=") {
		t.Errorf("the CPU is not the first frame:\n%s", stdout)
	}
}

// TestRunProfile: -r -o pprof --out FILE writes a gzipped profile that
// the pprof package parses, counting the kernel's hits.
func TestRunProfile(t *testing.T) {
	f := newLiveFake(t, 0)
	f.files[stackHistFile] = stackSample(t)
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	e.ReplaceFile = live.ReplaceFile
	e.IsTerminal = func(io.Writer) bool { return true } // --out: stdout is not used
	out := filepath.Join(t.TempDir(), "blocked.pb.gz")
	if code := run([]string{"-r", "-d", "1", "-o", "pprof", "--out", out, stackSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
	}
	if len(p.Sample) != 9 || sum != 56 || p.Sample[0].Location[0].Line[0].Function.Name != "__schedule" {
		t.Errorf("%d samples counting %d", len(p.Sample), sum)
	}
}

// TestRunStackUsage: the stack formats are refused, before any write,
// where they cannot work: a binary profile to a terminal, a profile per
// interval without files, results without a stack, --events, and
// without --run.
func TestRunStackUsage(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		terminal bool
		msg      string
	}{
		{[]string{"-r", "-o", "pprof", stackSQL}, true, "redirect stdout"},
		{[]string{"-r", "-i", "1", "-o", "pprof", stackSQL}, false, "give --out FILE"},
		{[]string{"-r", "-o", "folded", "SELECT CAST(id AS SYSCALL) FROM sys_enter"}, false, "-o folded draws stacks: key the results by one"},
		{[]string{"-r", "--events", "-o", "folded", stackSQL}, false, "use one of them"},
		{[]string{"-o", "pprof", stackSQL}, false, "goes with --run"},
		{[]string{"--out", "x", stackSQL}, false, "--out goes with --run"},
	} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		e.IsTerminal = func(io.Writer) bool { return tt.terminal }
		if code := run(tt.args, e); code != exitUsage || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%q: exit %d, stderr %s", tt.args, code, stderr)
		}
		if len(f.Writes) != 0 {
			t.Errorf("%q wrote %q", tt.args, f.Writes)
		}
	}
}

// TestRunStackIntervals: -i with --out writes a profile per interval
// (FILE with .N before its extension) and the total to FILE; each
// interval counts its own events, and they add up to the total.
func TestRunStackIntervals(t *testing.T) {
	first := stackSample(t)
	// The second reading: the first stack (1 hit) counts 5 more.
	second := strings.Replace(strings.Replace(first, "} hitcount:          1\n", "} hitcount:          6\n", 1), "Hits: 56", "Hits: 61", 1)
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{stackHistFile: {first, second}}
	ticks := make(chan time.Time)
	e, _, stderr := liveEnv(f)
	e.ReplaceFile = live.ReplaceFile
	e.Tick = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	go func() { ticks <- time.Time{}; f.timer <- time.Time{} }()
	dir := t.TempDir()
	out := filepath.Join(dir, "blocked.pb.gz")
	if code := run([]string{"-r", "-i", "1", "-d", "3", "-o", "pprof", "--out", out, stackSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	count := func(name string) (int, int64) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sum int64
		for _, s := range p.Sample {
			sum += s.Value[0]
		}
		return len(p.Sample), sum
	}
	n1, c1 := count("blocked.1.pb.gz")
	n2, c2 := count("blocked.2.pb.gz")
	nt, ct := count("blocked.pb.gz")
	if n1 != 9 || c1 != 56 || n2 != 1 || c2 != 5 || nt != 9 || ct != 61 {
		t.Errorf("interval 1: %d stacks, %d events; interval 2: %d, %d; total %d, %d", n1, c1, n2, c2, nt, ct)
	}
}
