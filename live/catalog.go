package live

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// CatalogSource says where event formats come from.
type CatalogSource struct {
	// Formats is a directory: a tracefs or a copy of one.
	Formats string
	// Machine marks Formats as this machine's tracefs (-e, -r): its kernel
	// release and architecture are the running ones.
	Machine bool
	// Kernel names an embedded catalog; Arch picks its architecture, and
	// with Formats or a tracefs it overrides what they tell.
	Kernel, Arch string
	// Root is the tracefs used when neither Formats nor Kernel is given
	// and it holds events/.
	Root string
	// Dir opens a directory of the machine.
	Dir func(string) (fs.FS, error)
	// FormatsDir opens Formats unless Machine is set; nil is Dir. (With
	// sqlhist --via, Dir is the target's and Formats a directory of this
	// machine.)
	FormatsDir func(string) (fs.FS, error)
	// Uname returns the release and machine of the kernel behind Root;
	// nil is this machine's ([Machine]).
	Uname func() (release, machine string)
}

// OpenCatalog picks where event formats come from: the directory Formats,
// else the embedded catalog of Kernel (on Arch), else the tracefs at Root
// when it holds events/, else the newest embedded catalog (of Arch).
func OpenCatalog(src CatalogSource) (*tracefs.Catalog, error) {
	var arch *tracefs.Arch
	if src.Arch != "" {
		a, err := tracefs.LookupArch(src.Arch)
		if err != nil {
			return nil, fmt.Errorf("--arch: %v", err)
		}
		arch = a
	}
	var cat *tracefs.Catalog
	machine := src.Machine
	switch {
	case src.Formats != "":
		dir := src.FormatsDir
		if dir == nil || src.Machine {
			dir = src.Dir
		}
		formats := src.Formats
		if path.Base(path.Clean(formats)) == "events" && !HasEvents(dir, formats) {
			// DIR/events for DIR: the events directory itself.
			formats = path.Dir(path.Clean(formats))
		}
		fsys, err := dir(formats)
		if err != nil {
			return nil, fmt.Errorf("--formats: %v", err)
		}
		if _, err := fs.Stat(fsys, "events"); err != nil {
			return nil, fmt.Errorf("--formats %s: no events/ directory there (give the tracefs, or a copy of it, that holds events/)", src.Formats)
		}
		cat = tracefs.Open(fsys)
	case src.Kernel != "":
		fsys, err := tracefs.EmbeddedOf(src.Kernel, arch)
		if err != nil {
			return nil, fmt.Errorf("--kernel: %v; for another kernel, read its formats: --formats DIR (a copy of its /sys/kernel/tracing) or --via COMMAND (a shell on it: ssh root@board)", err)
		}
		cat = tracefs.Open(fsys)
	case HasEvents(src.Dir, src.Root):
		fsys, _ := src.Dir(src.Root)
		cat = tracefs.Open(fsys)
		machine = true
	default:
		fsys, err := tracefs.EmbeddedOf("", arch)
		if err != nil {
			return nil, fmt.Errorf("no event catalog: %v", err)
		}
		cat = tracefs.Open(fsys)
	}
	if machine {
		// The tracefs of this machine: its kernel is the running one.
		uname := src.Uname
		if uname == nil {
			uname = Machine
		}
		release, mach := uname()
		if release != "" {
			cat.SetRelease(release)
		}
		if a, err := tracefs.LookupArch(mach); err == nil && arch == nil {
			cat.SetArch(a, "the running machine ("+mach+")")
		}
	}
	if arch != nil {
		cat.SetArch(arch, "--arch")
	}
	return cat, nil
}

// Machine returns the running kernel's release and machine (uname -r and
// uname -m); a variable for tests.
var Machine = machine

// CatalogError is a refusal about the event catalog, with a hint. Usage
// marks a name that cannot be an event at all (a usage error for the
// command, exit 2), as opposed to one the catalog does not have.
type CatalogError struct {
	Msg, Hint string
	Usage     bool
}

func (e *CatalogError) Error() string { return e.Msg }

// EventPath turns "system.event" into "system/event"; other text is kept.
// Event and system names never hold a dot.
func EventPath(s string) string {
	if !strings.Contains(s, "/") {
		s = strings.Replace(s, ".", "/", 1)
	}
	return s
}

// ListEvents writes the catalog's events that match any of the globs (all
// of them without a glob), one "system/event" per line, sorted. A glob
// (path.Match syntax, checked by the caller) matches the whole
// "system/event" name or the event name alone. No match is an error.
func ListEvents(w io.Writer, cat *tracefs.Catalog, globs []string) error {
	names, err := cat.Names()
	if err != nil {
		return fmt.Errorf("cannot list the events: %v", err)
	}
	var b strings.Builder
	for _, name := range names {
		if matchesAny(globs, name) {
			b.WriteString(name + "\n")
		}
	}
	if b.Len() == 0 {
		q := make([]string, len(globs))
		for i, g := range globs {
			q[i] = strconv.Quote(g)
		}
		return fmt.Errorf("no event matches %s", strings.Join(q, " or "))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func matchesAny(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	_, event, _ := strings.Cut(name, "/")
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, event); ok {
			return true
		}
	}
	return false
}

// DescribeEvent writes one event: its name, system, ID and print format,
// then its fields as a table (name, type, size, offset, signed), like the
// kprobe tool's -v. An event the catalog only has from a query (Define)
// has no ID, size or offset yet.
func DescribeEvent(w io.Writer, cat *tracefs.Catalog, ev *tracefs.Event) error {
	defined := cat.Defined(ev.System, ev.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nsystem: %s\n", ev.Name, ev.System)
	if defined {
		b.WriteString("ID: none yet (the query defines this event; the kernel numbers it and lays out its fields when the script creates it)\n")
	} else {
		fmt.Fprintf(&b, "ID: %d\n", ev.ID)
	}
	if ev.PrintFmt != "" {
		fmt.Fprintf(&b, "print fmt: %s\n", ev.PrintFmt)
	}
	b.WriteString("\n")
	rows := make([][]string, len(ev.Fields))
	for i, f := range ev.Fields {
		size, offset := strconv.Itoa(f.Size), strconv.Itoa(f.Offset)
		if defined {
			size, offset = "-", "-"
		}
		signed := "no"
		if f.Signed {
			signed = "yes"
		}
		rows[i] = []string{f.Name, f.Decl, size, offset, signed}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return results.WriteTable(w, []string{"FIELD", "TYPE", "SIZE", "OFFSET", "SIGNED"}, rows)
}

// FindEvent resolves "event", "system.event" or "system/event" in the
// catalog. An unknown name is a *CatalogError with the nearest name, as
// in a query; so is an ambiguous one, with the qualified names.
func FindEvent(cat *tracefs.Catalog, name string) (*tracefs.Event, error) {
	system, event, qualified := strings.Cut(EventPath(name), "/")
	if !qualified {
		system, event = "", system
	}
	if !tracefs.IsIdent(event) || qualified && !tracefs.IsIdent(system) {
		return nil, &CatalogError{Msg: fmt.Sprintf("%q: write event, system.event or system/event", name), Usage: true}
	}
	ev, err := cat.Lookup(system, event)
	var amb *tracefs.AmbiguousError
	switch {
	case err == nil:
		return ev, nil
	case errors.Is(err, fs.ErrNotExist):
		key := event
		if qualified {
			key = system + "/" + event
		}
		msg := fmt.Sprintf("unknown event %q", name)
		if all, _ := cat.Names(); len(all) > 0 {
			if s := planner.Suggest(key, all); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
		}
		return nil, &CatalogError{Msg: msg, Hint: "sqlhist --list-events 'GLOB' lists the events"}
	case errors.As(err, &amb):
		q := make([]string, len(amb.Systems))
		for i, s := range amb.Systems {
			q[i] = s + "/" + event
		}
		return nil, &CatalogError{Msg: fmt.Sprintf("event %q is ambiguous: it exists in systems %s", event, strings.Join(amb.Systems, ", ")),
			Hint: "name the system: " + strings.Join(q, " or ")}
	}
	return nil, fmt.Errorf("cannot read event %s: %v", name, err)
}

// CheckGlobs turns --list-events' arguments into globs of
// "system/event" names ("system.event" is accepted), refusing a bad one
// with a usage error.
func CheckGlobs(args []string) ([]string, error) {
	globs := make([]string, len(args))
	for i, g := range args {
		globs[i] = EventPath(g)
		if _, err := path.Match(globs[i], ""); err != nil {
			return nil, &CatalogError{Msg: fmt.Sprintf("%q: bad glob (%v)", g, err), Usage: true}
		}
	}
	return globs, nil
}

// Inspect writes what the catalog holds: with list, the events matching
// globs (ListEvents); else the event named describe (DescribeEvent).
// Its errors are *CatalogError when they are about the catalog.
func Inspect(w io.Writer, cat *tracefs.Catalog, describe string, list bool, globs []string) error {
	if list {
		return ListEvents(w, cat, globs)
	}
	ev, err := FindEvent(cat, describe)
	if err != nil {
		return err
	}
	return DescribeEvent(w, cat, ev)
}
