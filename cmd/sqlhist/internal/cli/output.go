package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// output prints (or with -e applies) the commands of a compiled plan in
// the form -o chose.
func (o *options) output(e env, src *source.Source, cat *tracefs.Catalog, plan *planner.Plan) int {
	s := live.NewScript(src, plan, cat, live.ScriptOptions{Format: o.live.Output, Teardown: o.teardown,
		Instance: o.instance, Root: o.Root, Catalog: o.CatalogName()})
	if err := s.SaveAlso(o.live.TeardownOut, o.live.PlanOut, e.ReplaceFile); err != nil {
		return report(e, src, err)
	}
	if o.execute {
		return report(e, src, s.Apply(e.Target(o.Root), e.Stderr))
	}
	if o.live.Output == "bootconfig" && !o.teardown {
		return o.bootconfig(e, s)
	}
	if err := s.Write(e.Stdout); err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist: %v\n", err)
		return exitQuery
	}
	return exitOK
}

// bootconfig prints the bootconfig of s, or adds it to --initrd.
func (o *options) bootconfig(e env, s *live.Script) int {
	text, diags := s.Bootconfig()
	if len(diags) > 0 {
		io.WriteString(e.Stderr, diags.Render(s.Source()))
		return exitQuery
	}
	if o.initrd == "" {
		io.WriteString(e.Stdout, text)
		return exitOK
	}
	msg, err := s.AddBootconfigTo(o.initrd, text, e.ReadFile, e.ReplaceFile)
	if err != nil {
		return refuse(e, err)
	}
	fmt.Fprintf(e.Stderr, "sqlhist: %s\n", msg)
	return exitOK
}

// runPlan replays JSON plans: prints their writes (or their teardowns,
// the last plan's first) as scripts, or applies them with -e, all or
// nothing (live.ApplyAll).
func (o *options) runPlan(e env, fl interface{ Args() []string }) int {
	if len(fl.Args()) > 0 || o.file != "" {
		return usageError(e, "--plan FILE takes the writes from the plan: give no SQL")
	}
	if len(o.planFiles) > 1 && o.live.TeardownOut != "" {
		return usageError(e, "--teardown-out saves the teardown of one plan: give one --plan FILE")
	}
	var scripts []*live.Script
	for _, file := range o.planFiles {
		data, err := e.ReadFile(file)
		if err != nil {
			fmt.Fprintf(e.Stderr, "sqlhist: --plan: %v\n", err)
			return exitQuery
		}
		s, err := live.ReadPlanScript(file, data, o.Root, o.teardown)
		if err != nil {
			fmt.Fprintf(e.Stderr, "sqlhist: --plan %s: %v\n", file, err)
			return exitQuery
		}
		if err := s.SaveAlso(o.live.TeardownOut, "", e.ReplaceFile); err != nil {
			return report(e, s.Source(), err)
		}
		scripts = append(scripts, s)
	}
	if o.teardown {
		slices.Reverse(scripts)
	}
	if o.execute {
		if code := o.executeTarget(e, o.tracefsExplicit, false); code != exitOK {
			return code
		}
		i, err := live.ApplyAll(e.Target(o.Root), scripts, e.Stderr)
		if err != nil && i >= 0 {
			return report(e, scripts[i].Source(), err)
		}
		return exitOK
	}
	for _, s := range scripts {
		if code := report(e, s.Source(), s.Write(e.Stdout)); code != exitOK {
			return code
		}
	}
	return exitOK
}
