package live

import (
	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Compile parses the SQL of src and plans it against the event catalog
// cat. The diagnostics hold the errors and warnings, positioned in src
// (render them with Diags.Render); the plan is nil when there is an error.
// For a run, pass options made by [Prepare].
func Compile(src *source.Source, cat *tracefs.Catalog, opt planner.Options) (*planner.Plan, source.Diags) {
	script, err := compiler.Parse(src)
	if err != nil {
		d, ok := err.(source.Diags)
		if !ok {
			d.Add(source.NoPos, source.NoPos, "%v", err)
		}
		return nil, d
	}
	return planner.Build(script, cat, opt)
}
