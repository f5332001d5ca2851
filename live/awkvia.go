package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// AwkViaMax is the longest -d the awk engine runs through a transport:
// its script is one request, answered only when the run ends.
const AwkViaMax = 20 * time.Second

// awkViaSlack is how long past -d the script's answer may take: the
// setup, the awk reading what the buffers hold when the end marker comes
// (a slow board's awk falls behind a busy event: riscv64 under qemu took
// over 30 s for -d 3 of every system call), and the teardown.
const awkViaSlack = 90 * time.Second

// ShellRunner runs a command on a target and returns what it printed, an
// answer within timeout (remote.Session.RunFor).
type ShellRunner func(ctx context.Context, step, cmd string, timeout time.Duration) (string, error)

// AwkFallback says why a run through a transport streams the events
// instead of aggregating them on the target.
type AwkFallback struct{ Why string }

func (f *AwkFallback) Error() string { return f.Why }

// RunAwkVia runs a plan made for the stream engine on a target reached
// through a shell, aggregating there: the awk engine's script (see
// WriteAwkScript) runs as one request of run for d, and only what its awk
// prints crosses the line, read as untrusted input (ReadAwkOutput) and
// turned into results as hist files are. The script sets up, collects
// and removes its instance by itself: a transport lost during the run
// leaves nothing behind. An *AwkFallback error says the target or the
// query cannot take it (no awk, or a query the awk engine refuses): the
// caller streams the events instead.
func RunAwkVia(ctx context.Context, run ShellRunner, plan *planner.Plan, cat *tracefs.Catalog, root string, d time.Duration, log io.Writer) (*Report, error) {
	if d <= 0 || d > AwkViaMax {
		return nil, &AwkFallback{fmt.Sprintf("-d %v: the target's awk answers runs of at most %v", d, AwkViaMax)}
	}
	arch, _ := cat.Arch()
	ap, err := NewAwkPlan(plan, cat, arch)
	if err != nil {
		return nil, &AwkFallback{"the awk engine cannot answer this: " + strings.ReplaceAll(err.Error(), "\n", " ")}
	}
	if out, err := run(ctx, "looking for awk", "command -v awk", 0); err != nil || strings.TrimSpace(out) == "" {
		return nil, &AwkFallback{"the target has no awk"}
	}
	var script bytes.Buffer
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: d}); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "sqlhist: collecting for %v with the target's awk in instance %s; only the results cross\n", d, ap.Instance)
	text, err := run(ctx, "running the awk engine's script", script.String(), d+awkViaSlack)
	if err != nil {
		return nil, err
	}
	out, err := ReadAwkOutput(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	r := &runState{plan: plan, awk: out}
	snap, err := r.snapshot()
	if err != nil {
		return nil, fmt.Errorf("the awk engine's output: %v", err)
	}
	rep := &Report{Results: snap.results(), Engine: EngineAwk, Lost: int(min(out.Lost, 1<<31))}
	for _, res := range rep.Results {
		res.Engine, res.Lost = EngineAwk, rep.Lost
	}
	return rep, nil
}

// awkHist is the hist file of the awk engine's output for a hist file
// of the plan (instances/…/events/SYSTEM/EVENT/hist).
func (o *AwkOutput) hist(file string) ([]byte, error) {
	for _, p := range o.Paths {
		if file == p || strings.HasSuffix(file, "/"+p) {
			return []byte(o.Files[p]), nil
		}
	}
	return nil, fmt.Errorf("the awk engine printed no %s", file)
}
