package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// stackHist is the plan of SELECT common_cpu, STACKTRACE, COUNT(*).
func stackHist() *planner.Hist {
	return &planner.Hist{System: "sched", Event: "sched_switch", Keys: planner.MustExprs("common_cpu", "common_stacktrace"),
		Columns: []planner.Column{{Label: "common_cpu", Kind: planner.ColKey}, {Label: "STACKTRACE", Kind: planner.ColKey, Index: 1},
			{Label: "count", Kind: planner.ColCount}}}
}

// readSample reads a hist file the kernel printed (tracefs/testdata).
func readSample(t *testing.T, name string) *tracefs.Histogram {
	t.Helper()
	b, err := os.ReadFile("../tracefs/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return parseOne(t, string(b))
}

// Every stack is a row of its own with its own count: 6.12's hist of
// sched_switch keyed by CPU and stack (ten entries, 55 hits) gives ten
// rows in the table, JSON and CSV. Before, every entry had the same
// identity (a stack's printed value was empty) and all were folded into
// the first row.
func TestStacksAreRows(t *testing.T) {
	for _, name := range []string{"hist-6.12-stacktrace.txt", "hist-7.2-stacktrace.txt", "hist-6.1-stacktrace.txt"} {
		t.Run(name, func(t *testing.T) {
			got := readSample(t, name)
			res := NewResult(&planner.Unit{}, stackHist(), got)
			if len(res.Rows) != len(got.Entries) || len(res.Rows) < 9 {
				t.Fatalf("%d rows for %d entries", len(res.Rows), len(got.Entries))
			}
			seen := map[string]bool{}
			var sum uint64
			for _, r := range res.Rows {
				k := r.Cells[0].Text + "/" + r.Cells[1].Text
				if seen[k] || len(r.Cells[1].Frames) < 5 || r.Cells[1].Frames[0][:10] != "__schedule" {
					t.Errorf("row %q: repeated, or frames %v", k, r.Cells[1].Frames)
				}
				seen[k] = true
				sum += r.Count
			}
			if sum != got.Totals.Hits {
				t.Errorf("rows count %d, the kernel's hits %d", sum, got.Totals.Hits)
			}
			var js bytes.Buffer
			if err := Write(&js, []*Result{res}, "json"); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Results []struct{ Rows []map[string]any }
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.Results[0].Rows) != len(res.Rows) {
				t.Fatalf("JSON: %v, %d rows", err, len(doc.Results[0].Rows))
			}
			if fr, _ := doc.Results[0].Rows[0]["STACKTRACE"].([]any); len(fr) != len(res.Rows[0].Cells[1].Frames) {
				t.Errorf("JSON stack: %v", doc.Results[0].Rows[0]["STACKTRACE"])
			}
			var cs bytes.Buffer
			Write(&cs, []*Result{res}, "csv")
			recs, err := csv.NewReader(&cs).ReadAll()
			if err != nil || len(recs) != len(res.Rows)+1 {
				t.Errorf("CSV: %v, %d records", err, len(recs))
			}
		})
	}
}

// An interval's difference pairs each stack with itself: a reading where
// one stack counted four more events gives that stack alone, with 4.
func TestStackIntervalDifference(t *testing.T) {
	b, err := os.ReadFile("../tracefs/testdata/hist-6.12-stacktrace.txt")
	if err != nil {
		t.Fatal(err)
	}
	before := parseOne(t, string(b))
	// The sixth entry (3 hits) counts 7; the totals follow.
	lines := strings.Split(string(b), "\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "} hitcount:") {
			if n++; n == 6 {
				lines[i] = "} hitcount:          7"
			}
		}
		if strings.TrimSpace(l) == "Hits: 55" {
			lines[i] = "    Hits: 59"
		}
	}
	after := parseOne(t, strings.Join(lines, "\n"))
	d := HistMinus(after, before)
	if len(d.Entries) != 1 || d.Entries[0].Values[0].Num != 4 || d.Totals.Hits != 4 {
		t.Fatalf("difference: %d entries, hits %d", len(d.Entries), d.Totals.Hits)
	}
	if want := before.Entries[5].Keys[1].Frames; strings.Join(d.Entries[0].Keys[1].Frames, ",") != strings.Join(want, ",") {
		t.Errorf("the difference is stack %v, want %v", d.Entries[0].Keys[1].Frames, want)
	}
}

// Folded stacks: a line per row, root first, the CPU as a leading frame,
// function names without offsets, values adding up to the hits.
func TestWriteFolded(t *testing.T) {
	got := readSample(t, "hist-6.12-stacktrace.txt")
	res := NewResult(&planner.Unit{}, stackHist(), got)
	var b bytes.Buffer
	if err := WriteFolded(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(res.Rows) {
		t.Fatalf("%d lines for %d rows:\n%s", len(lines), len(res.Rows), b.String())
	}
	var sum uint64
	prev := uint64(1 << 63)
	for _, l := range lines {
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseUint(l[i+1:], 10, 64)
		frames := strings.Split(l[:i], ";")
		if err != nil || !strings.HasPrefix(frames[0], "common_cpu=") || frames[len(frames)-1] != "__schedule" ||
			frames[len(frames)-2] != "schedule" || strings.Contains(l, "+0x") {
			t.Errorf("line %q", l)
		}
		if v > prev {
			t.Errorf("line %q after one of %d: not most first", l, prev)
		}
		sum, prev = sum+v, v
	}
	if sum != got.Totals.Hits {
		t.Errorf("folded values add up to %d, hits %d", sum, got.Totals.Hits)
	}
	first := "common_cpu=1;entry_SYSCALL_64_after_hwframe;do_syscall_64;__do_sys_wait4;kernel_wait4;do_wait;schedule;__schedule 23"
	if lines[0] != first {
		t.Errorf("first line %q, want %q", lines[0], first)
	}
}

// The pprof profile parses with the pprof package, is valid, counts the
// hits, and its leaf frames are the scheduler's.
func TestWriteProfile(t *testing.T) {
	got := readSample(t, "hist-7.2-stacktrace.txt")
	res := NewResult(&planner.Unit{}, stackHist(), got)
	var b bytes.Buffer
	if err := WriteProfile(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	if b.Bytes()[0] != 0x1f || b.Bytes()[1] != 0x8b {
		t.Errorf("not gzipped: % x", b.Bytes()[:4])
	}
	p, err := profile.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "events" || p.DefaultSampleType != "events" || len(p.Sample) != len(res.Rows) {
		t.Fatalf("types %v (default %q), %d samples", p.SampleType, p.DefaultSampleType, len(p.Sample))
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
		if leaf := s.Location[0].Line[0].Function.Name; leaf != "__schedule" {
			t.Errorf("leaf %q", leaf)
		}
		if root := s.Location[len(s.Location)-1].Line[0].Function.Name; root != "ret_from_fork_asm" && root != "entry_SYSCALL_64_after_hwframe" {
			t.Errorf("root %q", root)
		}
		if cpu := s.Label["common_cpu"]; len(cpu) != 1 || cpu[0] != "0" && cpu[0] != "1" {
			t.Errorf("cpu label %v", s.Label)
		}
	}
	if uint64(sum) != got.Totals.Hits {
		t.Errorf("samples count %d, hits %d", sum, got.Totals.Hits)
	}
	var again bytes.Buffer
	WriteProfile(&again, []*Result{NewResult(&planner.Unit{}, stackHist(), readSample(t, "hist-7.2-stacktrace.txt"))})
	if !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Error("two profiles of the same results differ")
	}
}

// Off-CPU time by stack: a JOIN's results keyed by the start's stack and
// the latency's log2 bucket (as the kernel prints a stack field: its
// first frame on the key's line). A stack's buckets fold into one row;
// folded stacks and the profile's default value are the summed latency.
func TestOffCPUStacks(t *testing.T) {
	const frame = "         "
	stackA := "__schedule+0x8fc/0x1070\n" + frame + "schedule+0x27/0xa0\n" + frame + "futex_wait+0x1/0x2\n"
	stackB := "__schedule+0x8fc/0x1070\n" + frame + "schedule+0x27/0xa0\n" + frame + "pipe_read+0x1/0x2\n"
	text := "# event histogram\n#\n# trigger info: hist:keys=stack.stacktrace,lat.log2:vals=hitcount,lat:offcpu_max=lat:sort=hitcount:size=8192:onmax($offcpu_max).save(lat) if lat < 4611686018427387904 [active]\n#\n\n" +
		"{ stack.stacktrace" + frame + stackA + ", lat: ~ 2^10} hitcount:          2  lat:       1800\n\tmax:       1000  lat:       1000\n" +
		"{ stack.stacktrace" + frame + stackA + ", lat: ~ 2^4} hitcount:          1  lat:         10\n\tmax:         10  lat:         10\n" +
		"{ stack.stacktrace" + frame + stackB + ", lat: ~ 2^7} hitcount:          3  lat:        300\n\tmax:        120  lat:        120\n" +
		"\nTotals:\n    Hits: 6\n    Entries: 3\n    Dropped: 0\n"
	h := &planner.Hist{System: "synthetic", Event: "offcpu", Keys: planner.MustExprs("stack.stacktrace", "lat.log2"),
		Columns: []planner.Column{{Label: "stack", Kind: planner.ColKey}, {Label: "count", Kind: planner.ColCount},
			{Label: "lat", Kind: planner.ColLatency, Index: 1, Unit: "us"}}}
	res := NewResult(&planner.Unit{}, h, parseOne(t, text))
	if len(res.Rows) != 2 || res.Rows[0].Count != 3 || res.Rows[1].Count != 3 {
		t.Fatalf("rows %+v", res.Rows)
	}
	var b bytes.Buffer
	WriteFolded(&b, []*Result{res})
	want := "pipe_read;schedule;__schedule 300\nfutex_wait;schedule;__schedule 1810\n"
	if res.Rows[0].Stats.Sum == 1810 {
		want = "futex_wait;schedule;__schedule 1810\npipe_read;schedule;__schedule 300\n"
	}
	if b.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", b.String(), want)
	}
	var pb bytes.Buffer
	if err := WriteProfile(&pb, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&pb)
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultSampleType != "lat" || len(p.SampleType) != 2 || p.SampleType[1].Unit != "microseconds" {
		t.Errorf("types %v, default %q", p.SampleType, p.DefaultSampleType)
	}
}

// oracleProfile builds, with the pprof package, the profile
// buildProfile describes (what WriteProfile wrote before it encoded
// profile.proto itself).
func oracleProfile(pp *pprofProfile) *profile.Profile {
	p := &profile.Profile{DefaultSampleType: pp.defaultType, Comments: pp.comments}
	for _, t := range pp.sampleTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t.name, Unit: t.unit})
	}
	if len(pp.functions) > 0 {
		p.Mapping = []*profile.Mapping{{ID: 1, File: "[kernel.kallsyms]", HasFunctions: true}}
	}
	for i, name := range pp.functions {
		fn := &profile.Function{ID: uint64(i + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Mapping: p.Mapping[0], Line: []profile.Line{{Function: fn}}})
	}
	for _, s := range pp.samples {
		smp := &profile.Sample{Value: s.values}
		for _, id := range s.locations {
			smp.Location = append(smp.Location, p.Location[id-1])
		}
		for k, v := range s.labels {
			if smp.Label == nil {
				smp.Label = map[string][]string{}
			}
			smp.Label[k] = []string{v}
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}

// The profile.proto written by hand reads back, with the pprof package,
// as the profile the pprof package writes of the same samples: one
// result, off-CPU stacks with labels, several results (the event label,
// a result left out for its types), hostile names and negative values.
func TestProfileEncodingAgrees(t *testing.T) {
	switchRes := NewResult(&planner.Unit{}, stackHist(), readSample(t, "hist-7.2-stacktrace.txt"))
	switchRes.Title = "sched_switch"
	other := NewResult(&planner.Unit{}, stackHist(), readSample(t, "hist-7.2-stacktrace.txt"))
	other.Title = "other"
	hostile := &pprofProfile{
		sampleTypes: []sampleType{{"events", "count"}, {"lat", "microseconds"}},
		defaultType: "lat",
		functions:   []string{"a\x00b", "ünïcode [mod]", "", strings.Repeat("f", 300)},
		samples: []pprofSample{
			{locations: []uint64{1, 2, 3, 4}, values: []int64{1, -5}, labels: map[string]string{"comm": "x;y\n", "z": "", "a": "0"}},
			{locations: []uint64{4}, values: []int64{1 << 62, 0}},
		},
		comments: []string{"", "one\ntwo"},
	}
	cases := map[string]*pprofProfile{
		"one result":      buildProfile([]*Result{NewResult(&planner.Unit{}, stackHist(), readSample(t, "hist-7.2-stacktrace.txt"))}),
		"several results": buildProfile([]*Result{switchRes, other}),
		"hostile":         hostile,
		"empty":           buildProfile(nil),
	}
	for name, pp := range cases {
		var ours, theirs bytes.Buffer
		if err := pp.write(&ours); err != nil {
			t.Fatal(err)
		}
		if err := oracleProfile(pp).Write(&theirs); err != nil {
			t.Fatal(err)
		}
		got, err := profile.Parse(&ours)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := got.CheckValid(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		want, err := profile.Parse(&theirs)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got.String(), want.String(); g != w {
			t.Errorf("%s: reads back as\n%s\nwant\n%s", name, g, w)
		}
		if g, w := fmt.Sprint(got.Comments, got.DefaultSampleType), fmt.Sprint(want.Comments, want.DefaultSampleType); g != w {
			t.Errorf("%s: comments and default %s, want %s", name, g, w)
		}
		if name == "one result" && len(got.Sample) < 5 {
			t.Errorf("%s: %d samples", name, len(got.Sample))
		}
		if name == "several results" && !strings.Contains(got.String(), "event:[other]") {
			t.Errorf("%s: no event label:\n%s", name, got.String())
		}
	}
}
