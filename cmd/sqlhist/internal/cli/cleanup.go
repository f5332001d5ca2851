package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/source"
)

// cleanupRuns runs --cleanup [--dry-run] (live.Cleanup): what --run
// processes that no longer exist left in the tracefs and, through --via,
// the record files of the transport's killed sessions.
func (o *options) cleanupRuns(e env, fl *pflag.FlagSet) int {
	if !o.cleanup || fl.NArg() > 0 || o.file != "" || o.execute || o.run || o.teardown {
		return usageError(e, "--cleanup [--dry-run] takes no SQL and no -e, -r or --teardown: it finds what killed runs left")
	}
	if code := o.executeTarget(e, fl.Changed("tracefs"), o.dryRun); code != exitOK {
		return code
	}
	n, err := live.Cleanup(e.Target(o.Root), e.Alive, e.Stdout, o.dryRun)
	nrec, rerr := cleanupRecords(e, o.dryRun)
	if n == 0 {
		msg := live.NothingLeft(e.Target(o.Root), e.Alive)
		if nrec > 0 {
			msg += "; records of killed --via sessions above"
		}
		fmt.Fprintf(e.Stderr, "sqlhist: %s\n", msg)
	}
	return report(e, source.NewSource("<cleanup>", ""), errors.Join(err, rerr))
}

// cleanupRecords removes (or with dryRun only shows) the record files
// that killed --via sessions left on the target (remote.DeadRecords),
// printing each removal as a line of the script: how many it found.
func cleanupRecords(e env, dryRun bool) (int, error) {
	if e.StaleRecords == nil {
		return 0, nil
	}
	recs, err := e.StaleRecords()
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	for _, r := range recs {
		why := "its shell (process " + strconv.Itoa(r.PID) + ") is gone, or no request wrote it for ten minutes"
		if r.PID == 0 {
			why = "it names no shell, and no request wrote it for ten minutes"
		}
		fmt.Fprintf(e.Stdout, "# the record of a killed --via session: %s\nrm -f %s\n", why, emit.Quote(r.Path))
	}
	if dryRun {
		return len(recs), nil
	}
	return len(recs), e.RemoveRecords(recs)
}
