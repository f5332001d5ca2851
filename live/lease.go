package live

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/emit"
)

// A run's lease is the instance sqlhist_<pid>_own (LeaseName). The run
// creates it before anything else and removes it after everything else,
// so whatever a run created exists only while its lease does: a run
// killed at any moment leaves its lease, and the lease says what else it
// may have left.
//
// It says so in its ring buffer: before its first other write, the run
// writes one record per command of its apply (kind, file, the line that
// undoes it) to the lease's trace_marker, and reads them back from its
// trace. Nothing else writes to that buffer, so the records stay, under
// every name the run uses: -n and view names, -B instances, probe groups,
// enables. [Cleanup] replays their undos, in reverse.
//
// A stream run that makes its own instance reads its events in its lease
// (see takeLease): reading the ring buffer (trace_pipe_raw) consumes what
// it reads, so there the records are moved into the lease's snapshot
// buffer, which the reading does not touch.

// leaseSuffix ends the name of a run's lease instance.
const leaseSuffix = "_own"

// LeaseName is the name of the lease instance of the run id.
func LeaseName(id int) string { return InstancePrefix + strconv.Itoa(id) + leaseSuffix }

// leaseBufferKB is the size per CPU the lease's ring buffer is set to: it
// holds a few records, not a trace.
const leaseBufferKB = "64"

// recordTag starts each marker line of a manifest; markerMax is the most
// text a marker line carries (the kernel truncates a trace_marker write
// at 1 KiB on older kernels).
const (
	recordTag = "sqlhist-own "
	markerMax = 900
)

// record is one command of a run's apply as its lease keeps it.
// The line that creates the object is not kept: the undo names it.
type record struct {
	Kind   emit.Kind `json:"k"`
	File   string    `json:"f"`
	Undo   string    `json:"u"`
	Marker string    `json:"m,omitempty"`
	What   string    `json:"w"`
	Role   string    `json:"r,omitempty"`
}

func recordOf(c emit.Command) record {
	return record{Kind: c.Kind, File: c.File, Undo: c.Undo, Marker: c.Marker, What: c.What, Role: c.Role}
}

func (r record) command() emit.Command {
	return emit.Command{Kind: r.Kind, File: r.File, Undo: r.Undo, Marker: r.Marker, What: r.What, Role: r.Role}
}

// manifestLines encodes the records as trace_marker lines: the JSON of
// the whole list, cut into numbered pieces of at most markerMax bytes
// ("sqlhist-own 3/7 <piece>"), so that a reader can put them back in
// order and tell a complete manifest from a cut one.
func manifestLines(cmds []emit.Command) []string {
	recs := make([]record, len(cmds))
	for i, c := range cmds {
		recs[i] = recordOf(c)
	}
	data, _ := json.Marshal(recs) // plain strings and ints: cannot fail
	s := string(data)
	var pieces []string
	for len(s) > markerMax {
		pieces = append(pieces, s[:markerMax])
		s = s[markerMax:]
	}
	pieces = append(pieces, s)
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = fmt.Sprintf("%s%d/%d %s", recordTag, i+1, len(pieces), p)
	}
	return out
}

// parseManifest reads the commands back from a lease's trace. ok is false
// when the manifest is missing or incomplete (the run was killed while
// writing it, before it created anything else).
func parseManifest(trace string) (cmds []emit.Command, ok bool) {
	var pieces []string
	total := 0
	for _, l := range strings.Split(trace, "\n") {
		text, found := markerText(l, recordTag)
		if !found {
			continue
		}
		num, piece, _ := strings.Cut(text, " ")
		a, b, _ := strings.Cut(num, "/")
		i, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || i < 1 || i > n || (total != 0 && n != total) {
			return nil, false
		}
		if total == 0 {
			total, pieces = n, make([]string, n)
		}
		pieces[i-1] = piece
	}
	if total == 0 || slices.Contains(pieces, "") {
		return nil, false
	}
	var recs []record
	if err := json.Unmarshal([]byte(strings.Join(pieces, "")), &recs); err != nil {
		return nil, false
	}
	for _, r := range recs {
		cmds = append(cmds, r.command())
	}
	return cmds, true
}

// markerText is what follows tag in a line of a trace that shows a
// trace_marker write beginning with tag. The line around it is the
// kernel's, in whatever form the instance's options give it, which a new
// instance takes from the top level's: "tracing_mark_write: " by default,
// "tracing_mark_write+0x9b/0x1de: " under sym-offset, "tracing_mark_write
// <ffffffff810ae6ad>: " under sym-addr, "# ffffffff810ae6ad " under raw,
// the name alone under nocontext-info (5.10 and 6.1 guests, 2026-12-06;
// hex and bin show no text: textOptions). What comes before the tag must be
// one of those, so that an event's string holding the tag (a stream
// run's lease also holds its events) is not taken for a record.
func markerText(line, tag string) (string, bool) {
	i := strings.Index(line, tag)
	if i < 0 {
		return "", false
	}
	before := line[:i]
	if !(strings.HasSuffix(before, ": ") && strings.Contains(before, "tracing_mark_write")) && !rawMarker().MatchString(before) {
		return "", false
	}
	return line[i+len(tag):], true
}

// rawMarker matches what a trace under the raw option prints before a
// marker's text: pid, CPU, timestamp, "#" and the address written from.
var rawMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\d+ \d+ \d+ # [0-9a-f]+ $`) })

// binaryOptions are the options under which a trace shows no text of a
// marker or an event as its format prints it, and what turns each off in
// an instance's trace_options (raw keeps a marker's text, not an
// event's).
var binaryOptions = [][2]string{{"hex", "nohex"}, {"bin", "nobin"}, {"raw", "noraw"}}

// readManifest reads the manifest in the lease instance name: from its
// snapshot buffer (a stream run's lease), else from its trace. The
// snapshot comes first: reading trace stops the recording in the
// instance while the file is open, which would lose a stream run's
// events.
func readManifest(t *Target, name string) ([]emit.Command, bool) {
	for try := 0; try < 2; try++ {
		if try > 0 {
			// A lease made under the top level's hex or bin shows
			// its records as numbers: turned off, they read.
			textOptions(t, "instances/"+name)
		}
		if cmds, ok := readManifestIn(t, name, "snapshot"); ok {
			return cmds, true
		}
		if cmds, ok := readManifestIn(t, name, "trace"); ok {
			return cmds, true
		}
	}
	return nil, false
}

// readManifestIn reads the manifest in one buffer of the lease instance
// name, as its file (trace or snapshot) shows it.
func readManifestIn(t *Target, name, file string) ([]emit.Command, bool) {
	data, err := fs.ReadFile(t.FS, "instances/"+name+"/"+file)
	if err != nil {
		return nil, false
	}
	return parseManifest(string(data))
}

// takeLease creates the lease of a run and records cmds in it, then reads
// them back. With ring, the lease is also the ring buffer a stream run
// reads its events from (they go to its main buffer): its trace clock
// (streamClock) is set before the records, since any write of the clock
// empties the instance's buffers, its snapshot's too; once read back,
// the records are moved into its snapshot buffer ("1" to its snapshot
// file swaps the two), where reading trace_pipe_raw does not consume
// them, and read back from there. An error means nothing of the run is
// left: the lease, when it was made, is removed again.
func takeLease(t *Target, name string, cmds []emit.Command, ring bool, bufferKB int) error {
	dir := "instances/" + name
	if err := t.W.Mkdir(dir); err != nil {
		return fmt.Errorf("creating the run's lease, instance %s: %v", name, errnoText(err))
	}
	if ring {
		if err := t.W.Append(dir+"/trace_clock", streamClock); err != nil {
			return dropLease(t, name, fmt.Errorf("setting the trace clock of the run's lease, instance %s: %v", name, errnoText(err)))
		}
	}
	// A smaller buffer is only a saving: the read-back below checks
	// that the records fit. (A stream run sets its size after; one
	// smaller than this is set now, since shrinking the buffer later
	// would drop records from its snapshot.)
	size := leaseBufferKB
	if ring && bufferKB > 0 && bufferKB < 64 {
		size = strconv.Itoa(bufferKB)
	}
	_ = t.W.Append(dir+"/buffer_size_kb", size)
	// Written twice at most: anyone's removal of a dynamic event (another
	// tool's kprobe) empties every ring buffer, this one's too, and may
	// fall between the writes and the read. The same pieces written again
	// replace each other in the reading.
	var data []byte
	var rerr error
	var got []emit.Command
	ok := false
	written := 0
	for try := 0; try < 2 && !(rerr == nil && ok && len(got) == len(cmds)); try++ {
		if try > 0 {
			// A top level set to hex or bin gave the lease its
			// option: its trace shows the records as numbers.
			textOptions(t, dir)
		}
		for _, l := range manifestLines(cmds) {
			if err := t.W.Append(dir+"/trace_marker", l); err != nil {
				return dropLease(t, name, fmt.Errorf("recording the run's objects in instance %s: %v", name, errnoText(err)))
			}
			written++
		}
		data, rerr = fs.ReadFile(t.FS, dir+"/trace")
		got, ok = parseManifest(string(data))
	}
	if rerr != nil || !ok || len(got) != len(cmds) {
		return dropLease(t, name, fmt.Errorf("recording the run's objects in instance %s: its trace does not show them back (%s)", name, manifestMiss(data, rerr, written)))
	}
	if !ring {
		return nil
	}
	if err := t.W.Append(dir+"/snapshot", "1"); err != nil {
		return dropLease(t, name, fmt.Errorf("keeping the run's records in the snapshot buffer of instance %s: %v", name, errnoText(err)))
	}
	// The kernel swaps nothing while the instance's tracing is
	// stopped (someone reads its trace): the records must show there.
	got, ok = readManifestIn(t, name, "snapshot")
	if !ok || len(got) != len(cmds) {
		return dropLease(t, name, fmt.Errorf("keeping the run's records in the snapshot buffer of instance %s: its snapshot does not show them back", name))
	}
	return nil
}

// textOptions turns off, in the instance dir, the options of
// binaryOptions it has (inherited from the top level when it was made):
// one read, and a write only for an option that is on.
func textOptions(t *Target, dir string) {
	data, err := fs.ReadFile(t.FS, dir+"/trace_options")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		for _, o := range binaryOptions {
			if strings.TrimSpace(l) == o[0] {
				_ = t.W.Append(dir+"/trace_options", o[1])
			}
		}
	}
}

// manifestMiss says why a lease's trace did not give its manifest back:
// the read's error, or how many of the want marker lines it showed and
// its first lines that are not comments (another format, another
// buffer's contents, nothing).
func manifestMiss(data []byte, err error, want int) string {
	if err != nil {
		return "reading it: " + errnoText(err)
	}
	seen := 0
	var first []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, recordTag) {
			seen++
		}
		if l != "" && !strings.HasPrefix(l, "#") && len(first) < 3 {
			if len(l) > 120 {
				l = l[:120] + "..."
			}
			first = append(first, strconv.Quote(l))
		}
	}
	what := fmt.Sprintf("it shows %d of the %d record lines written", seen, want)
	if len(first) == 0 {
		return what + ", and no line but comments"
	}
	return what + "; its first lines: " + strings.Join(first, ", ")
}

func dropLease(t *Target, name string, err error) error {
	if rerr := t.W.Rmdir("instances/" + name); rerr != nil {
		return fmt.Errorf("%w; removing the instance: %v", err, errnoText(rerr))
	}
	return err
}

// claim is an object a run's manifest says it creates.
type claim struct {
	pid  int
	live bool
	cmd  emit.Command
}

// sameObject reports whether two commands create the same object: the
// same file and the same line that undoes it (a synthetic event's or
// probe's name, an instance, a trigger's spec).
func sameObject(a, b emit.Command) bool {
	return a.Kind == b.Kind && a.File == b.File && a.Undo == b.Undo
}

// claims lists what the leases in t claim, run by run (pids sorted),
// except the run self.
func claims(t *Target, alive func(int) bool, self int) []claim {
	var out []claim
	for _, pid := range leasePIDs(t) {
		if pid == self {
			continue
		}
		cmds, _ := readManifest(t, LeaseName(pid))
		live := alive(pid)
		for _, c := range cmds {
			out = append(out, claim{pid: pid, live: live, cmd: c})
		}
	}
	return out
}

// instanceOfFile is the instance a tracefs file is in ("" for the top
// level's).
func instanceOfFile(file string) string {
	rest, ok := strings.CutPrefix(file, "instances/")
	if !ok {
		return ""
	}
	inst, _, _ := strings.Cut(rest, "/")
	return inst
}

// leasePIDs are the ids of the runs whose lease is in t.
func leasePIDs(t *Target) []int {
	var pids []int
	ents, _ := fs.ReadDir(t.FS, "instances")
	for _, e := range ents {
		if m := runName().FindStringSubmatch(e.Name()); m != nil && m[2] == leaseSuffix {
			if pid, err := strconv.Atoi(m[1]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	slices.Sort(pids)
	return pids
}

// ConflictError is a run refused before any write because another run
// claims one of its objects: a run still running (another sqlhist -r
// with the same -n, say), or one that was killed and left it.
type ConflictError struct {
	PID     int
	Running bool
	What    string // the object: "synthetic event lat"
}

func (e *ConflictError) Error() string {
	if e.Running {
		return fmt.Sprintf("the %s is in use by the sqlhist run of process %d, which is still running: give this run another name (-n, CREATE VIEW) or wait for that one to end", e.What, e.PID)
	}
	return fmt.Sprintf("the %s was left by the sqlhist run of process %d, which was killed: sqlhist --cleanup removes what it left", e.What, e.PID)
}

// checkClaims refuses cmds when another run's lease claims one of the
// objects they create: a running run's, or a killed run's that is there
// (a killed run's claim on what it never made is in no one's way).
func checkClaims(t *Target, alive func(int) bool, self int, cmds []emit.Command) error {
	cl := claims(t, alive, self)
	for _, c := range cmds {
		if c.Kind == emit.KindEnable {
			// An enable is its instance's: in an instance the run makes,
			// which is checked; in one that is there (-B), another run's
			// enable still on in it (a killed stream run's, or a live
			// one's) puts its events in the buffer this run reads, and
			// this run's teardown would turn it off.
			for _, o := range cl {
				if o.cmd.Kind == emit.KindEnable && instanceOfFile(o.cmd.File) == instanceOfFile(c.File) && (o.live || t.present(o.cmd)) {
					where := "top-level buffer"
					if inst := instanceOfFile(c.File); inst != "" {
						where = "instance " + inst
					}
					return &ConflictError{PID: o.pid, Running: o.live, What: where + " (its " + o.cmd.What + ")"}
				}
			}
			continue
		}
		for _, o := range cl {
			if sameObject(c, o.cmd) && (o.live || t.present(emit.Teardown([]emit.Command{o.cmd})[0])) {
				return &ConflictError{PID: o.pid, Running: o.live, What: c.What}
			}
			// An instance another run made (-B NAME) is its own: a run
			// that would put its triggers there is refused too. (Were it
			// to run, the removal of its synthetic events would reset the
			// ring buffers, the other's lease's manifest with them, and a
			// killed run's instance could no longer be told as its.)
			if o.cmd.Kind == emit.KindDir && strings.HasPrefix(c.File, o.cmd.File+"/") && t.HasInstance(strings.TrimPrefix(o.cmd.File, "instances/")) {
				return &ConflictError{PID: o.pid, Running: o.live, What: "instance " + strings.TrimPrefix(o.cmd.File, "instances/")}
			}
		}
	}
	return nil
}
