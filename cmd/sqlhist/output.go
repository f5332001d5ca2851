package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// checkPrint validates -o and the flags of the printed forms (without -r).
func (o *options) checkPrint(e env) int {
	switch o.live.output {
	case "", "script":
		o.live.output = "script"
	case "json", "bootconfig":
		if o.execute {
			return usageError(e, "-e applies the commands; -o %s only prints: use one of them", o.live.output)
		}
	case "table", "csv", "folded", "pprof":
		return usageError(e, "-o %s shows results: it goes with --run (-r)", o.live.output)
	default:
		return usageError(e, "-o %q: use script, json or bootconfig (with --run: table, json, csv, folded or pprof)", o.live.output)
	}
	if o.initrd != "" && (o.live.output != "bootconfig" || o.teardown) {
		return usageError(e, "--initrd FILE takes the bootconfig of -o bootconfig (without --teardown)")
	}
	if o.planFile != "" && o.live.output != "script" {
		return usageError(e, "--plan FILE replays a JSON plan as a script or with -e: drop -o %s", o.live.output)
	}
	return exitOK
}

// output prints (or with -e applies) the commands of a compiled plan in
// the form -o chose.
func (o *options) output(e env, src *source.Source, cat *tracefs.Catalog, plan *planner.Plan) int {
	eopt := emit.Options{SyntheticEventsFile: !cat.Features().DynamicEvents}
	var cmds []emit.Command
	if o.live.output == "bootconfig" {
		cmds = emit.BootCommands(plan, eopt)
	} else {
		cmds = emit.Commands(plan, eopt)
	}
	if o.teardown {
		cmds = emit.DisableFirst(emit.Teardown(cmds), o.instance)
	}
	if o.execute {
		t := e.target(o.tracefsDir)
		if o.teardown {
			return teardown(e, src, t, cmds)
		}
		if o.instance != "" && !t.HasInstance(o.instance) {
			fmt.Fprintf(e.stderr, "sqlhist: creating instance %s; it stays after --teardown (rmdir %s when done)\n", o.instance, emit.Quote(filepath.Join(o.tracefsDir, "instances", o.instance)))
			cmds = append([]emit.Command{emit.Instance(o.instance)}, cmds...)
		}
		return report(e, src, live.Apply(t, cmds))
	}
	notes := plan.Notes
	switch {
	case o.instance != "" && o.live.output == "bootconfig":
		notes = append(notes, "the boot creates the instance "+o.instance+"; after the teardown: rmdir "+emit.Quote(o.tracefsDir+"/instances/"+o.instance))
	case o.instance != "" && !o.teardown:
		notes = append(notes, "the instance must exist: mkdir "+emit.Quote(o.tracefsDir+"/instances/"+o.instance))
	}
	switch {
	case o.live.output == "json":
		doc := emit.BuildPlan(cmds, emit.PlanOptions{Root: o.tracefsDir, Source: src, Target: o.planTarget(cat), Notes: notes})
		if err := emit.WritePlan(e.stdout, doc); err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %v\n", err)
			return exitQuery
		}
		return exitOK
	case o.live.output == "bootconfig" && !o.teardown:
		return o.bootconfig(e, src, cat, cmds, notes)
	case o.live.output == "bootconfig":
		notes = append([]string{"removes at run time what the bootconfig of this query made at boot"}, notes...)
	}
	emit.Print(e.stdout, cmds, emit.PrintOptions{Root: o.tracefsDir, Notes: notes})
	return exitOK
}

// planTarget says which kernel the commands were compiled for.
func (o *options) planTarget(cat *tracefs.Catalog) emit.PlanTarget {
	t := emit.PlanTarget{Kernel: cat.Features().Kernel}
	if a, _ := cat.Arch(); a != nil {
		t.Arch = a.Name
	}
	switch {
	case o.formats != "" && o.machine && o.viaTarget != "":
		t.Catalog = "tracefs " + o.formats + " through --via " + o.viaTarget
	case o.formats != "" && o.machine:
		t.Catalog = "tracefs " + o.formats
	case o.formats != "":
		t.Catalog = "--formats " + o.formats
	case o.kernel != "":
		t.Catalog = "embedded --kernel " + o.kernel
	default:
		t.Catalog = "embedded (default)"
	}
	return t
}

// bootconfig prints the bootconfig of cmds, or adds it to --initrd.
func (o *options) bootconfig(e env, src *source.Source, cat *tracefs.Catalog, cmds []emit.Command, notes []string) int {
	t := o.planTarget(cat)
	bopt := emit.BootOptions{Release: t.Kernel, Arch: t.Arch, Features: cat.Features()}
	bopt.Header = emit.BootHeader(src, bopt, cmds, notes)
	text, diags := emit.Bootconfig(cmds, bopt)
	if len(diags) > 0 {
		io.WriteString(e.stderr, diags.Render(src))
		return exitQuery
	}
	if o.initrd == "" {
		io.WriteString(e.stdout, text)
		return exitOK
	}
	data, err := e.readFile(o.initrd)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --initrd: %v\n", err)
		return exitQuery
	}
	initrd, old, had, err := emit.SplitBootconfig(data)
	var merged string
	var same bool
	if err == nil {
		merged, same, err = emit.MergeBootconfig(old, text, cmds, bopt)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --initrd %s: %v; the file is left as it was\n", o.initrd, err)
		return exitQuery
	}
	if same {
		fmt.Fprintf(e.stderr, "sqlhist: %s: its bootconfig already holds this one; the file is left as it was\n", o.initrd)
		return exitOK
	}
	out := emit.AttachBootconfig(initrd, merged)
	if err := e.replaceFile(o.initrd, out); err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --initrd: %v; the file is left as it was\n", err)
		return exitQuery
	}
	what := "added a bootconfig of " + strconv.Itoa(len(text)) + " bytes"
	if had {
		what = "added a bootconfig of " + strconv.Itoa(len(text)) + " bytes to the sqlhist bootconfig it carried (" + strconv.Itoa(len(merged)) + " bytes of bootconfig now)"
	}
	fmt.Fprintf(e.stderr, "sqlhist: %s: %s, %d bytes in all; boot with \"bootconfig\" on the kernel command line\n",
		o.initrd, what, len(out))
	return exitOK
}

// teardown applies the removals cmds (--teardown -e) and notes on stderr
// the ones that found nothing to remove: after an -e killed part way the
// teardown removes what exists, skips the rest and succeeds.
func teardown(e env, src *source.Source, t *live.Target, cmds []emit.Command) int {
	skipped, err := live.TeardownSkipped(t, cmds)
	if len(skipped) > 0 {
		n := 0
		for _, c := range cmds {
			if c.Kind != emit.KindEnable {
				n++
			}
		}
		var names []string
		for _, c := range skipped {
			names = append(names, strings.TrimPrefix(c.What, "removal of the "))
		}
		fmt.Fprintf(e.stderr, "sqlhist: note: %d of the %d removals found nothing to remove (never made, or removed already), skipped: %s\n",
			len(skipped), n, strings.Join(names, "; "))
	}
	return report(e, src, err)
}

// runPlan replays a JSON plan: prints its writes (or its teardown) as a
// script, or applies them with -e.
func (o *options) runPlan(e env, fl interface{ Args() []string }) int {
	if len(fl.Args()) > 0 || o.file != "" {
		return usageError(e, "--plan FILE takes the writes from the plan: give no SQL")
	}
	data, err := e.readFile(o.planFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --plan: %v\n", err)
		return exitQuery
	}
	doc, err := emit.ReadPlan(data)
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: --plan %s: %v\n", o.planFile, err)
		return exitQuery
	}
	cmds := doc.Commands(o.teardown)
	if o.teardown {
		cmds = emit.DisableFirst(cmds, "")
	}
	src := source.NewSource(doc.Query.File, doc.Query.Text)
	if o.execute {
		if code := o.executeTarget(e, o.tracefsExplicit, false); code != exitOK {
			return code
		}
		t := e.target(o.tracefsDir)
		if o.teardown {
			return teardown(e, src, t, cmds)
		}
		return report(e, src, live.Apply(t, cmds))
	}
	notes := append([]string{"the writes of the plan " + o.planFile}, doc.Notes...)
	emit.Print(e.stdout, cmds, emit.PrintOptions{Root: o.tracefsDir, Notes: notes})
	return exitOK
}

// replaceFile writes data to a temporary file next to path and renames it
// over path, keeping path's permissions: a reader sees the old file or the
// new one, never a part.
func replaceFile(path string, data []byte) (err error) {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sqlhist-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}
