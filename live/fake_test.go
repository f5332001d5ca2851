package live_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/tracefs"
)

// fakeTracefs stands in for a kernel's tracefs: it reads the embedded
// catalog of Linux 6.1 and the files a test puts in Files (hist files, an
// error_log), and records every write. It keeps the state the writes make
// as the kernel lists it: instances, dynamic_events, each trigger file's
// triggers (paused ones too), enables, and the trace of an instance's
// trace_marker, which a write to its snapshot moves to its snapshot and
// a change of its clock empties. A write whose line contains Refuse fails, as the kernel
// refuses a command, and adds an error_log entry. KillAfter, when
// positive, makes every write after that many fail unrecorded, as if the
// process had been killed there.
type fakeTracefs struct {
	tracefs.Recorder
	Files     map[string]string
	Refuse    string
	KillAfter int
	base      fs.FS
	dirs      map[string]bool // instances/NAME
	writes    int
	cpus      int // per_cpu/cpuN of an instance with no files of a test's there
}

// errKilled is every write after KillAfter.
var errKilled = errors.New("killed")

func newFake() *fakeTracefs { return newFakeOf("6.1") }

// newFakeOf is a fake with the embedded catalog of a kernel version.
func newFakeOf(version string) *fakeTracefs {
	base, err := tracefs.Embedded(version)
	if err != nil {
		panic(err)
	}
	return &fakeTracefs{Files: map[string]string{}, base: base, dirs: map[string]bool{}}
}

func (f *fakeTracefs) Open(name string) (fs.File, error) {
	if data, ok := f.Files[name]; ok {
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(data)}}.Open(name)
	}
	if strings.Contains(name, "/per_cpu") {
		// An instance's per-CPU directories, from the files a test put
		// in them.
		m := fstest.MapFS{}
		for k, v := range f.Files {
			if strings.HasPrefix(k, name+"/") {
				m[k] = &fstest.MapFile{Data: []byte(v)}
			}
		}
		if inst, _, _ := strings.Cut(strings.TrimPrefix(name, "instances/"), "/"); len(m) == 0 && f.dirs["instances/"+inst] {
			for i := range f.cpus {
				m[fmt.Sprintf("%s/cpu%d/stats", name, i)] = &fstest.MapFile{Data: []byte("overrun: 0\n")}
			}
		}
		if len(m) > 0 {
			return m.Open(name)
		}
	}
	if name == "dynamic_events" {
		return fstest.MapFS{name: &fstest.MapFile{}}.Open(name) // none
	}
	if strings.HasSuffix(name, "/trigger") {
		inst, _, _ := strings.Cut(strings.TrimPrefix(name, "instances/"), "/")
		if !strings.HasPrefix(name, "instances/") || f.dirs["instances/"+inst] {
			return fstest.MapFS{"trigger": &fstest.MapFile{}}.Open("trigger") // no triggers
		}
	}
	if name == "instances" {
		m := fstest.MapFS{}
		for d := range f.dirs {
			m[d+"/trace"] = &fstest.MapFile{}
		}
		if len(m) == 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return m.Open("instances")
	}
	if rest, ok := strings.CutPrefix(name, "instances/"); ok {
		inst, sub, _ := strings.Cut(rest, "/")
		if !f.dirs["instances/"+inst] {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if sub == "" {
			return fstest.MapFS{"trace": &fstest.MapFile{}}.Open(".")
		}
		return f.base.Open(sub) // an instance has the top level's events
	}
	return f.base.Open(name)
}

func (f *fakeTracefs) Append(file, line string) error {
	if f.KillAfter > 0 && f.writes >= f.KillAfter {
		return errKilled
	}
	f.writes++
	if f.Refuse != "" && !strings.HasSuffix(file, "trace_marker") && strings.Contains(line, f.Refuse) {
		f.Files["error_log"] += "[  312.501234] hist:sched:sched_switch: error: Couldn't find field\n  Command: " + line + "\n             ^\n"
		return &fs.PathError{Op: "write", Path: file, Err: fs.ErrInvalid}
	}
	if err := f.apply(file, line); err != nil {
		return &fs.PathError{Op: "write", Path: file, Err: err}
	}
	return f.Recorder.Append(file, line)
}

func (f *fakeTracefs) Mkdir(dir string) error {
	if f.KillAfter > 0 && f.writes >= f.KillAfter {
		return errKilled
	}
	f.writes++
	if f.dirs[dir] {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
	}
	f.dirs[dir] = true
	return f.Recorder.Append("mkdir", dir)
}

func (f *fakeTracefs) Rmdir(dir string) error {
	if f.KillAfter > 0 && f.writes >= f.KillAfter {
		return errKilled
	}
	f.writes++
	if !f.dirs[dir] {
		return &fs.PathError{Op: "rmdir", Path: dir, Err: fs.ErrNotExist}
	}
	f.removeInstance(dir)
	return f.Recorder.Append("rmdir", dir)
}

// removeInstance removes an instance with everything in it, as someone
// else's rmdir does.
func (f *fakeTracefs) removeInstance(dir string) {
	delete(f.dirs, dir)
	for k := range f.Files {
		if strings.HasPrefix(k, dir+"/") {
			delete(f.Files, k)
		}
	}
}

// apply changes the state as the kernel does for one write.
func (f *fakeTracefs) apply(file, line string) error {
	if inst, _, ok := strings.Cut(strings.TrimPrefix(file, "instances/"), "/"); ok && strings.HasPrefix(file, "instances/") && !f.dirs["instances/"+inst] {
		return fs.ErrNotExist
	}
	switch {
	case file == "dynamic_events":
		return f.dynamic(line)
	case strings.HasSuffix(file, "/trigger"):
		return f.trigger(file, line)
	case strings.HasSuffix(file, "/trace_marker"):
		f.Files[strings.TrimSuffix(file, "_marker")] += "              sh-1       [000] .....   1.000000: tracing_mark_write: " + line + "\n"
	case strings.HasSuffix(file, "/snapshot") && line == "1":
		// The main buffer and the snapshot buffer swap.
		dir := strings.TrimSuffix(file, "/snapshot")
		f.Files[dir+"/trace"], f.Files[file] = f.Files[file], f.Files[dir+"/trace"]
	case strings.HasSuffix(file, "/trace_clock"):
		// A change of clock empties both buffers.
		dir := strings.TrimSuffix(file, "/trace_clock")
		delete(f.Files, dir+"/trace")
		delete(f.Files, dir+"/snapshot")
	case strings.HasSuffix(file, "/enable"):
		if line == "1" {
			f.Files[file] = "1\n"
		} else {
			delete(f.Files, file)
		}
	}
	return nil
}

func (f *fakeTracefs) dynamic(line string) error {
	if strings.Contains(line, "\n") {
		// Several commands in one write: each in turn, the first
		// refusal ending the write, as the kernel parses them.
		for _, l := range strings.Split(line, "\n") {
			if err := f.dynamic(l); err != nil {
				return err
			}
		}
		return nil
	}
	lines := strings.SplitAfter(f.Files["dynamic_events"], "\n")
	if name, ok := strings.CutPrefix(line, "-:"); ok {
		for i, l := range lines {
			if strings.Contains(l, ":"+name+" ") || strings.Contains(l, "/"+name+"\t") {
				f.Files["dynamic_events"] = strings.Join(append(lines[:i:i], lines[i+1:]...), "")
				// The kernel resets every ring buffer when it removes an
				// event (trace_remove_event_call): a lease's manifest
				// goes with it (seen on 6.1).
				for k := range f.Files {
					if k == "trace" || strings.HasSuffix(k, "/trace") || strings.HasSuffix(k, "/snapshot") {
						f.Files[k] = ""
					}
				}
				return nil
			}
		}
		return fs.ErrNotExist
	}
	kind, def, _ := strings.Cut(line, ":")
	id, rest, _ := strings.Cut(def, " ")
	entry := kind + ":" + id + " " + rest + "\n"
	if kind == "s" {
		entry = "s:synthetic/" + id + "\t" + rest + "\n"
	}
	for _, l := range lines {
		if strings.HasPrefix(l, strings.SplitN(entry, " ", 2)[0]) {
			return fs.ErrExist
		}
	}
	f.Files["dynamic_events"] += entry
	return nil
}

func (f *fakeTracefs) trigger(file, line string) error {
	var kept []string
	found := false
	spec, remove := strings.CutPrefix(line, "!")
	spec, pause := strings.CutSuffix(spec, ":pause")
	for _, l := range strings.Split(f.Files[file], "\n") {
		if l == "" {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(l, " [active]"), " [paused]")
		if base == spec {
			found = true
			if remove {
				continue
			}
			if pause {
				l = base + " [paused]"
			}
		}
		kept = append(kept, l)
	}
	switch {
	case (remove || pause) && !found:
		return fs.ErrNotExist
	case !remove && !pause && found:
		return fs.ErrExist
	case !remove && !pause:
		kept = append(kept, spec+" [active]")
	}
	if len(kept) == 0 {
		delete(f.Files, file)
	} else {
		f.Files[file] = strings.Join(kept, "\n") + "\n"
	}
	return nil
}

// state is what a run may leave in the tracefs, as a sorted listing:
// instances, dynamic events, triggers and enables.
func (f *fakeTracefs) state() string {
	var out []string
	for d := range f.dirs {
		out = append(out, d)
	}
	for _, l := range strings.Split(f.Files["dynamic_events"], "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	for k, v := range f.Files {
		if strings.HasSuffix(k, "/trigger") || strings.HasSuffix(k, "/enable") {
			out = append(out, k+": "+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// wakeupHist is what the kernel shows for the results histogram of the
// wakeup-latency JOIN (the wakee's name, its latency's log2 bucket and sum
// in µs, and the maximum under each entry), then for the counter of
// negative latencies, which counted none.
const wakeupHist = `# event histogram
#
# trigger info: hist:keys=comm,lat.log2:vals=hitcount,lat:sched_waking_to_sched_switch_7_max=lat:sort=hitcount:size=8192:onmax($sched_waking_to_sched_switch_7_max).save(lat) if lat < 9223372036854775808 [active]
#

{ comm: sh                                                 , lat: ~ 2^4  } hitcount:          3  lat:         36
	max:         12  lat:         12
{ comm: kworker/0:1                                        , lat: ~ 2^3  } hitcount:          2  lat:         10
	max:          5  lat:          5
{ comm: sh                                                 , lat: ~ 2^7  } hitcount:          1  lat:        100
	max:        100  lat:        100

Totals:
    Hits: 6
    Entries: 3
    Dropped: 0

# event histogram
#
# trigger info: hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 if lat >= 9223372036854775808 [active]
#


Totals:
    Hits: 0
    Entries: 0
    Dropped: 0
`
