package tracefs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseErrorLogSamples checks every real error_log: one entry per
// header line, each with a command and a caret inside it.
func TestParseErrorLogSamples(t *testing.T) {
	for _, name := range []string{"errorlog-6.1.txt", "errorlog-6.12.txt", "errorlog-7.2.txt", "errorlog-6.1-stacktrace.txt"} {
		text := readTestdata(t, name)
		got := ParseErrorLog(text)
		if want := strings.Count(text, "] "); len(got) != want {
			t.Errorf("%s: %d entries, want %d", name, len(got), want)
		}
		for i, e := range got {
			if e.Command == "" || e.Offset < 0 || e.Seconds <= 0 || e.Error == "" {
				t.Errorf("%s entry %d: %+v", name, i, e)
			}
		}
	}
}

func TestParseErrorLogEntries(t *testing.T) {
	const c7cmd = "hist:keys=next_pid:c7q=$c7ts/1000,c7us=common_timestamp.usecs-$c7q:onmatch(sched.sched_waking).trace(c7,$c7us)"
	tests := []struct {
		file  string
		index int
		want  ErrorLogEntry
		at    string // what Command holds at Offset
	}{
		{"errorlog-6.1.txt", 0, ErrorLogEntry{
			Timestamp: "8.230414", Seconds: 8.230414, Location: "synthetic_events", Error: "Invalid type",
			Command: "s:t_sz_sz size_t x", Offset: 10,
		}, "size_t"},
		{"errorlog-7.2.txt", 1, ErrorLogEntry{
			Timestamp: "21.935554", Seconds: 21.935554, Location: "hist:syscalls:sys_exit_read",
			Error:   "Param type doesn't match synthetic event field type",
			Command: "hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_ui_u32,$b1)", Offset: 69,
		}, "$b1"},
		// One write that logged two errors, at two places of its command.
		{"errorlog-6.12.txt", 8, ErrorLogEntry{
			Timestamp: "68.409372", Seconds: 68.409372, Location: "hist:sched:sched_switch", Error: "Couldn't find variable",
			Command: c7cmd, Offset: 19,
		}, "c7q="},
		{"errorlog-6.12.txt", 9, ErrorLogEntry{
			Timestamp: "68.410077", Seconds: 68.410077, Location: "hist:sched:sched_switch", Error: "Couldn't find field",
			Command: c7cmd, Offset: 62,
		}, "$c7q:"},
		{"errorlog-6.1-stacktrace.txt", 3, ErrorLogEntry{
			Timestamp: "4.000929", Seconds: 4.000929, Location: "hist:sched:sched_waking", Error: "Couldn't find field",
			Command: "hist:keys=common_stacktrace:vals=hitcount", Offset: 10,
		}, "common_stacktrace"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s#%d", tt.file, tt.index), func(t *testing.T) {
			got := ParseErrorLog(readTestdata(t, tt.file))[tt.index]
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(got.Command[got.Offset:], tt.at) {
				t.Errorf("caret at %q, want %q", got.Command[got.Offset:], tt.at)
			}
		})
	}
}

func TestParseErrorLogMalformed(t *testing.T) {
	tests := []struct {
		name, in string
		want     []ErrorLogEntry
	}{
		{"empty", "", nil},
		{"garbage", "hello\n  Command: x\n    ^\n", nil},
		{"header only", "[    8.230414] synthetic_events: error: Invalid type",
			[]ErrorLogEntry{{Timestamp: "8.230414", Seconds: 8.230414, Location: "synthetic_events", Error: "Invalid type", Offset: -1}}},
		{"no caret", "[    8.230414] synthetic_events: error: Invalid type\n  Command: s:x y\n",
			[]ErrorLogEntry{{Timestamp: "8.230414", Seconds: 8.230414, Location: "synthetic_events", Error: "Invalid type", Command: "s:x y", Offset: -1}}},
		{"caret left of command", "[1.000000] synthetic_events: error: Invalid type\n  Command: s:x y\n   ^\n",
			[]ErrorLogEntry{{Timestamp: "1.000000", Seconds: 1, Location: "synthetic_events", Error: "Invalid type", Command: "s:x y", Offset: -1}}},
		{"caret past command", "[1.000000] synthetic_events: error: Invalid type\n  Command: s:x y\n" + strings.Repeat(" ", 30) + "^\n",
			[]ErrorLogEntry{{Timestamp: "1.000000", Seconds: 1, Location: "synthetic_events", Error: "Invalid type", Command: "s:x y", Offset: -1}}},
		{"caret without command", "[1.000000] synthetic_events: error: Invalid type\n             ^\n",
			[]ErrorLogEntry{{Timestamp: "1.000000", Seconds: 1, Location: "synthetic_events", Error: "Invalid type", Offset: -1}}},
		{"bad timestamp", "[1.2.3] synthetic_events: error: Invalid type\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseErrorLog(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewEntries(t *testing.T) {
	all := ParseErrorLog(readTestdata(t, "errorlog-6.12.txt"))
	if len(all) != 10 {
		t.Fatalf("got %d entries", len(all))
	}
	tests := []struct {
		name          string
		before, after []ErrorLogEntry
		want          []ErrorLogEntry
	}{
		{"first error", nil, all[:1], all[:1]},
		{"one write, two errors", all[:8], all, all[8:]},
		{"oldest dropped by the kernel", all[:6], all[2:9], all[6:9]},
		{"nothing new", all[2:5], all[2:5], nil},
		{"log cleared", all[:5], all[5:6], all[5:6]},
		{"cleared, nothing new", all, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NewEntries(tt.before, tt.after)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
