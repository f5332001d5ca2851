package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Bounds on what an awk engine's program may print: its output comes
// from a target, and is read as untrusted input.
const (
	awkOutputMax = 64 << 20 // bytes in all
	awkLineMax   = 1 << 20  // bytes a line
	awkFilesMax  = 256      // hist files
)

// AwkOutput is what the awk engine's program printed at one time: the
// hist files it computed, by path ("events/synthetic/x/hist") in the
// order printed, and the events the kernel lost and the lines of no
// event it read. Interval is N of an interval's ("==> interval N <==",
// counted from the start), 0 for the end's.
type AwkOutput struct {
	Interval     int
	Paths        []string
	Files        map[string]string
	Lost, Unread uint64
	// Args are the arguments of the query line the output starts with
	// (AwkQueryLine; nil without one): what plans the query again.
	Args []string
}

// AwkQueryPrefix starts the first line of a printed awk script's output:
// "==> sqlhist query: {"args":[…]} <==", the command line arguments that
// plan its query again (the catalog's and the planner's flags, then
// "--" and the query's text), as JSON on one line.
const AwkQueryPrefix = "==> sqlhist query: "

// awkQuery is the JSON of the query line.
type awkQuery struct {
	Args []string `json:"args"`
}

// AwkQueryLine is the query line of args (AwkQueryPrefix).
func AwkQueryLine(args []string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(awkQuery{Args: args}) // strings only: no error
	return AwkQueryPrefix + strings.TrimSuffix(b.String(), "\n") + stream.AwkFileSuffix
}

// awkQueryArgs reads a query line's JSON ("{…} <=="): an object with
// args, a list of at most 256 strings, and nothing else.
func awkQueryArgs(s string) ([]string, bool) {
	s, ok := strings.CutSuffix(s, stream.AwkFileSuffix)
	if !ok {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var q awkQuery
	if err := dec.Decode(&q); err != nil || dec.More() || q.Args == nil || len(q.Args) > 256 {
		return nil, false
	}
	return q.Args, true
}

// ReadAwkOutput reads what an awk engine's program printed (see
// stream.Machine.Awk) and returns the end's hist files (after those of
// the intervals, if it printed any), as ReadAwkOutputs reads them.
func ReadAwkOutput(r io.Reader) (*AwkOutput, error) {
	outs, err := ReadAwkOutputs(r)
	if err != nil {
		return nil, err
	}
	return outs[len(outs)-1], nil
}

// ReadAwkOutputs reads what an awk engine's program printed, as
// untrusted input: at most 64 MiB, lines of at most 1 MiB; the hist
// files of each interval ("==> interval N <==", N from 1 up, one after
// another) then the end's, each of at most 256 hist files, each path of
// the form events/SYSTEM/EVENT/hist and given once, each file one the
// hist reader takes, each ended by its end line, the end's last (an
// output cut short is an error, not an empty answer).
func ReadAwkOutputs(r io.Reader) ([]*AwkOutput, error) {
	sc := bufio.NewScanner(io.LimitReader(r, awkOutputMax+1))
	sc.Buffer(make([]byte, 0, 64<<10), awkLineMax)
	var ar AwkReader
	var outs []*AwkOutput
	total := 0
	for sc.Scan() {
		line := sc.Text()
		if total += len(line) + 1; total > awkOutputMax {
			return nil, fmt.Errorf("the awk engine's output is over %d bytes", awkOutputMax)
		}
		o, err := ar.Line(line)
		if err != nil {
			return nil, err
		}
		if o != nil {
			outs = append(outs, o)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the awk engine's output, after line %d: %v", ar.n, err)
	}
	if !ar.Ended() {
		return nil, fmt.Errorf("the awk engine's output ends before its end line (the program was stopped or its output cut)")
	}
	return outs, nil
}

// AwkReader reads the output of an awk engine's program a line at a
// time, as it comes (a run with -i reads each interval's hist files
// while the program runs). Its zero value is ready; it holds at most
// one output's hist files (64 MiB) at a time.
type AwkReader struct {
	n, size int
	ended   bool
	out     *AwkOutput       // the output being read, nil between two
	cur     *strings.Builder // the hist file being read
	ticks   int              // the last interval read
	args    []string         // the query line's, when the output has one
}

// Ended reports whether the end's output was read: nothing may follow.
func (ar *AwkReader) Ended() bool { return ar.ended }

// Line reads one line (without its newline, at most 1 MiB): an output
// it completes is returned.
func (ar *AwkReader) Line(line string) (*AwkOutput, error) {
	ar.n++
	n := ar.n
	if len(line) > awkLineMax {
		return nil, fmt.Errorf("the awk engine's output, line %d: longer than %d bytes", n, awkLineMax)
	}
	if ar.ended {
		return nil, fmt.Errorf("the awk engine's output, line %d: text after its end line", n)
	}
	if ar.size += len(line) + 1; ar.size > awkOutputMax {
		return nil, fmt.Errorf("the awk engine's output is over %d bytes", awkOutputMax)
	}
	if rest, ok := strings.CutPrefix(line, AwkQueryPrefix); ok {
		// The query line: first, once.
		if n != 1 {
			return nil, fmt.Errorf("the awk engine's output, line %d: a query line after the first line", n)
		}
		if ar.args, ok = awkQueryArgs(rest); !ok {
			return nil, fmt.Errorf("the awk engine's output, line %d: a bad query line %q", n, clip(line))
		}
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(line, stream.AwkInterval); ok {
		if ar.out != nil {
			return nil, fmt.Errorf("the awk engine's output, line %d: an interval inside another's hist files", n)
		}
		k, ok := awkIntervalN(rest)
		if !ok || k != ar.ticks+1 {
			return nil, fmt.Errorf("the awk engine's output, line %d: %q, want interval %d", n, clip(line), ar.ticks+1)
		}
		ar.ticks = k
		ar.out = &AwkOutput{Interval: k, Files: map[string]string{}}
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(line, stream.AwkLost); ok {
		// The warning before an output's hist files: the end line
		// carries the count the results take.
		if ar.cur != nil || !strings.HasSuffix(rest, stream.AwkFileSuffix) {
			return nil, fmt.Errorf("the awk engine's output, line %d: %q among hist files", n, clip(line))
		}
		if ar.out == nil {
			ar.out = &AwkOutput{Files: map[string]string{}}
		}
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(line, stream.AwkEnd); ok {
		if ar.out == nil {
			ar.out = &AwkOutput{Files: map[string]string{}}
		}
		if err := ar.flush(); err != nil {
			return nil, err
		}
		o := ar.out
		o.Args = ar.args
		if o.Lost, o.Unread, ok = awkEndCounts(rest); !ok {
			return nil, fmt.Errorf("the awk engine's output, line %d: a bad end line %q", n, clip(line))
		}
		ar.ended = o.Interval == 0
		ar.out, ar.size = nil, 0
		return o, nil
	}
	if p, ok := awkFileHeader(line); ok {
		if ar.out == nil {
			ar.out = &AwkOutput{Files: map[string]string{}}
		}
		if err := ar.flush(); err != nil {
			return nil, err
		}
		o := ar.out
		if _, dup := o.Files[p]; dup {
			return nil, fmt.Errorf("the awk engine's output, line %d: %s twice", n, p)
		}
		if len(o.Paths) >= awkFilesMax {
			return nil, fmt.Errorf("the awk engine's output has more than %d hist files", awkFilesMax)
		}
		o.Paths = append(o.Paths, p)
		o.Files[p] = ""
		ar.cur = &strings.Builder{}
		return nil, nil
	}
	if ar.cur == nil {
		return nil, fmt.Errorf("the awk engine's output, line %d: %q before its first hist file", n, clip(line))
	}
	ar.cur.WriteString(line + "\n")
	return nil, nil
}

// flush ends the hist file being read.
func (ar *AwkReader) flush() error {
	if ar.cur == nil {
		return nil
	}
	o := ar.out
	p := o.Paths[len(o.Paths)-1]
	text := strings.TrimSuffix(ar.cur.String(), "\n")
	ar.cur = nil
	if _, err := tracefs.ParseHist(text); err != nil {
		return fmt.Errorf("the awk engine's %s: %v", p, err)
	}
	o.Files[p] = text
	return nil
}

// awkIntervalN reads "N <==" of an interval's line.
func awkIntervalN(s string) (int, bool) {
	s, ok := strings.CutSuffix(s, stream.AwkFileSuffix)
	if !ok || len(s) > 9 {
		return 0, false
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 || strconv.Itoa(k) != s {
		return 0, false
	}
	return k, true
}

// awkFileHeader reads "==> events/SYSTEM/EVENT/hist <==".
func awkFileHeader(line string) (string, bool) {
	p, ok := strings.CutPrefix(line, stream.AwkFilePrefix)
	if !ok {
		return "", false
	}
	if p, ok = strings.CutSuffix(p, stream.AwkFileSuffix); !ok {
		return "", false
	}
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "events" || parts[3] != "hist" || !tracefs.IsIdent(parts[1]) || !tracefs.IsIdent(parts[2]) {
		return "", false
	}
	return p, true
}

// awkEndCounts reads "lost N, unread M <==".
func awkEndCounts(s string) (lost, unread uint64, ok bool) {
	s, ok = strings.CutSuffix(s, stream.AwkFileSuffix)
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(s, ", ")
	if !ok {
		return 0, 0, false
	}
	la, ok1 := strings.CutPrefix(a, "lost ")
	ub, ok2 := strings.CutPrefix(b, "unread ")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(la, 10, 64)
	u, err2 := strconv.ParseUint(ub, 10, 64)
	if err1 != nil || err2 != nil || strconv.FormatUint(l, 10) != la || strconv.FormatUint(u, 10) != ub {
		return 0, 0, false
	}
	return l, u, true
}

// clip shortens a line for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// AwkReplay computes what the awk engine's program of plan prints over
// the trace_pipe lines it read (its SQLHIST_AWK_TEE file): the stream
// machine fed the events stream.TextReader reads from them. A run whose
// output differs from its replay computed something else than the stream
// engine would have from the same events. The program's ticks
// (AwkTick) print the intervals' hist files where they came.
func AwkReplay(plan *planner.Plan, cat *tracefs.Catalog, arch *tracefs.Arch, lines io.Reader) (string, error) {
	ap, err := NewAwkPlan(plan, cat, arch)
	if err != nil {
		return "", err
	}
	if arch == nil {
		arch = tracefs.Arches[0]
	}
	hists, synths := planHists(plan)
	namer := tracefs.SyscallNamer(arch.Name, func(name string) bool {
		_, err := cat.Lookup("syscalls", "sys_enter_"+name)
		return err == nil
	})
	// .execname and COMM name the task of the line, as the program
	// does (the kernel saves the task's name at the event).
	var r *stream.TextReader
	comm := func(int) string { return r.Comm }
	m, err := stream.New(hists, synths, cat.Event, stream.Options{KernelFilters: true, LongSize: arch.LongSize(), Syscall: namer, Comm: comm})
	if err != nil {
		return "", err
	}
	r, err = stream.NewTextReader(m, arch.LongSize())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	files := func() {
		if r.Lost > 0 {
			fmt.Fprintf(&b, "%s%d events the kernel dropped before awk read them (its buffer was full): the counts below are short%s\n", stream.AwkLost, r.Lost, stream.AwkFileSuffix)
		}
		for _, e := range ap.Show {
			sys, ev, _ := strings.Cut(e, "/")
			b.WriteString(stream.AwkFilePrefix + "events/" + e + "/hist" + stream.AwkFileSuffix + "\n")
			b.WriteString(m.HistFile(sys, ev) + "\n")
		}
		fmt.Fprintf(&b, "%slost %d, unread %d%s\n", stream.AwkEnd, r.Lost, r.Unread, stream.AwkFileSuffix)
	}
	sc := bufio.NewScanner(lines)
	sc.Buffer(make([]byte, 0, 64<<10), awkLineMax)
	ticks := 0
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), ": tracing_mark_write: "+AwkTick) {
			ticks++
			fmt.Fprintf(&b, "%s%d%s\n", stream.AwkInterval, ticks, stream.AwkFileSuffix)
			files()
			continue
		}
		if ev := r.Event(sc.Text()); ev != nil {
			m.Feed(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	files()
	return b.String(), nil
}
