package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/source"
)

// cleanupRuns runs --cleanup [--dry-run] (live.Cleanup): what --run
// processes that no longer exist left in the tracefs.
func (o *options) cleanupRuns(e env, fl *pflag.FlagSet) int {
	if !o.cleanup || fl.NArg() > 0 || o.file != "" || o.execute || o.run || o.teardown {
		return usageError(e, "--cleanup [--dry-run] takes no SQL and no -e, -r or --teardown: it finds what killed runs left")
	}
	if code := o.executeTarget(e, fl.Changed("tracefs"), o.dryRun); code != exitOK {
		return code
	}
	n, err := live.Cleanup(e.Target(o.Root), e.Alive, e.Stdout, o.dryRun)
	if n == 0 {
		fmt.Fprintf(e.Stderr, "sqlhist: %s\n", live.NothingLeft(e.Target(o.Root), e.Alive))
	}
	return report(e, source.NewSource("<cleanup>", ""), err)
}
