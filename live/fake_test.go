package live_test

import (
	"io/fs"
	"strings"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/tracefs"
)

// fakeTracefs stands in for a kernel's tracefs: it reads the embedded
// catalog of Linux 6.1 and the files a test puts in Files (hist files, an
// error_log), and records every write. A write whose line contains Refuse
// fails, as the kernel refuses a command, and adds an error_log entry.
type fakeTracefs struct {
	tracefs.Recorder
	Files  map[string]string
	Refuse string
	base   fs.FS
}

func newFake() *fakeTracefs {
	base, err := tracefs.Embedded("6.1")
	if err != nil {
		panic(err)
	}
	return &fakeTracefs{Files: map[string]string{}, base: base}
}

func (f *fakeTracefs) Open(name string) (fs.File, error) {
	if data, ok := f.Files[name]; ok {
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(data)}}.Open(name)
	}
	return f.base.Open(name)
}

func (f *fakeTracefs) Append(file, line string) error {
	if f.Refuse != "" && strings.Contains(line, f.Refuse) {
		f.Files["error_log"] += "[  312.501234] hist:sched:sched_switch: error: Couldn't find field\n  Command: " + line + "\n             ^\n"
		return &fs.PathError{Op: "write", Path: file, Err: fs.ErrInvalid}
	}
	return f.Recorder.Append(file, line)
}

func (f *fakeTracefs) Mkdir(dir string) error { return f.Append("mkdir", dir) }
func (f *fakeTracefs) Rmdir(dir string) error { return f.Append("rmdir", dir) }

// wakeupHist is what the kernel shows for the results histogram of the
// wakeup-latency JOIN: the wakee's name and its exact latency in µs.
const wakeupHist = `# event histogram
#
# trigger info: hist:keys=comm,lat:vals=hitcount:sort=hitcount:size=8192 [active]
#

{ comm: sh                                                 , lat:         12 } hitcount:          3
{ comm: kworker/0:1                                        , lat:          5 } hitcount:          2
{ comm: sh                                                 , lat:        100 } hitcount:          1

Totals:
    Hits: 6
    Entries: 3
    Dropped: 0
`
