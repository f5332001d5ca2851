package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The awk engine (issue 34) where hist triggers are missing: the stream
// job's questions printed here as awk scripts (sqlhist --engine stream
// -d 1), pasted into the guest's busybox sh, where no sqlhist takes part
// in the run. Each run keeps the lines its awk read (SQLHIST_AWK_TEE);
// the host replays them through the stream engine's machine and wants
// the very bytes the guest's awk printed.

// awkQueries are the stream job's queries the awk engine answers, by
// name: the wakeup JOIN, the syscall histogram, the aggregate over the
// JOIN and the chain of three.
var awkQueries = []struct{ name, sql string }{
	{"join", `SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid`},
	{"hist", `SELECT CAST(id AS SYSCALL) AS call, COUNT(*) AS n FROM sys_enter ORDER BY n DESC`},
	{"agg", `SELECT end.next_comm AS comm, CAST(TIMESTAMP_DELTA_USECS AS LOG2) AS lat, COUNT(*) AS n FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid GROUP BY comm, lat ORDER BY n DESC`},
	{"chain3", `SELECT sw.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS w JOIN sched_wakeup AS wk ON w.pid = wk.pid JOIN sched_switch AS sw ON sw.next_pid = wk.pid`},
}

// awkScript runs each /work/awk-NAME.sh as a paste (its text on sh's
// standard input), while streamScript's workload runs, and shows its
// output, its stderr and the lines its awk read (gzip, base64).
const awkScript = `
for q in join hist agg chain3; do
	[ -e /work/awk-$q.sh ] || continue
	read t0 x < /proc/uptime
	SQLHIST_AWK_TEE=/tmp/awk-$q.txt sh < /work/awk-$q.sh > /tmp/awk-$q.out 2> /tmp/awk-$q.err; echo "@@awk-$q-exit $?"
	read t1 x < /proc/uptime; echo "@@awk-$q-time $t0 $t1"
	echo "@@awk-$q-out"; cat /tmp/awk-$q.out; echo "@@awk-$q-err"; cat /tmp/awk-$q.err
	echo "@@awk-$q-in"; gzip -c /tmp/awk-$q.txt | base64; rm -f /tmp/awk-$q.txt /tmp/awk-$q.out
done
echo "@@awk-done"
`

// awkTarget is the catalog a stream job's kernel is printed for: its
// embedded catalog (riscv64's was captured from the very kernel; Debian's
// 5.10 is printed with the 5.10.262 catalog, whose events print alike).
func awkTarget(t *testing.T, kname string) (flags []string, cat *tracefs.Catalog, arch *tracefs.Arch) {
	t.Helper()
	version, aname := "5.10", "x86_64"
	if kernelArch(t, kname) == "riscv64" {
		version, aname = "6.12", "riscv64"
	}
	a, err := tracefs.LookupArch(aname)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tracefs.EmbeddedOf(version, a)
	if err != nil {
		t.Fatal(err)
	}
	cat = tracefs.Open(fsys)
	cat.SetArch(a, "--arch")
	return []string{"--kernel", version, "--arch", aname, "--engine", "stream", "-d", "1"}, cat, a
}

// awkFiles prints the awk scripts with this machine's sqlhist, as a user
// would, for the guest's initramfs.
func awkFiles(t *testing.T, kname string) []vm.File {
	t.Helper()
	bin := hostSqlhist(t)
	flags, _, _ := awkTarget(t, kname)
	var files []vm.File
	for _, q := range awkQueries {
		cmd := exec.Command(bin, append(flags, q.sql)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("printing the awk script of %s: %v\n%s", q.name, err, errb.String())
		}
		// The replay (checkAwkRuns) plans the query as the command did:
		// the same script from the same plan.
		_, cat, arch := awkTarget(t, kname)
		plan, diags := live.Compile(&source.Source{Name: q.name, Text: q.sql}, cat, live.AwkPrepare(planner.Options{}))
		if plan == nil {
			t.Fatalf("%s: %v", q.name, diags)
		}
		ap, err := live.NewAwkPlan(plan, cat, arch)
		if err != nil {
			t.Fatal(err)
		}
		var same bytes.Buffer
		live.WriteAwkScript(&same, ap, live.AwkScriptOptions{Duration: time.Second, Source: &source.Source{Name: "<args>", Text: q.sql},
			Args: awkQueryArgs(flags, q.sql)})
		// The command's header starts with the target, which the
		// replay does not name.
		if same.String() != dropFirstLine(out.String()) || !strings.HasPrefix(out.String(), "# sqlhist: compiled for Linux ") {
			t.Fatalf("%s: the command prints another awk script than the replay's plan gives:\n%s\n---\n%s", q.name, out.String(), same.String())
		}
		files = append(files, vm.File{Path: "/work/awk-" + q.name + ".sh", Mode: 0o644, Data: out.Bytes()})
		if q.name == "join" {
			// The same query until stopped, for the kill checks
			// (awkKillScript).
			cmd := exec.Command(bin, append(flags[:len(flags)-2:len(flags)-2], q.sql)...)
			long, err := cmd.Output()
			if err != nil || !bytes.Contains(long, []byte("at Ctrl-C (or kill -INT")) {
				t.Fatalf("printing the awk script of %s without -d: %v\n%s", q.name, err, long)
			}
			files = append(files, vm.File{Path: "/work/awk-long.sh", Mode: 0o644, Data: long})
		}
	}
	// The flood checks' script (awkKillScript): system calls counted
	// per CPU for 2 s in a 64 KB buffer, far more of them than awk reads.
	cmd := exec.Command(bin, append(append(flags[:len(flags)-2:len(flags)-2], "-d", "2", "--buffer-kb", "64"), awkFloodSQL)...)
	flood, err := cmd.Output()
	if err != nil {
		t.Fatalf("printing the awk script of %s: %v", awkFloodSQL, err)
	}
	files = append(files, vm.File{Path: "/work/awk-flood.sh", Mode: 0o644, Data: flood})
	return files
}

// awkFloodSQL is the flood checks' query: every system call of the
// guest, by CPU.
const awkFloodSQL = `SELECT common_cpu, COUNT(*) AS n FROM sys_enter`

// awkQueryArgs are the arguments a script printed with the flags of
// awkTarget names in its output's query line (sqlhist read plans them).
func awkQueryArgs(flags []string, sql string) []string {
	return []string{"--kernel=" + flags[1], "--arch=" + flags[3], "--engine=stream", "--", sql}
}

func dropFirstLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

// awkKillScript (issue 41, in the guest's busybox sh on a real tracefs):
// the join's script without -d runs; the same query pasted again says
// which script holds it; the first is killed (SIGKILL of its shells: its
// awk outlives them, reading trace_pipe); sqlhist --cleanup --dry-run
// lists what it left, --cleanup removes it (the awk ends at the marker);
// then a second killed script's leftovers are removed by the script pasted
// again (-d 1), which answers; at the end no sqlawk instance and no awk
// are left.
const awkKillScript = `
T=/sys/kernel/tracing
awks() { # the processes that read an awk script's trace_pipe
	n=0
	for f in /proc/[0-9]*/fd/0; do case $(readlink $f 2>/dev/null) in */instances/sqlawk_*/trace_pipe*) n=$((n + 1)) ;; esac; done
	echo $n
}
awkk_start() { # waits until the script's awk reads its instance
	sh /work/awk-long.sh > /tmp/kl.out 2> /tmp/kl.err &
	KS=$!
	i=0; while [ $i -lt 300 ] && ! ls -d $T/instances/sqlawk_*_own_* > /dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
	[ $i -lt 300 ] || echo "@@timeout waiting 30 s for the awk script's lease"
	KP=$(ls -d $T/instances/sqlawk_*_own_* | head -1); KP=${KP##*_own_}
	i=0; while [ $i -lt 300 ] && [ "$(awks)" = 0 ]; do sleep 0.1; i=$((i + 1)); done
	[ $i -lt 300 ] || echo "@@timeout waiting 30 s for the awk script's awk"
	sleep 1
}
awkk_start
sh /work/awk-long.sh > /tmp/k2.out 2> /tmp/k2.err; echo "@@awkk-second-exit $?"
echo "@@awkk-second-err"; cat /tmp/k2.err
kill -9 $KP $KS; wait $KS 2>/dev/null
sleep 0.5
echo "@@awkk-orphans $(awks)"
/work/sqlhist --cleanup --dry-run > /tmp/kc.out 2> /tmp/kc.err; echo "@@awkk-dry-exit $?"
echo "@@awkk-dry"; cat /tmp/kc.out /tmp/kc.err
/work/sqlhist --cleanup > /tmp/kc.out 2> /tmp/kc.err; echo "@@awkk-cleanup-exit $?"
echo "@@awkk-cleanup"; cat /tmp/kc.out /tmp/kc.err
echo "@@awkk-after-cleanup $(ls $T/instances | grep -c '^sqlawk') instances, $(awks) awks"
awkk_start
kill -9 $KP $KS; wait $KS 2>/dev/null
for o in hex raw nocontext-info latency-format; do echo $o > $T/trace_options; done
sh /work/awk-join.sh > /tmp/k3.out 2> /tmp/k3.err; echo "@@awkk-again-exit $?"
echo "@@awkk-again-opts $(grep -xE '(no)?(hex|raw|context-info|latency-format)' $T/trace_options | tr '\n' ' ')"
for o in nohex noraw context-info nolatency-format; do echo $o > $T/trace_options; done
echo "@@awkk-again-err"; cat /tmp/k3.err
echo "@@awkk-again-end $(grep -c '^==> end: ' /tmp/k3.out)"
echo "@@awkk-again-out"; cat /tmp/k3.out
echo nomarkers > $T/trace_options
sh /work/awk-join.sh > /tmp/k4.out 2> /tmp/k4.err; echo "@@awkk-nomarkers-exit $?"
echo markers > $T/trace_options
echo "@@awkk-nomarkers-err"; cat /tmp/k4.out /tmp/k4.err
echo "@@awkk-nomarkers-left $(ls $T/instances | grep -c '^sqlawk')"
sleep 0.5
# A flood: two loops of one-byte dd make system calls far faster than
# awk reads them, into a 64 KB buffer, for the script's -d 2. The kernel
# writes over what awk has not read, the end marker too while the events
# stay on (the script ran until killed); the script turns them off first.
flood() { while :; do dd if=/dev/zero of=/dev/null bs=1 count=20000 2>/dev/null; done; }
flood > /dev/null 2>&1 & F1=$!
flood > /dev/null 2>&1 & F2=$!
a=$(cut -d' ' -f1 /proc/uptime)
timeout 60 sh /work/awk-flood.sh > /tmp/k5.out 2> /tmp/k5.err; echo "@@awkk-flood-exit $?"
b=$(cut -d' ' -f1 /proc/uptime)
kill $F1 $F2; wait $F1 $F2 2>/dev/null
echo "@@awkk-flood-time $a $b"
echo "@@awkk-flood-left $(ls $T/instances | grep -c '^sqlawk')"
echo "@@awkk-flood-err"; cat /tmp/k5.err
echo "@@awkk-flood-out"; cat /tmp/k5.out
echo "@@awkk-final $(ls $T/instances | grep -c '^sqlawk') instances, $(awks) awks"
/work/sqlhist --cleanup 2> /tmp/kc.err; echo "@@awkk-last"; cat /tmp/kc.err
`

// checkAwkKills checks what awkKillScript printed.
func checkAwkKills(t *testing.T, kname, out string) string {
	t.Helper()
	sec := sections(out)
	for _, w := range []string{"@@awkk-second-exit 1", "@@awkk-dry-exit 0", "@@awkk-cleanup-exit 0", "@@awkk-after-cleanup 0 instances, 0 awks",
		"@@awkk-again-exit 0", "@@awkk-again-end 1", "@@awkk-final 0 instances, 0 awks"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("%s: awk kill checks: no %q:\n%s", kname, w, lastLines(out, 40))
		}
	}
	if !strings.Contains(sec["awkk-second-err"], "is in use by the script of process") {
		t.Errorf("%s: the same query pasted while it runs: %s", kname, sec["awkk-second-err"])
	}
	if !strings.Contains(out, "@@awkk-orphans 1\n") {
		t.Errorf("%s: after SIGKILL of the script's shells, want its awk still running (what --cleanup must end): %s", kname, firstLine(out, "@@awkk-orphans"))
	}
	if !regexp.MustCompile(`# left by the awk script of process \d+ \(sqlawk_\w+\)`).MatchString(sec["awkk-dry"]) {
		t.Errorf("%s: --cleanup --dry-run does not list the killed awk script:\n%s", kname, sec["awkk-dry"])
	}
	if !strings.Contains(sec["awkk-cleanup"], "rmdir '/sys/kernel/tracing/instances/sqlawk_") {
		t.Errorf("%s: --cleanup did not say what it removed:\n%s", kname, sec["awkk-cleanup"])
	}
	if !strings.Contains(sec["awkk-again-err"], "removing what a killed script of this query left") {
		t.Errorf("%s: the script pasted over a killed one's leftovers: %s", kname, sec["awkk-again-err"])
	}
	// That paste ran under the top level's hex, raw, nocontext-info and
	// latency-format, which its instance took and set back to the
	// kernel's default text: it read every line and counted wakeups, and
	// the top level kept its options.
	if got := firstLine(out, "@@awkk-again-opts "); got != "@@awkk-again-opts raw hex nocontext-info latency-format " {
		t.Errorf("%s: the top level's options while the awk script ran: %q, want raw, hex, nocontext-info and latency-format as set", kname, got)
	}
	if got, ok := rawSection(out, "awkk-again-out"); !ok {
		t.Errorf("%s: no output of the paste under the top level's options", kname)
	} else if ao, err := live.ReadAwkOutput(strings.NewReader(got)); err != nil {
		t.Errorf("%s: the paste under the top level's options: %v\n%s", kname, err, got)
	} else {
		var hits uint64
		for _, p := range ao.Paths {
			if hs, _ := tracefs.ParseHist(ao.Files[p]); len(hs) > 0 {
				hits = hs[0].Totals.Hits
			}
			break
		}
		if hits == 0 || ao.Unread != 0 || ao.Lost != 0 {
			t.Errorf("%s: the awk script under the top level's hex, raw, nocontext-info and latency-format: %d hits, %d lines unread, %d lost; want hits and every line read:\n%s", kname, hits, ao.Unread, ao.Lost, got)
		}
	}
	if !strings.Contains(sec["awkk-last"], "nothing left by killed runs") || strings.Contains(sec["awkk-last"], "no lease names") {
		t.Errorf("%s: a last --cleanup: %s", kname, sec["awkk-last"])
	}
	// Under the top level's nomarkers the instance refuses the line that
	// ends the awk: the paste says so and leaves nothing.
	if !strings.Contains(out, "@@awkk-nomarkers-exit 1\n") || !strings.Contains(sec["awkk-nomarkers-err"], "the markers option of the top level is off") ||
		!strings.Contains(out, "@@awkk-nomarkers-left 0\n") {
		t.Errorf("%s: the awk script pasted under the top level's nomarkers: want exit 1, the reason and nothing left: %s, %s:\n%s", kname,
			firstLine(out, "@@awkk-nomarkers-exit"), firstLine(out, "@@awkk-nomarkers-left"), sec["awkk-nomarkers-err"])
	}
	checkAwkFlood(t, kname, out)
	return "awk kills: a running script named, a killed one's leftovers removed by --cleanup and by a paste (under the top level's hex, raw, nocontext-info and latency-format); refused under nomarkers"
}

// checkAwkFlood checks the flood's paste (awkKillScript): it ended soon
// after its -d 2 with an answer, its awk having read a small part of the
// events, the loss said at the top of the answer as well as in its last
// line, and nothing left. The build before the fix ran until the guest's
// timeout 60 killed it, with no answer (5.10, busybox awk).
func checkAwkFlood(t *testing.T, kname, out string) {
	t.Helper()
	var a, b float64
	fmt.Sscanf(firstLine(out, "@@awkk-flood-time "), "@@awkk-flood-time %g %g", &a, &b)
	if !strings.Contains(out, "@@awkk-flood-exit 0\n") || b-a <= 0 || b-a > 30 || !strings.Contains(out, "@@awkk-flood-left 0\n") {
		t.Errorf("%s: the awk script under a flood of system calls: %s after %.1f s of guest time (want exit 0 within 30 s of its -d 2), %s:\n%s", kname,
			firstLine(out, "@@awkk-flood-exit"), b-a, firstLine(out, "@@awkk-flood-left"), lastLines(out, 30))
		return
	}
	got, _ := rawSection(out, "awkk-flood-out")
	ao, err := live.ReadAwkOutput(strings.NewReader(got))
	if err != nil {
		t.Errorf("%s: the flood's answer: %v\n%s", kname, err, got)
		return
	}
	var hits uint64
	for _, p := range ao.Paths {
		if hs, _ := tracefs.ParseHist(ao.Files[p]); len(hs) > 0 {
			hits = hs[0].Totals.Hits
		}
	}
	// The first line after the query's says what was lost.
	lines := strings.Split(got, "\n")
	top := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "==> ") && !strings.HasPrefix(l, "==> sqlhist query: ") {
			top = l
			break
		}
	}
	if hits == 0 || ao.Lost == 0 || !strings.HasPrefix(top, fmt.Sprintf("==> lost: %d events", ao.Lost)) {
		t.Errorf("%s: the flood's answer: %d hits, %d lost, its first line %q; want hits, a loss (the buffer holds 64 KB) and the loss said first:\n%s", kname, hits, ao.Lost, top, got)
		return
	}
	t.Logf("%s: the awk script under a flood: ended %.1f s after its start (-d 2), %d system calls read, %d lost", kname, b-a, hits, ao.Lost)
}

// rawSection is the text after the line "@@name" up to the next line
// that starts with "@@", exactly (sections trims and drops blank lines).
func rawSection(out, name string) (string, bool) {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	_, rest, ok := strings.Cut("\n"+out, "\n@@"+name+"\n")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, "@@") {
		return "", true
	}
	if i := strings.Index(rest, "\n@@"); i >= 0 {
		rest = rest[:i+1]
	}
	return rest, true
}

// checkAwkRuns checks each awk run of the guest: exit 0, nothing on
// stderr, an output ReadAwkOutput takes, with events counted, and equal,
// byte for byte, to the stream engine's machine fed the lines it read.
// It returns the hits of each run's results.
func checkAwkRuns(t *testing.T, kname, out string) string {
	t.Helper()
	var notes []string
	for _, q := range awkQueries {
		// A catalog of each query's own: the plan defines its synthetic
		// events in it.
		flags, cat, arch := awkTarget(t, kname)
		if !strings.Contains(out, "@@awk-"+q.name+"-exit 0\n") {
			t.Errorf("%s: the awk script of %s did not exit 0:\n%s", kname, q.name, lastLines(out, 20))
			continue
		}
		got, _ := rawSection(out, "awk-"+q.name+"-out")
		if e, _ := rawSection(out, "awk-"+q.name+"-err"); strings.TrimSpace(e) != "" {
			t.Errorf("%s: the awk script of %s wrote to stderr:\n%s", kname, q.name, e)
		}
		ao, err := live.ReadAwkOutput(strings.NewReader(got))
		if err != nil {
			t.Errorf("%s: %s: %v\n%s", kname, q.name, err, got)
			continue
		}
		in, _ := rawSection(out, "awk-"+q.name+"-in")
		lines, err := gunzipBase64(in)
		if err != nil {
			t.Errorf("%s: %s: the lines its awk read: %v", kname, q.name, err)
			continue
		}
		plan, diags := live.Compile(&source.Source{Name: q.name, Text: q.sql}, cat, live.AwkPrepare(planner.Options{}))
		if plan == nil {
			t.Fatalf("%s: %v", q.name, diags)
		}
		want, err := live.AwkReplay(plan, cat, arch, strings.NewReader(lines))
		if err != nil {
			t.Errorf("%s: %s: the replay: %v", kname, q.name, err)
			continue
		}
		// The script prints its query line first (sqlhist read).
		want = live.AwkQueryLine(awkQueryArgs(flags, q.sql)) + "\n" + want
		if got != want {
			t.Errorf("%s: %s: the guest's awk printed something else than the stream engine computes from the lines it read:\n--- guest\n%s\n--- stream engine\n%s", kname, q.name, got, want)
			continue
		}
		hits := uint64(0)
		for _, p := range ao.Paths {
			hs, _ := tracefs.ParseHist(ao.Files[p])
			if len(hs) > 0 {
				hits = hs[0].Totals.Hits
			}
			break
		}
		if hits == 0 {
			t.Errorf("%s: %s: the awk engine counted nothing:\n%s", kname, q.name, got)
		}
		took := ""
		var t0, t1 float64
		if _, err := fmt.Sscanf(firstLine(out, "@@awk-"+q.name+"-time "), "@@awk-"+q.name+"-time %f %f", &t0, &t1); err == nil {
			took = fmt.Sprintf(" in %.1f s", t1-t0)
		}
		notes = append(notes, fmt.Sprintf("%s %d hits of %d lines (lost %d, unread %d)%s", q.name, hits, strings.Count(lines, "\n"), ao.Lost, ao.Unread, took))
	}
	return "awk: " + strings.Join(notes, ", ")
}

func gunzipBase64(s string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return "", err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(zr, 256<<20))
	return string(b), err
}

// awkTime is the guest time the awk runs add, for the stream job's
// timeout.
const awkTime = 1 * time.Minute
