package live

import (
	"context"
	"io"
	"time"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/results"
	"github.com/sqlhist/sqlhist/tracefs"
)

// AwkInstance is the instance the awk engine's script of plan makes on
// its target (WriteLost and --cleanup look for it).
func AwkInstance(plan *planner.Plan) string { return awkInstance(plan) }

// RunAwkViaFor is RunAwkVia for a run of d (at most AwkViaMax) with the
// instance's buffer per CPU (--buffer-kb; 0: the script's own).
func RunAwkViaFor(ctx context.Context, run ShellRunner, plan *planner.Plan, cat *tracefs.Catalog, root string, d time.Duration, bufferKB int, log io.Writer) (*results.Report, error) {
	return runAwkVia(ctx, run, plan, cat, root, d, bufferKB, log)
}

// CatalogTarget says what a script compiled against cat (named catalog)
// is for, as its header prints it: "compiled for Linux 6.1.0-57-cloud-amd64
// x86_64 (event formats: embedded --kernel 6.1)".
func CatalogTarget(cat *tracefs.Catalog, catalog string) string {
	return targetText(catalogTarget(cat, catalog))
}
