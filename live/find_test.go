package live_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlhist/sqlhist/live"
)

// Find tells a tracefs that is not mounted (the mount command) from one
// this user may not read (run as root).
func TestFindNotMountedOrNotPermitted(t *testing.T) {
	tracefs := fstest.MapFS{"events/sched/sched_switch/format": {Data: []byte("name: sched_switch\n")}}
	denied := func(p string) (fs.FS, error) {
		return deniedFS{}, nil
	}
	absent := func(p string) (fs.FS, error) { return nil, fs.ErrNotExist }
	mounts := "tracefs /sys/kernel/tracing tracefs rw 0 0\n"
	for _, c := range []struct {
		name   string
		dir    func(string) (fs.FS, error)
		mounts string
		want   error
		says   string
	}{
		{"not mounted", absent, "", live.ErrNoTracefs, "mount -t tracefs nodev /sys/kernel/tracing"},
		{"events/ denied", denied, "", live.ErrNotPermitted, "run sqlhist as root"},
		{"mounted, not visible to this user", absent, mounts, live.ErrNotPermitted, "permission denied"},
	} {
		_, err := live.Find("/sys/kernel/tracing", true, c.mounts, c.dir)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	root, err := live.Find("/sys/kernel/tracing", true, "", func(string) (fs.FS, error) { return tracefs, nil })
	if err != nil || root != "/sys/kernel/tracing" {
		t.Errorf("a readable tracefs: %q, %v", root, err)
	}
}

// deniedFS refuses every name, as a tracefs of mode 0700 does to a
// user who is not root.
type deniedFS struct{}

func (deniedFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
}
