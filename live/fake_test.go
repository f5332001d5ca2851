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
