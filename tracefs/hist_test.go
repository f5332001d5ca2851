package tracefs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func histSamples(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/hist-*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hist samples: %v", err)
	}
	return files
}

// TestParseHistSamples checks every real hist file: it parses, each
// histogram has as many entries as its Totals say, one key per keys= field
// and hitcount first.
func TestParseHistSamples(t *testing.T) {
	for _, f := range histSamples(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			text := readTestdata(t, filepath.Base(f))
			hs, err := ParseHist(text)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Count(text, "# event histogram\n"); len(hs) != want {
				t.Fatalf("got %d histograms, want %d", len(hs), want)
			}
			for _, h := range hs {
				if h.Totals.Entries != uint64(len(h.Entries)) {
					t.Errorf("Totals.Entries = %d, parsed %d entries", h.Totals.Entries, len(h.Entries))
				}
				if h.Paused || strings.HasSuffix(h.TriggerInfo, "]") || !strings.HasPrefix(h.TriggerInfo, "hist:keys=") {
					t.Errorf("trigger info %q, paused %v", h.TriggerInfo, h.Paused)
				}
				mods, _ := histSpecs(h.TriggerInfo)
				for i, e := range h.Entries {
					if len(e.Keys) != len(mods) || len(e.Values) == 0 || e.Values[0].Name != "hitcount" {
						t.Fatalf("entry %d: %d keys for %d in keys=, values %v", i, len(e.Keys), len(mods), e.Values)
					}
				}
			}
		})
	}
}

func num(name, raw string, n uint64) HistValue {
	return HistValue{Name: name, Raw: raw, Kind: HistNumber, Num: n}
}

// stack is a stack trace key: its frames, which are its printed value.
func stack(name string, frames ...string) HistValue {
	return HistValue{Name: name, Raw: strings.Join(frames, "\n"), Kind: HistStacktrace, Frames: frames}
}

func TestParseHistEntries(t *testing.T) {
	tests := []struct {
		file      string
		hist, ent int
		want      *HistEntry
		totals    HistTotals
	}{
		{"hist-6.1-syscall-execname.txt", 0, 0, &HistEntry{
			Keys: []HistValue{
				{Name: "common_pid", Raw: "exe             [      1780]", Kind: HistExecname, Num: 1780, Text: "exe"},
				{Name: "id", Raw: "sys_getrandom                 [318]", Kind: HistSyscall, Num: 318, Text: "sys_getrandom"},
			},
			Values: []HistValue{num("hitcount", "1", 1)},
		}, HistTotals{Hits: 1893, Entries: 533}},
		{"hist-6.12-hex-log2-execname.txt", 0, 0, &HistEntry{
			Keys: []HistValue{
				{Name: "call_site", Raw: "ffffffffa922e6bc", Kind: HistHex, Num: 0xffffffffa922e6bc},
				{Name: "bytes_req", Raw: "~ 2^5", Kind: HistLog2, Num: 5},
				{Name: "common_pid", Raw: "sh              [      1529]", Kind: HistExecname, Num: 1529, Text: "sh"},
			},
			Values: []HistValue{num("hitcount", "1", 1)},
		}, HistTotals{Hits: 1880, Entries: 249}},
		{"hist-7.2-buckets.txt", 0, 0, &HistEntry{
			Keys: []HistValue{
				{Name: "bytes_req", Raw: "~ 0-63", Kind: HistBuckets, Num: 0, High: 63},
				{Name: "bytes_alloc", Raw: "~ 0-127", Kind: HistBuckets, Num: 0, High: 127},
			},
			Values: []HistValue{num("hitcount", "670", 670)},
		}, HistTotals{Hits: 975, Entries: 9}},
		{"hist-6.1-sym-offset-sum.txt", 0, 0, &HistEntry{
			Keys: []HistValue{
				{Name: "call_site", Raw: "[ffffffff8be9da48] tty_open+0x58/0x6e0", Kind: HistSymOffset, Num: 0xffffffff8be9da48, Text: "tty_open+0x58/0x6e0"},
				num("bytes_req", "32", 32),
			},
			Values: []HistValue{num("hitcount", "8", 8), num("bytes_alloc", "256", 256)},
		}, HistTotals{Hits: 322, Entries: 16}},
		{"hist-7.2-stacktrace.txt", 0, 0, &HistEntry{
			Keys: []HistValue{num("common_cpu", "1", 1), stack("common_stacktrace",
				"__schedule+0x8fc/0x1070", "schedule+0x27/0xa0", "schedule_timeout+0xa3/0x120",
				"kcompactd+0x3b9/0x480", "kthread+0xe4/0x120", "ret_from_fork+0x2b1/0x340",
				"ret_from_fork_asm+0x1a/0x30",
			)},
			Values: []HistValue{num("hitcount", "1", 1)},
		}, HistTotals{Hits: 56, Entries: 10}},
		{"hist-6.1-stacktrace.txt", 0, 1, &HistEntry{
			Keys: []HistValue{num("common_cpu", "1", 1), stack("stacktrace",
				"__schedule+0x4f8/0xa00", "schedule+0x5a/0xd0", "schedule_timeout+0x94/0x150",
				"kcompactd+0x3cf/0x420", "kthread+0xda/0x100", "ret_from_fork+0x22/0x30",
			)},
			Values: []HistValue{num("hitcount", "2", 2)},
		}, HistTotals{Hits: 56, Entries: 9}},
		{"hist-7.2-stack-field.txt", 0, 0, &HistEntry{
			Keys: []HistValue{stack("stack",
				"__schedule+0x8fc/0x1070", "schedule+0x27/0xa0", "smpboot_thread_fn+0x190/0x220",
				"kthread+0xe4/0x120", "ret_from_fork+0x2b1/0x340", "ret_from_fork_asm+0x1a/0x30",
			), {Name: "lat", Raw: "~ 2^13", Kind: HistLog2, Num: 13}},
			Values: []HistValue{num("hitcount", "1", 1), num("lat", "6845", 6845)},
		}, HistTotals{Hits: 44, Entries: 15}},
		{"hist-6.12-string-key.txt", 0, 0, &HistEntry{
			Keys:   []HistValue{{Name: "next_comm", Raw: "kworker/u8:3", Kind: HistString, Text: "kworker/u8:3"}},
			Values: []HistValue{num("hitcount", "1", 1)},
		}, HistTotals{Hits: 33, Entries: 3}},
		{"hist-6.1-onchange-save.txt", 0, 0, &HistEntry{
			Keys:    []HistValue{num("next_pid", "2160", 2160)},
			Values:  []HistValue{num("hitcount", "1", 1)},
			Tracked: []HistTracked{{Handler: "changed", Value: 264463, Saved: []HistValue{num("prev_prio", "120", 120), num("prev_state", "0", 0)}}},
		}, HistTotals{Hits: 274, Entries: 18}},
		{"hist-6.12-onmax-trace.txt", 0, 1, &HistEntry{
			Keys:    []HistValue{num("next_pid", "21", 21)},
			Values:  []HistValue{num("hitcount", "1", 1)},
			Tracked: []HistTracked{{Handler: "max", Value: 220}},
		}, HistTotals{Hits: 2, Entries: 2}},
		{"hist-6.1-synthetic-syscall-string.txt", 0, 0, &HistEntry{
			Keys: []HistValue{
				{Name: "id", Raw: "sys_openat                    [257]", Kind: HistSyscall, Num: 257, Text: "sys_openat"},
				{Name: "comm", Raw: "sh", Kind: HistString, Text: "sh"},
				num("pid", "93", 93),
			},
			Values: []HistValue{num("hitcount", "16", 16), num("lat", "281187", 281187)},
		}, HistTotals{Hits: 16, Entries: 1}},
		{"hist-6.1-instance-numbers.txt", 0, 0, &HistEntry{
			Keys:   []HistValue{num("common_pid", "1518", 1518), num("bytes_req", "4096", 4096), num("call_site", "18446744071760135584", 18446744071760135584)},
			Values: []HistValue{num("hitcount", "1", 1)},
		}, HistTotals{Hits: 1876, Entries: 246}},
		{"hist-6.12-two-triggers.txt", 1, 1, &HistEntry{
			Keys:   []HistValue{num("next_pid", "147", 147)},
			Values: []HistValue{num("hitcount", "16", 16)},
		}, HistTotals{Hits: 17, Entries: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			hs, err := ParseHist(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			h := hs[tt.hist]
			if diff := cmp.Diff(tt.want, h.Entries[tt.ent]); diff != "" {
				t.Errorf("entry %d (-want +got):\n%s", tt.ent, diff)
			}
			if h.Totals != tt.totals {
				t.Errorf("Totals = %+v, want %+v", h.Totals, tt.totals)
			}
		})
	}
}

func TestParseHistHeaderAndSnapshot(t *testing.T) {
	hs, err := ParseHist(readTestdata(t, "hist-7.2-onmax-snapshot.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := &HistSnapshot{
		Handler: "onmax($wl_lat)", Value: 2809, Key: []HistValue{num("next_pid", "25", 25)},
		Raw: "triggering value { onmax($wl_lat) }:       2809\ttriggered by event with key: { next_pid:         25 }",
	}
	if diff := cmp.Diff(want, hs[0].Snapshot); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}

	hs, err = ParseHist(readTestdata(t, "hist-7.2-empty.txt"))
	if err != nil {
		t.Fatal(err)
	}
	info := `hist:keys=next_pid:vals=hitcount:hostile_lat=common_timestamp-$hostile_ts:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).trace(hostile,$hostile_pid,$hostile_lat) if next_comm == "x'; touch /tmp/pwned; echo '" || next_comm == 'say "hi" $(id)'`
	if len(hs) != 1 || hs[0].TriggerInfo != info || len(hs[0].Entries) != 0 || hs[0].Totals != (HistTotals{}) {
		t.Errorf("got %+v", hs[0])
	}

	// 7.2 prints "common_cpucommon_cpu" in the listing but "common_cpu:" in
	// the entries; TriggerInfo has the field's real name, as 6.1 lists it.
	hs, err = ParseHist(readTestdata(t, "hist-7.2-two-keys-onmatch.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hs[0].TriggerInfo, "keys=irq,common_cpu:") || hs[0].Entries[0].Keys[1].Name != "common_cpu" {
		t.Errorf("got %q, %+v", hs[0].TriggerInfo, hs[0].Entries[0].Keys)
	}
}

// TestParseHistPaused uses a real file with its state edited to paused.
func TestParseHistPaused(t *testing.T) {
	text := strings.Replace(readTestdata(t, "hist-6.1-buckets.txt"), " [active]", " [paused]", 1)
	hs, err := ParseHist(text)
	if err != nil {
		t.Fatal(err)
	}
	if !hs[0].Paused || strings.Contains(hs[0].TriggerInfo, "[") {
		t.Errorf("Paused = %v, TriggerInfo = %q", hs[0].Paused, hs[0].TriggerInfo)
	}
}

// TestHistogramInFlight: a real file's hitcounts add up to its Hits; one
// whose Hits is one more (the kernel printed a hit whose entry was not
// updated yet) is in flight; one without hitcounts never is.
func TestHistogramInFlight(t *testing.T) {
	text := readTestdata(t, "hist-6.1-buckets.txt")
	hs, err := ParseHist(text)
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].InFlight() {
		t.Errorf("the kernel's own file is in flight: hits %d", hs[0].Totals.Hits)
	}
	hits := regexp.MustCompile(`Hits: (\d+)`)
	m := hits.FindStringSubmatch(text)
	n, _ := strconv.ParseUint(m[1], 10, 64)
	hs, err = ParseHist(hits.ReplaceAllString(text, fmt.Sprintf("Hits: %d", n+1)))
	if err != nil {
		t.Fatal(err)
	}
	if !hs[0].InFlight() {
		t.Errorf("Hits %d over the entries' %d: not in flight", n+1, n)
	}
	for _, e := range hs[0].Entries {
		e.Values = e.Values[1:]
	}
	if hs[0].InFlight() {
		t.Errorf("entries without hitcount: in flight")
	}
}

var keysListRE = regexp.MustCompile(`keys=[^:]*:`)

// TestParseHistGuessedForms hides the keys= list of every sample, so the
// key forms must be guessed from the text, and expects the same keys.
func TestParseHistGuessedForms(t *testing.T) {
	for _, f := range histSamples(t) {
		text := readTestdata(t, filepath.Base(f))
		want, err := ParseHist(text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseHist(keysListRE.ReplaceAllString(text, "keys=hidden.a.b.c.d.e.f:"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range want {
			for j := range want[i].Entries {
				if diff := cmp.Diff(want[i].Entries[j].Keys, got[i].Entries[j].Keys); diff != "" {
					t.Fatalf("%s: entry %d (-known +guessed):\n%s", f, j, diff)
				}
			}
		}
	}
}

func TestParseHistMalformed(t *testing.T) {
	real := readTestdata(t, "hist-6.1-onchange-save.txt")
	tests := []struct{ name, in string }{
		{"garbage", "hello world\n"},
		{"binary", "\x00\x01\x02{ }"},
		{"no trigger info", "# event histogram\n#\n\n{ pid: 1 } hitcount: 1\n"},
		{"no totals", strings.Split(real, "\nTotals:")[0]},
		{"cut in totals", strings.Split(real, "    Dropped")[0]},
		{"bad totals", strings.Replace(real, "Hits: 274", "Hits: many", 1)},
		{"unterminated key", "# event histogram\n# trigger info: hist:keys=pid [active]\n{ pid: 1 hitcount: 1\nTotals:\n"},
		{"bad log2", "# event histogram\n# trigger info: hist:keys=a.log2:vals=hitcount [active]\n{ a: ~ 2^x } hitcount: 1\n"},
		{"bad hitcount", "# event histogram\n# trigger info: hist:keys=a [active]\n{ a: 1 } hitcount: lots\n"},
		{"handler before entry", "# event histogram\n# trigger info: hist:keys=a [active]\n\tmax: 3\n"},
		{"lone brace", "# event histogram\n# trigger info: hist:keys=a [active]\n{\n"},
		{"cut stacktrace", "# event histogram\n# trigger info: hist:keys=stacktrace [active]\n{ stacktrace:\n         f+0x1/0x2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if hs, err := ParseHist(tt.in); err == nil {
				t.Errorf("no error, got %d histograms", len(hs))
			}
		})
	}
	if hs, err := ParseHist("\n\n"); err != nil || hs != nil {
		t.Errorf("empty file: %v, %v", hs, err)
	}
}

// TestParseHistTruncated cuts real files after every line: only a cut
// right after a histogram's Totals may parse.
func TestParseHistTruncated(t *testing.T) {
	for _, name := range []string{"hist-6.12-two-triggers.txt", "hist-7.2-stacktrace.txt", "hist-7.2-stack-field.txt", "hist-6.1-onmax-snapshot.txt"} {
		lines := strings.Split(readTestdata(t, name), "\n")
		for n := 1; n < len(lines)-1; n++ {
			cut := strings.Join(lines[:n], "\n")
			_, err := ParseHist(cut)
			complete := strings.HasPrefix(lines[strings.Count(strings.TrimRight(cut, "\n"), "\n")], "    Dropped: ")
			if (err == nil) != complete {
				t.Errorf("%s cut after line %d (%q): err = %v", name, n, lines[n-1], err)
			}
		}
	}
}

func FuzzParseHist(f *testing.F) {
	for _, file := range histSamples(f) {
		f.Add(readTestdata(f, filepath.Base(file)))
	}
	f.Fuzz(func(t *testing.T, text string) {
		fuzzguard.Run(fuzzguard.Limit, text, func() { checkHistText(t, text) })
	})
}

// checkHistText is FuzzParseHist's check of one text.
func checkHistText(t *testing.T, text string) {
	hs, err := ParseHist(text)
	if err != nil {
		return
	}
	// Every histogram starts at a header line and every entry at a "{"
	// line; an extra trailing newline changes nothing.
	if n := strings.Count("\n"+text, "\n# event histogram"); len(hs) > n {
		t.Fatalf("%d histograms from %d headers", len(hs), n)
	}
	entries := 0
	for _, h := range hs {
		if h.TriggerInfo == "" {
			t.Fatal("histogram without trigger info")
		}
		entries += len(h.Entries)
	}
	if n := strings.Count("\n"+text, "\n{"); entries > n {
		t.Fatalf("%d entries from %d lines", entries, n)
	}
	again, err := ParseHist(text + "\n")
	if err != nil || !cmp.Equal(hs, again) {
		t.Fatalf("trailing newline changed the result: %v", err)
	}
}

func TestHistogramKeyFields(t *testing.T) {
	data, err := os.ReadFile("testdata/hist-6.1-syscall-execname.txt")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ParseHist(string(data))
	if err != nil || len(hs) == 0 {
		t.Fatalf("ParseHist: %v (%d histograms)", err, len(hs))
	}
	if diff := cmp.Diff([]string{"common_pid.execname", "id.syscall"}, hs[0].KeyFields()); diff != "" {
		t.Errorf("KeyFields (-want +got):\n%s", diff)
	}
	h := &Histogram{TriggerInfo: "hist:keys=comm,lat:vals=hitcount:sort=hitcount:size=8192 if lat > 10"}
	if diff := cmp.Diff([]string{"comm", "lat"}, h.KeyFields()); diff != "" {
		t.Errorf("KeyFields (-want +got):\n%s", diff)
	}
}

// 7.2 lists a common_cpu field with the field's name appended (seen in the
// kernel suite: the negatives counter of a JOIN's --run was not found, and
// "!" with the listing is refused). The repair gives the name back, and
// nothing else changes.
func TestRepairListing(t *testing.T) {
	for listed, want := range map[string]string{
		"hist:keys=common_cpucommon_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808": "hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808",
		"hist:keys=common_cpucpu:vals=hitcount":                                        "hist:keys=common_cpu:vals=hitcount",
		"hist:keys=prev_pid,common_cpucommon_cpu.buckets=2:vals=hitcount":              "hist:keys=prev_pid,common_cpu.buckets=2:vals=hitcount",
		"hist:keys=next_pid:vals=hitcount,common_cpucommon_cpu:x=common_cpucommon_cpu": "hist:keys=next_pid:vals=hitcount,common_cpu:x=common_cpu",
		"hist:keys=common_cpu:vals=hitcount":                                           "hist:keys=common_cpu:vals=hitcount",
		"hist:keys=common_cpus,my_common_cpucpu:vals=hitcount":                         "hist:keys=common_cpus,my_common_cpucpu:vals=hitcount",
	} {
		if got := RepairListing(listed); got != want {
			t.Errorf("RepairListing(%q) = %q, want %q", listed, got, want)
		}
	}
	data, err := os.ReadFile("testdata/hist-7.2-negatives.txt")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ParseHist(string(data))
	if err != nil || len(hs) != 1 {
		t.Fatalf("ParseHist: %v (%d histograms)", err, len(hs))
	}
	if got := hs[0].KeyFields(); !cmp.Equal(got, []string{"common_cpu"}) {
		t.Errorf("KeyFields of 7.2's listing = %q, want [common_cpu]", got)
	}
}

// TestParseHistStackForms checks the stack trace keys as
// kernel/trace/trace_events_hist.c prints them (hist_trigger_print_key):
// "common_stacktrace:" and a newline, or for a field "stack.stacktrace"
// with the first frame on the same line; each frame after 9 spaces; a key
// after a stack follows the last frame's newline as ", key: value"; the
// closing brace has no space before it after a stack.
func TestParseHistStackForms(t *testing.T) {
	frames := []string{"__schedule+0x8fc/0x1070", "schedule+0x27/0xa0", "do_nanosleep+0x67/0x190 [foo]"}
	body := "         " + strings.Join(frames, "\n         ") + "\n"
	tests := []struct {
		name, info, entry string
		want              []HistValue
	}{
		{"stack first", "hist:keys=common_stacktrace,common_cpu:vals=hitcount:sort=hitcount:size=2048",
			"{ common_stacktrace:\n" + body + ", common_cpu:          1} hitcount:          3\n",
			[]HistValue{stack("common_stacktrace", frames...), num("common_cpu", "1", 1)}},
		{"field stack, then log2", "hist:keys=stack.stacktrace,lat.log2:vals=hitcount,lat:sort=hitcount:size=8192",
			"{ stack.stacktrace" + body + ", lat: ~ 2^10} hitcount:          3  lat:       2400\n",
			[]HistValue{stack("stack", frames...), {Name: "lat", Raw: "~ 2^10", Kind: HistLog2, Num: 10}}},
		{"buckets, then field stack", "hist:keys=lat.buckets=100,stack.stacktrace:vals=hitcount:sort=lat:size=2048",
			"{ lat: ~ 100-199, stack.stacktrace" + body + "} hitcount:          3\n",
			[]HistValue{{Name: "lat", Raw: "~ 100-199", Kind: HistBuckets, Num: 100, High: 199}, stack("stack", frames...)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "# event histogram\n#\n# trigger info: " + tt.info + " [active]\n#\n\n" + tt.entry +
				"\nTotals:\n    Hits: 3\n    Entries: 1\n    Dropped: 0\n"
			for _, hidden := range []bool{false, true} {
				in := text
				if hidden {
					in = keysListRE.ReplaceAllString(in, "keys=hidden.a.b.c.d.e.f:")
				}
				hs, err := ParseHist(in)
				if err != nil {
					t.Fatalf("hidden keys %v: %v\n%s", hidden, err, in)
				}
				if diff := cmp.Diff(tt.want, hs[0].Entries[0].Keys); diff != "" {
					t.Errorf("hidden keys %v: keys (-want +got):\n%s", hidden, diff)
				}
				if v := hs[0].Entries[0].Values[0]; v.Num != 3 {
					t.Errorf("hitcount %+v", v)
				}
			}
		})
	}
}

// An expression key is printed by its text, and a constant the kernel
// folded (vals=16-8-4-2, listed as 2) as a value without a name (6.12).
func TestParseHistExpressions(t *testing.T) {
	read := func(name string) *Histogram {
		t.Helper()
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := ParseHist(string(data))
		if err != nil || len(hs) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		return hs[0]
	}
	key := read("hist-6.12-expression-key.txt")
	if e := key.Entries[1]; len(key.Entries) != 3 || e.Keys[0].Name != "common_timestamp/1000000000" || e.Keys[0].Num != 22 || e.Values[0].Num != 114 {
		t.Errorf("expression key: %+v", key.Entries)
	}
	c := read("hist-6.12-folded-constant.txt")
	if e := c.Entries[1]; len(c.Entries) != 2 || len(e.Values) != 2 || e.Values[0].Num != 21 || e.Values[1].Name != "" || e.Values[1].Num != 42 {
		t.Errorf("folded constant: %+v", c.Entries)
	}
}

// A sum's share and bar, and a sum with its own bar under the same name,
// as 6.12 prints them (seen under qemu).
func TestParseHistValueDisplay(t *testing.T) {
	const tail = "\nTotals:\n    Hits: 337\n    Entries: 2\n    Dropped: 0\n"
	const share = "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=bytes_req.percent,bytes_alloc.graph:sort=hitcount:size=2048:nohitcount [active]\n#\n\n" +
		"{ common_pid:        148 }  bytes_req (%):   0.72  bytes_alloc:                     \n" +
		"{ common_pid:        151 }  bytes_req (%):  51.61  bytes_alloc: ####################\n" + tail
	hs, err := ParseHist(share)
	if err != nil || len(hs) != 1 || len(hs[0].Entries) != 2 {
		t.Fatalf("ParseHist: %v %+v", err, hs)
	}
	v := hs[0].Entries[1].Values
	if len(v) != 2 || v[0].Kind != HistPercent || v[0].Percent != 51.61 || v[1].Kind != HistGraph || v[1].Text != strings.Repeat("#", 20) {
		t.Errorf("share and bar: %+v", v)
	}
	if v := hs[0].Entries[0].Values; len(v) != 2 || v[1].Kind != HistGraph || v[1].Text != "" {
		t.Errorf("a bar too short to show: %+v", v)
	}
	const both = "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=hitcount,bytes_req,bytes_req.graph:sort=hitcount:size=2048 [active]\n#\n\n" +
		"{ common_pid:        148 } hitcount:         10  bytes_req:        472  bytes_req:                     \n" +
		"{ common_pid:        154 } hitcount:         23  bytes_req:      18842  bytes_req: ####################\n" + tail
	hs, err = ParseHist(both)
	if err != nil || len(hs) != 1 || len(hs[0].Entries) != 2 {
		t.Fatalf("ParseHist: %v %+v", err, hs)
	}
	v = hs[0].Entries[1].Values
	if len(v) != 3 || v[1].Kind != HistNumber || v[1].Num != 18842 || v[2].Kind != HistGraph || v[2].Text != strings.Repeat("#", 20) {
		t.Errorf("a sum and its bar under one name: %+v", v)
	}
}
