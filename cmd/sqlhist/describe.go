package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// inspect runs --describe EVENT and --list-events [GLOB …]: they print
// what the event catalog holds and never write to tracefs. When SQL is
// given (as arguments to --describe, with -f to either), it is compiled
// first, so the events the query defines are in the catalog too.
func (o *options) inspect(args []string, e env) int {
	switch {
	case o.describe != "" && o.listEvents:
		return usageError(e, "--describe and --list-events: give one")
	case o.execute || o.run || o.teardown:
		return usageError(e, "--describe and --list-events only print: drop -e, -r and --teardown")
	}
	globs := []string(nil)
	if o.listEvents {
		// The arguments are globs; SQL comes only with -f.
		globs, args = args, nil
		for i, g := range globs {
			globs[i] = eventPath(g)
			if _, err := path.Match(globs[i], ""); err != nil {
				return usageError(e, "--list-events %q: bad glob (%v)", g, err)
			}
		}
	}
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	if len(args) > 0 || o.file != "" {
		if code := o.compileInto(cat, args, e); code != exitOK {
			return code
		}
	}
	if o.listEvents {
		return listEvents(e, cat, globs)
	}
	return describe(e, cat, o.describe)
}

// compileInto plans the SQL against cat, which defines the query's own
// events there; the script itself is not printed.
func (o *options) compileInto(cat *tracefs.Catalog, args []string, e env) int {
	popt, code := o.plannerOptions(e)
	if code != exitOK {
		return code
	}
	src, code := o.source(args, e)
	if code != exitOK {
		return code
	}
	_, code = compile(e, src, cat, popt)
	return code
}

// eventPath turns "system.event" into "system/event"; other text is kept.
// Event and system names never hold a dot.
func eventPath(s string) string {
	if !strings.Contains(s, "/") {
		s = strings.Replace(s, ".", "/", 1)
	}
	return s
}

// listEvents prints the catalog's events that match any of the globs (all
// of them without a glob), one "system/event" per line, sorted. A glob
// matches the whole "system/event" name or the event name alone.
func listEvents(e env, cat *tracefs.Catalog, globs []string) int {
	names, err := cat.Names()
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: cannot list the events: %v\n", err)
		return exitQuery
	}
	var b strings.Builder
	n := 0
	for _, name := range names {
		if matchesAny(globs, name) {
			b.WriteString(name + "\n")
			n++
		}
	}
	if n == 0 {
		fmt.Fprintf(e.stderr, "sqlhist: no event matches %s\n", strings.Join(quoteAll(globs), " or "))
		return exitQuery
	}
	io.WriteString(e.stdout, b.String())
	return exitOK
}

func matchesAny(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	_, event, _ := strings.Cut(name, "/")
	for _, g := range globs {
		// The globs were checked: Match cannot fail.
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, event); ok {
			return true
		}
	}
	return false
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// describe prints one event: its name, system, ID and print format, then
// its fields as a table.
func describe(e env, cat *tracefs.Catalog, name string) int {
	ev, code := findEvent(e, cat, name)
	if code != exitOK {
		return code
	}
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
		rows[i] = []string{f.Name, f.Decl, size, offset, yesNo(f.Signed)}
	}
	io.WriteString(e.stdout, b.String())
	if err := live.WriteTable(e.stdout, []string{"FIELD", "TYPE", "SIZE", "OFFSET", "SIGNED"}, rows); err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	return exitOK
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// findEvent resolves "event", "system.event" or "system/event" in the
// catalog. An unknown name is exit 1 with the nearest name as a hint, as
// in a query; a name that cannot be an event is a usage error.
func findEvent(e env, cat *tracefs.Catalog, name string) (*tracefs.Event, int) {
	system, event, qualified := strings.Cut(eventPath(name), "/")
	if !qualified {
		system, event = "", system
	}
	if !tracefs.IsIdent(event) || qualified && !tracefs.IsIdent(system) {
		return nil, usageError(e, "--describe %q: write event, system.event or system/event", name)
	}
	ev, err := cat.Lookup(system, event)
	var amb *tracefs.AmbiguousError
	switch {
	case err == nil:
		return ev, exitOK
	case errors.Is(err, fs.ErrNotExist):
		key := event
		if qualified {
			key = system + "/" + event
		}
		return nil, unknownEvent(e, cat, name, key)
	case errors.As(err, &amb):
		q := make([]string, len(amb.Systems))
		for i, s := range amb.Systems {
			q[i] = s + "/" + event
		}
		fmt.Fprintf(e.stderr, "sqlhist: event %q is ambiguous: it exists in systems %s\nhint: name the system: %s\n",
			event, strings.Join(amb.Systems, ", "), strings.Join(q, " or "))
	default:
		fmt.Fprintf(e.stderr, "sqlhist: cannot read event %s: %v\n", name, err)
	}
	return nil, exitQuery
}

// unknownEvent reports an event the catalog does not have, with the
// nearest name when one is close (key is what to compare: the bare event
// name or "system/event").
func unknownEvent(e env, cat *tracefs.Catalog, name, key string) int {
	msg := fmt.Sprintf("sqlhist: unknown event %q", name)
	if all, _ := cat.Names(); len(all) > 0 {
		if s := planner.Suggest(key, all); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	fmt.Fprintln(e.stderr, msg)
	fmt.Fprintln(e.stderr, "hint: sqlhist --list-events 'GLOB' lists the events")
	return exitQuery
}
