package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// A top level whose trace options print a marker otherwise: a new
// instance takes them (trace_array_create copies the top level's flags),
// and sqlhist's lease read its records back only in the default form, so
// on a machine set to sym-offset (for function tracing) every run of the
// kernel's or the stream's engine failed before it wrote anything, with
// "its trace does not show them back" (2026-12-06: the forms in a 6.1
// guest are in live's TestMarkerTextForms). optionsScript runs, under the
// top level's sym-offset and then its hex too, a -r of the system calls,
// --events of the JOIN (then under raw as well), and a JOIN killed while
// it collects, and --cleanup for it: the runs answer, the streams are
// whole (the run's own instance turns hex and raw off), the killed run's
// lease is read (turning hex off in that lease alone), and the top level
// keeps its options. The workload runs.
const optionsScript = `: > /tmp/opterr
echo sym-offset > $T/trace_options
/work/sqlhist -r --engine kernel -d 1 -o json 'SELECT id, COUNT(*) AS n FROM sys_enter' > /tmp/opt1 2> /tmp/opt1err; echo "@@opt1-exit $?"
echo hex > $T/trace_options
/work/sqlhist -r --engine kernel -d 1 -o json 'SELECT id, COUNT(*) AS n FROM sys_enter' > /tmp/opt2 2> /tmp/opt2err; echo "@@opt2-exit $?"
/work/sqlhist -r --engine kernel -d 2 --events -o json "$J" > /tmp/optev 2> /tmp/optev-err; echo "@@optev-exit $?"
echo "@@optev-count $(wc -l < /tmp/optev)"
echo raw > $T/trace_options
/work/sqlhist -r --engine kernel -d 2 --events -o json "$J" > /tmp/optraw 2> /tmp/optraw-err; echo "@@optraw-exit $?"
echo "@@optraw-count $(wc -l < /tmp/optraw)"
echo "@@optraw-stderr"; cat /tmp/optraw-err
echo noraw > $T/trace_options
echo "@@optev-stderr"; cat /tmp/optev-err
/work/sqlhist -r --engine kernel -o json -n optkill "$J" > /dev/null 2> /tmp/opterr &
O=$!
i=0; while [ $i -lt 600 ] && ! grep -q collecting /tmp/opterr; do sleep 0.05; i=$((i + 1)); done
kill -KILL $O; wait $O
/work/sqlhist --cleanup > /tmp/out 2> /tmp/err; echo "@@optclean-exit $?"
echo "@@optclean-out"; cat /tmp/out; cat /tmp/err
echo "@@opt-after $(grep -xE '(no)?(sym-offset|hex)' $T/trace_options | tr '\n' ' ')"
echo "@@opt-left $(ls $T/instances | grep -v sqlhist_dstate | tr '\n' ' ')$(grep -c optkill $T/dynamic_events)"
echo nohex > $T/trace_options; echo nosym-offset > $T/trace_options
echo "@@opt1"; cat /tmp/opt1; echo "@@opt1-stderr"; cat /tmp/opt1err
echo "@@opt2"; cat /tmp/opt2; echo "@@opt2-stderr"; cat /tmp/opt2err
`

// checkOptions checks what optionsScript printed; it returns a note for
// the phase's verdict.
func checkOptions(t *testing.T, kname, out string) string {
	sec := sections(out)
	for _, n := range []string{"1", "2"} {
		if !strings.Contains(out, "@@opt"+n+"-exit 0\n") {
			t.Errorf("%s: -r under the top level's %s: not exit 0:\n%s", kname, map[string]string{"1": "sym-offset", "2": "sym-offset and hex"}[n], sec["opt"+n+"-stderr"])
			continue
		}
		if r, ok := parseResults(t, "options "+n, sec["opt"+n], 1); ok && r[0].Totals.Hits == 0 {
			t.Errorf("%s: -r under the top level's options %s counted no system call:\n%s", kname, n, sec["opt"+n])
		}
	}
	// --events reads its instance's trace_pipe as text: under hex, and
	// under hex and raw, every event the kernel counted is streamed.
	for _, v := range []string{"optev", "optraw"} {
		n, _ := strconv.Atoi(strings.TrimPrefix(firstLine(out, "@@"+v+"-count "), "@@"+v+"-count "))
		if !strings.Contains(out, "@@"+v+"-exit 0\n") || streamProblem(sec[v+"-stderr"], n) != "" {
			t.Errorf("%s: --events under the top level's options (%s): %d lines, %s:\n%s", kname, v, n, streamProblem(sec[v+"-stderr"], n), sec[v+"-stderr"])
		}
	}
	if !strings.Contains(out, "@@optclean-exit 0\n") || !strings.Contains(sec["optclean-out"], "optkill") {
		t.Errorf("%s: --cleanup of a run killed under hex: want exit 0 and the run's synthetic event optkill named from its lease:\n%s", kname, sec["optclean-out"])
	}
	if got := firstLine(out, "@@opt-after "); got != "@@opt-after sym-offset hex " {
		t.Errorf("%s: the top level's options after the runs: %q, want sym-offset and hex as they were set", kname, got)
	}
	if got := firstLine(out, "@@opt-left "); got != "@@opt-left 0" {
		t.Errorf("%s: left after --cleanup (instances, then optkill's lines in dynamic_events): %q", kname, got)
	}
	return "options: sym-offset, hex and raw on the top level"
}
