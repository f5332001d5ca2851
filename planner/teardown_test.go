package planner

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// TestTeardownOfExistingSynthetic: on a live tracefs, the synthetic event a
// query created is in the catalog. Creating it again is an error; tearing
// it down is what --teardown is for.
func TestTeardownOfExistingSynthetic(t *testing.T) {
	base, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{"events/synthetic/wl/format": &fstest.MapFile{Data: []byte(
		"name: wl\nID: 1500\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
			"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:u64 lat;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n")}}
	for _, p := range []string{"events/sched/sched_waking/format", "events/sched/sched_switch/format", "README", "FILES"} {
		data, err := fs.ReadFile(base, p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = &fstest.MapFile{Data: data}
	}
	q := "SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid"
	for _, teardown := range []bool{false, true} {
		src := source.NewSource("q", q)
		script, err := compiler.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		plan, diags := Build(script, tracefs.Open(m), Options{Name: "wl", Teardown: teardown})
		if teardown {
			if plan == nil {
				t.Errorf("teardown refused: %v", diags)
			}
			continue
		}
		if plan != nil || !strings.Contains(diags.Error(), `a synthetic event named "wl" already exists`) {
			t.Errorf("creating an existing synthetic event: plan %v, diags %v", plan != nil, diags)
		}
	}
}
