package live

import (
	"io/fs"
	"slices"

	"github.com/sqlhist/sqlhist/emit"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// readsFS serves one file whose text changes with each read: texts[i]
// at the i-th read, the last one after.
type readsFS struct {
	name  string
	texts []string
	reads int
}

func (r *readsFS) Open(name string) (fs.File, error) {
	if name != r.name {
		return nil, fs.ErrNotExist
	}
	text := r.texts[min(r.reads, len(r.texts)-1)]
	r.reads++
	return fstest.MapFS{name: {Data: []byte(text)}}.Open(name)
}

// pausedHist is a paused histogram of two entries (3 and 4 hits) whose
// Totals say hits.
func pausedHist(hits string) string {
	return "# event histogram\n#\n# trigger info: hist:keys=id:vals=hitcount:sort=hitcount:size=2048 [paused]\n#\n\n" +
		"{ id:          0 } hitcount:          3\n{ id:          1 } hitcount:          4\n\n" +
		"Totals:\n    Hits: " + hits + "\n    Entries: 2\n    Dropped: 0\n"
}

// TestStoppedHistogramSettles: once the engine stopped, a paused
// histogram printed with a hit its entries do not show yet is read again
// until they agree; before the stop, or when it is not paused, the first
// read is taken; one that never settles is taken after settleMax.
func TestStoppedHistogramSettles(t *testing.T) {
	defer func(w, m time.Duration) { settleFirstWait, settleMax = w, m }(settleFirstWait, settleMax)
	settleFirstWait, settleMax = time.Millisecond, 50*time.Millisecond
	const file = "events/raw_syscalls/sys_enter/hist"
	for _, c := range []struct {
		name      string
		stopped   bool
		texts     []string
		wantHits  uint64
		wantReads int
	}{
		{"settles at the third read", true, []string{pausedHist("8"), pausedHist("8"), pausedHist("7")}, 7, 3},
		{"whole at once", true, []string{pausedHist("7")}, 7, 1},
		{"still running", false, []string{pausedHist("8"), pausedHist("7")}, 8, 1},
		{"active, not paused", true, []string{activeHist(pausedHist("8")), pausedHist("7")}, 8, 1},
		{"never settles", true, []string{pausedHist("8")}, 8, -1},
	} {
		rfs := &readsFS{name: file, texts: c.texts}
		k := &kernelEngine{r: &runState{t: &Target{FS: rfs}}, stopped: c.stopped}
		hs, err := k.histograms(file)
		if err != nil || len(hs) != 1 {
			t.Fatalf("%s: %v, %d histograms", c.name, err, len(hs))
		}
		if hs[0].Totals.Hits != c.wantHits || (c.wantReads > 0 && rfs.reads != c.wantReads) || (c.wantReads < 0 && rfs.reads < 3) {
			t.Errorf("%s: hits %d after %d reads, want %d after %d", c.name, hs[0].Totals.Hits, rfs.reads, c.wantHits, c.wantReads)
		}
	}
}

// activeHist is text with its trigger active instead of paused.
func activeHist(text string) string {
	return strings.Replace(text, " [paused]", " [active]", 1)
}

// TestManifestMiss: a lease whose trace did not give its records back
// says why: the read's error, or what the trace showed instead.
func TestManifestMiss(t *testing.T) {
	for _, c := range []struct {
		data string
		err  error
		want string
	}{
		{"", &fs.PathError{Op: "read", Path: "trace", Err: fs.ErrNotExist}, "reading it: "},
		{"# tracer: nop\n#\n", nil, "it shows 0 of the 2 record lines written, and no line but comments"},
		{"# tracer: nop\n  sh-1 [000] 1.0: tracing_mark_write: sqlhist-own 1/2 [{\n  sh-1 [000] 1.1: 0xffff: raw\n", nil,
			`it shows 1 of the 2 record lines written; its first lines: "  sh-1 [000] 1.0: tracing_mark_write: sqlhist-own 1/2 [{", "  sh-1 [000] 1.1: 0xffff: raw"`},
	} {
		if got := manifestMiss([]byte(c.data), c.err, 2); !strings.HasPrefix(got, c.want) {
			t.Errorf("manifestMiss(%q, %v) = %q, want it to begin %q", c.data, c.err, got, c.want)
		}
	}
}

// resetOnce is a tracefs whose instances' trace shows what was written
// to their trace_marker, except that the first read finds the buffer
// emptied (as anyone's removal of a dynamic event empties it) when reset
// is set.
type resetOnce struct {
	trace map[string]string
	dirs  map[string]bool
	reset bool
	reads int
}

func (r *resetOnce) Append(file, line string) error {
	if strings.HasSuffix(file, "/trace_marker") {
		r.trace[strings.TrimSuffix(file, "_marker")] += "  sh-1 [000] .....  1.0: tracing_mark_write: " + line + "\n"
	}
	return nil
}
func (r *resetOnce) Mkdir(dir string) error { r.dirs[dir] = true; return nil }
func (r *resetOnce) Rmdir(dir string) error { delete(r.dirs, dir); return nil }
func (r *resetOnce) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, "/trace") {
		r.reads++
		if r.reset && r.reads == 1 {
			r.trace[name] = ""
		}
	}
	return fstest.MapFS{name: {Data: []byte(r.trace[name])}}.Open(name)
}

// TestLeaseWrittenAgainAfterAReset: a lease whose records were emptied
// before they were read back writes them again and keeps the run going;
// one whose records never show fails, saying so, and is removed.
func TestLeaseWrittenAgainAfterAReset(t *testing.T) {
	cmds := []emit.Command{{Kind: emit.KindDir, File: "instances/sqlhist_7", Line: "mkdir", Undo: "rmdir", What: "instance sqlhist_7"}}
	r := &resetOnce{trace: map[string]string{}, dirs: map[string]bool{}, reset: true}
	if err := takeLease(&Target{FS: r, W: r}, "sqlhist_7_own", cmds, false, 0); err != nil || r.reads != 2 || !r.dirs["instances/sqlhist_7_own"] {
		t.Errorf("a reset before the read-back: %v after %d reads; lease kept %v", err, r.reads, r.dirs["instances/sqlhist_7_own"])
	}
	never := &neverShown{resetOnce{trace: map[string]string{}, dirs: map[string]bool{}}}
	err := takeLease(&Target{FS: never, W: never}, "sqlhist_7_own", cmds, false, 0)
	if err == nil || !strings.Contains(err.Error(), "it shows 0 of the 2 record lines written") || never.reads != 2 || never.dirs["instances/sqlhist_7_own"] {
		t.Errorf("records never shown: %v after %d reads; lease left %v", err, never.reads, never.dirs["instances/sqlhist_7_own"])
	}
}

// neverShown is a tracefs whose trace_marker writes never show.
type neverShown struct{ resetOnce }

func (n *neverShown) Append(file, line string) error { return nil }

// TestMarkerTextForms: a marker's text is found in each form a trace
// printed it in, as an instance takes the top level's options (5.10 and
// 6.1 guests, 2026-12-06), and not in an event whose string holds the
// tag.
func TestMarkerTextForms(t *testing.T) {
	for _, c := range []struct {
		option, line string
		ok           bool
	}{
		{"default", "           <...>-93      [000] .....     2.509596: tracing_mark_write: sqlhist-own 1/1 x", true},
		{"sym-offset", "           <...>-93      [000] .....     2.509596: tracing_mark_write+0xdd/0x240: sqlhist-own 1/1 x", true},
		{"sym-addr", "           <...>-93      [001] .....     2.754871: tracing_mark_write <ffffffff903b348d>: sqlhist-own 1/1 x", true},
		{"raw", "93 0 2968414615 # ffffffff903b348d sqlhist-own 1/1 x", true},
		{"nocontext-info", "tracing_mark_write: sqlhist-own 1/1 x", true},
		{"latency-format", "   <...>-93        0..... 4846605us : tracing_mark_write: sqlhist-own 1/1 x", true},
		{"an event's string", "      sh-120   [000] .....   5.1: sched_process_exec: filename=/tmp/a: sqlhist-own 1/1 x pid=120", false},
		{"hex", "0000005d 00000001 00000000bdcb4a36 type: 5", false},
	} {
		text, ok := markerText(c.line, recordTag)
		if ok != c.ok || (ok && text != "1/1 x") {
			t.Errorf("%s: %q, %v; want %v", c.option, text, ok, c.ok)
		}
	}
}

// hexOnce is a tracefs whose lease instance was made under the top
// level's hex option: its trace shows records as numbers until nohex is
// written to its trace_options.
type hexOnce struct {
	resetOnce
	hex    bool
	writes []string
}

func (h *hexOnce) Append(file, line string) error {
	h.writes = append(h.writes, file+" "+line)
	if strings.HasSuffix(file, "/trace_options") && line == "nohex" {
		h.hex = false
	}
	return h.resetOnce.Append(file, line)
}

func (h *hexOnce) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, "/trace_options") {
		opts := "print-parent\nnosym-offset\nnobin\nhex\nmarkers\n"
		if !h.hex {
			opts = "print-parent\nnosym-offset\nnobin\nnohex\nmarkers\n"
		}
		return fstest.MapFS{name: {Data: []byte(opts)}}.Open(name)
	}
	if strings.HasSuffix(name, "/trace") && h.hex {
		h.reads++
		return fstest.MapFS{name: {Data: []byte("0000005d 00000001 00000000bdcb4a36 type: 5\n")}}.Open(name)
	}
	return h.resetOnce.Open(name)
}

// TestLeaseTurnsHexOff: a lease whose trace shows its records as numbers
// (the top level set to hex) turns the option off in its own instance
// and reads them; the top level's options are not written.
func TestLeaseTurnsHexOff(t *testing.T) {
	cmds := []emit.Command{{Kind: emit.KindDir, File: "instances/sqlhist_7", Line: "mkdir", Undo: "rmdir", What: "instance sqlhist_7"}}
	h := &hexOnce{resetOnce: resetOnce{trace: map[string]string{}, dirs: map[string]bool{}}, hex: true}
	if err := takeLease(&Target{FS: h, W: h}, "sqlhist_7_own", cmds, false, 0); err != nil {
		t.Fatalf("a lease made under hex: %v (writes %q)", err, h.writes)
	}
	if !slices.Contains(h.writes, "instances/sqlhist_7_own/trace_options nohex") || slices.Contains(h.writes, "trace_options nohex") {
		t.Errorf("writes %q, want nohex in the lease's own trace_options only", h.writes)
	}
}
