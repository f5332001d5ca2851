package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxBatch is the most golden cases guest.sh applies at once and runs one
// workload for: eight cases' synthetic events fit in the trace buffer the
// script sets (8 MiB a CPU), and a batch's cases are torn down one by one.
const maxBatch = 8

// caseUse is what one case's script makes and reads in a kernel, for
// telling the cases that can share a batch.
type caseUse struct {
	names    []string        // events it defines (synthetic, probes), and its named triggers' name=
	triggers map[string]bool // trigger files it writes to → whose hist file a check reads
	instance string          // the instance of its -B, created for it
	snapshot bool            // a trigger takes snapshots (one an instance: EBUSY)
}

var (
	writeLineRE = regexp.MustCompile(`(?m)^(?:echo|printf '%s\\n') '([^']*)' >> (\S+)$`)
	namedRE     = regexp.MustCompile(`:name=([A-Za-z0-9_]+)`)
)

// useOf reads a case's expected script for kernel key. A hist file is
// read by a check when the case's e2e section checks its histograms'
// values, or when the trigger is a plain histogram (no variables, no
// handler), whose hits tell whether the case fired; a join trigger's
// hist file is read by neither.
func useOf(c kernelCase, key string) caseUse {
	u := caseUse{triggers: map[string]bool{}}
	prev := ""
	for _, a := range strings.Fields(string(c.args)) {
		if prev == "-B" || prev == "--instance" {
			u.instance = a
		}
		if v, ok := strings.CutPrefix(a, "--instance="); ok {
			u.instance = v
		}
		prev = a
	}
	code, script := c.expect(key)
	if code != 0 {
		return u
	}
	histv := len(c.histv.tracked)+len(c.histv.maxstream)+len(c.histv.valtimes) > 0 || c.histv.percent
	plain := map[string]bool{}
	for _, f := range histogramTriggers(script) {
		plain[f] = true
	}
	for _, m := range writeLineRE.FindAllStringSubmatch(script, -1) {
		spec, file := m[1], m[2]
		if strings.HasPrefix(spec, "!") || strings.HasPrefix(spec, "-") {
			continue
		}
		switch {
		case strings.HasSuffix(file, "/trigger"):
			u.triggers[file] = u.triggers[file] || histv || plain[file] || !strings.HasPrefix(spec, "hist:")
			u.snapshot = u.snapshot || strings.Contains(spec, "snapshot")
			for _, n := range namedRE.FindAllStringSubmatch(spec, -1) {
				u.names = append(u.names, "name="+n[1])
			}
		case strings.HasSuffix(file, "/dynamic_events") || strings.HasSuffix(file, "/synthetic_events"):
			name, _, _ := strings.Cut(spec, " ")
			if _, after, ok := strings.Cut(name, ":"); ok {
				name = after
			}
			u.names = append(u.names, name[strings.LastIndex(name, "/")+1:])
		}
	}
	return u
}

// conflicts reports whether two cases cannot share a batch: they define
// an event or a named trigger of the same name, use the same instance,
// both take snapshots (the kernel keeps one conditional snapshot an
// instance, and refuses a second trigger with EBUSY), or write the same
// trigger file when one of them reads its hist file (the other's
// histogram would be in it).
func (u caseUse) conflicts(o caseUse) bool {
	if u.snapshot && o.snapshot {
		return true
	}
	for _, n := range u.names {
		if slices.Contains(o.names, n) {
			return true
		}
	}
	if u.instance != "" && u.instance == o.instance {
		return true
	}
	for f, read := range u.triggers {
		if oread, ok := o.triggers[f]; ok && (read || oread) {
			return true
		}
	}
	return false
}

// planBatches groups the cases for kernel key into batches of at most
// maxBatch that do not conflict, each case in the first batch it fits,
// in the cases' order.
func planBatches(cases []kernelCase, key string) [][]string {
	var batches [][]string
	var uses [][]caseUse
	for _, c := range cases {
		u := useOf(c, key)
		placed := false
		for i := range batches {
			if len(batches[i]) >= maxBatch || slices.ContainsFunc(uses[i], u.conflicts) {
				continue
			}
			batches[i], uses[i] = append(batches[i], c.name), append(uses[i], u)
			placed = true
			break
		}
		if !placed {
			batches, uses = append(batches, []string{c.name}), append(uses, []caseUse{u})
		}
	}
	return batches
}

// TestPlanBatches: cases that define the same event, or share a trigger
// file whose hist file is checked, go to different batches; join
// triggers on the same event share one.
func TestPlanBatches(t *testing.T) {
	join := func(name, synth string) kernelCase {
		return kernelCase{name: name, golden: map[string]string{"": "echo 's:" + synth + " u64 lat' >> /sys/kernel/tracing/dynamic_events\n" +
			"echo 'hist:keys=pid:" + synth + "_ts=common_timestamp.usecs' >> /sys/kernel/tracing/events/sched/sched_waking/trigger\n" +
			"echo 'hist:keys=next_pid:" + synth + "_lat=common_timestamp.usecs-$" + synth + "_ts:onmatch(sched.sched_waking).trace(" + synth + ",$" + synth + "_lat)' >> /sys/kernel/tracing/events/sched/sched_switch/trigger\n"}}
	}
	hist := func(name string) kernelCase {
		return kernelCase{name: name, golden: map[string]string{"": "echo 'hist:keys=prev_pid' >> /sys/kernel/tracing/events/sched/sched_switch/trigger\n"}}
	}
	checked := join("checked", "ck")
	checked.histv.percent = true
	refused := kernelCase{name: "refused", exit: map[string]int{"": 1}, args: []byte("-B\ninst\n")}
	own := kernelCase{name: "own", golden: map[string]string{"": "echo 'hist:keys=pid' >> /sys/kernel/tracing/instances/inst/events/sched/sched_waking/trigger\n"}, args: []byte("-n\nx\n-B\ninst\n")}
	snap := func(name, synth string) kernelCase {
		c := join(name, synth)
		c.golden[""] = strings.Replace(c.golden[""], ")' >>", "):onmax($"+synth+"_lat).snapshot()' >>", 1)
		return c
	}
	cases := []kernelCase{join("a", "wl"), join("b", "wk"), join("c", "wl"), hist("h1"), hist("h2"), checked, refused, own, snap("s1", "s1"), snap("s2", "s2")}
	got := planBatches(cases, "6.1")
	want := [][]string{{"a", "b", "refused", "s1"}, {"c", "own", "s2"}, {"h1"}, {"h2"}, {"checked"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("planBatches = %q, want %q", got, want)
	}
	var many []kernelCase
	for i := range 2*maxBatch + 1 {
		many = append(many, join(string(rune('a'+i)), "s"+string(rune('a'+i))))
	}
	if got := planBatches(many, "6.1"); len(got) != 3 || len(got[0]) != maxBatch || len(got[2]) != 1 {
		t.Errorf("%d cases that do not conflict: %d batches (%v), want %d, %d, 1", len(many), len(got), got, maxBatch, maxBatch)
	}
}

// TestParseGuestBatches: a case's three blocks make one result (its
// second error_log is its teardown's), a batch's tasks are every case's,
// and an overrun is reported with its batch.
func TestParseGuestBatches(t *testing.T) {
	out := `@@kernel 6.1.0
@@applets
sh
@@end
@@batch 1 a b
@@case a
@@at 1.0
@@compile 0
@@commands
echo 's:wl u64 lat' >> /sys/kernel/tracing/dynamic_events
@@end
@@case b
@@compile 0
@@commands
echo 's:wk u64 lat' >> /sys/kernel/tracing/dynamic_events
@@end
@@case a
@@setup 0
@@errorlog
@@end
@@case b
@@setup 0
@@errorlog
setup refused
@@end
@@tasks b a
dd
@@overrun 0 12
@@case b
@@rounds 2
@@elapsed_us 5
@@end
@@case a
@@rounds 1
@@elapsed_us 7
@@hist /sys/kernel/tracing/events/sched/sched_switch/hist
Hits: 3
@@end
@@case b
@@trace
  dd-1 [000] d..4. 1.0: wk: lat=1
@@end
@@case a
@@trace
@@end
@@case b
@@teardown 0
@@errorlog
teardown refused
@@statediff
@@end
@@done
`
	rep := parseGuest(out)
	a, b := rep.cases["a"], rep.cases["b"]
	if a == nil || b == nil {
		t.Fatalf("cases %v", rep.cases)
	}
	if a.compile != 0 || a.setup != 0 || a.rounds != 1 || a.elapsedUS != 7 || !strings.Contains(a.commands, "s:wl") || !strings.Contains(a.hists["/sys/kernel/tracing/events/sched/sched_switch/hist"], "Hits: 3") {
		t.Errorf("a: %+v", a)
	}
	if b.rounds != 2 || b.teardown != 0 || b.setupLog != "setup refused\n" || b.tearLog != "teardown refused\n" || len(b.trace) != 1 {
		t.Errorf("b: rounds %d, teardown %d, setup log %q, teardown log %q, trace %q", b.rounds, b.teardown, b.setupLog, b.tearLog, b.trace)
	}
	for _, c := range []*caseResult{a, b} {
		if !c.tasks["dd"] || !c.tasks["sh"] {
			t.Errorf("tasks %v: want the batch's dd and the applet sh", c.tasks)
		}
	}
	if len(rep.overruns) != 1 || !strings.Contains(rep.overruns[0], "batch 1 a b") {
		t.Errorf("overruns %q", rep.overruns)
	}
	if !rep.done {
		t.Errorf("not done")
	}
}

// TestPlanBatchesIgnoreComments: the golden scripts' # lines (the target
// line, a JOIN's fields, how to read the answer) change no batch: the
// real cases are planned the same with them and without them.
func TestPlanBatchesIgnoreComments(t *testing.T) {
	cases := loadCases(t)
	bare := make([]kernelCase, len(cases))
	comments := 0
	for i, c := range cases {
		bare[i] = c
		bare[i].golden = map[string]string{}
		for k, s := range c.golden {
			var kept []string
			for _, l := range strings.SplitAfter(s, "\n") {
				if strings.HasPrefix(l, "#") {
					comments++
					continue
				}
				kept = append(kept, l)
			}
			bare[i].golden[k] = strings.Join(kept, "")
		}
	}
	if comments == 0 {
		t.Fatal("the golden scripts have no # lines: nothing is tested")
	}
	for _, k := range []string{"6.1", "5.10", "7.2"} {
		if got, want := planBatches(cases, k), planBatches(bare, k); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: with the # lines %q, without %q", k, got, want)
		}
	}
}
