package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"github.com/sqlhist/sqlhist/results"
)

const mergeUsage = `usage: sqlhist merge [-o table|json|csv] FILE.json ...

sqlhist merge reads what sqlhist -r -o json printed on several machines
(gathered by ansible, salt, kubectl or scp; the total of -i's lines too;
the targets of a fleet's document), prints each one's results under its
label (the "label" in the file, else the file's name) and their merge:
counts, sums and log2 distributions added, the largest maximum,
percentiles from the merged distribution, rows matched by their keys.
The files must come from one query. Exit status: 0 ok, 1 a file not
read or not merged, 2 bad usage.

flags:
`

// runMerge is sqlhist merge: it exits 0 when every file was read and
// merged, 1 when a file could not be read, a fleet's file holds a target
// that failed, or the files ran different queries (the others are still
// printed), 2 on a usage error.
func runMerge(args []string, e env) int {
	fl := pflag.NewFlagSet("sqlhist merge", pflag.ContinueOnError)
	fl.SetOutput(e.Stderr)
	output := fl.StringP("output", "o", "table", "print `FORMAT`: table, json (one document: the targets and the merge) or csv (a first column naming the target, \"merged\" for the merge)")
	help := fl.BoolP("help", "h", false, "show this help")
	fl.Usage = func() { fmt.Fprint(e.Stderr, mergeUsage+fl.FlagUsagesWrapped(helpColumns)) }
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return mergeUsageError(e, "%v", err)
	}
	if *help {
		fmt.Fprint(e.Stdout, mergeUsage+fl.FlagUsagesWrapped(helpColumns))
		return exitOK
	}
	switch *output {
	case "table", "json", "csv":
	default:
		return mergeUsageError(e, "-o %q: use table, json or csv", *output)
	}
	files := fl.Args()
	if len(files) == 0 {
		return mergeUsageError(e, "give the files that sqlhist -r -o json wrote")
	}
	if !results.MergeFiles(e.Stdout, e.Stderr, *output, files, e.ReadFile) {
		return exitQuery
	}
	return exitOK
}

func mergeUsageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.Stderr, "sqlhist merge: "+format+"\n", args...)
	fmt.Fprintln(e.Stderr, "run 'sqlhist merge --help' for usage")
	return exitUsage
}
