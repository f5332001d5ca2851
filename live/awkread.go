package live

import (
	"bufio"
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

// AwkOutput is what the awk engine's program printed when it ended: the
// hist files it computed, by path ("events/synthetic/x/hist") in the
// order printed, and the events the kernel lost and the lines of no
// event it read.
type AwkOutput struct {
	Paths        []string
	Files        map[string]string
	Lost, Unread uint64
}

// ReadAwkOutput reads what an awk engine's program printed (see
// stream.Machine.Awk), as untrusted input: at most 64 MiB, lines of at
// most 1 MiB, 256 hist files, each path of the form events/SYSTEM/EVENT/
// hist and given once, each file one the hist reader takes, and the end
// line last (an output cut short is an error, not an empty answer).
func ReadAwkOutput(r io.Reader) (*AwkOutput, error) {
	sc := bufio.NewScanner(io.LimitReader(r, awkOutputMax+1))
	sc.Buffer(make([]byte, 0, 64<<10), awkLineMax)
	out := &AwkOutput{Files: map[string]string{}}
	var cur *strings.Builder
	ended := false
	n, total := 0, 0
	flush := func() error {
		if cur == nil {
			return nil
		}
		p := out.Paths[len(out.Paths)-1]
		text := strings.TrimSuffix(cur.String(), "\n")
		if _, err := tracefs.ParseHist(text); err != nil {
			return fmt.Errorf("the awk engine's %s: %v", p, err)
		}
		out.Files[p] = text
		cur = nil
		return nil
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		if total += len(line) + 1; total > awkOutputMax {
			return nil, fmt.Errorf("the awk engine's output is over %d bytes", awkOutputMax)
		}
		if ended {
			return nil, fmt.Errorf("the awk engine's output, line %d: text after its end line", n)
		}
		if rest, ok := strings.CutPrefix(line, stream.AwkEnd); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			if out.Lost, out.Unread, ok = awkEndCounts(rest); !ok {
				return nil, fmt.Errorf("the awk engine's output, line %d: a bad end line %q", n, clip(line))
			}
			ended = true
			continue
		}
		if p, ok := awkFileHeader(line); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			if _, dup := out.Files[p]; dup {
				return nil, fmt.Errorf("the awk engine's output, line %d: %s twice", n, p)
			}
			if len(out.Paths) >= awkFilesMax {
				return nil, fmt.Errorf("the awk engine's output has more than %d hist files", awkFilesMax)
			}
			out.Paths = append(out.Paths, p)
			out.Files[p] = ""
			cur = &strings.Builder{}
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("the awk engine's output, line %d: %q before its first hist file", n, clip(line))
		}
		cur.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the awk engine's output, after line %d: %v", n, err)
	}
	if !ended {
		return nil, fmt.Errorf("the awk engine's output ends before its end line (the program was stopped or its output cut)")
	}
	return out, nil
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
// engine would have from the same events.
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
	m, err := stream.New(hists, synths, cat.Event, stream.Options{KernelFilters: true, LongSize: arch.LongSize(), Syscall: namer})
	if err != nil {
		return "", err
	}
	r, err := stream.NewTextReader(m, arch.LongSize())
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(lines)
	sc.Buffer(make([]byte, 0, 64<<10), awkLineMax)
	for sc.Scan() {
		if ev := r.Event(sc.Text()); ev != nil {
			m.Feed(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range ap.Show {
		sys, ev, _ := strings.Cut(e, "/")
		b.WriteString(stream.AwkFilePrefix + "events/" + e + "/hist" + stream.AwkFileSuffix + "\n")
		b.WriteString(m.HistFile(sys, ev) + "\n")
	}
	fmt.Fprintf(&b, "%slost %d, unread %d%s\n", stream.AwkEnd, r.Lost, r.Unread, stream.AwkFileSuffix)
	return b.String(), nil
}
