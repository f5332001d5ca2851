package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live/remote"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
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

// awkViaKeep is how long the output file of a script run in the
// background (RunAwkViaIntervals) stays on the target after the script
// ended: this machine reads its end within awkViaSlack of it, and removes
// it then; when the transport was lost, the script's shell removes it.
var awkViaKeep = awkViaSlack + 30*time.Second

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
func RunAwkVia(ctx context.Context, run ShellRunner, plan *planner.Plan, cat *tracefs.Catalog, root string, d time.Duration, log io.Writer) (*results.Report, error) {
	return runAwkVia(ctx, run, plan, cat, root, d, 0, log)
}

// runAwkVia is RunAwkVia with the instance's buffer per CPU (--buffer-kb;
// 0: the script's own).
func runAwkVia(ctx context.Context, run ShellRunner, plan *planner.Plan, cat *tracefs.Catalog, root string, d time.Duration, bufferKB int, log io.Writer) (*results.Report, error) {
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
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: d, BufferKB: bufferKB}); err != nil {
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
	return AwkReport(plan, out)
}

// AwkReport is the report of a run whose results the awk engine's
// program of plan printed (out): its hist files read as a run reads
// the kernel's.
func AwkReport(plan *planner.Plan, out *AwkOutput) (*results.Report, error) {
	r := &runState{plan: plan, eng: &awkEngine{out}}
	snap, err := r.snapshot()
	if err != nil {
		return nil, fmt.Errorf("the awk engine's output: %v", err)
	}
	rep := &results.Report{Results: snap.results(), Engine: EngineAwk, Lost: int(min(out.Lost, 1<<31))}
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

// awkPollEOF ends each answer of a poll of the awk engine's output file:
// text before it on its line is a line the program had not ended yet.
const awkPollEOF = "@@sqlawk-eof"

// RunAwkViaIntervals is RunAwkVia for -i: the script (WriteAwkScript
// with opt.Interval) runs in the background on the target for
// opt.Duration, its awk printing the hist files at each interval's tick
// into a file there (mktemp), which this machine reads as it grows
// (tail -c +N: what it had not read), each output read as untrusted
// input (AwkReader) and reported as the hist files of an interval are
// (opt.OnInterval, opt.OnTotal), the end's last. The script ends by
// itself at opt.Duration (a lost transport leaves nothing but the file,
// named after the instance, and that only for awkViaKeep after the
// script's end); a signal here ends its awk at once (the end marker), and
// its instance is removed at opt.Duration.
func RunAwkViaIntervals(ctx context.Context, run ShellRunner, plan *planner.Plan, cat *tracefs.Catalog, root string, opt Options, log io.Writer) (*results.Report, error) {
	d, every := opt.Duration, opt.Interval
	arch, _ := cat.Arch()
	ap, err := NewAwkPlan(plan, cat, arch)
	if err != nil {
		return nil, &AwkFallback{"the awk engine cannot answer this: " + strings.ReplaceAll(err.Error(), "\n", " ")}
	}
	if out, err := run(ctx, "looking for awk", "command -v awk", 0); err != nil || strings.TrimSpace(out) == "" {
		return nil, &AwkFallback{"the target has no awk"}
	}
	var script bytes.Buffer
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: d, Interval: every, BufferKB: opt.BufferKB}); err != nil {
		return nil, err
	}
	// The file outlives the script by awkViaKeep, for this machine's last
	// reads, and no more: a run whose transport is lost leaves nothing.
	keep := strconv.Itoa(int((awkViaKeep + time.Second - 1) / time.Second))
	launch := "f=$(mktemp \"${TMPDIR:-/tmp}/" + ap.Instance + ".XXXXXX\") || exit 1\n" +
		"( sh -c " + emit.Quote(script.String()) + " < /dev/null > \"$f\" 2>&1; sleep " + keep + "; rm -f \"$f\" ) < /dev/null > /dev/null 2>&1 &\n" +
		"echo \"@@sqlawk $f\""
	// Its answer lost on the line, the launch is found out by its file:
	// there, it ran (the file names it); not there, it did not.
	check := "f=; for g in \"${TMPDIR:-/tmp}\"/" + emit.Quote(ap.Instance+".") + "*; do [ -e \"$g\" ] && f=$g; done; " +
		"if [ -n \"$f\" ]; then P applied; P \"@@sqlawk $f\"; else P unapplied; fi"
	out, err := run(remote.WithCheck(ctx, check), "starting the awk engine's script", launch, 0)
	if err != nil {
		return nil, err
	}
	file := ""
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(l), "@@sqlawk "); ok && strings.HasPrefix(f, "/") && !strings.ContainsAny(f, "'\"\\$`") {
			file = f
		}
	}
	if file == "" {
		return nil, fmt.Errorf("starting the awk engine's script: no file named in %q", clip(out))
	}
	how := "until Ctrl-C"
	if d > 0 {
		how = fmt.Sprintf("for %v", d)
	}
	if every > 0 {
		how += fmt.Sprintf(", every %v", every)
	}
	fmt.Fprintf(log, "sqlhist: collecting %s with the target's awk in instance %s; only the results cross\n", how, ap.Instance)
	r := &runState{plan: plan, opt: opt, eng: &awkEngine{&AwkOutput{}}}
	iv := &intervals{r: r, stop: func() {}, began: time.Now()}
	var ar AwkReader
	var final *AwkOutput
	offset := 0
	// Without -d the script runs until the marker ends it (below, at
	// Ctrl-C here); the deadline is then the marker's.
	began := time.Now()
	deadline := began.Add(d + awkViaSlack)
	if d <= 0 {
		deadline = began.Add(100 * 365 * 24 * time.Hour)
	}
	// Polls: twice an interval with -i; without, each 2 s until the
	// end is due (each poll is a few bytes), then often.
	poll := func() time.Duration {
		if every > 0 {
			return max(every/2, 250*time.Millisecond)
		}
		if ended := d > 0 && time.Since(began) >= d; ended || ctx.Err() != nil {
			return 250 * time.Millisecond
		}
		return 2 * time.Second
	}
	ended := false
	for final == nil {
		select {
		case <-ctx.Done():
			if !ended {
				// End the awk now: it prints the end's hist files, and
				// its script removes the instance.
				ended = true
				// The events off first, as the script's own end does
				// (awkStopEvents): an awk behind them would not see a
				// marker the kernel wrote over.
				run(context.Background(), "ending the awk engine's script", awkStopEvents(path.Join(root, "instances", ap.Instance))+"; echo "+emit.Quote(AwkMarker)+" >> "+emit.Quote(path.Join(root, "instances", ap.Instance, "trace_marker")), 0)
				deadline = time.Now().Add(awkViaSlack)
			}
			time.Sleep(poll())
		case <-time.After(poll()):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the awk engine's script: no end %v after it was due (its output is in %s on the target)", awkViaSlack, file)
		}
		text, err := run(context.Background(), "reading the awk engine's output", fmt.Sprintf("tail -c +%d %s; echo %s", offset+1, emit.Quote(file), awkPollEOF), 0)
		if err != nil {
			return nil, err
		}
		outs, n, err := awkPollLines(&ar, text)
		if err != nil {
			return nil, err
		}
		offset += n
		for _, o := range outs {
			r.eng = &awkEngine{o}
			snap, err := r.snapshot()
			if err != nil {
				return nil, fmt.Errorf("the awk engine's output: %v", err)
			}
			if every > 0 {
				iv.report(snap, o.Interval == 0)
			}
			if o.Interval == 0 {
				final = o
			}
		}
	}
	run(ctx, "removing the awk engine's output", "rm -f "+emit.Quote(file), 0)
	return AwkReport(plan, final)
}

// awkPollLines reads an answer of a poll (the file's bytes from where
// the last poll ended, then awkPollEOF): its whole lines go to ar, a
// line the program had not ended yet waits for the next poll. It returns
// the outputs they complete and the bytes of the file they were (each
// line and its newline: the transport's carriage returns dropped).
func awkPollLines(ar *AwkReader, text string) ([]*AwkOutput, int, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSuffix(text, "\n")
	body, ok := strings.CutSuffix(text, awkPollEOF)
	if !ok {
		return nil, 0, fmt.Errorf("reading the awk engine's output: an answer without its end (%q)", clip(text))
	}
	// body is whole lines, then what was printed of the next.
	i := strings.LastIndexByte(body, '\n')
	if i < 0 {
		return nil, 0, nil
	}
	var outs []*AwkOutput
	n := 0
	for _, line := range strings.Split(body[:i], "\n") {
		n += len(line) + 1
		o, err := ar.Line(line)
		if err != nil {
			return nil, 0, err
		}
		if o != nil {
			outs = append(outs, o)
		}
	}
	return outs, n, nil
}
