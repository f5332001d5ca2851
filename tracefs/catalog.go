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

// statLookups is how many event names Systems looks for with stats before
// it reads every system's listing instead: a listing costs about as much
// as one name's stats, and is needed anyway for suggestions. A catalog
// with an event list reads that instead (see [Catalog.Systems]).
const statLookups = 8

// eventList is the tracefs file that lists every event as system:event,
// a line each: all those that can be enabled, which is all but the
// internal events of the ftrace system (function, print, …), whose
// directories hold only a format.
const eventList = "available_events"

// ErrNoEvents is returned when a file system has no events/ directory.
var ErrNoEvents = errors.New("no events directory")

// Catalog is the set of events of one tracefs, read lazily from an [fs.FS]
// rooted at the tracefs mount point (the directory that holds events/).
//
// The zero value is not usable; call [Open]. A Catalog is safe for use by
// one goroutine at a time.
type Catalog struct {
	fsys fs.FS

	sysOnce sync.Once
	systems []string // directories under events/, in directory order
	sysErr  error

	indexOnce sync.Once
	index     map[string][]string // event name → systems holding it, sorted (for suggestions)
	indexErr  error

	listOnce    sync.Once
	listData    string          // the event list's text ("" without one)
	listSystems map[string]bool // the systems the event list names (nil without one)

	unlistedOnce sync.Once
	unlisted     map[string][]string // event name → the systems the list leaves out that hold it

	events  map[string]*Event   // "system/event" → parsed event
	defined map[string]*Event   // events added with Define
	holders map[string][]string // event name → systems whose format files were found (looked up once)

	featOnce sync.Once
	feat     Features
	release  string // the running kernel's release, for a live tracefs

	arch        *Arch // given with SetArch
	archHow     string
	archOnce    sync.Once
	inferred    *Arch // read from the catalog
	inferredHow string
}

// SetRelease records the release of the kernel behind the catalog
// ("6.1.0-56-cloud-amd64") when the catalog has no VERSION file: a live
// tracefs, read on the machine it belongs to. Call it before Features.
func (c *Catalog) SetRelease(release string) { c.release = strings.TrimSpace(release) }

// Open returns a catalog reading from fsys. Nothing is read until needed.
func Open(fsys fs.FS) *Catalog {
	return &Catalog{fsys: fsys, events: map[string]*Event{}, defined: map[string]*Event{}, holders: map[string][]string{}}
}

// FS returns the file system the catalog reads from.
func (c *Catalog) FS() fs.FS { return c.fsys }

// buildIndex lists every event of every system: from the event list and
// the listings of the systems it does not name (ftrace's), else from the
// listing of every system.
func (c *Catalog) buildIndex() {
	c.index = map[string][]string{}
	systems, err := c.systemList()
	if err != nil {
		c.indexErr = err
		return
	}
	var listed map[string]bool
	if c.hasEventList() {
		listed = c.listSystems
		eachListed(c.listData, func(s, e string) {
			c.index[e] = append(c.index[e], s)
		})
	}
	for _, s := range systems {
		if listed[s] {
			continue
		}
		evs, err := fs.ReadDir(c.fsys, path.Join("events", s))
		if err != nil {
			continue
		}
		for _, e := range evs {
			if e.IsDir() {
				c.index[e.Name()] = append(c.index[e.Name()], s)
			}
		}
	}
	for _, v := range c.index {
		slices.Sort(v)
	}
}

// hasEventList reads the event list once and reports whether the
// catalog has one (an older copy may not; an empty one does not count).
// The list is one read where the systems' listings are a hundred reads,
// and a name's stats a hundred stats: on a live tracefs in a guest under
// qemu's emulation, 1-2 ms against 10-20.
//
// Only the systems it names are noted at first (its lines come grouped by
// system: about a hundred, where the events are a few thousand); a name
// is looked for in the text when asked (listed), and every event is
// indexed only for [Catalog.Names]. Indexing them all took most of a
// compile's time against a live tracefs (BenchmarkCompileFullCatalog).
func (c *Catalog) hasEventList() bool {
	c.listOnce.Do(func() {
		data, err := fs.ReadFile(c.fsys, eventList)
		if err != nil {
			return
		}
		systems, last := map[string]bool{}, ""
		for rest := string(data); rest != ""; {
			var l string
			l, rest, _ = strings.Cut(rest, "\n")
			if last != "" && len(l) > len(last) && l[len(last)] == ':' && l[:len(last)] == last {
				continue // the system of the line before (a line of it that is no event adds none)
			}
			if s, _, ok := listLine(l); ok && s != last {
				systems[s], last = true, s
			}
		}
		if len(systems) > 0 {
			c.listData, c.listSystems = string(data), systems
		}
	})
	return c.listSystems != nil
}

// listLine reads one line of the event list, "system:event" with space
// around it; an event name holding a "/" is not one.
func listLine(l string) (system, event string, ok bool) {
	s, e, ok := strings.Cut(strings.TrimSpace(l), ":")
	if !ok || s == "" || e == "" || strings.Contains(e, "/") {
		return "", "", false
	}
	return s, e, true
}

// eachListed calls f with each line of the event list data that names an
// event, in order.
func eachListed(data string, f func(system, event string)) {
	for data != "" {
		var l string
		l, data, _ = strings.Cut(data, "\n")
		if s, e, ok := listLine(l); ok {
			f(s, e)
		}
	}
}

// listed returns the systems the event list names event in, one for each
// line that names it (as eachListed reads them), sorted: only the lines
// where ":event" occurs are read.
func (c *Catalog) listed(event string) []string {
	var out []string
	data, key := c.listData, ":"+event
	for from := 0; ; {
		i := strings.Index(data[from:], key)
		if i < 0 {
			break
		}
		i += from
		start := strings.LastIndexByte(data[:i], '\n') + 1
		end := len(data)
		if j := strings.IndexByte(data[i:], '\n'); j >= 0 {
			end = i + j
		}
		if s, e, ok := listLine(data[start:end]); ok && e == event {
			out = append(out, s)
		}
		from = end
	}
	slices.Sort(out)
	return out
}

// unlistedHolders returns the systems the event list leaves out (ftrace's)
// that hold event, from their listings, read once.
func (c *Catalog) unlistedHolders(event string) []string {
	c.unlistedOnce.Do(func() {
		c.unlisted = map[string][]string{}
		systems, err := c.systemList()
		if err != nil {
			return
		}
		for _, s := range systems {
			if c.listSystems[s] {
				continue
			}
			evs, err := fs.ReadDir(c.fsys, path.Join("events", s))
			if err != nil {
				continue
			}
			for _, e := range evs {
				if e.IsDir() {
					c.unlisted[e.Name()] = append(c.unlisted[e.Name()], s)
				}
			}
		}
	})
	return c.unlisted[event]
}

func (c *Catalog) ensureIndex() error {
	c.indexOnce.Do(c.buildIndex)
	return c.indexErr
}

// systemList reads the list of systems (the directories under events/)
// once.
func (c *Catalog) systemList() ([]string, error) {
	c.sysOnce.Do(func() {
		ents, err := fs.ReadDir(c.fsys, "events")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = ErrNoEvents
			}
			c.sysErr = err
			return
		}
		for _, e := range ents {
			if e.IsDir() {
				c.systems = append(c.systems, e.Name())
			}
		}
	})
	return c.systems, c.sysErr
}

// Systems returns the sorted systems that hold an event with the given name,
// including events added with [Catalog.Define]. A catalog with an event
// list (a tracefs, a captured catalog) answers from it and the listing of
// the systems it leaves out: one read, and one listing (ftrace's). Without
// one, the first few names are looked for as format files in each system
// (a stat in each of about a hundred systems); from then on it reads the
// listing of every system once (about a hundred reads) and answers from
// it, so a script of many statements costs no more than a listing.
// Answers are remembered: the catalog is a snapshot, and an event created
// in the tracefs after it was looked for is not seen.
func (c *Catalog) Systems(event string) ([]string, error) {
	systems, err := c.systemList()
	found, looked := c.holders[event]
	if !looked && err == nil && IsIdent(event) {
		if c.hasEventList() {
			found = append(c.listed(event), c.unlistedHolders(event)...)
		} else if len(c.holders) >= statLookups {
			if c.ensureIndex() == nil {
				found = slices.Clone(c.index[event])
			}
		} else {
			for _, s := range systems {
				if _, serr := fs.Stat(c.fsys, path.Join("events", s, event, "format")); serr == nil {
					found = append(found, s)
				}
			}
		}
		c.holders[event] = found
	}
	out := slices.Clone(found)
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

// AmbiguousError is [Catalog.Lookup]'s error for a bare event name that
// more than one system has.
type AmbiguousError struct {
	Event   string
	Systems []string // sorted
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("event %q is in systems %s", e.Event, strings.Join(e.Systems, ", "))
}

// Lookup finds an event by system and name, or by name alone when system
// is "": the one system that has it. The error wraps [fs.ErrNotExist] when
// there is no such event, and is an [*AmbiguousError] when a bare name is
// in several systems.
func (c *Catalog) Lookup(system, name string) (*Event, error) {
	if system == "" {
		systems, err := c.Systems(name)
		if err != nil && !errors.Is(err, ErrNoEvents) {
			return nil, err
		}
		switch len(systems) {
		case 0:
			return nil, fmt.Errorf("event %q: %w", name, fs.ErrNotExist)
		case 1:
			system = systems[0]
		default:
			return nil, &AmbiguousError{Event: name, Systems: systems}
		}
	}
	return c.Event(system, name)
}

// Define adds an event that does not exist in the file system yet, such as
// a synthetic event created by an earlier statement of the same script.
func (c *Catalog) Define(ev *Event) {
	c.defined[ev.FullName()] = ev
}

// Defined reports whether system/name was added with [Catalog.Define]
// rather than read from a format file: the kernel has not created it yet,
// so it has no ID and the kernel has not laid out its fields.
func (c *Catalog) Defined(system, name string) bool {
	_, ok := c.defined[system+"/"+name]
	return ok
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
