package tracefs

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
)

func traceSampleLines(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/trace-*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no trace samples: %v", err)
	}
	var lines []string
	for _, f := range files {
		lines = append(lines, strings.Split(strings.TrimRight(readTestdata(t, filepath.Base(f)), "\n"), "\n")...)
	}
	return lines
}

// TestParseTraceLineSamples parses every real synthetic event line.
func TestParseTraceLineSamples(t *testing.T) {
	for _, k := range []string{"6.1", "6.12", "7.2"} {
		text := readTestdata(t, "trace-"+k+"-synthetic.txt")
		for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			r, ok := ParseTraceLine(line)
			if !ok {
				t.Fatalf("%s line %d: not parsed: %q", k, i+1, line)
			}
			if r.Event == "" || len(r.Fields) == 0 || r.CPU > 1 || len(r.Flags) != 5 {
				t.Errorf("%s line %d: %+v", k, i+1, r)
			}
			if got := joinFields(r.Fields); got != r.Body {
				t.Errorf("%s line %d: fields join to %q, body %q", k, i+1, got, r.Body)
			}
		}
	}
}

func joinFields(fs []TraceField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + f.Value
	}
	return strings.Join(parts, " ")
}

func TestParseTraceLine(t *testing.T) {
	tests := []struct {
		name, line string
		want       *TraceRecord
	}{
		{"6.1 idle", "          <idle>-0       [001] d..4.    10.446289: grouping: weighted=360 nested=1 distributed=246 start_side=14520 lat=238",
			&TraceRecord{Comm: "<idle>", PID: 0, TGID: -1, CPU: 1, Flags: "d..4.", Timestamp: "10.446289", Seconds: 10.446289, Micros: 10446289,
				Event: "grouping", Body: "weighted=360 nested=1 distributed=246 start_side=14520 lat=238",
				Fields: []TraceField{{"weighted", "360"}, {"nested", "1"}, {"distributed", "246"}, {"start_side", "14520"}, {"lat", "238"}}}},
		{"6.1 kworker", "     kworker/u4:1-25      [001] d..4.   115.470618: wl2: pid=15 prio=120 lat=506",
			&TraceRecord{Comm: "kworker/u4:1", PID: 25, TGID: -1, CPU: 1, Flags: "d..4.", Timestamp: "115.470618", Seconds: 115.470618, Micros: 115470618,
				Event: "wl2", Body: "pid=15 prio=120 lat=506", Fields: []TraceField{{"pid", "15"}, {"prio", "120"}, {"lat", "506"}}}},
		{"6.12 unknown comm, hardirq", "           <...>-2461    [000] d..5.   101.701035: wakeup_lat: comm=migration/0 lat=220",
			&TraceRecord{Comm: "<...>", PID: 2461, TGID: -1, CPU: 0, Flags: "d..5.", Timestamp: "101.701035", Seconds: 101.701035, Micros: 101701035,
				Event: "wakeup_lat", Body: "comm=migration/0 lat=220", Fields: []TraceField{{"comm", "migration/0"}, {"lat", "220"}}}},
		{"6.12 stack", "     rcu_preempt-18      [000] d..5.    46.539474: sched_switch_to_sched_switch: stack=STACK:",
			&TraceRecord{Comm: "rcu_preempt", PID: 18, TGID: -1, CPU: 0, Flags: "d..5.", Timestamp: "46.539474", Seconds: 46.539474, Micros: 46539474,
				Event: "sched_switch_to_sched_switch", Body: "stack=STACK:", Fields: []TraceField{{"stack", "STACK:"}}}},
		// Not captured from a kernel: a comm with spaces and dashes, a tgid
		// column, no irq-info flags, nanosecond timestamps.
		{"comm with dashes", "  my-prog x-1-77    (   70) [003]  7.123456789: ev: a=b c=d e",
			&TraceRecord{Comm: "my-prog x-1", PID: 77, TGID: 70, CPU: 3, Timestamp: "7.123456789", Seconds: 7.123456789, Micros: 7123456,
				Event: "ev", Body: "a=b c=d e", Fields: []TraceField{{"a", "b"}, {"c", "d e"}}}},
		{"not fields", "            bash-1234  [002] .....  1.5: do_sys_open <-sys_open",
			&TraceRecord{Comm: "bash", PID: 1234, TGID: -1, CPU: 2, Flags: ".....", Timestamp: "1.5", Seconds: 1.5, Micros: 1500000,
				Body: "do_sys_open <-sys_open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseTraceLine(tt.line)
			if !ok {
				t.Fatal("not parsed")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTraceLineRejects(t *testing.T) {
	for _, line := range []string{
		"", "# tracer: nop", "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
		"=> autoremove_wake_function+0x15/0x60", "lat=684", "garbage",
		"          <idle>-0       [001] d..4.    10.4",
		"          <idle>-0       [001] d..4.    10.446289grouping: x=1",
		"          <idle>-x       [001] d..4.    10.446289: grouping: x=1",
		"          <idle>-0       [0x1] d..4.    10.446289: grouping: x=1",
		"<idle>-99999999999999999999 [001] d..4. 1.0: e: x=1",
		"<idle>-1 [99999999999999999999] d..4. 1.0: e: x=1",
		"<idle>-1 [001] d..4. 99999999999999999999.0: e: x=1",
	} {
		if r, ok := ParseTraceLine(line); ok {
			t.Errorf("%q parsed as %+v", line, r)
		}
	}
}

func TestParseTraceStack(t *testing.T) {
	recs := ParseTrace(readTestdata(t, "trace-6.12-stack.txt"))
	if len(recs) != 1 {
		t.Fatalf("got %d records", len(recs))
	}
	r := recs[0]
	wantFields := []TraceField{{"st", "STACK:"}, {"lat", "684"}}
	if diff := cmp.Diff(wantFields, r.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if len(r.Stack) != 8 || r.Stack[0] != "autoremove_wake_function+0x15/0x60" || r.Stack[7] != "entry_SYSCALL_64_after_hwframe+0x76/0x7e" {
		t.Errorf("stack %q", r.Stack)
	}
	if r.Body != "st=STACK:\nlat=684" {
		t.Errorf("body %q", r.Body)
	}

	recs = ParseTrace(readTestdata(t, "trace-7.2-stack-truncated.txt"))
	if len(recs) != 1 || len(recs[0].Stack) != 10 || len(recs[0].Fields) != 1 || recs[0].Micros != 8009207 {
		t.Errorf("7.2: %+v", recs)
	}

	recs = ParseTrace("# tracer: nop\n#\n=> orphan\n" + readTestdata(t, "trace-7.2-synthetic.txt"))
	if len(recs) != 90 {
		t.Errorf("got %d records, want 90", len(recs))
	}
}

func TestParseFields(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		names []string
		want  []TraceField
		err   bool
	}{
		{"real", "comm=rcu_preempt pid=15 lat=4129", []string{"comm", "pid", "lat"},
			[]TraceField{{"comm", "rcu_preempt"}, {"pid", "15"}, {"lat", "4129"}}, false},
		{"string with spaces", "comm=my prog pid=5 lat=1", []string{"comm", "pid", "lat"},
			[]TraceField{{"comm", "my prog"}, {"pid", "5"}, {"lat", "1"}}, false},
		{"string holding a later name", "a=x c=y b=1 c=2", []string{"a", "b", "c"},
			[]TraceField{{"a", "x c=y"}, {"b", "1"}, {"c", "2"}}, false},
		{"string holding the next name", "a=x b=y b=1", []string{"a", "b"},
			[]TraceField{{"a", "x"}, {"b", "y b=1"}}, false},
		{"empty value", "a= b=1", []string{"a", "b"}, []TraceField{{"a", ""}, {"b", "1"}}, false},
		{"heuristic", "comm=my prog pid=5", nil, []TraceField{{"comm", "my prog"}, {"pid", "5"}}, false},
		{"heuristic cut", "a=x c=y b=1", nil, []TraceField{{"a", "x"}, {"c", "y"}, {"b", "1"}}, false},
		{"empty", "", nil, nil, false},
		{"empty, no names", "", []string{}, nil, false},
		{"missing field", "a=1", []string{"a", "b"}, nil, true},
		{"wrong order", "b=1 a=2", []string{"a", "b"}, nil, true},
		{"extra text, no names", "text a=1", nil, nil, true},
		{"no names for text", "a=1", []string{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFields(tt.in, tt.names)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Many candidate split points must not blow up.
	long := "a=" + strings.Repeat(" b= c=", 2000)
	if _, err := ParseFields(long, []string{"a", "b", "c", "d"}); err == nil {
		t.Error("no error for a body without d")
	}
}

func FuzzParseTraceLine(f *testing.F) {
	for _, line := range traceSampleLines(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fuzzguard.Run(fuzzguard.Limit, line, func() { checkTraceLine(t, line) })
	})
}

// checkTraceLine is FuzzParseTraceLine's check of one line.
func checkTraceLine(t *testing.T, line string) {
	r, ok := ParseTraceLine(line)
	if !ok {
		return
	}
	if !strings.Contains(line, r.Comm+"-") || r.PID < 0 || r.CPU < 0 {
		t.Fatalf("comm/pid/cpu %q %d %d not from %q", r.Comm, r.PID, r.CPU, line)
	}
	sec, _, _ := strings.Cut(r.Timestamp, ".")
	if strconv.FormatInt(r.Micros/1e6, 10) != strings.TrimLeft(sec, "0") && r.Micros >= 1e6 {
		t.Fatalf("micros %d from %q", r.Micros, r.Timestamp)
	}
	if r.Fields == nil {
		return
	}
	// The heuristic split loses nothing, and splitting by the names it
	// found gives the same fields.
	if joinFields(r.Fields) != r.Body {
		t.Fatalf("fields %q do not join to %q", r.Fields, r.Body)
	}
	names := make([]string, len(r.Fields))
	for i, fl := range r.Fields {
		names[i] = fl.Name
	}
	byName, err := ParseFields(r.Body, names)
	if err != nil || !cmp.Equal(byName, r.Fields) {
		t.Fatalf("by names %q: %q, %v; heuristic %q", names, byName, err, r.Fields)
	}
}
