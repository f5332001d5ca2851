package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
)

// TestRunAwkVia runs the awk engine as a run through a transport does,
// with a runner that runs each request under dash on a stand-in tracefs
// (as TestAwkScriptShells) fed real riscv64 text: the results are the
// stream engine's machine's over the same lines, read as a run reads hist
// files; a target without awk, a query the awk engine refuses and a -d
// past one request fall back.
func TestRunAwkVia(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	cat, a := awkCatalog(t, k.version, k.arch)
	plan, diags := Compile(sourceOf(awkQueries["agg"]), cat, Prepare(planner.Options{Stream: true}, 4242))
	if plan == nil {
		t.Fatal(diags)
	}
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	cmds := 0
	run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
		cmds++
		c := exec.Command(dash, "-c", cmd)
		c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	rep, err := RunAwkVia(context.Background(), run, plan, cat, root, 100*time.Millisecond, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cmds != 2 || rep.Engine != EngineAwk || len(rep.Results) != 1 {
		t.Fatalf("%d requests, engine %q, %d results", cmds, rep.Engine, len(rep.Results))
	}
	// The same plan's machine over the same lines.
	want, err := AwkReplay(plan, cat, a, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	wo, err := ReadAwkOutput(strings.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	r := &runState{plan: plan, eng: &awkEngine{wo}}
	snap, err := r.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, exp := rep.Results[0], snap.results()[0]
	if got.Totals().Hits == 0 || got.Totals() != exp.Totals() || len(got.Rows) != len(exp.Rows) {
		t.Errorf("results %+v (%d rows), want %+v (%d rows)", got.Totals(), len(got.Rows), exp.Totals(), len(exp.Rows))
	}
	var table strings.Builder
	if err := results.Write(&table, rep.Results, "table"); err != nil || !strings.Contains(table.String(), "engine: awk (the target's awk") {
		t.Errorf("the table does not name the engine (%v):\n%s", err, table.String())
	}

	noAwk := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
		if cmd == "command -v awk" {
			return "", errors.New("exit status 1")
		}
		t.Fatalf("ran %s without awk", step)
		return "", nil
	}
	var fb *AwkFallback
	if _, err := RunAwkVia(context.Background(), noAwk, plan, cat, root, time.Second, io.Discard); !errors.As(err, &fb) || !strings.Contains(fb.Why, "no awk") {
		t.Errorf("no awk: %v", err)
	}
	if _, err := RunAwkVia(context.Background(), noAwk, plan, cat, root, time.Minute, io.Discard); !errors.As(err, &fb) {
		t.Errorf("-d 1m: %v", err)
	}
	ns, _ := Compile(sourceOf("SELECT STACKTRACE, COUNT(*) FROM sched_switch"), cat, Prepare(planner.Options{Stream: true}, 4243))
	if _, err := RunAwkVia(context.Background(), noAwk, ns, cat, root, time.Second, io.Discard); !errors.As(err, &fb) || !strings.Contains(fb.Why, "STACKTRACE") {
		t.Errorf("stacks: %v", err)
	}
}

// TestRunAwkViaIntervals runs -i through a transport as TestRunAwkVia
// does, the stand-in's trace_pipe holding two ticks before the script's: each interval is
// reported as it is read from the file the script writes on the target
// (polled while it grows, a line cut short read at the next poll), the
// intervals add up to the total, which is the stream machine's over the
// same lines, and the script removes its instance at -d.
func TestRunAwkViaIntervals(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	text = withTicks(text, 500, 1000)
	cat, a := awkCatalog(t, k.version, k.arch)
	plan, diags := Compile(sourceOf(awkQueries["agg"]), cat, Prepare(planner.Options{Stream: true}, 4244))
	if plan == nil {
		t.Fatal(diags)
	}
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	steps := map[string]int{}
	run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
		steps[step]++
		c := exec.Command(dash, "-c", cmd)
		c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + dir}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	var ivs []*results.Interval
	opt := Options{Duration: time.Second, Interval: 400 * time.Millisecond, OnInterval: func(iv *results.Interval) { ivs = append(ivs, iv) }}
	rep, err := RunAwkViaIntervals(context.Background(), run, plan, cat, root, opt, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The text's two ticks, then the script's own two (of 0.4 s within
	// 1 s: the stand-in's trace_pipe gives what is written to
	// trace_marker, as the kernel's does), then the end's.
	if rep.Engine != EngineAwk || len(rep.Results) != 1 || len(ivs) != 5 || !ivs[4].Partial || steps["reading the awk engine's output"] == 0 {
		t.Fatalf("engine %q, %d results, %d intervals, requests %v", rep.Engine, len(rep.Results), len(ivs), steps)
	}
	sum := uint64(0)
	for _, iv := range ivs {
		if len(iv.Results) != 1 || iv.Results[0].Engine != EngineAwk {
			t.Fatalf("interval %d: %+v", iv.N, iv.Results)
		}
		sum += iv.Results[0].Totals().Hits
	}
	want, err := AwkReplay(plan, cat, a, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	wo, err := ReadAwkOutput(strings.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&runState{plan: plan, eng: &awkEngine{wo}}).snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, exp := rep.Results[0].Totals(), snap.results()[0].Totals()
	if got.Hits == 0 || got != exp || sum != got.Hits {
		t.Errorf("total %+v, intervals add up to %d; want %+v", got, sum, exp)
	}
	// The script ends at -d by itself, and removes its instance.
	inst := root + "/instances/" + plan.Units[0].Synth.Name
	for i := 0; i < 50; i++ {
		if ents, _ := os.ReadDir(root + "/instances"); len(ents) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ents, _ := os.ReadDir(root + "/instances"); len(ents) != 0 {
		t.Errorf("the instance is still there (%s)", inst)
	}
	if left, _ := filepath.Glob(dir + "/sqlawk_*"); len(left) != 0 {
		t.Errorf("the output file is still there: %v", left)
	}
}

// TestAwkPollLines: a poll's answer is read to its last whole line; the
// rest waits for the next.
func TestAwkPollLines(t *testing.T) {
	good := awkOutputSeed(t)
	var ar AwkReader
	cut := len(good) / 2
	outs, n, err := awkPollLines(&ar, good[:cut]+awkPollEOF+"\r\n")
	if err != nil || len(outs) != 0 || n > cut || n == 0 || good[n-1] != '\n' {
		t.Fatalf("first half: %d outputs, %d bytes, %v", len(outs), n, err)
	}
	outs, m, err := awkPollLines(&ar, good[n:]+awkPollEOF+"\n")
	if err != nil || len(outs) != 1 || n+m != len(good) || !ar.Ended() {
		t.Fatalf("the rest: %d outputs, %d bytes, %v", len(outs), m, err)
	}
	if _, _, err := awkPollLines(&ar, "x"); err == nil {
		t.Errorf("an answer without its end was taken")
	}
}

// TestWriteLostAwk: a transport lost during a run by the target's awk
// names what that run made (its sqlawk_ instance, which its script
// removes), not a run's sqlhist_<id> instances.
func TestWriteLostAwk(t *testing.T) {
	var b strings.Builder
	WriteLost(&b, errors.New("EOF"), true, false, 12345678, "ssh b", "sqlawk_x")
	if s := b.String(); !strings.Contains(s, "sqlawk_x") || strings.Contains(s, "sqlhist_12345678") || strings.Contains(s, "--cleanup") {
		t.Errorf("%s", s)
	}
	b.Reset()
	WriteLost(&b, errors.New("EOF"), true, false, 12345678, "ssh b", "")
	if s := b.String(); !strings.Contains(s, "sqlhist_12345678") {
		t.Errorf("%s", s)
	}
}

// TestRunAwkViaUntilStopped: without -d (or with one longer than a
// request may wait) the script runs in the background on the target;
// stopping the run (the context, as Ctrl-C does) writes the end marker,
// the awk prints the end's tables, which are the stream machine's over
// the same lines, and the script removes its instance at once.
func TestRunAwkViaUntilStopped(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	cat, a := awkCatalog(t, k.version, k.arch)
	plan, diags := Compile(sourceOf(awkQueries["agg"]), cat, Prepare(planner.Options{Stream: true}, 4245))
	if plan == nil {
		t.Fatal(diags)
	}
	for _, d := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			dir := t.TempDir()
			root, bin := standIn(t, dir, text)
			run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
				c := exec.Command(dash, "-c", cmd)
				c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + dir}
				out, err := c.CombinedOutput()
				return string(out), err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var log bytes.Buffer
			start := time.Now()
			rep, err := RunAwkViaIntervals(ctx, run, plan, cat, root, Options{Duration: d}, &log)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the run took %v after it was stopped at 1.5 s", took)
			}
			want, err := AwkReplay(plan, cat, a, bytes.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			wo, err := ReadAwkOutput(strings.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			snap, err := (&runState{plan: plan, eng: &awkEngine{wo}}).snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if got, exp := rep.Results[0].Totals(), snap.results()[0].Totals(); got.Hits == 0 || got != exp {
				t.Errorf("total %+v; want %+v", got, exp)
			}
			for i := 0; i < 50; i++ {
				if ents, _ := os.ReadDir(root + "/instances"); len(ents) == 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if ents, _ := os.ReadDir(root + "/instances"); len(ents) != 0 {
				t.Errorf("the instance is still there after the run was stopped")
			}
			wantLog := "until Ctrl-C"
			if d > 0 {
				wantLog = "for 1h0m0s"
			}
			if !strings.Contains(log.String(), wantLog) {
				t.Errorf("log %q, want %q", log.String(), wantLog)
			}
		})
	}
}

// TestRunAwkViaLostLeavesNoFile: a -i run through a transport that is
// lost once the script runs in the background (every request after the
// launch fails) returns the error, and the script, ending at -d by
// itself, removes its instance and, awkViaKeep later, its output file.
func TestRunAwkViaLostLeavesNoFile(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	old := awkViaKeep
	awkViaKeep = time.Second
	defer func() { awkViaKeep = old }()
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := awkCatalog(t, k.version, k.arch)
	plan, diags := Compile(sourceOf(awkQueries["agg"]), cat, Prepare(planner.Options{Stream: true}, 4245))
	if plan == nil {
		t.Fatal(diags)
	}
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	lost := errors.New("the transport to the target ended")
	run := func(_ context.Context, step, cmd string, _ time.Duration) (string, error) {
		if step != "looking for awk" && step != "starting the awk engine's script" {
			return "", lost
		}
		c := exec.Command(dash, "-c", cmd)
		c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + dir}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	opt := Options{Duration: time.Second, Interval: 400 * time.Millisecond}
	if _, err := RunAwkViaIntervals(context.Background(), run, plan, cat, root, opt, io.Discard); !errors.Is(err, lost) {
		t.Fatalf("a lost transport: %v", err)
	}
	if left, _ := filepath.Glob(dir + "/sqlawk_*"); len(left) != 1 {
		t.Fatalf("the script's output file, while it runs: %v", left)
	}
	var left []string
	for i := 0; i < 100; i++ {
		if left, _ = filepath.Glob(dir + "/sqlawk_*"); len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Errorf("the output file is still there 10 s after the run's end: %v", left)
	}
	if ents, _ := os.ReadDir(root + "/instances"); len(ents) != 0 {
		t.Errorf("the instance is still there: %v", ents)
	}
}
