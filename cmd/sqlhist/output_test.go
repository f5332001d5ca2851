package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
)

// TestInitrd adds a bootconfig to an initrd file, adds a second query's
// to it, and leaves as it was a file that already holds the query, one
// whose bootconfig would not parse once merged, one whose bootconfig is
// not sqlhist's and one whose block is corrupt.
func TestInitrd(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "initrd.img")
	initrd := []byte("\x1f\x8b\x08 a gzip cpio, 27 bytes...")
	if err := os.WriteFile(path, initrd, 0o600); err != nil {
		t.Fatal(err)
	}
	boot := func(args ...string) (int, string, string) {
		e, stdout, stderr := testEnv(nil, "")
		e.ReadFile = os.ReadFile
		e.ReplaceFile = live.ReplaceFile
		code := run(append([]string{"--kernel", "6.1", "-o", "bootconfig", "--initrd", path}, args...), e)
		return code, stdout.String(), stderr.String()
	}
	code, out, msg := boot("-n", "wl", wakeupSQL)
	if code != exitOK || out != "" || !strings.Contains(msg, "added a bootconfig") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, msg)
	}
	data, _ := os.ReadFile(path)
	got, text, found, err := emit.SplitBootconfig(data)
	if err != nil || !found || !bytes.Equal(got, initrd) || !strings.Contains(text, "ftrace.event.synthetic.wl {") {
		t.Fatalf("after --initrd: found %v, err %v, initrd kept %v, text:\n%s", found, err, bytes.Equal(got, initrd), text)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's 0600 kept", st.Mode().Perm())
	}
	// The same bootconfig printed is what was attached.
	e, stdout, _ := testEnv(nil, "")
	if run([]string{"--kernel", "6.1", "-o", "bootconfig", "-n", "wl", wakeupSQL}, e); stdout.String() != text {
		t.Errorf("attached text differs from the printed bootconfig")
	}

	// A second query is added to the sqlhist bootconfig already there:
	// both are kept, and the whole parses as the kernel's parser does.
	code, _, msg = boot("-n", "other", wakeupSQL)
	data, _ = os.ReadFile(path)
	got, text, _, _ = emit.SplitBootconfig(data)
	if code != exitOK || !strings.Contains(msg, "to the sqlhist bootconfig it carried") || !bytes.Equal(got, initrd) ||
		!strings.Contains(text, "synthetic.other {") || !strings.Contains(text, "synthetic.wl {") {
		t.Errorf("adding: exit %d, %s\n%s", code, msg, text)
	}
	if err := emit.CheckBootconfig(text); err != nil {
		t.Errorf("the merged bootconfig: %v\n%s", err, text)
	}
	// The same query again: the file is left as it was.
	code, _, msg = boot("-n", "other", wakeupSQL)
	if again, _ := os.ReadFile(path); code != exitOK || !strings.Contains(msg, "already holds this one") || !bytes.Equal(again, data) {
		t.Errorf("the same query again: exit %d, %s; file changed %v", code, msg, !bytes.Equal(again, data))
	}
	// Another query under a name the bootconfig has: the kernel would
	// reject the whole (wl's fields defined twice).
	code, _, msg = boot("-n", "wl", strings.Replace(wakeupSQL, "end.next_comm AS comm, ", "", 1))
	if again, _ := os.ReadFile(path); code != exitQuery || !strings.Contains(msg, "Value is redefined: ftrace.event.synthetic.wl.fields") || !bytes.Equal(again, data) {
		t.Errorf("a name the bootconfig has: exit %d, %s; file changed %v", code, msg, !bytes.Equal(again, data))
	}
	// A bootconfig sqlhist did not write: refused, the file as it was.
	foreign := emit.AttachBootconfig(initrd, "kernel.console = ttyS0\n")
	os.WriteFile(path, foreign, 0o600)
	code, _, msg = boot("-n", "wl", wakeupSQL)
	if again, _ := os.ReadFile(path); code != exitQuery || !bytes.Equal(again, foreign) ||
		!strings.Contains(msg, `it carries a bootconfig that sqlhist did not write (23 bytes, first line "kernel.console = ttyS0")`) {
		t.Errorf("a foreign bootconfig: exit %d, %s; file changed %v", code, msg, !bytes.Equal(again, foreign))
	}
	os.WriteFile(path, data, 0o600)

	// A corrupt block (a flipped byte of the text): refused, file as it was.
	data[len(initrd)+3] ^= 0x20
	os.WriteFile(path, data, 0o600)
	code, _, msg = boot("-n", "wl", wakeupSQL)
	after, _ := os.ReadFile(path)
	if code != exitQuery || !strings.Contains(msg, "checksum") || !strings.Contains(msg, "left as it was") || !bytes.Equal(after, data) {
		t.Errorf("corrupt block: exit %d, %s; file changed %v", code, msg, !bytes.Equal(after, data))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	// A query boot-time tracing cannot run: nothing written.
	os.WriteFile(path, initrd, 0o600)
	code, _, msg = boot(`SELECT n FROM uprobe('/bin/app', 0x10, n=%di:s64)`)
	after, _ = os.ReadFile(path)
	if code != exitQuery || !strings.Contains(msg, "cannot create a uprobe") || !bytes.Equal(after, initrd) {
		t.Errorf("uprobe: exit %d, %s; file changed %v", code, msg, !bytes.Equal(after, initrd))
	}
}

// TestInitrdWriteFails: a failed replacement leaves the initrd untouched.
func TestInitrdWriteFails(t *testing.T) {
	e, _, stderr := testEnv(nil, "")
	e.ReadFile = func(string) ([]byte, error) { return []byte("initrd"), nil }
	e.ReplaceFile = func(string, []byte) error { return errors.New("no space left on device") }
	code := run([]string{"--kernel", "6.1", "-o", "bootconfig", "--initrd", "/boot/x", "-n", "wl", wakeupSQL}, e)
	if code != exitQuery || !strings.Contains(stderr.String(), "no space left on device; the file is left as it was") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// TestPlanReplay applies the JSON plan of a query with -e and removes it
// with --teardown -e: the writes are the script's, in the same order.
func TestPlanReplay(t *testing.T) {
	e, stdout, _ := testEnv(nil, "")
	if code := run([]string{"--kernel", "6.1", "-o", "json", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatal("-o json failed")
	}
	plan := stdout.Bytes()
	f := newFake(t, 0)
	e, _, stderr := fakeEnv(f, "")
	e.ReadFile = func(string) ([]byte, error) { return plan, nil }
	if code := run([]string{"-e", "--plan", "plan.json"}, e); code != exitOK {
		t.Fatalf("--plan -e: exit %d: %s", code, stderr)
	}
	if diff := cmp.Diff([]string{synthW, startW, endW}, f.Writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	f.Writes = nil
	if code := run([]string{"-e", "--teardown", "--plan", "plan.json"}, e); code != exitOK {
		t.Fatalf("--plan --teardown -e: exit %d: %s", code, stderr)
	}
	if diff := cmp.Diff([]string{undo(endW), undo(startW), disableW, undo(synthW)}, f.Writes); diff != "" {
		t.Errorf("teardown writes (-want +got):\n%s", diff)
	}
}

// TestPlansReplayed: several --plan files are applied in order with one
// -e, all or nothing (a refused write in the second plan undoes the
// first's writes too), removed the last first with --teardown -e, and
// printed one after the other.
func TestPlansReplayed(t *testing.T) {
	e, stdout, _ := testEnv(nil, "")
	if code := run([]string{"--kernel", "6.1", "-o", "json", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatal("-o json failed")
	}
	join := stdout.String()
	stdout.Reset()
	histSQL := "SELECT prev_pid, COUNT(*) FROM sched_switch"
	if code := run([]string{"--kernel", "6.1", "-o", "json", histSQL}, e); code != exitOK {
		t.Fatal("-o json failed")
	}
	hist := stdout.String()
	plans := map[string]string{"a.json": join, "b.json": hist}
	read := func(p string) ([]byte, error) { return []byte(plans[p]), nil }
	printed := func(args ...string) string {
		e, out, errs := testEnv(nil, "")
		e.ReadFile = read
		if code := run(args, e); code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, errs)
		}
		return out.String()
	}
	a, b := printed("--plan", "a.json"), printed("--plan", "b.json")
	if got := printed("--plan", "a.json", "--plan", "b.json"); got != a+b {
		t.Errorf("two plans printed\n%s\nwant the first's script, then the second's", got)
	}
	ta, tb := printed("--teardown", "--plan", "a.json"), printed("--teardown", "--plan", "b.json")
	if got := printed("--teardown", "--plan", "a.json", "--plan", "b.json"); got != tb+ta {
		t.Errorf("two plans' teardown printed\n%s\nwant the second's teardown, then the first's", got)
	}

	f := newFake(t, 0)
	e, _, stderr := fakeEnv(f, "")
	e.ReadFile = read
	if code := run([]string{"-e", "--plan", "a.json", "--plan", "b.json"}, e); code != exitOK || len(f.Writes) != 4 || f.Writes[1] != startW || f.Writes[2] != endW || !strings.Contains(f.Writes[3], "hist:keys=prev_pid") {
		t.Fatalf("two plans -e: exit %d, writes %q: %s", code, f.Writes, stderr)
	}
	histW := f.Writes[3]
	f.Writes = nil
	code := run([]string{"-e", "--teardown", "--plan", "a.json", "--plan", "b.json"}, e)
	if diff := cmp.Diff([]string{undo(histW), undo(endW), undo(startW), disableW, undo(synthW)}, f.Writes); code != exitOK || diff != "" {
		t.Errorf("two plans --teardown -e: exit %d, writes (-want +got):\n%s\n%s", code, diff, stderr)
	}

	// The second plan's write refused: the first's undone, the last first.
	f = newFake(t, 4)
	e, _, stderr = fakeEnv(f, "")
	e.ReadFile = read
	code = run([]string{"-e", "--plan", "a.json", "--plan", "b.json"}, e)
	want := []string{synthW, startW, endW, undo(endW), undo(startW), disableW, undo(synthW)}
	if diff := cmp.Diff(want, f.Writes); code != exitQuery || diff != "" {
		t.Errorf("refused second plan: exit %d, writes (-want +got):\n%s\n%s", code, diff, stderr)
	}
	if !strings.Contains(stderr.String(), "the kernel refused the") {
		t.Errorf("refused second plan: %s", stderr)
	}

	e, _, stderr = testEnv(nil, "")
	e.ReadFile = read
	if code := run([]string{"--plan", "a.json", "--plan", "b.json", "--teardown-out", "td.sh"}, e); code != exitUsage || !strings.Contains(stderr.String(), "give one --plan FILE") {
		t.Errorf("--teardown-out with two plans: exit %d, %s", code, stderr)
	}
}

// TestPlanReplayPrintsTheScript: a JSON plan replayed with --plan prints
// the script of its query byte for byte: its target and synthetic event
// lines, its writes, and the closing lines that tell how to read the
// answer, for a JOIN, a histogram with a snapshot and an instance, under
// another -t; its teardown is the query's teardown.
func TestPlanReplayPrintsTheScript(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"join", []string{"-n", "wl", wakeupSQL}},
		{"hist", []string{"SELECT CAST(prev_state AS LOG2) AS st, COUNT(*) AS n FROM sched_switch"}},
		{"onmax", []string{"-B", "lab", "-m", "lat", "-s", "-n", "wl", wakeupSQL}},
		{"root", []string{"-t", "/mnt/tr", "-n", "wl", wakeupSQL}},
		{"teardown", []string{"--teardown", "-n", "wl", wakeupSQL}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, stdout, stderr := testEnv(nil, "")
			args := append([]string{"--kernel", "6.1"}, c.args...)
			var planArgs []string // the plan is the query's, its teardown too
			for _, a := range args {
				if a != "--teardown" {
					planArgs = append(planArgs, a)
				}
			}
			if code := run(append(planArgs, "-o", "json"), e); code != exitOK {
				t.Fatalf("-o json: exit %d: %s", code, stderr)
			}
			plan := stdout.Bytes()
			e, want, _ := testEnv(nil, "")
			if code := run(args, e); code != exitOK {
				t.Fatalf("print: exit %d", code)
			}
			replay := []string{"--plan", "plan.json"}
			for i, a := range args {
				switch a {
				case "-t":
					replay = append(replay, "-t", args[i+1])
				case "--teardown":
					replay = append(replay, a)
				}
			}
			e, got, stderr := testEnv(nil, "")
			e.ReadFile = func(string) ([]byte, error) { return plan, nil }
			if code := run(replay, e); code != exitOK {
				t.Fatalf("--plan: exit %d: %s", code, stderr)
			}
			if got.String() != want.String() {
				t.Errorf("--plan printed\n%s\nwant the script\n%s", got, want)
			}
			if c.name != "teardown" && !strings.Contains(got.String(), "\n# to read what it measures, once applied:\n") {
				t.Errorf("no closing lines:\n%s", got)
			}
		})
	}
}

// A plan written before synthetic_events and reading still replays: its
// writes, without the comments it does not hold; a reading whose file
// leaves the tracefs is refused.
func TestPlanReplayOlderAndBadReading(t *testing.T) {
	e, stdout, _ := testEnv(nil, "")
	if code := run([]string{"--kernel", "6.1", "-o", "json", "-n", "wl", wakeupSQL}, e); code != exitOK {
		t.Fatal("-o json failed")
	}
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "reading")
	delete(doc, "synthetic_events")
	old, _ := json.Marshal(doc)
	e, got, stderr := testEnv(nil, "")
	e.ReadFile = func(string) ([]byte, error) { return old, nil }
	if code := run([]string{"--plan", "old.json"}, e); code != exitOK || strings.Contains(got.String(), "to read what") || !strings.Contains(got.String(), "echo 's:wl ") {
		t.Errorf("older plan: exit %d, %s\n%s", code, stderr, got)
	}
	bad := strings.Replace(stdout.String(), `"cat": "trace"`, `"cat": "../../etc/shadow"`, 1)
	if bad == stdout.String() {
		t.Fatal("no reading of the trace in the plan")
	}
	e, got, stderr = testEnv(nil, "")
	e.ReadFile = func(string) ([]byte, error) { return []byte(bad), nil }
	if code := run([]string{"--plan", "bad.json"}, e); code != exitQuery || got.Len() != 0 || !strings.Contains(stderr.String(), "is not a path inside tracefs") {
		t.Errorf("bad reading: exit %d, %s\n%s", code, stderr, got)
	}
}

func TestPlanRefusals(t *testing.T) {
	for name, doc := range map[string]string{
		"schema":   `{"schema":"sqlhist-plan/9","writes":[]}`,
		"escape":   `{"schema":"sqlhist-plan/1","writes":[{"step":1,"file":"../../etc/passwd","text":"x"}]}`,
		"absolute": `{"schema":"sqlhist-plan/1","writes":[{"step":1,"file":"/etc/passwd","text":"x"}]}`,
		"json":     `{"schema":`,
	} {
		f := newFake(t, 0)
		e, _, stderr := fakeEnv(f, "")
		e.ReadFile = func(string) ([]byte, error) { return []byte(doc), nil }
		if code := run([]string{"-e", "--plan", "p.json"}, e); code != exitQuery || len(f.Writes) != 0 || !strings.Contains(stderr.String(), "--plan p.json") {
			t.Errorf("%s: exit %d, writes %v, %s", name, code, f.Writes, stderr)
		}
	}
}
