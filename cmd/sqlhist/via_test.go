package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/tracefs"
)

// viaTracefs writes the embedded 6.1 catalog to a directory: a tracefs a
// shell on this machine can read, standing in for a target's.
func viaTracefs(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dash"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dash is not installed: make unit installs it")
		}
		t.Skip("dash is not installed")
	}
	src, err := tracefs.EmbeddedOf("6.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "trace fs")
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, p), 0o755)
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// viaEnvFor is this machine's environment with stdout and stderr kept and
// the cache in a temporary directory.
func viaEnvFor(t *testing.T) (env, *bytes.Buffer, *bytes.Buffer) {
	e := osEnv()
	var out, errb bytes.Buffer
	e.Stdout, e.Stderr = &out, &errb
	e.CacheDir = t.TempDir()
	e.Getenv = nil
	return e, &out, &errb
}

var catalogLine = regexp.MustCompile(`"catalog": "[^"]*"`)

// TestViaPrintsWhatTheTargetsFormatsSay: through a shell, the printed
// script, the plan, --describe and --list-events are what --formats on the
// same directory prints; the catalog read through the transport is kept,
// and the next compile reads no file or listing but the checksum.
func TestViaPrintsWhatTheTargetsFormatsSay(t *testing.T) {
	dir := viaTracefs(t)
	e, _, _ := viaEnvFor(t)
	for _, args := range [][]string{{wakeupSQL}, {"-n", "wl", "-o", "json", wakeupSQL}, {"--teardown", wakeupSQL},
		{"--describe", "sched_switch"}, {"--list-events", "sched*"}, {"-o", "bootconfig", wakeupSQL}} {
		le, lout, lerr := viaEnvFor(t)
		code := run(append([]string{"--formats", dir, "-t", dir}, args...), le)
		*lout = *bytes.NewBufferString(catalogLine.ReplaceAllString(lout.String(), `"catalog": "tracefs `+dir+`"`))
		*lout = *bytes.NewBufferString(strings.Replace(lout.String(), "(event formats: --formats "+dir+")", "(event formats: tracefs "+dir+")", 1))
		for _, sh := range []string{"dash", "busybox sh"} {
			ve, vout, verr := viaEnvFor(t)
			ve.CacheDir = e.CacheDir
			vcode := run(append([]string{"--via", sh, "-t", dir}, args...), ve)
			// A plan says where its formats came from.
			got := catalogLine.ReplaceAllString(vout.String(), `"catalog": "tracefs `+dir+`"`)
			got = strings.Replace(got, "(event formats: tracefs "+dir+" through --via "+sh+")", "(event formats: tracefs "+dir+")", 1)
			if vcode != code || got != lout.String() || code != 0 || got != vout.String() && !strings.Contains(vout.String(), "through --via "+sh) {
				t.Errorf("%q via %s: exit %d:\n%s%s\nwith --formats: exit %d:\n%s%s", args, sh, vcode, vout, verr, code, lout, lerr)
			}
		}
	}
	// The second compile of a query reads the checksum and nothing else.
	trace := filepath.Join(t.TempDir(), "trace")
	ve, _, verr := viaEnvFor(t)
	ve.CacheDir = e.CacheDir
	if code := run([]string{"--via", "dash", "--via-trace", trace, "-t", dir, wakeupSQL}, ve); code != 0 {
		t.Fatalf("exit %d: %s", code, verr)
	}
	b, _ := os.ReadFile(trace)
	var sent []string
	for _, l := range strings.Split(string(b), "\n") {
		if _, step, ok := strings.Cut(l, " > "); ok {
			sent = append(sent, step)
		}
	}
	reads := 0
	for _, step := range sent {
		if strings.Contains(step, " reading ") || strings.Contains(step, " listing ") {
			reads++
		}
	}
	if reads > 0 || len(sent) > 6 || !strings.Contains(sent[0], "greeting") || !strings.Contains(sent[len(sent)-1], "checksumming available_events") {
		t.Errorf("a compile with the catalog kept sent %d requests:\n%s", len(sent), strings.Join(sent, "\n"))
	}
}

// TestViaFailures: a transport that fails, a target that is not a shell,
// and usage errors of --via; a fleet where one target fails still prints
// the others', and its exit status says so.
func TestViaFailures(t *testing.T) {
	dir := viaTracefs(t)
	e, out, errb := viaEnvFor(t)
	if code := run([]string{"--via", "echo 'ssh: connect to host board port 22: Connection refused' >&2; exit 255", wakeupSQL}, e); code != exitQuery ||
		!strings.Contains(errb.String(), "Connection refused") || out.Len() != 0 {
		t.Errorf("a failing transport: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	e, out, errb = viaEnvFor(t)
	if code := run([]string{"--via", "dash", "--via", "false", "--via", "busybox sh", "-t", dir, wakeupSQL}, e); code != exitQuery ||
		strings.Count(out.String(), "# target: ") != 2 || !strings.Contains(errb.String(), "[false] sqlhist: --via false:") {
		t.Errorf("a fleet with a failing target: exit %d:\n%s%s", code, out, errb)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--via", "dash", "--via", "dash", wakeupSQL}, "the same target twice"},
		{[]string{"--via", "dash", "--via", "mksh", "-r", "-i", "1", wakeupSQL}, "-i, --live and --events take one --via"},
		{[]string{"--via", "dash", "--via", "mksh", "-r", "--live", wakeupSQL}, "-i, --live and --events take one --via"},
		{[]string{"--via", "dash", "--via", "mksh", "-r", "-o", "folded", wakeupSQL}, "-o takes table, json or csv"},
		{[]string{"--via", " ", wakeupSQL}, "empty command"},
		{[]string{"--via", "dash", "--via-jobs", "0", wakeupSQL}, "--via-jobs must be at least 1"},
		{[]string{"--via", "dash", "--via-timeout", "0", wakeupSQL}, "--via-timeout must be at least 1s"},
	} {
		e, _, errb := viaEnvFor(t)
		if code := run(c.args, e); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, errb, c.want)
		}
	}
	// --via-timeout bounds each request: a shell that reads the greeting
	// and never answers (sleep) fails after it, and says which wait ran
	// out and how long it was.
	e, out, errb = viaEnvFor(t)
	start := time.Now()
	code := run([]string{"--via", "sh -c 'cat > /dev/null'", "--via-timeout", "1s", wakeupSQL}, e)
	if took := time.Since(start); code != exitQuery || took > 20*time.Second || out.Len() != 0 ||
		!strings.Contains(errb.String(), "the target did not answer within 1s") {
		t.Errorf("a target that never answers, --via-timeout 1s: exit %d after %v, stdout %q, stderr %q", code, took.Round(time.Millisecond), out, errb)
	}
	e, out, _ = viaEnvFor(t)
	file := filepath.Join(t.TempDir(), "targets")
	os.WriteFile(file, []byte("# the boards\n\ndash\n  busybox sh  \n"), 0o644)
	if code := run([]string{"--via-file", file, "-t", dir, wakeupSQL}, e); code != 0 || strings.Count(out.String(), "# target: ") != 2 ||
		!strings.Contains(out.String(), "# target: busybox sh\n") {
		t.Errorf("--via-file: exit %d:\n%s", code, out)
	}
}

// TestViaExecute: -e through each shell writes the script's lines to the
// target's files, byte for byte, and --teardown -e the removals; nothing
// else is written.
func TestViaExecute(t *testing.T) {
	for _, sh := range []string{"dash", "busybox sh", "mksh", "bash --posix"} {
		t.Run(strings.Fields(sh)[0], func(t *testing.T) {
			if _, err := exec.LookPath(strings.Fields(sh)[0]); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed: make unit installs it", sh)
				}
				t.Skipf("%s is not installed", sh)
			}
			dir := viaTracefs(t)
			os.WriteFile(filepath.Join(dir, "dynamic_events"), nil, 0o644)
			os.WriteFile(filepath.Join(dir, "error_log"), nil, 0o644)
			e, out, errb := viaEnvFor(t)
			if code := run([]string{"--via", sh, "-t", dir, "-e", "-n", "wl", wakeupSQL}, e); code != 0 {
				t.Fatalf("-e: exit %d:\n%s%s", code, out, errb)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "dynamic_events"))
			trig, _ := os.ReadFile(filepath.Join(dir, "events/sched/sched_switch/trigger"))
			if string(got) != "s:wl char comm[16]; u64 lat\n" ||
				string(trig) != "hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts_us:onmatch(sched.sched_waking).trace(wl,next_comm,$wl_lat)\n" {
				t.Errorf("-e wrote dynamic_events %q, the end trigger %q", got, trig)
			}
			e, out, errb = viaEnvFor(t)
			if code := run([]string{"--via", sh, "-t", dir, "--teardown", "-e", "-n", "wl", wakeupSQL}, e); code != 0 {
				t.Fatalf("--teardown -e: exit %d:\n%s%s", code, out, errb)
			}
			got, _ = os.ReadFile(filepath.Join(dir, "dynamic_events"))
			if string(got) != "s:wl char comm[16]; u64 lat\n-:wl\n" {
				t.Errorf("--teardown -e: dynamic_events holds %q", got)
			}
		})
	}
}
