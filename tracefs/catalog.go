package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

// ErrNoEvents is returned when a file system has no events/ directory.
var ErrNoEvents = errors.New("no events directory")

// Catalog is the set of events of one tracefs, read lazily from an [fs.FS]
// rooted at the tracefs mount point (the directory that holds events/).
//
// The zero value is not usable; call [Open]. A Catalog is safe for use by
// one goroutine at a time.
type Catalog struct {
	fsys fs.FS

	indexOnce sync.Once
	index     map[string][]string // event name → systems holding it, sorted
	indexErr  error

	events  map[string]*Event // "system/event" → parsed event
	defined map[string]*Event // events added with Define

	featOnce sync.Once
	feat     Features
}

// Open returns a catalog reading from fsys. Nothing is read until needed.
func Open(fsys fs.FS) *Catalog {
	return &Catalog{fsys: fsys, events: map[string]*Event{}, defined: map[string]*Event{}}
}

// FS returns the file system the catalog reads from.
func (c *Catalog) FS() fs.FS { return c.fsys }

func (c *Catalog) buildIndex() {
	c.index = map[string][]string{}
	systems, err := fs.ReadDir(c.fsys, "events")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			c.indexErr = ErrNoEvents
		} else {
			c.indexErr = err
		}
		return
	}
	for _, s := range systems {
		if !s.IsDir() {
			continue
		}
		evs, err := fs.ReadDir(c.fsys, path.Join("events", s.Name()))
		if err != nil {
			continue
		}
		for _, e := range evs {
			if e.IsDir() {
				c.index[e.Name()] = append(c.index[e.Name()], s.Name())
			}
		}
	}
	for _, v := range c.index {
		slices.Sort(v)
	}
}

func (c *Catalog) ensureIndex() error {
	c.indexOnce.Do(c.buildIndex)
	return c.indexErr
}

// Systems returns the sorted systems that hold an event with the given name,
// including events added with [Catalog.Define].
func (c *Catalog) Systems(event string) ([]string, error) {
	err := c.ensureIndex()
	var out []string
	if err == nil {
		out = append(out, c.index[event]...)
	}
	for _, d := range c.defined {
		if d.Name == event && !slices.Contains(out, d.System) {
			out = append(out, d.System)
		}
	}
	slices.Sort(out)
	if len(out) == 0 && err != nil {
		return nil, err
	}
	return out, nil
}

// Names returns every event as "system/event", sorted.
func (c *Catalog) Names() ([]string, error) {
	err := c.ensureIndex()
	var out []string
	for name, systems := range c.index {
		for _, s := range systems {
			out = append(out, s+"/"+name)
		}
	}
	for k := range c.defined {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	if len(out) == 0 && err != nil {
		return nil, err
	}
	return out, nil
}

// Event returns the parsed event system/name. It reads and parses the
// event's format file on first use only. The error wraps [fs.ErrNotExist]
// when there is no such event.
func (c *Catalog) Event(system, name string) (*Event, error) {
	key := system + "/" + name
	if ev, ok := c.defined[key]; ok {
		return ev, nil
	}
	if ev, ok := c.events[key]; ok {
		return ev, nil
	}
	p := path.Join("events", system, name, "format")
	data, err := fs.ReadFile(c.fsys, p)
	if err != nil {
		return nil, err
	}
	ev, err := ParseFormat(system, string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if ev.Name != name {
		return nil, fmt.Errorf("%s: format names event %q", p, ev.Name)
	}
	c.events[key] = ev
	return ev, nil
}

// Define adds an event that does not exist in the file system yet, such as
// a synthetic event created by an earlier statement of the same script.
func (c *Catalog) Define(ev *Event) {
	c.defined[ev.FullName()] = ev
}

// HasFile reports whether the tracefs root holds the named top-level file.
// Catalog copies list their top-level files in FILES; a live tracefs is
// asked directly.
func (c *Catalog) HasFile(name string) bool {
	if data, err := fs.ReadFile(c.fsys, "FILES"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(l) == name {
				return true
			}
		}
		return false
	}
	_, err := fs.Stat(c.fsys, name)
	return err == nil
}
