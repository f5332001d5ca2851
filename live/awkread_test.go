package live

import (
	"os"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// awkOutputSeed is a replay of the wakeup JOIN over real riscv64 text.
func awkOutputSeed(t testing.TB) string {
	data, err := os.ReadFile("testdata/awk/trace-6.12-riscv64.txt")
	if err != nil {
		t.Fatal(err)
	}
	cat, a := awkCatalog(t, "6.12", "riscv64")
	plan, _ := Compile(sourceOf(awkQueries["agg"]), cat, AwkPrepare(plannerOptions()))
	out, err := AwkReplay(plan, cat, a, strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadAwkOutput(t *testing.T) {
	good := awkOutputSeed(t)
	o, err := ReadAwkOutput(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Paths) != 1 || o.Paths[0] != "events/synthetic/sched_waking_to_sched_switch_awk/hist" || o.Lost != 0 || o.Unread == 0 {
		t.Errorf("paths %q, lost %d, unread %d", o.Paths, o.Lost, o.Unread)
	}
	hs, err := tracefs.ParseHist(o.Files[o.Paths[0]])
	if err != nil || len(hs) != 1 || hs[0].Totals.Hits == 0 {
		t.Errorf("the results: %v", err)
	}
	lines := strings.SplitAfter(good, "\n")
	for _, tt := range []struct{ name, in, err string }{
		{"cut", strings.Join(lines[:len(lines)/2], ""), "ends before its end line"},
		{"empty", "", "ends before its end line"},
		{"banner first", "login: root\n" + good, "before its first hist file"},
		{"after the end", good + "x\n", "text after its end line"},
		{"twice", lines[0] + good, "twice"},
		{"bad path", "==> ../../etc/passwd <==\n" + good, "before its first hist file"},
		{"bad end", strings.Replace(good, "lost 0,", "lost 01,", 1), "bad end line"},
		{"cut hist", strings.Replace(good, "Totals:", "", 1), "the awk engine's events/synthetic"},
		{"interval skipped", stream.AwkInterval + "2" + stream.AwkFileSuffix + "\n" + good, "want interval 1"},
		{"interval in files", lines[0] + stream.AwkInterval + "1" + stream.AwkFileSuffix + "\n" + good, "inside another"},
		{"interval last", stream.AwkInterval + "1" + stream.AwkFileSuffix + "\n" + good, "ends before its end line"},
		{"long line", lines[0] + strings.Repeat("x", awkLineMax+1) + "\n", "token too long"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadAwkOutput(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want one saying %q", err, tt.err)
			}
		})
	}
}

// FuzzReadAwkOutput: what a target's awk prints never panics the reader,
// and what it takes is whole: intervals numbered from 1 up, then the
// end's; every path has a file the hist reader takes. A poll's reading
// of the same text in two pieces (awkPollLines) takes the same.
func FuzzReadAwkOutput(f *testing.F) {
	seed := awkOutputSeed(f)
	f.Add(seed, 0)
	f.Add(stream.AwkInterval+"1"+stream.AwkFileSuffix+"\n"+seed+stream.AwkInterval+"2"+stream.AwkFileSuffix+"\n"+seed+seed, len(seed)/3)
	f.Add("==> events/a/b/hist <==\n==> end: lost 0, unread 0 <==\n", 7)
	f.Fuzz(func(t *testing.T, in string, cut int) {
		fuzzguard.Run(fuzzguard.Limit, in, func() {
			outs, err := ReadAwkOutputs(strings.NewReader(in))
			if err != nil {
				return
			}
			for i, o := range outs {
				if last := i == len(outs)-1; (o.Interval == 0) != last || !last && o.Interval != i+1 {
					t.Fatalf("output %d of %d is interval %d", i, len(outs), o.Interval)
				}
				if len(o.Paths) != len(o.Files) {
					t.Fatalf("%d paths, %d files", len(o.Paths), len(o.Files))
				}
				for _, p := range o.Paths {
					if _, err := tracefs.ParseHist(o.Files[p]); err != nil {
						t.Fatalf("%s was taken but does not read: %v", p, err)
					}
				}
			}
			if strings.Contains(in, "\r") || strings.Contains(in, awkPollEOF) || !strings.HasSuffix(in, "\n") {
				return
			}
			cut = min(max(cut, 0), len(in))
			var ar AwkReader
			a, n, err := awkPollLines(&ar, in[:cut]+awkPollEOF+"\n")
			if err != nil {
				t.Fatalf("the first piece: %v", err)
			}
			b, _, err := awkPollLines(&ar, in[n:]+awkPollEOF+"\n")
			if err != nil || len(a)+len(b) != len(outs) || !ar.Ended() {
				t.Fatalf("in two pieces: %d+%d outputs (%v), want %d", len(a), len(b), err, len(outs))
			}
		})
	})
}

func sourceOf(q string) *source.Source { return &source.Source{Name: "q.sql", Text: q} }

func plannerOptions() planner.Options { return planner.Options{} }
