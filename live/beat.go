package live

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A run whose process is not on the target (sqlhist --via runs it on
// another machine, through a shell) cannot be told alive by its process
// id, and the shell that carried it may outlive it (a serial console).
// Such a run keeps a heartbeat: the instance sqlhist_<id>_beat, made
// before its lease and removed after it, with a ring buffer of a page or
// two, to whose trace_marker the run writes "sqlhist-beat <uptime>" every
// BeatEvery, the target's seconds since boot. A run with a heartbeat
// instance is alive while its newest beat is at most BeatStale old by the
// target's clock; a run without one while its process exists. Either
// way, any sqlhist (--via or on the target itself) tells the same.

// beatSuffix ends the name of a run's heartbeat instance.
const beatSuffix = "_beat"

// BeatName is the name of the heartbeat instance of the run id.
func BeatName(id int) string { return InstancePrefix + strconv.Itoa(id) + beatSuffix }

// How often a run renews its heartbeat, and how old the newest may be
// for the run to count as alive. Variables for tests.
var (
	BeatEvery = 2 * time.Second
	BeatStale = 10 * time.Second
)

const beatTag = "sqlhist-beat "

// uptime is the target's seconds since boot.
func (t *Target) uptime() (float64, error) {
	if t.Uptime != nil {
		return t.Uptime()
	}
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("/proc/uptime is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// lastBeat is the newest beat in the heartbeat instance of run id, in
// the target's seconds since boot; has is false when it has no instance;
// a heartbeat instance with no beat in it reads as beat -1.
func (t *Target) lastBeat(id int) (beat float64, has bool) {
	if !t.HasInstance(BeatName(id)) {
		return 0, false
	}
	data, err := fs.ReadFile(t.FS, "instances/"+BeatName(id)+"/trace")
	if err != nil {
		return -1, true
	}
	beat = -1
	for _, l := range strings.Split(string(data), "\n") {
		text, ok := markerText(l, beatTag)
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(text), 64); err == nil && v > beat {
			beat = v
		}
	}
	return beat, true
}

// liveness wraps alive (is a process there) with the heartbeat rule: a
// run with a heartbeat instance is alive while its newest beat is fresh.
// When the target's clock cannot be read, a run with a heartbeat counts
// as alive: nothing of a run that may be running is removed.
func (t *Target) liveness(alive func(int) bool) func(int) bool {
	return func(id int) bool {
		beat, has := t.lastBeat(id)
		if !has {
			return alive(id)
		}
		now, err := t.uptime()
		if err != nil {
			return true
		}
		return beat >= 0 && now-beat <= BeatStale.Seconds()
	}
}

// heart renews a run's heartbeat until stopped.
type heart struct {
	t    *Target
	dir  string
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startBeat makes the heartbeat instance of run id and writes its first
// beat, then renews it every BeatEvery.
func startBeat(t *Target, id int) (*heart, error) {
	name := BeatName(id)
	h := &heart{t: t, dir: "instances/" + name, stop: make(chan struct{}), done: make(chan struct{})}
	if t.HasInstance(name) {
		return nil, fmt.Errorf("the instance %s is there already: a killed run with the same id (%d) left it; sqlhist --cleanup removes what it left", name, id)
	}
	if err := t.W.Mkdir(h.dir); err != nil {
		return nil, fmt.Errorf("creating the run's heartbeat, instance %s: %v", name, errnoText(err))
	}
	// A page a CPU: the newest beats are all that is read.
	_ = t.W.Append(h.dir+"/buffer_size_kb", "4")
	if err := h.beat(); err != nil {
		if rerr := t.W.Rmdir(h.dir); rerr != nil {
			err = fmt.Errorf("%w; removing the instance: %v", err, errnoText(rerr))
		}
		return nil, err
	}
	go h.renew()
	return h, nil
}

func (h *heart) beat() error {
	now, err := h.t.uptime()
	if err != nil {
		return fmt.Errorf("reading the target's uptime for the run's heartbeat: %w", err)
	}
	if err := h.t.W.Append(h.dir+"/trace_marker", beatTag+strconv.FormatFloat(now, 'f', 2, 64)); err != nil {
		return fmt.Errorf("renewing the run's heartbeat in %s: %v", h.dir, errnoText(err))
	}
	return nil
}

func (h *heart) renew() {
	defer close(h.done)
	tick := time.NewTicker(BeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			h.beat() // a failure shows as the transport's, in the run's next write
		}
	}
}

// end stops the renewal and, when the run's lease is gone (everything
// else of the run went), removes the heartbeat instance.
func (h *heart) end(lease string) error {
	if h == nil {
		return nil
	}
	h.once.Do(func() { close(h.stop) })
	<-h.done
	if h.t.HasInstance(lease) {
		return nil // left for --cleanup, which tells the run dead once the beats stop
	}
	if err := h.t.W.Rmdir(h.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the run's heartbeat, instance %s: %v", strings.TrimPrefix(h.dir, "instances/"), errnoText(err))
	}
	return nil
}
