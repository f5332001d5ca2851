package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Leftover is what a run that did not end cleanly (SIGKILL, the OOM
// killer) left in a tracefs.
type Leftover struct {
	PID int
	// Awk, for what a killed awk engine's script left, is its instance
	// (sqlawk_…); PID is then the script's process on the target.
	Awk string
	// Commands remove it in the order the kernel requires: triggers with
	// actions (they read the others' variables), the other triggers, the
	// enables of its synthetic events, the synthetic events, its probes,
	// then its instance.
	Commands []emit.Command
}

// runName matches what a run names after its process id: its instance and
// its probe group, sqlhist_<pid>, and its lease, sqlhist_<pid>_own.
var runName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^` + InstancePrefix + `([0-9]+)(` + leaseSuffix + `|` + beatSuffix + `)?$`)
})

// DeadRuns returns the process ids of the runs that left a lease, an
// instance or a probe group sqlhist_<pid> behind and are no longer
// running: alive reports whether a process exists. It reads two listings,
// so a run can check at its start.
func DeadRuns(t *Target, alive func(pid int) bool) []int {
	return deadRuns(t, t.liveness(alive))
}

// deadRuns is DeadRuns with alive telling runs (heartbeats included).
func deadRuns(t *Target, alive func(pid int) bool) []int {
	var pids []int
	dirs := true
	add := func(name string) {
		if m := runName().FindStringSubmatch(name); m != nil && (m[2] == "" || dirs) {
			if pid, err := strconv.Atoi(m[1]); err == nil && !alive(pid) && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	ents, _ := fs.ReadDir(t.FS, "instances")
	for _, e := range ents {
		add(e.Name())
	}
	dirs = false
	for _, d := range dynamicEvents(t) {
		add(d.group)
	}
	slices.Sort(pids)
	return pids
}

// FindLeftovers lists what each dead run (see DeadRuns) left. A run with
// a lease (see [LeaseName]) left at most what its manifest lists: the
// undos of its apply, in reverse, then the lease; whatever of it is gone
// is skipped when the removals are made, and an object that a live run's
// lease claims is not touched. For a run without one (a run killed while
// it took its lease, or an older sqlhist), what is found by name: its
// instance and every trigger in it, its probes, and its synthetic events
// (the ones named with its _<pid> suffix and the ones its triggers fire or
// are on: a run refuses synthetic events that exist, so all it refers to
// are its own), with the triggers elsewhere that refer to them (a run
// given -B NAME puts its triggers in that instance). Objects of live runs
// and of other tools are not touched.
func FindLeftovers(t *Target, alive func(pid int) bool) []Leftover {
	alive = t.liveness(alive)
	var out []Leftover
	var live []claim
	for _, c := range claims(t, alive, -1) {
		if c.live {
			live = append(live, c)
		}
	}
	for _, pid := range deadRuns(t, alive) {
		// The manifest first: the search by name reads every trigger
		// file of every instance (seconds on a slow machine: 2-3 s of
		// the 3.3 s a kill point took under qemu's emulation).
		var l Leftover
		if cmds, ok := readManifest(t, LeaseName(pid)); ok {
			l = Leftover{PID: pid, Commands: leaseLeftover(t, pid, cmds, live)}
		} else {
			l = leftoverOf(t, pid)
			if t.HasInstance(LeaseName(pid)) {
				lease := emit.Instance(LeaseName(pid))
				l.Commands = append(l.Commands, emit.Command{Kind: emit.KindDir, File: lease.File, Line: "rmdir", What: "lease " + LeaseName(pid)})
			}
		}
		// The heartbeat goes last: until then the run is dead for
		// everyone by its stale beats, not by a missing process.
		if t.HasInstance(BeatName(pid)) {
			l.Commands = append(l.Commands, emit.Command{Kind: emit.KindDir, File: "instances/" + BeatName(pid), Line: "rmdir", What: "heartbeat " + BeatName(pid)})
		}
		out = append(out, l)
	}
	return out
}

// leaseLeftover is the removal of what a dead run's manifest lists (its
// apply commands, cmds) and is there, in reverse, then of its lease;
// objects that a live run claims are left out.
func leaseLeftover(t *Target, pid int, cmds []emit.Command, live []claim) []emit.Command {
	var out []emit.Command
	for _, c := range emit.Teardown(cmds) {
		claimed := false
		for _, o := range live {
			// A manifest keeps the undo, not the line that made the
			// object: compare what the removals write (c.Undo is empty
			// here, as is every other run's, so sameObject would match
			// any synthetic event of a live run).
			for _, r := range emit.Teardown([]emit.Command{o.cmd}) {
				claimed = claimed || r.Kind == c.Kind && r.File == c.File && r.Line == c.Line
			}
		}
		if !claimed && t.present(c) {
			out = append(out, c)
		}
	}
	return append(out, emit.Command{Kind: emit.KindDir, File: "instances/" + LeaseName(pid), Line: "rmdir", What: "lease " + LeaseName(pid)})
}

// trigger is one active trigger read from a trigger file.
type trigger struct {
	file, spec string
}

func leftoverOf(t *Target, pid int) Leftover {
	name := InstancePrefix + strconv.Itoa(pid)
	inst := "instances/" + name
	hasInst := t.HasInstance(name)
	dyn := dynamicEvents(t)
	synth := map[string]bool{}
	suffix := "_" + strconv.Itoa(pid)
	for _, d := range dyn {
		if d.kind == 's' && strings.HasSuffix(d.event, suffix) {
			synth[d.event] = true
		}
	}
	var own []trigger // the triggers in the run's instance
	if hasInst {
		own = triggersUnder(t, inst)
		for _, tr := range own {
			if sys, ev := eventOf(tr.file, inst); sys == "synthetic" {
				synth[ev] = true
			}
			for _, s := range fired(tr.spec) {
				synth[s] = true
			}
		}
	}
	// Triggers elsewhere that refer to the run's synthetic events (none
	// when it has none: then no other trigger file is read).
	var other []trigger
	for _, dir := range triggerRoots(t) {
		if dir == inst || len(synth) == 0 {
			continue
		}
		for _, tr := range triggersUnder(t, dir) {
			sys, ev := eventOf(tr.file, dir)
			refers := sys == "synthetic" && synth[ev]
			for _, s := range fired(tr.spec) {
				refers = refers || synth[s]
			}
			// A start trigger names its variables after the synthetic
			// event: a name with the run's suffix is distinctive enough to
			// look for inside a spec; a view's or -n's name is not.
			for s := range synth {
				refers = refers || strings.HasSuffix(s, suffix) && strings.Contains(tr.spec, s)
			}
			if refers {
				other = append(other, tr)
			}
		}
	}
	all := append(own, other...)
	var cmds []emit.Command
	for _, actions := range []bool{true, false} {
		for _, tr := range all {
			if hasActions(tr.spec) == actions {
				cmds = append(cmds, emit.Command{Kind: emit.KindTrigger, File: tr.file, Line: "!" + tr.spec,
					What: "trigger on " + strings.TrimSuffix(tr.file, "/trigger"), Marker: tr.spec})
			}
		}
	}
	names := sortedKeys(synth)
	if hasInst {
		for _, s := range names {
			f := inst + "/events/synthetic/" + s + "/enable"
			if data, err := fs.ReadFile(t.FS, f); err == nil && strings.TrimSpace(string(data)) == "1" {
				cmds = append(cmds, emit.Command{Kind: emit.KindEnable, File: f, Line: "0", What: "enable of synthetic event " + s})
			}
		}
	}
	for _, s := range names {
		cmds = append(cmds, emit.Command{Kind: emit.KindSynth, File: "dynamic_events", Line: "-:" + s, What: "synthetic event " + s, Marker: "/" + s + "\t"})
	}
	for _, d := range dyn {
		if d.group == name {
			id := d.group + "/" + d.event
			cmds = append(cmds, emit.Command{Kind: emit.KindProbe, File: "dynamic_events", Line: "-:" + id, What: "probe " + id, Marker: ":" + id + " "})
		}
	}
	if hasInst {
		cmds = append(cmds, emit.Command{Kind: emit.KindDir, File: inst, Line: "rmdir", What: "instance " + name})
	}
	return Leftover{PID: pid, Commands: cmds}
}

// dynEvent is one line of dynamic_events: "p:group/event …",
// "r16:group/event …", "s:synthetic/name …".
type dynEvent struct {
	kind         byte
	group, event string
}

func dynamicEvents(t *Target) []dynEvent {
	data, err := fs.ReadFile(t.FS, "dynamic_events")
	if err != nil {
		return nil
	}
	var out []dynEvent
	for _, l := range strings.Split(string(data), "\n") {
		// "p:", "s:", and "r16:" for a kretprobe with its maxactive.
		kind, rest, ok := strings.Cut(l, ":")
		if !ok || kind == "" || strings.Trim(kind[1:], "0123456789") != "" {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		id, _, _ = strings.Cut(id, "\t")
		group, event, ok := strings.Cut(id, "/")
		if ok {
			out = append(out, dynEvent{kind: kind[0], group: group, event: event})
		}
	}
	return out
}

// triggerRoots are the top level and every instance.
func triggerRoots(t *Target) []string {
	roots := []string{"."}
	ents, _ := fs.ReadDir(t.FS, "instances")
	for _, e := range ents {
		roots = append(roots, "instances/"+e.Name())
	}
	return roots
}

// triggersUnder reads the active triggers of every event under root.
func triggersUnder(t *Target, root string) []trigger {
	var out []trigger
	systems, _ := fs.ReadDir(t.FS, path.Join(root, "events"))
	for _, s := range systems {
		if !s.IsDir() {
			continue
		}
		evs, _ := fs.ReadDir(t.FS, path.Join(root, "events", s.Name()))
		for _, e := range evs {
			if !e.IsDir() {
				continue
			}
			f := path.Join(root, "events", s.Name(), e.Name(), "trigger")
			data, err := fs.ReadFile(t.FS, f)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(data), "\n") {
				if !strings.HasPrefix(l, "hist:") {
					continue // comments, and the other kinds of trigger
				}
				l = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(l, " [active]"), " [paused]"), " [inactive]")
				out = append(out, trigger{file: f, spec: tracefs.RepairListing(l)})
			}
		}
	}
	return out
}

// eventOf returns the system and event of a trigger file under root.
func eventOf(file, root string) (string, string) {
	rel := strings.TrimPrefix(file, path.Join(root, "events")+"/")
	parts := strings.Split(rel, "/")
	if len(parts) < 3 {
		return "", ""
	}
	return parts[0], parts[1]
}

// traceRE and oldRE find the synthetic events a trigger's actions fire:
// trace(name,…), and the older onmatch(…).name(…).
var (
	traceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.trace\(([A-Za-z0-9_]+)`) })
	oldRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\)\.([A-Za-z0-9_]+)\(`) })
)

func fired(spec string) []string {
	var out []string
	for _, m := range traceRE().FindAllStringSubmatch(spec, -1) {
		out = append(out, m[1])
	}
	for _, m := range oldRE().FindAllStringSubmatch(spec, -1) {
		if name := m[1]; name != "trace" && name != "save" && name != "snapshot" {
			out = append(out, name)
		}
	}
	return out
}

func hasActions(spec string) bool {
	return strings.Contains(spec, ":onmatch(") || strings.Contains(spec, ":onmax(") || strings.Contains(spec, ":onchange(")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Cleanup removes what dead runs left (see FindLeftovers), or with dryRun
// only says what it would remove: either way it writes the removals to w
// as a script for the tracefs at t.Root, one "# left by run PID" comment
// per run. It returns how many dead runs it found and the refused
// removals, joined.
func Cleanup(t *Target, alive func(pid int) bool, w io.Writer, dryRun bool) (int, error) {
	left := append(FindLeftovers(t, alive), awkLeftovers(t, alive)...)
	var errs []error
	for _, l := range left {
		note := "left by run " + strconv.Itoa(l.PID)
		if l.Awk != "" {
			note = "left by the awk script of process " + strconv.Itoa(l.PID) + " (" + l.Awk + ")"
		}
		emit.Print(w, l.Commands, emit.PrintOptions{Root: t.Root, Notes: []string{note}})
		if !dryRun {
			errs = append(errs, teardownPatient(t, l.Commands))
		}
	}
	return len(left), errors.Join(errs...)
}

// awkLeaseRE matches the lease of an awk engine's script (see
// WriteAwkScript): its instance's name, then _own_ and the script's
// process id.
var awkLeaseRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(` + awkInstancePrefix + `\w*)` + awkOwnSuffix + `([0-9]+)$`)
})

// awkLeftovers lists what killed awk engine's scripts left: each lease
// whose process is gone, with the script's instance unless a running
// script holds it too. An awk that outlived its script still reads the
// instance's trace_pipe (the kernel refuses the instance's rmdir then):
// the end marker ends it first. The awk scripts' probes (group sqlawk)
// go with the last lease. A live script's lease and instance are not
// touched.
func awkLeftovers(t *Target, alive func(pid int) bool) []Leftover {
	ents, _ := fs.ReadDir(t.FS, "instances")
	type lease struct {
		name, inst string
		pid        int
	}
	var dead []lease
	running := map[string]bool{} // instances a running script holds
	anyRunning := false
	for _, e := range ents {
		m := awkLeaseRE().FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		if alive(pid) {
			running[m[1]], anyRunning = true, true
			continue
		}
		dead = append(dead, lease{e.Name(), m[1], pid})
	}
	var out []Leftover
	removed := map[string]bool{}
	for i, l := range dead {
		var cmds []emit.Command
		if !running[l.inst] && !removed[l.inst] && t.HasInstance(l.inst) {
			removed[l.inst] = true
			dir := "instances/" + l.inst
			cmds = append(cmds,
				emit.Command{Kind: emit.KindSetting, File: dir + "/events/enable", Line: "0", What: "its events off: nothing is written after the end marker"},
				emit.Command{Kind: emit.KindSetting, File: dir + "/trace_marker", Line: AwkMarker, What: "the end marker: ends an awk of the killed script still reading " + l.inst},
				emit.Command{Kind: emit.KindDir, File: dir, Line: "rmdir", What: "instance " + l.inst})
		}
		if i == len(dead)-1 && !anyRunning {
			for _, d := range dynamicEvents(t) {
				if d.group == AwkProbeGroup {
					id := d.group + "/" + d.event
					cmds = append(cmds, emit.Command{Kind: emit.KindProbe, File: "dynamic_events", Line: "-:" + id, What: "probe " + id, Marker: ":" + id + " "})
				}
			}
		}
		cmds = append(cmds, emit.Command{Kind: emit.KindDir, File: "instances/" + l.name, Line: "rmdir", What: "lease " + l.name})
		out = append(out, Leftover{PID: l.pid, Awk: l.inst, Commands: cmds})
	}
	return out
}

// unownedAwk lists the awk scripts' instances that no lease names: made
// by a script an older sqlhist printed, or by one starting now.
func unownedAwk(t *Target) []string {
	ents, _ := fs.ReadDir(t.FS, "instances")
	owned := map[string]bool{}
	for _, e := range ents {
		if m := awkLeaseRE().FindStringSubmatch(e.Name()); m != nil {
			owned[m[1]] = true
		}
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if (n == awkInstancePrefix || strings.HasPrefix(n, awkInstancePrefix+"_")) && awkLeaseRE().FindStringSubmatch(n) == nil && !owned[n] {
			out = append(out, n)
		}
	}
	return out
}

// teardownPatient is Teardown, but an instance's rmdir that the kernel
// refuses as busy (a reader still holds one of its files: an awk ending
// at the marker written just before) is tried again for up to 10 s.
func teardownPatient(t *Target, cmds []emit.Command) error {
	var errs []error
	for _, c := range cmds {
		err := Teardown(t, []emit.Command{c})
		for i := 0; err != nil && c.Kind == emit.KindDir && isBusy(err) && i < 100; i++ {
			time.Sleep(100 * time.Millisecond)
			err = Teardown(t, []emit.Command{c})
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// isBusy reports whether err is the kernel's EBUSY (through --via, its
// message).
func isBusy(err error) bool {
	return errors.Is(err, syscall.EBUSY) || strings.Contains(strings.ToLower(err.Error()), "busy")
}

// present reports whether what a removal command removes may be there:
// false only when the tracefs shows it is not (an instance that does not
// exist, a definition or trigger not in its listing, an enable that is
// 0), so that --cleanup lists only what it removes.
func (t *Target) present(c emit.Command) bool {
	switch c.Kind {
	case emit.KindDir:
		return t.HasInstance(strings.TrimPrefix(c.File, "instances/"))
	case emit.KindEnable:
		data, err := fs.ReadFile(t.FS, c.File)
		return err == nil && strings.TrimSpace(string(data)) == "1"
	case emit.KindTrigger:
		data, err := fs.ReadFile(t.FS, c.File)
		if err != nil {
			return false // its instance is gone
		}
		if c.Marker == "" {
			// No variable to look for: a trigger with the same keys.
			keys, _, _ := strings.Cut(strings.TrimPrefix(c.Line, "!hist:"), " ")
			keys, _, _ = strings.Cut(keys, ":")
			l := tracefs.RepairListing(string(data))
			return strings.Contains(l, "hist:"+keys+":") || strings.Contains(l, "hist:"+keys+" ")
		}
	}
	return !t.gone(c)
}

// NothingLeft says why Cleanup found nothing to remove: no run left
// anything, or the runs that did are taken as alive (their process
// exists, or their heartbeat is fresh: a run through --via whose host
// was killed a moment ago), each with when it will count as dead.
func NothingLeft(t *Target, alive func(pid int) bool) string {
	live := t.liveness(alive)
	ids := deadRuns(t, func(id int) bool { return !live(id) })
	unowned := ""
	if u := unownedAwk(t); len(u) > 0 {
		unowned = fmt.Sprintf("; awk scripts' instances that no lease names (printed by an older sqlhist, or starting now), not removed: %s (if no script of it runs: echo 0 >> %s; echo %s >> %s; rmdir %s)",
			strings.Join(u, ", "), emit.Quote(path.Join(t.Root, "instances", u[0], "events", "enable")), AwkMarker, emit.Quote(path.Join(t.Root, "instances", u[0], "trace_marker")), emit.Quote(path.Join(t.Root, "instances", u[0])))
	}
	if len(ids) == 0 {
		return "nothing left by killed runs" + unowned
	}
	now, nerr := t.uptime()
	var runs []string
	for _, id := range ids {
		beat, has := t.lastBeat(id)
		switch {
		case has && nerr == nil && beat >= 0:
			age := max(now-beat, 0)
			runs = append(runs, fmt.Sprintf("run %d (its heartbeat is %.0f s old: it counts as dead once it is %v old, in %.0f s)", id, age, BeatStale, max(BeatStale.Seconds()-age, 0)))
		case has:
			runs = append(runs, fmt.Sprintf("run %d (its heartbeat cannot be dated)", id))
		default:
			runs = append(runs, fmt.Sprintf("run %d (its process is running)", id))
		}
	}
	return "nothing left by killed runs; left by runs taken as alive, not removed: " + strings.Join(runs, "; ") + "; run --cleanup again once they are dead" + unowned
}

// NoteDeadRuns says on w, before -r compiles (a killed run's synthetic
// event may make the compiler refuse the query), what killed runs left.
func NoteDeadRuns(w io.Writer, t *Target, alive func(pid int) bool) {
	if dead := DeadRuns(t, alive); len(dead) > 0 {
		fmt.Fprintf(w, "sqlhist: note: killed runs (pids %v) left tracing behind; sqlhist --cleanup removes it\n", dead)
	}
}
