package bpf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// probePlan is a query planned as -r plans it for the stream engine on
// the 6.1 catalog (x86-64): its triggers in the order a run writes them,
// its synthetic events and its probes.
type probePlan struct {
	hists  []*planner.Hist
	synths []*planner.Synth
	probes []*planner.Probe
	plan   *planner.Plan
}

func planSQL(t *testing.T, sql string) *probePlan { return planSQLOn(t, sql, "6.1") }

// planSQLOn plans on the embedded catalog of a kernel version, of this
// machine's architecture (the registers the planner takes are its).
func planSQLOn(t *testing.T, sql, kernel string) *probePlan {
	t.Helper()
	fsys, err := tracefs.EmbeddedOf(kernel, hostArch())
	if err != nil {
		t.Fatal(err)
	}
	script, err := compiler.Parse(source.NewSource("q.sql", sql))
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	plan, diags := planner.Build(script, tracefs.Open(fsys), planner.Options{Stream: true, Run: true,
		Suffix: "7", ProbeGroup: "sqlhist_7", Instance: "sqlhist_7", ReadFile: os.ReadFile})
	if plan == nil {
		t.Fatalf("%s: %v", sql, diags.Error())
	}
	p := &probePlan{plan: plan}
	for _, c := range emit.RunCommands(plan, emit.Options{}, emit.RunOptions{Instance: "sqlhist_7"}) {
		if c.Hist != nil {
			p.hists = append(p.hists, c.Hist)
		}
		if c.Synth != nil {
			p.synths = append(p.synths, c.Synth)
		}
	}
	for _, u := range plan.Units {
		p.probes = append(p.probes, u.Probes...)
	}
	return p
}

// engine compiles the plan for the BPF engine on format.
func (p *probePlan) engine(format func(system, event string) (*tracefs.Event, error), arch string) (*Engine, error) {
	return p.engineWith(format, arch, false)
}

// engineWith is engine, with kprobes always on the perf kprobe PMU when
// noFentry.
func (p *probePlan) engineWith(format func(system, event string) (*tracefs.Event, error), arch string, noFentry bool) (*Engine, error) {
	a, err := tracefs.LookupArch(arch)
	if err != nil {
		return nil, err
	}
	return New(FromHists(p.hists), p.synths, format, Options{Probes: p.probes, Arch: a, NoFentry: noFentry})
}

// result is the index of the histogram the k-th answer is read from:
// the k-th unit that feeds no other's Results (a JOIN's) or Start (a
// histogram's, or the aggregate over a JOIN).
func (p *probePlan) result(k int) int {
	for _, u := range p.plan.Units {
		if u.Feeds {
			continue
		}
		if k > 0 {
			k--
			continue
		}
		h := u.Results
		if h == nil {
			h = u.Start
		}
		for i, x := range p.hists {
			if x == h {
				return i
			}
		}
	}
	return -1
}

func embedded61(system, event string) (*tracefs.Event, error) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		return nil, err
	}
	return tracefs.Open(fsys).Event(system, event)
}

// TestProbePrograms compiles kprobes, kretprobes and uprobes with every
// kind of fetch argument, for x86-64 and arm64, and loads the programs
// of this machine's architecture into its kernel's verifier (when it
// loads programs): the
// records computed from pt_regs and memory are taken as they are.
func TestProbePrograms(t *testing.T) {
	queries := []string{
		`SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM kprobe(do_sys_openat2) AS start JOIN kretprobe(do_sys_openat2) AS end ON start.common_pid = end.common_pid GROUP BY ns`,
		`SELECT dfd, name, flag, COUNT(*) FROM kprobe(do_sys_openat2, dfd=$arg1:s32, name=+0($arg2):string, flag=+8($arg3):x32, sp=$stack, s1=$stack1, c=$comm, k=\7, ks=\"x") WHERE dfd < 0 GROUP BY dfd, name, flag`,
		`SELECT ret, COUNT(*) FROM kretprobe(do_sys_openat2, ret=$retval:s64) GROUP BY ret`,
		`SELECT c, u, COUNT(*) FROM kprobe(do_sys_openat2, c=$comm, u=+0(+u0($arg2)):u8, us=+0($arg2):ustring) GROUP BY c, u`,
	}
	loaded, fentries := 0, 0
	for _, arch := range []string{"x86_64", "arm64"} {
		for _, q := range queries {
			q := q
			if arch == "arm64" {
				q = strings.ReplaceAll(q, "%di", "%x0")
			}
			p := planSQL(t, q)
			e, err := p.engine(embedded61, arch)
			if err != nil {
				t.Errorf("%s: %s: %v", arch, q, err)
				continue
			}
			if arch != hostArch().Name || canLoad() != "" {
				continue
			}
			coll, err := ebpf.NewCollection(e.spec())
			if err != nil {
				t.Errorf("%s: the verifier refuses it: %v", q, err)
				continue
			}
			coll.Close()
			loaded++
			// Its fentry/fexit variants, where the kernel's BTF has
			// the function and it takes them.
			if slices.ContainsFunc(e.progs, func(p *progDef) bool { return p.alt != nil }) {
				e.fentry = true
				coll, err := ebpf.NewCollection(e.spec())
				e.fentry = false
				if err != nil {
					t.Logf("%s: fentry/fexit not loaded: %v", q, err)
					continue
				}
				coll.Close()
				fentries++
			}
		}
	}
	if why := canLoad(); why != "" {
		t.Logf("not loaded: %s", why)
	} else if loaded != len(queries) {
		t.Errorf("%d of %d loaded", loaded, len(queries))
	}
	t.Logf("%d of %d loaded, %d as fentry/fexit too", loaded, len(queries), fentries)
}

// TestProbeRefusals: what the engine does not compile is refused with
// the probe and the reason.
func TestProbeRefusals(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{`SELECT a, COUNT(*) FROM kretprobe(do_sys_openat2, a=$arg1:u64) GROUP BY a`, "$argN in a return probe"},
		{`SELECT a, COUNT(*) FROM kprobe(do_sys_openat2, a=@jiffies:u64) GROUP BY a`, "@SYMBOL"},
		{`SELECT n, COUNT(*) FROM kprobe(do_sys_openat2, n=$arg1:u32, a=+0($arg2):u8[4]) GROUP BY n`, "an array"},
		{`SELECT __probe_ip, COUNT(*) FROM kprobe(do_sys_openat2) GROUP BY __probe_ip`, "__probe_ip of a probe's record"},
		{`SELECT p, COUNT(*) FROM eprobe(sched_switch, p=$prev_pid) GROUP BY p`, "an eprobe is not attached"},
	} {
		p := planSQLOn(t, c.sql, "7.2")
		_, err := p.engine(embedded61, "x86_64")
		var be *Error
		if !errors.As(err, &be) {
			t.Errorf("%s: %v, want a refusal", c.sql, err)
			continue
		}
		if !strings.Contains(be.Reason, c.want) {
			t.Errorf("%s: %q, want %q", c.sql, be.Reason, c.want)
		}
		if be.Probe == nil && !strings.Contains(c.want, "__probe_ip") {
			t.Errorf("%s: the refusal names no probe: %v", c.sql, err)
		}
		t.Logf("%s: %v", c.sql, err)
	}
	// A riscv64 target's registers are not compiled.
	p := planSQL(t, `SELECT a, COUNT(*) FROM uprobe('/bin/true', 0x1000, a=%sp) GROUP BY a`)
	if _, err := p.engine(embedded61, "riscv64"); err == nil || !strings.Contains(err.Error(), "x86_64 and arm64") {
		t.Errorf("riscv64: %v, want the architectures refused", err)
	}
}

// TestProbeNoPMU: without the kernel's perf kprobe PMU (this host's
// kernel has no kprobes; the test points the engine at a directory
// without one elsewhere), a kprobe is refused before anything is loaded
// or written, with the reason.
func TestProbeNoPMU(t *testing.T) {
	dir := t.TempDir()
	old := pmuDir
	pmuDir = dir
	defer func() { pmuDir = old }()
	p := planSQL(t, `SELECT common_pid, COUNT(*) FROM kprobe(do_sys_openat2) GROUP BY common_pid`)
	e, err := p.engineWith(embedded61, hostArch().Name, true)
	if err != nil {
		t.Fatal(err)
	}
	err = e.Load()
	var be *Error
	if !errors.As(err, &be) || be.Probe == nil || !strings.Contains(be.Reason, "no perf kprobe PMU") {
		t.Fatalf("Load: %v, want the PMU's absence", err)
	}
	if e.coll != nil {
		t.Fatal("loaded")
	}
	t.Log(err)
	// A return probe wants the retprobe bit too.
	if err := os.MkdirAll(filepath.Join(dir, "uprobe"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "uprobe", "type"), []byte("9\n"), 0o644)
	if _, _, err := pmu("uprobe", true); err == nil || !strings.Contains(err.Error(), "no return probes") {
		t.Errorf("uprobe without format/retprobe: %v", err)
	}
	if typ, cfg, err := pmu("uprobe", false); err != nil || typ != 9 || cfg != 0 {
		t.Errorf("uprobe: %d %d %v", typ, cfg, err)
	}
	os.MkdirAll(filepath.Join(dir, "uprobe", "format"), 0o755)
	os.WriteFile(filepath.Join(dir, "uprobe", "format", "retprobe"), []byte("config:0\n"), 0o644)
	if typ, cfg, err := pmu("uprobe", true); err != nil || typ != 9 || cfg != 1 {
		t.Errorf("uretprobe: %d %d %v", typ, cfg, err)
	}
}

// workC is the uprobe tests' workload: work(a, b, s) is called n times
// (argv[1]) once a byte comes on stdin, with a = i%5 - 2, b = 7 and s
// "odd" or "even" as i is; it returns a*1000 - b.
const workC = `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) long work(long a, long b, const char *s) {
	__asm__ volatile("" ::: "memory");
	return a * 1000 - b + (s[0] == 'x');
}
int main(int argc, char **argv) {
	int n = atoi(argv[1]);
	char c;
	/* The strings' page in memory before the probes read it: a BPF
	   program's reads do not fault pages in, the kernel's uprobe
	   fetches do. */
	if (!puts("odd") || !puts("even"))
		return 1;
	if (read(0, &c, 1) != 1)
		return 1;
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += work(i % 5 - 2, 7, i % 2 ? "odd" : "even");
	printf("%ld\n", sum);
	return 0;
}
`

// buildWork compiles workC with the host's C compiler.
func buildWork(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler for the uprobe workload")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "work.c")
	if err := os.WriteFile(src, []byte(workC), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "work")
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// runWork runs the workload for n calls once the engine is attached.
func runWork(t *testing.T, bin string, n string) {
	t.Helper()
	cmd := exec.Command(bin, n)
	cmd.Stdin = strings.NewReader("g")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the workload: %v\n%s", err, out)
	}
}

// TestHostUprobes attaches a uprobe and a uretprobe to a function of a
// test binary called a known number of times with known arguments, and
// checks the counts by argument, string and return value, and the JOIN of
// the two (the function's latency: every call counted once).
func TestHostUprobes(t *testing.T) {
	if !inTracefs(t) {
		return
	}
	if _, _, err := pmu("uprobe", true); err != nil {
		t.Skip(err)
	}
	bin := buildWork(t)
	const n = 1000
	sql := `SELECT a, s, COUNT(*) FROM uprobe('` + bin + `', work, a=%di:s32, b=%si:u8, s=+0(%dx):string) WHERE b == 7 GROUP BY a, s;
SELECT r, c, COUNT(*) FROM uretprobe('` + bin + `', work, r=$retval:s64, c=$comm) GROUP BY r, c;
SELECT CAST(TIMESTAMP_DELTA AS LOG2) AS ns, COUNT(*) FROM uprobe('` + bin + `', work) AS start JOIN uretprobe('` + bin + `', work) AS end ON start.common_pid = end.common_pid GROUP BY ns`
	p := planSQL(t, sql)
	e, err := p.engine(hostFormat, hostArch().Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if len(e.probeFDs) != 4 {
		t.Errorf("%d probes attached, want 4 (the JOIN's have no arguments: other definitions)", len(e.probeFDs))
	}
	checkPerfLinks(t, e)
	runWork(t, bin, "1000")
	hs, err := e.Read()
	if err != nil {
		t.Fatal(err)
	}
	// By argument and string: i%10 gives (i%5-2, odd/even), 100 each.
	byArg := map[string]uint64{}
	for _, ent := range hs[p.result(0)].Entries {
		a := int32(uint32(ent.Keys[0].Num))
		k := itoa(int64(a)) + " " + ent.Keys[1].Text
		byArg[k] += ent.Values[0].Num
	}
	for a := -2; a <= 2; a++ {
		for _, s := range []string{"odd", "even"} {
			k := itoa(int64(a)) + " " + s
			if byArg[k] != n/10 {
				t.Errorf("uprobe a=%d s=%s: %d calls, want %d (all: %v)", a, s, byArg[k], n/10, byArg)
			}
		}
	}
	if len(byArg) != 10 {
		t.Errorf("uprobe: %d keys, want 10: %v", len(byArg), byArg)
	}
	// By return value: a*1000 - 7, 200 each, all in the workload's
	// task.
	byRet := map[int64]uint64{}
	for _, ent := range hs[p.result(1)].Entries {
		byRet[int64(ent.Keys[0].Num)] += ent.Values[0].Num
		if ent.Keys[1].Text != filepath.Base(bin) {
			t.Errorf("uretprobe: $comm %q, want %q", ent.Keys[1].Text, filepath.Base(bin))
		}
	}
	for a := int64(-2); a <= 2; a++ {
		if byRet[a*1000-7] != n/5 {
			t.Errorf("uretprobe r=%d: %d returns, want %d (all: %v)", a*1000-7, byRet[a*1000-7], n/5, byRet)
		}
	}
	if len(byRet) != 5 {
		t.Errorf("uretprobe: %d keys, want 5: %v", len(byRet), byRet)
	}
	// The JOIN: every call's latency once.
	var joined uint64
	for _, ent := range hs[p.result(2)].Entries {
		joined += ent.Values[0].Num
		t.Logf("latency ~2^%d ns: %d", ent.Keys[0].Num, ent.Values[0].Num)
	}
	if joined != n {
		t.Errorf("the JOIN counted %d calls, want %d", joined, n)
	}
	t.Logf("uprobe %v; uretprobe %v; JOIN %d", byArg, byRet, joined)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkPerfLinks checks that each probe's program is attached through a
// BPF link (its second fd, whose fdinfo says "link_type:\tperf"), or,
// where a probe has none, that this kernel refuses to make one.
func checkPerfLinks(t *testing.T, e *Engine) {
	t.Helper()
	for i, fds := range e.probeFDs {
		switch len(fds) {
		case 1:
			if fd, err := perfLink(e.coll.Programs[progName(0)].FD(), fds[0]); err == nil {
				closeFD(fd)
				t.Errorf("probe %d: attached without a BPF link where the kernel makes one", i)
			}
		case 2:
			b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fds[1]))
			if err != nil || !strings.Contains(string(b), "link_type:\tperf") {
				t.Errorf("probe %d: fd %d is not a perf event's BPF link (%v):\n%s", i, fds[1], err, b)
			}
		default:
			t.Errorf("probe %d: %d fds", i, len(fds))
		}
	}
}
