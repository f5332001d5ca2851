package live

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/internal/execfile"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The awk engine's queries: the stream job's (e2e/stream_test.go) and a
// few more shapes.
var awkQueries = map[string]string{
	"join":   `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`,
	"hist":   `SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC`,
	"agg":    `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat ORDER BY n DESC`,
	"chain3": `SELECT sw.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS w JOIN sched_wakeup AS wk ON w.pid = wk.pid JOIN sched_switch AS sw ON sw.next_pid = wk.pid`,
	"where":  `SELECT end.next_pid AS pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.prev_prio >= 100`,
	"prio":   `SELECT next_prio, CAST(prev_pid AS LOG2) AS p, COUNT(*) FROM sched_switch GROUP BY next_prio, p`,
	// Unsigned comparisons the program writes out (> and <=, against
	// a constant below 2^63), on a view's latency.
	"ucmp": `CREATE VIEW wl AS SELECT start.pid, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid; SELECT pid, lat.log2, COUNT(*) FROM wl WHERE lat > 20 AND lat <= 3000`,
}

// awkKernels are the captured trace_pipe texts (testdata/awk, from the
// suite's riscv64 6.12 and Debian 5.10 guests) and the catalogs they go
// with.
var awkKernels = []struct{ name, version, arch, text string }{
	{"6.12-riscv64", "6.12", "riscv64", "testdata/awk/trace-6.12-riscv64.txt"},
	{"5.10", "5.10", "x86_64", "testdata/awk/trace-5.10.txt"},
}

func awkCatalog(t testing.TB, version, arch string) (*tracefs.Catalog, *tracefs.Arch) {
	t.Helper()
	a, err := tracefs.LookupArch(arch)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tracefs.EmbeddedOf(version, a)
	if err != nil {
		t.Fatal(err)
	}
	cat := tracefs.Open(fsys)
	cat.SetArch(a, "test")
	return cat, a
}

// awkPlanOf compiles a query for the awk engine.
func awkPlanOf(t *testing.T, q, version, arch string) (*AwkPlan, *planner.Plan, *tracefs.Catalog, *tracefs.Arch) {
	t.Helper()
	cat, a := awkCatalog(t, version, arch)
	plan, diags := Compile(&source.Source{Name: "q.sql", Text: q}, cat, Prepare(planner.Options{Stream: true}, 1))
	if plan == nil {
		t.Fatalf("%s", diags.Render(&source.Source{Name: "q.sql", Text: q}))
	}
	ap, err := NewAwkPlan(plan, cat, a)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return ap, plan, cat, a
}

// awkReference is what the awk program must print for text (AwkReplay).
func awkReference(t *testing.T, _ *AwkPlan, plan *planner.Plan, cat *tracefs.Catalog, a *tracefs.Arch, text string) string {
	t.Helper()
	want, err := AwkReplay(plan, cat, a, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// awks are the awk implementations a board may have: busybox's (as
// "busybox awk"), mawk (Debian's and Raspberry Pi OS's default), gawk
// and original-awk (the one true awk, BSD's and macOS's). A missing one fails
// under CI=true (make unit installs them: tools/test-shells) and is
// skipped, by name, elsewhere.
func awks(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range []struct {
		name string
		argv []string
	}{{"busybox", []string{"busybox", "awk"}}, {"mawk", []string{"mawk"}}, {"gawk", []string{"gawk"}}, {"original-awk", []string{"original-awk"}}} {
		if p, err := exec.LookPath(c.argv[0]); err == nil {
			out[c.name] = append([]string{p}, c.argv[1:]...)
			continue
		}
		if os.Getenv("CI") == "true" {
			t.Errorf("%s is not installed (make test-shells installs it)", c.name)
		} else {
			t.Logf("SKIPPING %s: not installed (make test-shells installs it)", c.name)
		}
	}
	return out
}

// awkNames are the awks of awks, in the order the tests run them.
var awkNames = []string{"busybox", "mawk", "gawk", "original-awk"}

// TestAwkProgram runs the awk engine's program of each query over the
// trace_pipe text of real kernels under each awk, and checks that it
// prints, byte for byte, the hist files the stream machine computes from
// the same lines.
func TestAwkProgram(t *testing.T) {
	impls := awks(t)
	for _, k := range awkKernels {
		data, err := os.ReadFile(k.text)
		if err != nil {
			t.Fatal(err)
		}
		// A line of events the kernel lost, as trace_pipe prints it, and
		// two ticks of -i (AwkTick): the program prints the hist files
		// as they are at each.
		data = append([]byte("CPU:1 [LOST 12 EVENTS]\n"), withTicks(data, 500, 1000)...)
		texts := []struct {
			name string
			data []byte
		}{{k.name, data}}
		if k.version == "5.10" {
			texts = append(texts, struct {
				name string
				data []byte
			}{k.name + "-odd", oddLines(data)})
		}
		for _, text := range texts {
			k, data := k, text.data
			k.name = text.name
			for _, name := range []string{"agg", "chain3", "hist", "join", "prio", "ucmp", "where"} {
				t.Run(k.name+"/"+name, func(t *testing.T) {
					ap, plan, cat, a := awkPlanOf(t, awkQueries[name], k.version, k.arch)
					want := awkReference(t, ap, plan, cat, a, string(data))
					if !strings.Contains(want, "hitcount:") {
						t.Fatalf("the reference counted nothing:\n%s", want)
					}
					if outs, err := ReadAwkOutputs(strings.NewReader(want)); err != nil || len(outs) != 3 || outs[0].Interval != 1 || outs[1].Interval != 2 || outs[2].Interval != 0 {
						t.Errorf("ReadAwkOutputs: %d outputs, %v; want intervals 1 and 2, then the end", len(outs), err)
					}
					for _, iname := range awkNames {
						argv := impls[iname]
						if argv == nil {
							continue
						}
						cmd := exec.Command(argv[0], append(argv[1:], ap.Program)...)
						cmd.Env = append(os.Environ(), "LC_ALL=C")
						cmd.Stdin = bytes.NewReader(data)
						var out, errb bytes.Buffer
						cmd.Stdout, cmd.Stderr = &out, &errb
						if err := cmd.Run(); err != nil {
							t.Fatalf("%s: %v\n%s", iname, err, errb.String())
						}
						if got := out.String(); got != want {
							t.Errorf("%s prints (-want +got):\n%s", iname, lineDiff(want, got))
						}
					}
				})
			}
		}
	}
}

// oddLines rewrites a 5.10 kernel's trace_pipe text (as the kernel could
// print it) so that the program's quick readings do not apply to some
// lines and its full ones read them: an uptime past 99999 s on every
// line (a timestamp wider than %5lu), and by turns a task name with a
// blank in the header or in a sched_switch's next_comm (the line has
// another count of words), a CPU past 999, a thread group id column, a
// negative pid and system call numbers of 14 to 16 digits.
func oddLines(text []byte) []byte {
	lines := strings.SplitAfter(string(text), "\n")
	for i, l := range lines {
		if len(l) < 40 || l[16] != '-' {
			continue
		}
		if j := strings.Index(l, ": "); j > 13 && l[j-7] == '.' {
			// "    2.058330: " → "100002.058330: "
			secs := strings.TrimLeft(l[j-12:j-7], " ")
			n, err := strconv.Atoi(secs)
			if err == nil {
				l = l[:j-12] + strconv.Itoa(n+100000) + l[j-7:]
			}
		}
		switch i % 5 {
		case 0:
			// Numbers the program does not take as their own key
			// text at once: a negative pid, a system call of 15 or 16 digits.
			l = strings.Replace(l, " pid=", " pid=-", 1)
			l = strings.Replace(l, ": NR ", ": NR 1000000000000", 1)
		case 1:
			l = "      a b" + l[9:] // the name's last 7 columns kept
		case 2:
			l = strings.Replace(l, " next_comm=", " next_comm=x y", 1)
		case 3:
			l = strings.Replace(l, "] ", "0] ", 1)[:17] + strings.Replace(l, "] ", "0] ", 1)[17:]
			l = strings.Replace(l, " [0", " [1", 1)
		case 4:
			l = l[:17] + strings.Replace(l[17:], " [", " (     83) [", 1)
		}
		lines[i] = l
	}
	return []byte(strings.Join(lines, ""))
}

// withTicks puts a tick of the awk engine's -i (its trace_marker line,
// as trace_pipe prints it) before each given line of text.
func withTicks(text []byte, at ...int) []byte {
	lines := strings.SplitAfter(string(text), "\n")
	var b strings.Builder
	for i, l := range lines {
		for _, a := range at {
			if a == i {
				b.WriteString("              sh-83      [000] .....     2.100000: tracing_mark_write: " + AwkTick + "\n")
			}
		}
		b.WriteString(l)
	}
	return []byte(b.String())
}

// lineDiff shows the lines two texts differ in.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(w), len(g)) && n < 20; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, a, c)
			n++
		}
	}
	return b.String()
}

// TestAwkScriptShells runs the whole printed script of the awk engine
// under dash, mksh and bash --posix with each awk as "awk", on a stand-in tracefs: a directory
// whose mkdir (a stand-in on the PATH) makes the instance with its event
// directories and a trace_pipe holding real kernel text. The script must
// print what the program prints over that text, write its settings,
// enables and end marker, and remove the instance.
func TestAwkScriptShells(t *testing.T) {
	impls := awks(t)
	type shell struct {
		name string
		argv []string
	}
	var shells []shell
	// busybox ash runs mkdir and rmdir as its own applets, so the
	// stand-in cannot make an instance there: the suite's riscv64 and
	// 5.10 guests run the script under busybox ash on a real tracefs
	// (e2e/stream_test.go).
	t.Log("busybox ash: not here (its mkdir is an applet, so no stand-in instance); the suite's guests run the script under it")
	for _, s := range []shell{{"dash", []string{"dash"}}, {"mksh", []string{"mksh"}}, {"bash-posix", []string{"bash", "--posix"}}} {
		p, err := exec.LookPath(s.argv[0])
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Errorf("%s is not installed (make test-shells installs it)", s.name)
			} else {
				t.Logf("SKIPPING %s: not installed (make test-shells installs it)", s.name)
			}
			continue
		}
		shells = append(shells, shell{s.name, append([]string{p}, s.argv[1:]...)})
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	ap, plan, cat, a := awkPlanOf(t, awkQueries["agg"], k.version, k.arch)
	want := awkReference(t, ap, plan, cat, a, string(text))
	for _, sh := range shells {
		for _, iname := range awkNames {
			argv := impls[iname]
			if argv == nil {
				continue
			}
			t.Run(sh.name+"/"+iname, func(t *testing.T) {
				dir := t.TempDir()
				root, bin := standIn(t, dir, text)
				awkLine := `exec ` + strings.Join(quoteAll(argv), " ") + ` "$@"`
				if err := execfile.Write(bin+"/awk", []byte("#!/bin/sh\n"+awkLine+"\n")); err != nil {
					t.Fatal(err)
				}
				var script bytes.Buffer
				if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: 100_000_000}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir+"/script.sh", script.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				// Bounded: a script that hangs (mawk waiting for a
				// block to fill) fails, it does not block the test.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, sh.argv[0], append(sh.argv[1:], dir+"/script.sh")...)
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v\nstderr:\n%s", err, errb.String())
				}
				if got := out.String(); got != want {
					t.Errorf("the script prints (-want +got):\n%s\nstderr:\n%s", lineDiff(want, got), errb.String())
				}
				if errb.Len() > 0 {
					t.Errorf("stderr:\n%s", errb.String())
				}
				inst := root + "/instances/" + ap.Instance
				if _, err := os.Stat(inst); !os.IsNotExist(err) {
					t.Errorf("the instance is still there (%v)", err)
				}
				removed := dir + "/removed"
				for f, want := range map[string]string{
					"trace_clock": "global\n", "buffer_size_kb": "4096\n", "trace_marker": AwkMarker + "\n",
					"events/sched/sched_waking/enable": "1\n", "events/sched/sched_switch/enable": "1\n",
					// The kernel's default text, whatever the top level's
					// options (a new instance takes them).
					"options/hex": "0\n", "options/bin": "0\n", "options/raw": "0\n", "options/context-info": "1\n", "options/latency-format": "0\n",
				} {
					got, err := os.ReadFile(removed + "/" + f)
					if err != nil || string(got) != want {
						t.Errorf("%s: %q (%v), want %q", f, got, err, want)
					}
				}
			})
		}
	}
}

// quoteAll quotes words for a shell as the scripts do.
func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}

// standIn makes a stand-in tracefs in dir: a root whose instances/ the
// mkdir of bin (put first on the PATH) makes as the kernel does, with
// event directories and a trace_pipe holding text (awk reads it to its
// end); bin's rmdir keeps a copy of what it removes in dir/removed.
func standIn(t *testing.T, dir string, text []byte) (root, bin string) {
	t.Helper()
	root, bin = dir+"/trace fs's", dir+"/bin"
	for _, d := range []string{root + "/instances", bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dir+"/text", text, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		// trace_pipe is a FIFO that gives the text, then, as the
		// kernel's does, each line written to trace_marker as a trace
		// line (the end marker too), and stays open until the instance
		// is gone. A lease (sqlawk_…_own_PID) is an empty directory.
		"mkdir": "#!/bin/sh\n/bin/mkdir \"$1\" || exit 1\ncase \"$1\" in *_own_*) exit 0 ;; esac\n" +
			"for e in sched/sched_waking sched/sched_switch; do /bin/mkdir -p \"$1/events/$e\"; done; /bin/mkdir \"$1/options\"\n" +
			"/usr/bin/mkfifo \"$1/trace_pipe\" || exit 1\n" +
			"( exec > \"$1/trace_pipe\"; /bin/cat " + quoteAll([]string{dir + "/text"})[0] + "; n=0\n" +
			"  while [ -d \"$1\" ]; do m=$(/usr/bin/wc -l < \"$1/trace_marker\" 2>/dev/null); m=${m:-0}\n" +
			"    while [ $n -lt $m ]; do n=$((n + 1)); echo \"           <...>-1       [000] d...  9999.000000: tracing_mark_write: $(/bin/sed -n \"${n}p\" \"$1/trace_marker\")\"; done\n" +
			"    /bin/sleep 0.05; done ) < /dev/null > /dev/null 2>&1 &\n",
		"rmdir": "#!/bin/sh\ncase \"$1\" in *_own_*) /bin/rm -r \"$1\"; exit ;; esac\n/bin/cp -r \"$1\" " + quoteAll([]string{dir + "/removed"})[0] + " && /bin/rm -r \"$1\"\n",
	}
	for n, body := range files {
		if err := execfile.Write(bin+"/"+n, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return root, bin
}

// TestAwkScriptTicks runs the printed script with an interval (-i) under
// dash, mksh and bash --posix on the stand-in tracefs: its background
// loop writes a tick to the instance's trace_marker each interval, at
// most as many as whole intervals end before the duration, stops before
// the end marker, and leaves no process behind (the shell's output
// ends).
func TestAwkScriptTicks(t *testing.T) {
	impls := awks(t)
	awk := impls["busybox"]
	if awk == nil {
		for _, a := range impls {
			awk = a
		}
	}
	if awk == nil {
		t.Skip("no awk")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	ap, _, _, _ := awkPlanOf(t, awkQueries["join"], k.version, k.arch)
	for _, sh := range [][]string{{"dash"}, {"mksh"}, {"bash", "--posix"}} {
		p, err := exec.LookPath(sh[0])
		if err != nil {
			t.Logf("SKIPPING %s: not installed", sh[0])
			continue
		}
		t.Run(sh[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			root, bin := standIn(t, dir, text)
			if err := execfile.Write(bin+"/awk", []byte("#!/bin/sh\nexec "+strings.Join(quoteAll(awk), " ")+" \"$@\"\n")); err != nil {
				t.Fatal(err)
			}
			var script bytes.Buffer
			if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: 1200 * time.Millisecond, Interval: 400 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(script.String(), "# Every 0.4 s it prints them") {
				t.Errorf("the script does not say its interval:\n%s", script.String())
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, p, append(sh[1:], "-c", script.String())...)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, errb.String())
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the script took %v for -d 1.2 (a process of it held its output?)", took)
			}
			if errb.Len() > 0 {
				t.Errorf("stderr:\n%s", errb.String())
			}
			marks, _ := os.ReadFile(dir + "/removed/trace_marker")
			lines := strings.Split(strings.TrimSuffix(string(marks), "\n"), "\n")
			ticks := len(lines) - 1
			if ticks < 1 || ticks > 2 || lines[len(lines)-1] != AwkMarker || strings.Count(string(marks), AwkTick) != ticks {
				t.Errorf("trace_marker got %q; want 1 or 2 ticks (of 0.4 s within 1.2 s), then the end marker", marks)
			}
		})
	}
}

// TestAwkScriptEndsEarly: a script printed with a long -d ends at once,
// printing its tables and removing its instance and its lease, when its
// shell gets SIGINT in its process group (Ctrl-C), SIGINT twice (a second
// Ctrl-C while it ends: the awk is never orphaned), or when the end
// marker is written from elsewhere (as --via does when its run is
// stopped); and a short -d ends it too. Under dash, mksh and bash --posix,
// with each awk (mawk read its input in blocks and waited for more events
// after the marker: for ever on a quiet event, as the stand-in's is once
// its text is read). Each run is bounded: a hang fails, it does not block.
func TestAwkScriptEndsEarly(t *testing.T) {
	impls := awks(t)
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	ap, _, _, _ := awkPlanOf(t, awkQueries["join"], k.version, k.arch)
	// Six scripts at a time: 48 at once (each a shell, its awk and the
	// stand-in's feeder polling every 50 ms) on two loaded cores made a
	// signal-twice run wait out the awk's 10 s watchdog.
	slots := make(chan struct{}, 6)
	for _, sh := range [][]string{{"dash"}, {"mksh"}, {"bash", "--posix"}} {
		p, err := exec.LookPath(sh[0])
		if err != nil {
			t.Logf("SKIPPING %s: not installed", sh[0])
			continue
		}
		for _, iname := range awkNames {
			awk := impls[iname]
			if awk == nil {
				continue
			}
			for _, how := range []string{"signal", "signal-twice", "marker", "duration"} {
				t.Run(sh[0]+"/"+iname+"/"+how, func(t *testing.T) {
					t.Parallel()
					slots <- struct{}{}
					defer func() { <-slots }()
					awkScriptEnds(t, p, sh[1:], awk, ap, text, how)
				})
			}
		}
	}
}

// awkScriptEnds runs ap's script under the shell p (args first) with awk
// on the stand-in tracefs and ends it as how says (see
// TestAwkScriptEndsEarly).
func awkScriptEnds(t *testing.T, p string, args, awk []string, ap *AwkPlan, text []byte, how string) {
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	// The wrapper keeps the awk's process id (the last one started:
	// the program's, after the version check).
	if err := execfile.Write(bin+"/awk", []byte("#!/bin/sh\necho $$ > "+quoteAll([]string{dir + "/awk.pid"})[0]+"\nexec "+strings.Join(quoteAll(awk), " ")+" \"$@\"\n")); err != nil {
		t.Fatal(err)
	}
	d := time.Minute
	if how == "duration" {
		d = 300 * time.Millisecond
	}
	var script bytes.Buffer
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: d, Interval: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p, append(args, "-c", script.String())...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A group of its own: Ctrl-C signals the terminal's group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inst := root + "/instances/" + ap.Instance
	for i := 0; i < 250; i++ {
		if _, err := os.Stat(inst + "/trace_pipe"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	switch how {
	case "signal":
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	case "signal-twice":
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		time.Sleep(30 * time.Millisecond)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	case "marker":
		if f, err := os.OpenFile(inst+"/trace_marker", os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.WriteString(AwkMarker + "\n")
			f.Close()
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// The script's shell here is sh -c's, whose subshell runs it:
		// the interrupt ends the outer one (an interactive shell
		// ignores it).
		if err != nil && !(strings.HasPrefix(how, "signal") && err.Error() == "signal: interrupt") {
			t.Fatalf("%v\nstderr:\n%s", err, errb.String())
		}
	case <-time.After(20 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the script did not end within 20 s of the %s (-d %v); output:\n%s\nstderr:\n%s", how, d, out.String(), errb.String())
	}
	// The shell may end before its subshell (a signal ends sh -c's
	// own shell): the subshell's output ends when it does.
	for i := 0; i < 250 && !strings.Contains(out.String(), "==> end: "); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("the script took %v to end after the %s", took, how)
	}
	t.Logf("ended %v after the %s", took.Round(time.Millisecond), how)
	if !strings.Contains(out.String(), "==> end: ") {
		t.Errorf("no tables printed:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	for i := 0; i < 250; i++ {
		if _, err := os.Stat(inst); os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(inst); !os.IsNotExist(err) {
		t.Errorf("the instance is still there (%v)", err)
	}
	if leases, _ := filepath.Glob(inst + "_own_*"); len(leases) != 0 {
		t.Errorf("the lease is still there: %v", leases)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr:\n%s", errb.String())
	}
	marks, _ := os.ReadFile(dir + "/removed/trace_marker")
	if strings.Count(string(marks), AwkMarker) != 1 {
		t.Errorf("trace_marker: %q, want the end marker once", marks)
	}
	if data, err := os.ReadFile(dir + "/awk.pid"); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid > 0 && syscall.Kill(pid, 0) == nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the awk (process %d) outlived the script", pid)
		}
	} else {
		t.Errorf("no awk started: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// --buffer-kb sets the script's instance's buffer_size_kb (default
// awkBufferKB); the lease's stays 4.
func TestAwkScriptBufferKB(t *testing.T) {
	ap, _, _, _ := awkPlanOf(t, awkQueries["agg"], awkKernels[0].version, awkKernels[0].arch)
	for _, c := range []struct{ kb, want int }{{0, awkBufferKB}, {64, 64}, {16384, 16384}} {
		var b strings.Builder
		if err := WriteAwkScript(&b, ap, AwkScriptOptions{Duration: time.Second, BufferKB: c.kb}); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		want := fmt.Sprintf("echo '%d' >> /sys/kernel/tracing/instances/%s/buffer_size_kb", c.want, ap.Instance)
		if strings.Count(s, "buffer_size_kb") != 2 || !strings.Contains(s, want) || !strings.Contains(s, "echo 4 >> \"$sqlhist_own/buffer_size_kb\"") {
			t.Errorf("--buffer-kb %d: want %q in the script:\n%s", c.kb, want, s)
		}
	}
}

// An instance made while the top level's markers option is off refuses
// the line to trace_marker that ends the awk (the option is the top
// level's alone; the instance copies it when made, 2026-12-06 FINDINGS):
// the script says so and what to run, and ends before any event is
// enabled or any awk started, leaving neither instance nor lease.
func TestAwkScriptRefusesNoMarkers(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dash is not installed (make test-shells installs it)")
		}
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	ap, _, _, _ := awkPlanOf(t, awkQueries["agg"], k.version, k.arch)
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	// The stand-in's instances list the top level's options as the
	// kernel's do, markers off; no awk may start.
	if err := os.Rename(bin+"/mkdir", bin+"/mkdir0"); err != nil {
		t.Fatal(err)
	}
	mkdir := "#!/bin/sh\n" + quoteAll([]string{bin + "/mkdir0"})[0] + " \"$@\" || exit 1\n" +
		"case \"$1\" in *_own_*) ;; *) printf 'print-parent\\nnomarkers\\nhex\\n' > \"$1/trace_options\" ;; esac\n"
	for n, body := range map[string]string{"mkdir": mkdir, "awk": "#!/bin/sh\ntouch " + quoteAll([]string{dir + "/awk-ran"})[0] + "\n"} {
		if err := execfile.Write(bin+"/"+n, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	var script bytes.Buffer
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dash, "-c", script.String())
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\nstderr:\n%s", err, errb.String())
	}
	want := "sqlhist: the markers option of the top level is off, and " + ap.Instance + " took it: the kernel refuses the line to trace_marker that ends the awk; turn it on (echo markers >> " + root + "/trace_options) and paste the script again\n"
	if errb.String() != want || out.Len() != 0 {
		t.Errorf("stderr:\n%s\nwant:\n%s\nstdout:\n%s", errb.String(), want, out.String())
	}
	if _, err := os.Stat(dir + "/awk-ran"); err == nil {
		t.Error("an awk was started")
	}
	entries, err := os.ReadDir(root + "/instances")
	if err != nil || len(entries) != 0 {
		t.Errorf("left in instances: %v (%v)", entries, err)
	}
	if enabled, _ := filepath.Glob(dir + "/removed/events/*/*/enable"); len(enabled) != 0 {
		t.Errorf("events enabled before the refusal: %v", enabled)
	}
}

// An instance of the query's name that no lease names (a script printed
// by an older sqlhist, or one starting now) is left alone: the script
// says what to run if none runs, the events off before the marker (an
// awk behind a busy event would not see a marker written among them),
// and ends without a lease or any write.
func TestAwkScriptUnownedInstance(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dash is not installed (make test-shells installs it)")
		}
		t.Skip("SKIPPING: dash is not installed (make test-shells installs it)")
	}
	k := awkKernels[0]
	text, err := os.ReadFile(k.text)
	if err != nil {
		t.Fatal(err)
	}
	ap, _, _, _ := awkPlanOf(t, awkQueries["agg"], k.version, k.arch)
	dir := t.TempDir()
	root, bin := standIn(t, dir, text)
	inst := root + "/instances/" + ap.Instance
	if err := os.MkdirAll(inst, 0o755); err != nil {
		t.Fatal(err)
	}
	var script bytes.Buffer
	if err := WriteAwkScript(&script, ap, AwkScriptOptions{Root: root, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dash, "-c", script.String())
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\nstderr:\n%s", err, errb.String())
	}
	want := "sqlhist: " + inst + " exists and no script owns it (one printed by an older sqlhist, or one starting now); if none runs, remove it: echo 0 >> " +
		inst + "/events/enable; echo sqlhist-awk-end >> " + inst + "/trace_marker; rmdir " + inst + "\n"
	if errb.String() != want || out.Len() != 0 {
		t.Errorf("stderr:\n%s\nwant:\n%s\nstdout:\n%s", errb.String(), want, out.String())
	}
	entries, err := os.ReadDir(root + "/instances")
	if err != nil || len(entries) != 1 || entries[0].Name() != ap.Instance {
		t.Errorf("instances: %v (%v), want only %s", entries, err, ap.Instance)
	}
	if left, _ := os.ReadDir(inst); len(left) != 0 {
		t.Errorf("written into the instance: %v", left)
	}
}

// TestAwkProgramEdges runs the wakeup JOIN's programs over lines made to
// reach the paths the program's shortcuts take apart: more tasks than a
// map holds (the starts' map drops, the ends' never fills), a negative
// pid woken and switched to (its key read in full after the lookup
// fails), latencies at each edge of the .log2 tables and past them, and
// a switch stamped before its waking (a negative latency: the error
// histogram). Each awk must print what the stream machine computes.
func TestAwkProgramEdges(t *testing.T) {
	impls := awks(t)
	line := func(b *strings.Builder, us uint64, cpu int, body string) {
		fmt.Fprintf(b, "%16s-%-7d [%03d] d... %5d.%06d: %s\n", "load", 99, cpu, us/1000000, us%1000000, body)
	}
	waking := func(b *strings.Builder, us uint64, pid int) {
		line(b, us, 0, fmt.Sprintf("sched_waking: comm=t%d pid=%d prio=120 target_cpu=000", pid, pid))
	}
	switchTo := func(b *strings.Builder, us uint64, pid int) {
		line(b, us, 0, fmt.Sprintf("sched_switch: prev_comm=load prev_pid=99 prev_prio=120 prev_state=S ==> next_comm=t%d next_pid=%d next_prio=120", pid%7, pid))
	}
	lats := []uint64{0, 1, 2, 3, 255, 256, 257, 65535, 65536, 65537, 70000, 1 << 20, 5000000000}
	var b strings.Builder
	us := uint64(2_000_000)
	waking(&b, us, -7)
	switchTo(&b, us+40, -7)
	waking(&b, us+100, 55)
	switchTo(&b, us+50, 55)      // before its waking
	switchTo(&b, us+200, 300000) // no waking
	switchTo(&b, us+210, -9)     // no waking, its key read in full
	us += 300
	for i := range 2300 {
		pid := 1000 + i
		waking(&b, us, pid)
		lat := lats[i%len(lats)]
		switchTo(&b, us+lat, pid)
		us += lat + 10
	}
	text := b.String()
	for _, name := range []string{"join", "agg", "ucmp"} {
		t.Run(name, func(t *testing.T) {
			ap, plan, cat, a := awkPlanOf(t, awkQueries[name], "5.10", "x86_64")
			want := awkReference(t, ap, plan, cat, a, text)
			if name == "join" {
				// The starts' map is full past 2,048 tasks (2,046 of
				// the 2,300 made an entry after the two before them),
				// the negative pid's latency is counted, and the
				// negative latency is in the error histogram.
				for _, s := range []string{"Hits: 2047\n", "{ common_cpu:          0 } hitcount:          1\n"} {
					if !strings.Contains(want, s) {
						t.Errorf("the reference has no %q:\n%s", s, want)
					}
				}
			}
			for _, iname := range awkNames {
				argv := impls[iname]
				if argv == nil {
					continue
				}
				cmd := exec.Command(argv[0], append(argv[1:], ap.Program)...)
				cmd.Env = append(os.Environ(), "LC_ALL=C")
				cmd.Stdin = strings.NewReader(text)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s: %v\n%s", iname, err, errb.String())
				}
				if got := out.String(); got != want {
					t.Errorf("%s prints (-want +got):\n%s", iname, lineDiff(want, got))
				}
			}
		})
	}
}
