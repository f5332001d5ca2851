package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVerdictLatencyBounds: systematic implausible latencies fail a case,
// an isolated outlier is reported but does not; a negative latency
// (wrapped to u64: clock skew between CPUs) likewise, but one among few
// lines is an outlier however few they are.
func TestVerdictLatencyBounds(t *testing.T) {
	c := kernelCase{name: "x", bounds: map[string]string{"lat": "us"}}
	const (
		tooLong  = "99999999999"          // 27 h, past the 1 s installed
		negative = "18446744073709538298" // -13318 wrapped
	)
	mk := func(bad string, nbad, good int) *caseResult {
		r := &caseResult{compile: 0, setup: 0, teardown: 0, elapsedUS: 1000000,
			commands: "echo 's:wl u64 lat' >> /sys/kernel/tracing/dynamic_events\n", hists: map[string]string{}}
		for i := 0; i < good; i++ {
			r.trace = append(r.trace, fmt.Sprintf("  sh-1 [000] d..4. 1.%06d: wl: lat=%d", i, 100+i))
		}
		for i := 0; i < nbad; i++ {
			r.trace = append(r.trace, "  sh-1 [000] d..4. 2.000000: wl: lat="+bad)
		}
		return r
	}
	tests := []struct {
		bad      string
		nbad     int
		good     int
		fail     string // the problem's word, or ""
		outliers int
	}{
		{tooLong, 0, 20, "", 0},
		{tooLong, 1, 19, "", 1},            // 5%: an outlier
		{tooLong, 3, 17, "implausible", 0}, // 15%: systematic
		{tooLong, 5, 0, "implausible", 0},  // all wrong
		{negative, 1, 19, "", 1},           // clock skew once
		{negative, 1, 4, "", 1},            // once among few lines
		{negative, 3, 17, "negative", 0},   // 15%: systematic
		{negative, 5, 0, "negative", 0},    // all wrapped: a lowering bug
	}
	for _, tt := range tests {
		problems, outliers, _, fired, _ := verdict(c, mk(tt.bad, tt.nbad, tt.good))
		failed := ""
		for _, p := range problems {
			for _, w := range []string{"implausible", "negative"} {
				if strings.Contains(p, "latencies "+w) {
					failed = w
				}
			}
		}
		if failed != tt.fail || len(outliers) != tt.outliers || !fired {
			t.Errorf("%d of %s among %d: failed %q (want %q), outliers %d (want %d), fired %v; problems %q",
				tt.nbad, tt.bad, tt.nbad+tt.good, failed, tt.fail, len(outliers), tt.outliers, fired, problems)
		}
	}
}

// TestVerdictWants: a "want FIELD VALUE" line fails a case unless some
// line of its synthetic events carries exactly that value.
func TestVerdictWants(t *testing.T) {
	c := kernelCase{name: "x", bounds: map[string]string{}, wants: [][2]string{{"filename", "/etc/passwd"}}}
	mk := func(lines ...string) *caseResult {
		return &caseResult{commands: "echo 's:op char filename[]; long ret' >> /sys/kernel/tracing/dynamic_events\n",
			hists: map[string]string{}, trace: lines}
	}
	tests := []struct {
		lines []string
		ok    bool
	}{
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=/etc/passwd ret=3"}, true},
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=/etc/passwd.bak ret=3"}, false},
		{[]string{"  cat-9 [000] ...1. 1.0: op: filename=140725713398952 ret=3"}, false},
		{[]string{"  cat-9 [000] ...1. 1.0: other: filename=/etc/passwd"}, false},
	}
	for _, tt := range tests {
		problems, _, _, _, _ := verdict(c, mk(tt.lines...))
		if ok := len(problems) == 0; ok != tt.ok {
			t.Errorf("%q: ok %v, want %v (problems %q)", tt.lines, ok, tt.ok, problems)
		}
	}
}

// TestMaskDemo: only the demo binary's offsets and the target line are
// masked.
func TestMaskDemo(t *testing.T) {
	in := "# sqlhist: compiled for Linux 6.1.0-56-cloud-amd64 x86_64 (event formats: tracefs /sys/kernel/tracing)\n" +
		"# uprobe: main.work in /work/bin/demo is at file offset 0x1345\n" +
		"echo 'p:sqlhist/demo_main_work /work/bin/demo:0x1345 n=%ax:s64' >> x\n" +
		"echo 'p:sqlhist/app /usr/bin/app:0x1345' >> x\n"
	want := "# sqlhist: compiled for TARGET\n" +
		"# uprobe: main.work in /work/bin/demo is at file offset OFFSET\n" +
		"echo 'p:sqlhist/demo_main_work /work/bin/demo:OFFSET n=%ax:s64' >> x\n" +
		"echo 'p:sqlhist/app /usr/bin/app:0x1345' >> x\n"
	if got := maskDemo(in); got != want {
		t.Errorf("maskDemo:\n%s\nwant\n%s", got, want)
	}
}

// TestVerdictSums: a chain's total must equal the sum of its steps on
// every line; a line that breaks it, or no line with the fields, fails.
func TestVerdictSums(t *testing.T) {
	c := kernelCase{name: "x", sums: [][]string{{"total", "wake", "queue"}}}
	mk := func(lines ...string) *caseResult {
		return &caseResult{commands: "echo 's:ch u64 wake; u64 queue; u64 total' >> /sys/kernel/tracing/dynamic_events\n",
			hists: map[string]string{}, trace: lines}
	}
	for _, tt := range []struct {
		lines []string
		fail  string
	}{
		{[]string{"sh-1 [000] d..4. 1.0: ch: wake=10 queue=5 total=15", "sh-1 [000] d..4. 1.1: ch: wake=1 queue=2 total=3"}, ""},
		{[]string{"sh-1 [000] d..4. 1.0: ch: wake=10 queue=5 total=15", "sh-1 [000] d..4. 1.1: ch: wake=1 queue=2 total=4"}, "total=4 but wake+queue add up to 3"},
		{[]string{"sh-1 [000] d..4. 1.0: ch: wake=10 total=15"}, "no synthetic event line has all of these fields"},
	} {
		problems, _, _, _, _ := verdict(c, mk(tt.lines...))
		got := strings.Join(problems, "\n")
		if tt.fail == "" && got != "" || tt.fail != "" && !strings.Contains(got, tt.fail) {
			t.Errorf("lines %q: problems %q, want %q", tt.lines, got, tt.fail)
		}
	}
}

// TestVerdictHitSums: the rows of a histogram on a synthetic event must
// add up to its hits, with nothing dropped.
func TestVerdictHitSums(t *testing.T) {
	commands := "echo 's:ag u64 lat' >> /sys/kernel/tracing/dynamic_events\n" +
		"echo 'hist:keys=lat.log2' >> /sys/kernel/tracing/events/synthetic/ag/trigger\n"
	hist := func(rows string, hits, dropped int) map[string]string {
		return map[string]string{"/sys/kernel/tracing/events/synthetic/ag/hist": fmt.Sprintf("# event histogram\n%s\nTotals:\n    Hits: %d\n    Entries: 2\n    Dropped: %d\n", rows, hits, dropped)}
	}
	rows := "{ lat: ~ 2^3 } hitcount:          2\n{ lat: ~ 2^5 } hitcount:          5\n"
	for _, tt := range []struct {
		hists map[string]string
		fail  string
	}{
		{hist(rows, 7, 0), ""},
		{hist(rows, 8, 0), ""}, // an event while the file was printed
		{hist(rows, 11, 0), "rows count 7 events, the histogram's hits are 11"},
		{hist(rows, 6, 0), "rows count 7 events, the histogram's hits are 6"},
		{hist(rows, 7, 3), "entries dropped"},
		// 2 of 479 lost to the kernel's insert race in a map far from full.
		{hist("{ lat: ~ 2^3 } hitcount:        477\n", 477, 2), ""},
		{hist("{ lat: ~ 2^3 } hitcount:        477\n", 477, 6), "entries dropped"},
		{hist("", 0, 0), "counted no event"},
	} {
		c := kernelCase{name: "x", hitsum: true, nofire: "not the point here"}
		r := &caseResult{commands: commands, hists: tt.hists, trace: []string{"sh-1 [000] d..4. 1.0: ag: lat=3"}}
		problems, _, _, _, _ := verdict(c, r)
		got := strings.Join(problems, "\n")
		if tt.fail == "" && got != "" || tt.fail != "" && !strings.Contains(got, tt.fail) {
			t.Errorf("problems %q, want %q", got, tt.fail)
		}
	}
}

// TestVerdictSames: two fields that must agree on every line.
func TestVerdictSames(t *testing.T) {
	c := kernelCase{name: "x", sames: [][2]string{{"prev", "prevc"}}}
	r := func(lines ...string) *caseResult {
		return &caseResult{commands: "echo 's:cm char prev[16]; char prevc[16]' >> /sys/kernel/tracing/dynamic_events\n",
			hists: map[string]string{}, trace: lines}
	}
	if p, _, _, _, _ := verdict(c, r("sh-1 [000] d..4. 1.0: cm: prev=sh prevc=sh")); len(p) != 0 {
		t.Errorf("equal fields: %v", p)
	}
	if p, _, _, _, _ := verdict(c, r("sh-1 [000] d..4. 1.0: cm: prev=sh prevc=sh", "sh-1 [000] d..4. 1.1: cm: prev=(efault) prevc=ls")); !strings.Contains(strings.Join(p, "\n"), "prev=(efault) but prevc=ls") {
		t.Errorf("different fields: %v", p)
	}
}

// TestVerdictFieldValues: every line of a synthetic event has its declared
// fields, in order, with values of their kind. Lines of 6.1 pass; the
// lines 5.10.262 printed for the same definitions fail (the string stored
// twice: "(efault)", the separator lost, the pid the low half of a
// pointer, the latency the pid and stale bytes), and so do a pid past
// pid_max, a task name the guest never had and a line with a field too
// many or too few.
func TestVerdictFieldValues(t *testing.T) {
	const wl = "echo 's:wl char name[16]; pid_t pid; u64 latency' >> /sys/kernel/tracing/dynamic_events\n"
	tasks := map[string]bool{"sh": true, "dd": true, "sleep": true, "kworker/1:1": true}
	for _, tt := range []struct {
		commands string
		line     string
		fail     string // "" for a line that passes
	}{
		// 6.1 (Debian's 6.1.0-56, the same definition).
		{wl, "<idle>-0       [000] d..5.     6.058652: wl: name=kworker/u8:1 pid=30 latency=387", ""},
		{wl, "<idle>-0       [001] d..5.     6.067020: wl: name=rcu_sched pid=11 latency=315", ""},
		{wl, "<idle>-0       [000] d..5.     6.094250: wl: name=sh pid=149 latency=346", ""},
		{wl, "<idle>-0       [000] d..5.     6.094250: wl: name=ksoftirqd/1 pid=18 latency=46", ""},
		// 5.10.262: layout A (today's), its VM reproduction, and a comm
		// with the corrupted pid read right after it.
		{wl, "<idle>-0       [001] d..5.    14.217312: wl: name=(efault)rcu_schedpid=36671232 latency=9443900388253106187", "(efault)"},
		{wl, "<idle>-0       [001] d..5.    14.217312: wl: name=(efault)rcu_schedpid=36671232 latency=9443900388253106187", "in that order and nothing else"},
		{wl, "<idle>-0       [000] d..5.     3.100000: wl: name=(efault)rcu_schedpid=12189184 latency=5956417532658188299", "(efault)"},
		// Layout C (string last): the numbers are right, the string not.
		{"echo 's:wl pid_t pid; u64 latency; char name[16]' >> /sys/kernel/tracing/dynamic_events\n",
			"<idle>-0 [000] d..5. 3.1: wl: pid=11 latency=101 name=(efault)rcu_sched", "(efault)"},
		// Layout D (dynamic string last): the string is lost.
		{"echo 's:wl pid_t pid; u64 latency; char name[]' >> /sys/kernel/tracing/dynamic_events\n",
			"<idle>-0 [000] d..5. 3.1: wl: pid=11 latency=81 name=(efault)", "(efault)"},
		// Two strings: the second empty, the separator gone.
		{"echo 's:wl pid_t pid; u64 lat; char pc[16]; char sc[16]' >> /sys/kernel/tracing/dynamic_events\n",
			"<idle>-0 [000] d..5. 3.1: wl: pid=11 lat=1315 pc=(efault)swapper/1sc=(efault)", "(efault)"},
		// The pid alone wrong (the low half of a kernel pointer).
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=sh pid=36671232 latency=387", "is no pid (pid_max 32768)"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=sh pid=-1 latency=387", "is no pid"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=ghost pid=30 latency=387", "name=ghost is no task the guest had"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name= pid=30 latency=387", "empty or not printable"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=sh pid=30", "in that order"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=sh pid=30 latency=387 extra=1", "in that order"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: pid=30 name=sh latency=387", "in that order"},
		{wl, "<idle>-0 [000] d..5. 3.1: wl: name=sh pid=30 latency=0x183", "latency is not a number"},
		// A file name may hold anything printable; an int named *_pid is a pid.
		{"echo 's:op char filename[]; int waking_pid; long ret' >> /sys/kernel/tracing/dynamic_events\n",
			"cat-9 [000] ...1. 1.0: op: filename=/tmp/a b waking_pid=9 ret=-2", ""},
		{"echo 's:op char filename[]; int waking_pid; long ret' >> /sys/kernel/tracing/dynamic_events\n",
			"cat-9 [000] ...1. 1.0: op: filename=/tmp/a waking_pid=99999 ret=-2", "waking_pid=99999 is no pid"},
		// A stack ends the line (its frames and the fields after it follow
		// on lines of their own).
		{"echo 's:blocked unsigned long stack[]; u64 lat' >> /sys/kernel/tracing/dynamic_events\n",
			"<idle>-0 [000] d..5. 4.8: blocked: stack=STACK:", ""},
		// synthetic_events' form.
		{"echo 'wl char comm[16]; u64 lat' >> /sys/kernel/tracing/synthetic_events\n",
			"<idle>-0 [000] d..5. 4.8: wl: comm=swapper/0 lat=5", ""},
	} {
		r := &caseResult{commands: tt.commands, hists: map[string]string{}, trace: []string{tt.line}, pidMax: 32768, tasks: tasks}
		got := strings.Join(checkFields(r.commands, r.trace, r), "\n")
		if tt.fail == "" && got != "" || tt.fail != "" && !strings.Contains(got, tt.fail) {
			t.Errorf("%q: problems %q, want %q", tt.line, got, tt.fail)
		}
	}
	// Through verdict, as the suite calls it.
	r := &caseResult{commands: wl, hists: map[string]string{}, pidMax: 32768, tasks: tasks,
		trace: []string{"<idle>-0 [001] d..5. 14.2: wl: name=(efault)rcu_schedpid=36671232 latency=9443900388253106187"}}
	if p, _, _, _, _ := verdict(kernelCase{name: "x"}, r); len(p) == 0 {
		t.Errorf("verdict passes 5.10.262's corrupted line")
	}
}

// TestSplitPhases: each phase's output and guest time come from
// phaseScript's markers; a phase whose end marker never came is not done,
// and a stray end marker closes nothing.
func TestSplitPhases(t *testing.T) {
	out := "boot noise\n" +
		"@@@phase execute 10.50\n@@apply 0\n@@done\n@@@endphase execute 0 12.75\n" +
		"@@@endphase queries 0 13.00\n" +
		"@@@phase queries 13.00\n@@case a\n@@@endphase run 0 20.00\n@@end\n@@@endphase queries 0 313.00\n" +
		"@@@phase run 313.25\n@@join-exit 0\n"
	m := splitPhases(out)
	// With the guest's busy ticks on the markers (phaseScript's).
	if b := splitPhases("@@@phase audit 1.00 120\n@@x\n@@@endphase audit 0 3.00 370\n")["audit"]; b == nil || !b.done || b.out != "@@x\n" || b.took != 2*time.Second || b.busy != 2500*time.Millisecond {
		t.Errorf("audit with busy ticks: %+v", b)
	}
	if e := m["execute"]; e == nil || !e.done || e.out != "@@apply 0\n@@done\n" || e.took != 2250*time.Millisecond {
		t.Errorf("execute: %+v", e)
	}
	if q := m["queries"]; q == nil || !q.done || q.out != "@@case a\n@@@endphase run 0 20.00\n@@end\n" || q.took != 300*time.Second {
		t.Errorf("queries: %+v", q)
	}
	if r := m["run"]; r == nil || r.done || r.out != "@@join-exit 0\n" {
		t.Errorf("run: %+v", r)
	}
	// Each phase in turn, in a shell of its own, between its markers; RCU
	// expedited only around the phases that ask, and put back after.
	s := phaseScript([]phase{{name: "execute", expedite: true}, {name: "run"}})
	want := []string{
		`echo "@@@phase execute `, `echo 1 > /sys/kernel/rcu_expedited`, `sh /work/phases/execute.sh`,
		`echo "@@@endphase execute $? `, `echo $rcu > /sys/kernel/rcu_expedited`,
		`echo "@@@phase run `, `sh /work/phases/run.sh`, `echo "@@@endphase run $? `}
	rest := s
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("phaseScript lacks %q in its place:\n%s", w, s)
		}
		rest = rest[i+len(w):]
	}
	if strings.Contains(rest, "rcu_expedited") || strings.Count(s, "echo 1 > /sys/kernel/rcu_expedited") != 1 {
		t.Errorf("phaseScript expedites a phase that did not ask:\n%s", s)
	}
}

// TestRefusalReleaseMasked: a refusal on a kernel Debian has updated since
// the catalog was captured matches the golden's when only the release in
// parentheses differs, and not when the version does.
func TestRefusalReleaseMasked(t *testing.T) {
	golden := "query.sql:3:8: COMM needs Linux 6.16 (the COMM hist key); this target is Linux 6.12 (6.12.117+deb13-cloud-amd64)\n"
	c := kernelCase{name: "c", exit: map[string]int{"": 0, "6.12": 1}, stderr: map[string]string{"6.12": golden}}
	r := &caseResult{compile: 1, refuseExec: 1,
		stderr:    strings.Replace(golden, "117", "118", 1),
		refuseLog: strings.Replace(golden, "117", "118", 1)}
	if p := checkRefusal(c, "6.12", 1, r); len(p) != 0 {
		t.Errorf("another point release: %q", p)
	}
	r.stderr = strings.Replace(golden, "Linux 6.12", "Linux 6.13", 1)
	r.refuseLog = r.stderr
	if p := checkRefusal(c, "6.12", 1, r); len(p) != 1 || !strings.Contains(p[0], "the golden's diagnostic") {
		t.Errorf("another version: %q", p)
	}
}

// TestUprobeCounts: the demo's five calls counted as often each, or one
// more for the calls of a run the collection cut; never two apart, never
// a value missing.
func TestUprobeCounts(t *testing.T) {
	rows := func(counts ...float64) []map[string]any {
		var r []map[string]any
		for i, c := range counts {
			if c >= 0 {
				r = append(r, map[string]any{"n": float64(10 * (i + 1)), "c": c})
			}
		}
		return r
	}
	for _, tt := range []struct {
		counts []float64
		ok     bool
	}{
		{[]float64{16, 16, 16, 16, 16}, true},
		{[]float64{17, 17, 16, 16, 16}, true}, // seen on 6.1-arm64: the window ended mid-run
		{[]float64{16, 17, 17, 16, 16}, true},
		{[]float64{18, 17, 16, 16, 16}, false},
		{[]float64{16, 16, -1, 16, 16}, false},
		{[]float64{0, 0, 0, 0, 0}, false},
	} {
		if p := uprobeProblem(rows(tt.counts...)); (p == "") != tt.ok {
			t.Errorf("counts %v: %q, want ok %v", tt.counts, p, tt.ok)
		}
	}
}

// TestSchedule: at most slots at once, a build counting two; builds one
// after another before the jobs that boot their kernels; every job once;
// the longest ready job first.
func TestSchedule(t *testing.T) {
	for _, slots := range []int{1, 2, 3, 4} {
		jobs := []job{{kernel: "a", cost: 9}, {kernel: "b", cost: 8, build: true}, {kernel: "c", cost: 7},
			{kernel: "d", cost: 6, build: true}, {kernel: "e", cost: 5}, {kernel: "f", cost: 1}}
		var mu sync.Mutex
		load, peak, building := 0, 0, 0
		built := map[string]bool{}
		ran := map[string]int{}
		var started []string
		enter := func(w int) {
			mu.Lock()
			load += w
			peak = max(peak, load)
			mu.Unlock()
		}
		leave := func(w int) {
			mu.Lock()
			load -= w
			mu.Unlock()
		}
		schedule(jobs, slots, func(k string) {
			mu.Lock()
			building++
			if building > 1 {
				t.Errorf("slots %d: two builds at once", slots)
			}
			mu.Unlock()
			enter(min(2, slots))
			time.Sleep(3 * time.Millisecond)
			leave(min(2, slots))
			mu.Lock()
			building--
			built[k] = true
			mu.Unlock()
		}, func(j job) {
			mu.Lock()
			if j.build && !built[j.kernel] {
				t.Errorf("slots %d: %s started before its build", slots, j.kernel)
			}
			ran[j.kernel]++
			started = append(started, j.kernel)
			mu.Unlock()
			enter(1)
			time.Sleep(2 * time.Millisecond)
			leave(1)
		})
		if peak > slots {
			t.Errorf("slots %d: %d at once", slots, peak)
		}
		if len(ran) != len(jobs) || len(built) != 2 {
			t.Errorf("slots %d: ran %v, built %v", slots, ran, built)
		}
		for k, n := range ran {
			if n != 1 {
				t.Errorf("slots %d: %s ran %d times", slots, k, n)
			}
		}
		// The first jobs started are the longest ready ones, as many as
		// there are slots beside the builder (all of them after it with
		// fewer than three).
		first := map[int]string{1: "a", 2: "a b", 3: "a", 4: "a c"}[slots]
		got := append([]string(nil), started[:len(strings.Fields(first))]...)
		sort.Strings(got)
		if strings.Join(got, " ") != first {
			t.Errorf("slots %d: started %v, want %s first", slots, started, first)
		}
	}
}

// TestStreamProblem: a stream summary agrees with the lines streamed when
// each synthetic event's streamed count is what the kernel counted plus
// what it left out for a negative latency plus the insert race's drops
// (at most 1%), through --via too (its lines name the transport).
func TestStreamProblem(t *testing.T) {
	const via = "sqlhist: 'sockcat' 'via.sock': "
	for _, c := range []struct {
		stderr string
		n      int
		ok     bool
	}{
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1301 (entries 30, dropped 0)\n", 1301, true},
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1299 (entries 30, dropped 0)\n" +
			"sqlhist: warning: synthetic/wl: 2 events had a negative lat (the end stamped before the start: clock skew between CPUs); they are not in the results\n", 1301, true},
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1299 (entries 30, dropped 0)\n", 1301, false},
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1299 (entries 30, dropped 2)\n", 1301, true},
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1201 (entries 30, dropped 100)\n", 1301, false},
		{"sqlhist: synthetic/wl: 1301 events streamed; the kernel counted 1301 (entries 30, dropped 0)\n", 1300, false},
		{via + "synthetic/op: 90 events streamed; the kernel counted 90 (entries 30, dropped 0)\n", 90, true},
		{via + "synthetic/op: 90 events streamed; the kernel counted 89 (entries 30, dropped 0)\n" + via + "warning: synthetic/op: 1 events had a negative lat (…)\n", 90, true},
		{"sqlhist: collecting for 2s\n", 90, false},
		{"sqlhist: synthetic/wl: 10 events streamed; the kernel counted 10 (entries 3, dropped 0)\nsqlhist: warning: the kernel lost 4 events\n", 10, false},
	} {
		if p := streamProblem(c.stderr, c.n); (p == "") != c.ok {
			t.Errorf("%d lines, stderr:\n%sproblem %q, want ok %v", c.n, c.stderr, p, c.ok)
		}
	}
}
