package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/pflag"

	"github.com/sqlhist/sqlhist/live"
)

const mergeUsage = `usage: sqlhist merge [-o table|json|csv] FILE.json ...

sqlhist merge reads what sqlhist -r -o json printed on several machines
(gathered by ansible, salt, kubectl or scp; the total of -i's lines too;
the targets of a fleet's document), prints each one's results under its
label (the "label" in the file, else the file's name) and their merge: counts, sums and log2 distributions
added, the largest maximum, percentiles from the merged distribution,
rows matched by their keys. The files must come from one query.

flags:
`

// runMerge is sqlhist merge: it exits 0 when every file was read and
// merged, 1 when a file could not be read, a fleet's file holds a target
// that failed, or the files ran different queries (the others are still
// printed), 2 on a usage error.
func runMerge(args []string, e env) int {
	fl := pflag.NewFlagSet("sqlhist merge", pflag.ContinueOnError)
	fl.SetOutput(e.stderr)
	output := fl.StringP("output", "o", "table", "print `FORMAT`: table, json (one document: the targets and the merge) or csv (a first column naming the target, \"merged\" for the merge)")
	help := fl.BoolP("help", "h", false, "show this help")
	fl.Usage = func() {
		fmt.Fprint(e.stderr, mergeUsage)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return mergeUsageError(e, "%v", err)
	}
	if *help {
		fmt.Fprint(e.stdout, mergeUsage)
		fl.SetOutput(e.stdout)
		fl.PrintDefaults()
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
	code := exitOK
	var targets []live.Labelled
	labels := map[string]string{} // label: the file that has it
	read := 0
	for _, f := range files {
		got, err := readResults(e, f)
		if err != nil {
			fmt.Fprintf(e.stderr, "sqlhist: %s\n", err)
			code = exitQuery
			continue
		}
		read++
		for _, t := range got {
			if t.Label == "" {
				t.Label = f
			}
			if other, dup := labels[t.Label]; dup {
				fmt.Fprintf(e.stderr, "sqlhist: warning: %s and %s both have the label %q: the second is shown as %q\n", other, f, t.Label, t.Label+" ("+f+")")
				t.Label += " (" + f + ")"
			}
			labels[t.Label] = f
			if t.Err != nil {
				code = exitQuery // a fleet's target that failed
			}
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return code
	}
	merged, err := live.MergeLabelled(targets)
	if err != nil {
		code = exitQuery
	}
	if werr := live.WriteFleet(e.stdout, e.stderr, *output, targets, merged); werr != nil {
		fmt.Fprintf(e.stderr, "sqlhist: %v\n", werr)
		return exitQuery
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: not merged: %v\n", err)
	}
	if n := len(files) - read; n > 0 {
		fmt.Fprintf(e.stderr, "sqlhist: %d of the %d files could not be read: the merge is of the other %d\n", n, len(files), read)
	}
	return code
}

// readResults reads the saved results of one file: one target's, or a
// fleet's targets; its errors start with the file's name, and a place in
// it when there is one ("f.json:3:5: …").
func readResults(e env, file string) ([]live.Labelled, error) {
	data, err := e.readFile(file)
	if err != nil {
		return nil, err
	}
	targets, err := live.ReadJSONTargets(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s:%v", file, placed(err))
	}
	return targets, nil
}

// placed puts a space before an error that has no line and column.
func placed(err error) string {
	s := err.Error()
	if linePlace.MatchString(s) {
		return s
	}
	return " " + s
}

var linePlace = regexp.MustCompile(`^[0-9]+:[0-9]+: `)

func mergeUsageError(e env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sqlhist merge: "+format+"\n", args...)
	fmt.Fprintln(e.stderr, "run 'sqlhist merge --help' for usage")
	return exitUsage
}
