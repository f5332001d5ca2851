package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestHeatmapCommand: sqlhist heatmap draws saved -i JSON as SVG or
// HTML, and refuses bad usage (exit 2) and a bad file (exit 1, placed).
func TestHeatmapCommand(t *testing.T) {
	const fixture = "../../results/testdata/heatmap/intervals.json"
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout (exit 0) or stderr
	}{
		{[]string{fixture}, exitOK, `<?xml version="1.0" encoding="UTF-8"?>` + "\n<svg "},
		{[]string{"-o", "html", "--keys", "1", fixture}, exitOK, "2 more keys (9 events) are not drawn"},
		{[]string{"-o", "png", fixture}, exitUsage, `sqlhist heatmap: -o "png": use svg or html`},
		{[]string{"--keys", "0", fixture}, exitUsage, "--keys 0: draw at least one key"},
		{[]string{}, exitUsage, "give one file that sqlhist -r -i N -o json wrote"},
		{[]string{fixture, fixture}, exitUsage, "give one file"},
		{[]string{"nope.json"}, exitQuery, "sqlhist: open nope.json: no such file"},
		{[]string{"testdata/heatmap-bad.json"}, exitQuery, "testdata/heatmap-bad.json:2:"},
	} {
		e, stdout, stderr := testEnv(nil, "")
		e.ReadFile = os.ReadFile
		code := run(append([]string{"heatmap"}, c.args...), e)
		got := stdout.String()
		if code != exitOK {
			got = stderr.String()
		}
		if code != c.code || !strings.Contains(got, c.out) {
			t.Errorf("sqlhist heatmap %q: exit %d, want %d with %q in:\n%s%s", c.args, code, c.code, c.out, stdout, stderr)
		}
	}
}

// TestRunHeatmap: -r -i N --heatmap FILE rewrites FILE every interval
// with the heatmap of the intervals so far, titled with the query; it
// needs -i and a statement to draw.
func TestRunHeatmap(t *testing.T) {
	f := newLiveFake(t, 0)
	f.versions = map[string][]string{runRes + "events/synthetic/" + runSynth + "/hist": {runHist, runHist}}
	ticks := make(chan time.Time)
	e, stdout, stderr := liveEnv(f)
	e.Tick = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	saved := map[string][]string{}
	e.ReplaceFile = func(p string, b []byte) error { saved[p] = append(saved[p], string(b)); return nil }
	go func() { ticks <- time.Time{}; f.timer <- time.Time{} }()
	if code := run([]string{"-r", "-i", "1", "-d", "2", "--heatmap", "wake.html", wakeupSQL}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pages := saved["wake.html"]
	if len(pages) != 2 {
		t.Fatalf("wake.html written %d times, want 2 (each interval)", len(pages))
	}
	for _, want := range []string{"<!DOCTYPE html>", "<svg ", "SELECT end.next_comm AS comm", "comm=sh: 4 events", "lat (us) by log2 bucket"} {
		if !strings.Contains(pages[0], want) {
			t.Errorf("no %q in the first page:\n%s", want, pages[0])
		}
	}
	if !strings.Contains(stdout.String(), "=== interval 1:") {
		t.Errorf("the intervals are not printed as without --heatmap:\n%s", stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", "--heatmap", "x.svg", wakeupSQL}, "--heatmap FILE draws the intervals of a run: give it with -r and -i N"},
		{[]string{"--heatmap", "x.svg", wakeupSQL}, "--heatmap FILE draws the intervals of a run"},
		{[]string{"-r", "-i", "1", "--out", "x.svg", "--heatmap", "x.svg", wakeupSQL}, "--out and --heatmap name the same file x.svg"},
		{[]string{"-r", "-i", "1", "--heatmap", "x.svg", "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"}, "--heatmap: nothing to draw: no statement has a latency"},
	} {
		f := newLiveFake(t, 0)
		e, _, stderr := liveEnv(f)
		if code := run(c.args, e); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", c.args, code, c.want, stderr)
		}
		if len(f.Writes) > 0 {
			t.Errorf("%q: wrote to tracefs before refusing: %q", c.args, f.Writes)
		}
	}
}
