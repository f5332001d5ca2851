package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/source"
)

const readUsage = `usage: sqlhist read [-o table|json|csv] [--kernel VERSION --arch ARCH | --formats DIR] [FILE|-]

sqlhist read reads what a printed awk script (sqlhist --engine stream
without -r) printed on the target, saved to FILE (or given on stdin),
and prints its results as -r does. The output's first line names the
query and the flags it was printed with; the query is planned again
with them, against the catalog they name (--kernel, --arch, --formats,
-t), unless these flags, given here, name another. Events the kernel
lost before the script's awk read them are said first, as -r says
them. Exit status: 0 ok, 1 an output not read or a query not planned,
2 bad usage.

flags:
`

// awkPlanFlags are the flags that shape the plan of a printed awk
// script, which its output records (its query line) for sqlhist read.
var awkPlanFlags = []string{"tracefs", "formats", "kernel", "arch", "name", "size", "onmax", "onchange",
	"snapshot", "save", "trace", "instance", "deref", "engine"}

// readCatalogFlags are the flags of sqlhist read that replace the
// output's catalog.
var readCatalogFlags = []string{"tracefs", "formats", "kernel", "arch"}

// awkArgs are the arguments that plan the query of src again: the flags
// given that shape the plan, then "--" and the query's text (-f's file
// read).
func awkArgs(fl *pflag.FlagSet, src *source.Source) []string {
	args := []string{}
	fl.Visit(func(f *pflag.Flag) {
		if !slices.Contains(awkPlanFlags, f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return append(args, "--", src.Text)
}

// runRead is sqlhist read.
func runRead(args []string, e env) int {
	fl := pflag.NewFlagSet("sqlhist read", pflag.ContinueOnError)
	fl.SetOutput(e.Stderr)
	output := fl.StringP("output", "o", "table", "print `FORMAT`: table, json or csv")
	var place live.Place
	fl.StringVarP(&place.Root, "tracefs", "t", "", "plan against the event formats of the tracefs `DIR` (instead of the output's catalog)")
	fl.StringVar(&place.Formats, "formats", "", "plan against the event formats in `DIR` (instead of the output's catalog)")
	fl.StringVar(&place.Kernel, "kernel", "", "plan against the embedded catalog of this kernel `VERSION` (instead of the output's)")
	fl.StringVar(&place.Arch, "arch", "", "with --kernel: the target's architecture `ARCH`")
	help := fl.BoolP("help", "h", false, "show this help")
	fl.Usage = func() { fmt.Fprint(e.Stderr, readUsage+fl.FlagUsagesWrapped(helpColumns)) }
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return readUsageError(e, "%v", err)
	}
	if *help {
		fmt.Fprint(e.Stdout, readUsage+fl.FlagUsagesWrapped(helpColumns))
		return exitOK
	}
	switch *output {
	case "table", "json", "csv":
	default:
		return readUsageError(e, "-o %q: use table, json or csv", *output)
	}
	if fl.NArg() > 1 {
		return readUsageError(e, "give one output to read (a FILE, or - for stdin)")
	}
	name := "-"
	if fl.NArg() == 1 {
		name = fl.Arg(0)
	}
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(e.Stdin, 64<<20+1))
	} else {
		data, err = e.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist read: %v\n", err)
		return exitQuery
	}
	out, err := live.ReadAwkOutput(bytes.NewReader(data))
	if err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist read: %s: %v\n", name, err)
		return exitQuery
	}
	if out.Args == nil {
		fmt.Fprintf(e.Stderr, "sqlhist read: %s: no query line (%q): the output of an awk script printed by an older sqlhist, or not an awk script's output\n", name, live.AwkQueryPrefix)
		return exitQuery
	}
	qargs := out.Args
	if slices.ContainsFunc(readCatalogFlags, fl.Changed) {
		// The catalog given here replaces the output's.
		qargs = slices.DeleteFunc(slices.Clone(qargs), func(a string) bool {
			return slices.ContainsFunc(readCatalogFlags, func(f string) bool { return len(a) > len(f)+3 && a[:len(f)+3] == "--"+f+"=" })
		})
		fl.Visit(func(f *pflag.Flag) {
			if slices.Contains(readCatalogFlags, f.Name) {
				qargs = append([]string{"--" + f.Name + "=" + f.Value.String()}, qargs...)
			}
		})
	}
	var o options
	qfl := newFlags(&o, io.Discard)
	if err := qfl.Parse(qargs); err != nil || qfl.NArg() != 1 {
		fmt.Fprintf(e.Stderr, "sqlhist read: %s: the query line's arguments: %v\n", name, err)
		return exitQuery
	}
	popt, code := o.plannerOptions(e)
	if code != exitOK {
		return code
	}
	what := name
	if name == "-" {
		what = "stdin"
	}
	src := source.NewSource("<the query of "+what+">", qfl.Arg(0))
	cat, code := o.catalog(e)
	if code != exitOK {
		return code
	}
	popt.Size = o.live.Size
	plan, code := o.compile(e, src, cat, live.AwkPrepare(popt), e.Stderr)
	if code != exitOK {
		return code
	}
	rep, err := live.AwkReport(plan, out)
	if err != nil {
		fmt.Fprintf(e.Stderr, "sqlhist read: %s: %v\n", name, err)
		return exitQuery
	}
	o.live.Output = *output
	if err := o.writeResults(e, rep, false); err != nil {
		return report(e, src, err)
	}
	return exitOK
}

func readUsageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.Stderr, "sqlhist read: "+format+"\n", args...)
	fmt.Fprintln(e.Stderr, "run 'sqlhist read --help' for usage")
	return exitUsage
}
