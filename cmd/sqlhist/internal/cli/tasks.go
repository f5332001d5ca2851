package cli

import (
	"strings"

	"github.com/sqlhist/sqlhist/live"
)

// tasks turns -p PID and -L TID into the thread ids the triggers keep
// (live.ResolveTasks), with the flags for the script's comments and, for
// -p, a note saying which threads were found.
func (o *options) tasks(e env) (tids []int, flags, note string, code int) {
	if len(o.pids) == 0 && len(o.tids) == 0 {
		return nil, "", "", exitOK
	}
	if len(o.pids) > 0 && o.Kernel != "" {
		return nil, "", "", usageError(e, "-p reads the threads of process %s from this machine's /proc, but --kernel compiles for another machine: give that machine's thread ids with -L", strings.Join(o.pids, ","))
	}
	t, err := live.ResolveTasks(o.pids, o.tids, e.Dir)
	if err != nil {
		return nil, "", "", refuse(e, err)
	}
	return t.TIDs, t.Flags, t.Note, exitOK
}
