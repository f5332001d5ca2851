package planner

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlhist/sqlhist/tracefs"
)

// formatFile renders an event format. Each field is "decl name size signed",
// e.g. "int pid 4 1" or "char comm[16] 16 1".
func formatFile(name string, fields ...string) *fstest.MapFile {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: 1\nformat:\n", name)
	common := []string{"unsigned short common_type 2 0", "unsigned char common_flags 1 0",
		"unsigned char common_preempt_count 1 0", "int common_pid 4 1"}
	off := 0
	for _, f := range append(common, fields...) {
		w := strings.Fields(f)
		n := len(w)
		decl := strings.Join(w[:n-2], " ")
		fmt.Fprintf(&b, "\tfield:%s;\toffset:%d;\tsize:%s;\tsigned:%s;\n", decl, off, w[n-2], w[n-1])
		off += 8
	}
	b.WriteString("\nprint fmt: \"\"\n")
	return &fstest.MapFile{Data: []byte(b.String())}
}

// clashCatalog has two events whose fields are named like the variables
// sqlhist derives for a synthetic event "lat".
func clashCatalog() *tracefs.Catalog {
	return tracefs.Open(fstest.MapFS{
		"events/test/begin/format": formatFile("begin",
			"int pid 4 1", "int lat_pid 4 1", "int lat_pid_2 4 1", "u64 lat_ts_us 8 0", "int lat_matched 4 1", "int prio 4 1"),
		"events/test/finish/format": formatFile("finish",
			"int next_pid 4 1", "u64 lat_lat 8 0", "int lat_match 4 1", "int lat_prio 4 1", "int lat_sum_start 4 1"),
	})
}

func TestVarNamesAvoidFields(t *testing.T) {
	tests := []struct {
		name, sql          string
		wantStart, wantEnd string
	}{{
		name:      "fields named like the variables",
		sql:       `SELECT b.prio, TIMESTAMP_DELTA_USECS AS lat FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
		wantStart: "hist:keys=pid:lat_prio_2=prio,lat_ts_us_2=common_timestamp.usecs",
		wantEnd:   "hist:keys=next_pid:lat_lat_2=common_timestamp.usecs-$lat_ts_us_2:onmatch(test.begin).trace(lat,$lat_prio_2,$lat_lat_2)",
	}, {
		name:      "forced match variables",
		sql:       `SELECT f.lat_lat FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
		wantStart: "hist:keys=pid:lat_matched_2=pid",
		wantEnd:   "hist:keys=next_pid:lat_match_2=$lat_matched_2:onmatch(test.begin).trace(lat,lat_lat)",
	}, {
		name:      "start values of an expression",
		sql:       `SELECT b.prio + f.next_pid AS total, f.next_pid - (b.prio + b.pid) AS sum FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`,
		wantStart: "hist:keys=pid:lat_prio_2=prio,lat_sum_start_2=prio+pid",
		wantEnd:   "hist:keys=next_pid:lat_total=$lat_prio_2+next_pid,lat_sum=next_pid-$lat_sum_start_2:onmatch(test.begin).trace(lat,$lat_total,$lat_sum)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := clashCatalog()
			plan := buildOK(t, cat, tt.sql, Options{Name: "lat"})
			u := plan.Units[0]
			if diff := cmp.Diff([]string{tt.wantStart, tt.wantEnd}, []string{u.Start.Spec(), u.End.Spec()}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			begin, _ := cat.Event("test", "begin")
			finish, _ := cat.Event("test", "finish")
			seen := map[string]bool{}
			for _, h := range []*Hist{u.Start, u.End} {
				for _, v := range h.Vars {
					switch {
					case !tracefs.IsIdent(v.Name):
						t.Errorf("variable %q is not an identifier", v.Name)
					case begin.Field(v.Name) != nil || finish.Field(v.Name) != nil:
						t.Errorf("variable %q is a field name", v.Name)
					case histKeywords[v.Name] || strings.HasPrefix(v.Name, "common_"):
						t.Errorf("variable %q is reserved", v.Name)
					case seen[v.Name]:
						t.Errorf("variable %q defined twice", v.Name)
					case !strings.HasPrefix(v.Name, "lat_"):
						t.Errorf("variable %q is not derived from the synthetic event name", v.Name)
					}
					seen[v.Name] = true
				}
			}
		})
	}
}

func TestVarNamesTake(t *testing.T) {
	ev := &tracefs.Event{Fields: []*tracefs.Field{{Name: "x_a"}, {Name: "x_a_2"}}}
	v := newVarNames(ev)
	var got []string
	for _, base := range []string{"x_a", "x_a", "x_b", "x_b", "keys", "sort", "hitcount", "x_c"} {
		got = append(got, v.take(base))
	}
	want := []string{"x_a_3", "x_a_4", "x_b", "x_b_2", "keys_2", "sort_2", "hitcount_2", "x_c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("take (-want +got):\n%s", diff)
	}
}

// A synthetic event name already in the catalog, or defined twice in one
// script, is refused.
func TestSynthNameClashes(t *testing.T) {
	tests := []struct {
		name, sql string
		opt       Options
		wantMsg   string
	}{
		{"exists", `SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: "taken"},
			`a synthetic event named "taken" already exists`},
		{"twice", `CREATE VIEW vw AS SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid;
		           CREATE VIEW vw AS SELECT b.prio FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{},
			`synthetic event "vw" is defined twice in this script`},
		{"one character", `SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: "v"},
			`synthetic event name "v" is one character; the kernel refuses it in trace(v,…)`},
		{"not an identifier", `SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: "9lat"},
			`synthetic event name "9lat" is not a valid name`},
		{"too long", `SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: strings.Repeat("n", 256)},
			"is 256 characters; before Linux 6.12 the kernel makes no events/synthetic directory for a name over 255 bytes"},
		// The name is good, but the latency's expression would overflow
		// the kernel's 256-byte buffer.
		{"long expression", `SELECT TIMESTAMP_DELTA_USECS AS lat FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: strings.Repeat("n", 230)},
			"an expression of 260 bytes"},
		{"-n with two joins", `CREATE VIEW v1 AS SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid;
		           CREATE VIEW v2 AS SELECT b.prio FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: "x"},
			"-n names the synthetic event of a JOIN; the script has 2 JOIN statements"},
		{"-n against CREATE VIEW", `CREATE VIEW v AS SELECT b.pid FROM begin AS b JOIN finish AS f ON b.pid = f.next_pid`, Options{Name: "x"},
			"-n x conflicts with CREATE VIEW v"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := clashCatalog()
			cat.Define(&tracefs.Event{System: "synthetic", Name: "taken"})
			plan, diags := build(t, cat, tt.sql, tt.opt)
			if plan != nil {
				t.Errorf("Build returned a plan despite errors")
			}
			var msgs []string
			for _, d := range diags {
				msgs = append(msgs, d.Msg)
				if strings.Contains(d.Msg, tt.wantMsg) {
					return
				}
			}
			t.Errorf("diagnostics %q, want one containing %q", msgs, tt.wantMsg)
		})
	}
}
