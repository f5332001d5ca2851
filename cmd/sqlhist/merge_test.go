package main

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runJSON runs a query with -r -o json on a fake tracefs whose hist file
// (under the run's instance) holds hist, and returns what it printed.
func runJSON(t *testing.T, sql, histFile, hist string) string {
	t.Helper()
	f := newLiveFake(t, 0)
	dir := runInst
	if strings.HasPrefix(histFile, "events/synthetic/") {
		dir = runRes
	}
	f.files[dir+histFile] = hist
	f.timer <- time.Time{}
	e, stdout, stderr := liveEnv(f)
	if code := run([]string{"-r", "-d", "1", "-o", "json", sql}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return stdout.String()
}

// mergeEnv is an environment whose files are files.
func mergeEnv(files map[string]string) (env, *strings.Builder, *strings.Builder) {
	var stdout, stderr strings.Builder
	return env{Stdout: &stdout, Stderr: &stderr, ReadFile: func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}}, &stdout, &stderr
}

// sqlhist merge reads what -r -o json wrote on two machines and prints
// each under its label (the file's, else its name) and the merge, whose
// counts are the sums.
func TestMerge(t *testing.T) {
	one := runJSON(t, wakeupSQL, "events/synthetic/"+runSynth+"/hist", runHist)
	// The second machine saw the same and one negative latency.
	two := runJSON(t, wakeupSQL, "events/synthetic/"+runSynth+"/hist", runHistOnly+negHist(1))
	labelled := strings.Replace(two, "{\n", "{\n  \"label\": \"root@board\",\n", 1)
	files := map[string]string{"a.json": one, "b/out.json": labelled}

	e, stdout, stderr := mergeEnv(files)
	if code := runMerge([]string{"a.json", "b/out.json"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		"=== a.json\nsynthetic/" + runSynth + "\n",
		"\n=== root@board\nsynthetic/" + runSynth + "\n",
		"\n=== merged (2 of 2 targets)\nsynthetic/sched_waking_to_sched_switch_4242\n",
		"Totals: hits 16, entries 8, dropped 0, negative 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// sh: 3 events in (8, 16] and one of 100 on each machine: the 4th of
	// 8 is in (8, 16], 9 + 3.5/6*7 = 13.1 (12.5 on each machine alone).
	merged := out[strings.Index(out, "=== merged"):]
	if !strings.Contains(merged, "sh               8          34.0  ~13    ~100   ~100       100\n") {
		t.Errorf("merged row of sh:\n%s", merged)
	}
	if !strings.Contains(stderr.String(), "sqlhist: root@board: warning: synthetic/"+runSynth+": 1 events had a negative lat") {
		t.Errorf("stderr: %s", stderr)
	}

	e, stdout, stderr = mergeEnv(files)
	if code := runMerge([]string{"-o", "json", "a.json", "b/out.json"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Targets []struct{ Label string }
		Merged  struct {
			Results []struct {
				Totals struct{ Hits, Negative uint64 }
				Rows   []map[string]any
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Targets) != 2 || doc.Targets[1].Label != "root@board" || doc.Merged.Results[0].Totals.Hits != 16 ||
		doc.Merged.Results[0].Totals.Negative != 1 || doc.Merged.Results[0].Rows[0]["count"] != 8.0 {
		t.Errorf("JSON: %s", stdout)
	}

	e, stdout, stderr = mergeEnv(files)
	if code := runMerge([]string{"-o", "csv", "a.json", "b/out.json"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout.String(), "target,comm,count,lat_avg,") || !strings.Contains(stdout.String(), "\nroot@board,sh,4,") ||
		!strings.Contains(stdout.String(), "\nmerged,sh,8,34.0,13,100,100,100\n") {
		t.Errorf("CSV:\n%s", stdout)
	}
}

// A file that cannot be read is named with the place of what is wrong in
// it; the others are still merged, and the exit status is 1. Files of
// different queries are printed, not merged.
func TestMergeBadFiles(t *testing.T) {
	one := runJSON(t, wakeupSQL, "events/synthetic/"+runSynth+"/hist", runHist)
	other := runJSON(t, `SELECT common_pid, COUNT(*) FROM kmalloc GROUP BY common_pid`, "events/kmem/kmalloc/hist", `# event histogram
#
# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]
#

{ common_pid:        100 } hitcount:          3

Totals:
    Hits: 3
    Entries: 1
    Dropped: 0
`)
	files := map[string]string{"a.json": one, "b.json": one, "cut.json": one[:len(one)/2], "bad.json": "{\"results\": [\n  }\n",
		"other.json": other, "text.txt": "synthetic/x\n| comm |\n"}
	e, stdout, stderr := mergeEnv(files)
	if code := runMerge([]string{"a.json", "cut.json", "bad.json", "none.json", "text.txt", "b.json"}, e); code != exitQuery {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{
		"cut.json:",
		": unexpected end of the file: the output was cut short\n",
		// Placed as the compiler's diagnostics are: the line, a caret.
		"\nbad.json:2:3: invalid character '}' looking for beginning of value\n  2 |   }\n    |   ^\n",
		"sqlhist: open none.json: file does not exist\n",
		"\ntext.txt:1:1: invalid character 's' looking for beginning of value: not JSON (sqlhist merge reads what sqlhist -r -o json printed)\n  1 | synthetic/x\n    | ^\n",
		"sqlhist: 4 of the 6 files could not be read: the merge is of the other 2\n",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout.String(), "=== merged (2 of 2 targets)") {
		t.Errorf("the readable files were not merged:\n%s", stdout)
	}

	e, stdout, stderr = mergeEnv(files)
	if code := runMerge([]string{"a.json", "other.json"}, e); code != exitQuery {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "sqlhist: not merged: a.json and other.json ran different queries: statement 1 reads synthetic/"+runSynth+" against kmem/kmalloc\n") ||
		!strings.Contains(stdout.String(), "=== other.json\nkmem/kmalloc\n") || strings.Contains(stdout.String(), "=== merged") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	for _, args := range [][]string{{}, {"-o", "pprof", "a.json"}, {"--bogus", "a.json"}} {
		e, _, stderr = mergeEnv(files)
		if code := runMerge(args, e); code != exitUsage || !strings.Contains(stderr.String(), "sqlhist merge --help") {
			t.Errorf("%q: exit %d, want 2: %s", args, code, stderr)
		}
	}
}

// What -r -i -o json printed (the intervals' lines, then the total's)
// merges by its total.
func TestMergeIntervals(t *testing.T) {
	runIntervals := func(reads, closes int) string {
		f := newLiveFake(t, 0)
		f.versions = map[string][]string{runInst + "events/raw_syscalls/sys_enter/hist": {
			syscallHist(reads/2, closes/2), syscallHist(reads, closes)}}
		ticks := make(chan time.Time)
		e, stdout, stderr := liveEnv(f)
		e.Tick = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
		go func() {
			ticks <- time.Time{}
			f.timer <- time.Time{}
		}()
		if code := run([]string{"-r", "-i", "2", "-d", "3", "-o", "json", "SELECT CAST(id AS SYSCALL) AS call FROM sys_enter"}, e); code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return stdout.String()
	}
	one, two := runIntervals(40, 4), runIntervals(7, 6)
	if n := strings.Count(one, "\n"); n != 3 || !strings.Contains(one, `"total":true`) {
		t.Fatalf("-i's JSON has %d lines:\n%s", n, one)
	}
	e, stdout, stderr := mergeEnv(map[string]string{"one": one, "two": two})
	if code := runMerge([]string{"-o", "csv", "one", "two"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "target,call,count\none,sys_read,40\none,sys_close,4\ntwo,sys_read,7\ntwo,sys_close,6\nmerged,sys_read,47\nmerged,sys_close,10\n"
	if d := cmp.Diff(want, stdout.String()); d != "" {
		t.Errorf("merged (-want +got):\n%s", d)
	}
}

// A fleet's saved document merges as its targets, with other files; a
// target that failed there is reported and makes the exit status 1.
func TestMergeFleetFile(t *testing.T) {
	one := runJSON(t, wakeupSQL, "events/synthetic/"+runSynth+"/hist", runHist)
	two := strings.Replace(one, "{\n", "{\n  \"label\": \"ssh b\",\n", 1)
	e, fleet, stderr := mergeEnv(map[string]string{"a.json": one, "b.json": two})
	if code := runMerge([]string{"-o", "json", "a.json", "b.json"}, e); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	withFailure := strings.Replace(fleet.String(), "\"targets\": [\n", "\"targets\": [\n    {\"label\": \"ssh c\", \"error\": \"the transport closed\"},\n", 1)
	e, stdout, stderr := mergeEnv(map[string]string{"fleet.json": withFailure, "a.json": one})
	if code := runMerge([]string{"-o", "csv", "fleet.json", "a.json"}, e); code != exitQuery {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "\nmerged,sh,12,34.0,") || !strings.Contains(stdout.String(), "\nssh b,sh,4,") {
		t.Errorf("CSV:\n%s", stdout)
	}
	for _, want := range []string{"sqlhist: ssh c: the transport closed\n", "sqlhist: warning: fleet.json and a.json both have the label \"a.json\": the second is shown as \"a.json (a.json)\"\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
