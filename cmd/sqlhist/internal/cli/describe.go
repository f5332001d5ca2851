package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/sqlhist/sqlhist/live"
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
	var globs []string
	if o.listEvents {
		// The arguments are globs; SQL comes only with -f.
		var err error
		if globs, err = live.CheckGlobs(args); err != nil {
			return refuse(e, fmt.Errorf("--list-events %w", err))
		}
		args = nil
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
	flag := "--describe"
	if o.listEvents {
		flag = "--list-events"
	}
	if err := live.Inspect(e.Stdout, cat, o.describe, o.listEvents, globs); err != nil {
		var ce *live.CatalogError
		if errors.As(err, &ce) && ce.Usage {
			err = fmt.Errorf("%s %w", flag, err)
		}
		return refuse(e, err)
	}
	return exitOK
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
	_, code = o.compile(e, src, cat, popt, io.Discard) // describing, not printing for a target
	return code
}
