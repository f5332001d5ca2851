package live

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/planner"
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
	r := &runState{plan: plan, awk: wo}
	snap, err := r.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, exp := rep.Results[0], snap.results()[0]
	if got.Totals().Hits == 0 || got.Totals() != exp.Totals() || len(got.Rows) != len(exp.Rows) {
		t.Errorf("results %+v (%d rows), want %+v (%d rows)", got.Totals(), len(got.Rows), exp.Totals(), len(exp.Rows))
	}
	var table strings.Builder
	if err := renderTables(&table, rep.Results); err != nil || !strings.Contains(table.String(), "engine: awk (the target's awk") {
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
