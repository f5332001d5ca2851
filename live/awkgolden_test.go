package live

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"golang.org/x/tools/txtar"
)

// TestAwkProgramGolden runs the awk engine's program of every golden
// query it takes (testdata/queries) over 5.10's trace_pipe text and its
// odd lines (oddLines), under each awk, and checks that it prints,
// byte for byte, what the stream machine computes from the same lines
// (AwkReplay). Queries the engine refuses are left out; enough of the
// rest must count something for the check to mean anything.
func TestAwkProgramGolden(t *testing.T) {
	impls := awks(t)
	data, err := os.ReadFile("testdata/awk/trace-5.10.txt")
	if err != nil {
		t.Fatal(err)
	}
	plain := append([]byte("CPU:1 [LOST 12 EVENTS]\n"), withTicks(data, 500, 1000)...)
	texts := []struct {
		name string
		data []byte
	}{{"plain", plain}, {"odd", oddLines(plain)}}
	files, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden queries: %v", err)
	}
	var mu sync.Mutex
	taken, counted := 0, 0
	t.Run("queries", func(t *testing.T) {
		for _, f := range files {
			t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
				t.Parallel()
				n, c := awkGoldenQuery(t, impls, f, texts)
				mu.Lock()
				taken, counted = taken+n, counted+c
				mu.Unlock()
			})
		}
	})
	t.Logf("%d golden queries taken by the awk engine, %d of %d runs counting something", taken, counted, 2*taken)
	if taken < 60 || counted < 110 {
		t.Errorf("%d golden queries taken, %d runs counting something: want at least 60 and 110", taken, counted)
	}
}

// awkGoldenQuery checks one golden query (TestAwkProgramGolden): it says
// 1 and the runs that counted something when the awk engine takes it.
func awkGoldenQuery(t *testing.T, impls map[string][]string, f string, texts []struct {
	name string
	data []byte
}) (taken, counted int) {
	ar, err := txtar.ParseFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var q string
	for _, fl := range ar.Files {
		if fl.Name == "query.sql" {
			q = string(fl.Data)
		}
	}
	// A catalog of its own: a query adds its probes and synthetic
	// events to it.
	cat, a := awkCatalog(t, "5.10", "x86_64")
	src := &source.Source{Name: filepath.Base(f), Text: q}
	plan, _ := Compile(src, cat, Prepare(planner.Options{Stream: true}, 1))
	if plan == nil {
		return 0, 0 // an error case, or not for 5.10
	}
	ap, err := NewAwkPlan(plan, cat, a)
	if err != nil {
		return 0, 0 // refused by the awk engine, with its reason
	}
	taken++
	for _, text := range texts {
		want, err := AwkReplay(plan, cat, a, bytes.NewReader(text.data))
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		if strings.Contains(want, "hitcount:") {
			counted++
		}
		for _, iname := range awkNames {
			argv := impls[iname]
			if argv == nil {
				continue
			}
			cmd := exec.Command(argv[0], append(argv[1:], ap.Program)...)
			cmd.Env = append(os.Environ(), "LC_ALL=C")
			cmd.Stdin = bytes.NewReader(text.data)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("%s, %s lines, %s: %v\n%s", src.Name, text.name, iname, err, errb.String())
				continue
			}
			if got := out.String(); got != want {
				t.Errorf("%s, %s lines, %s prints (-want +got):\n%s", src.Name, text.name, iname, lineDiff(want, got))
			}
		}
	}
	return taken, counted
}
