package results_test

import (
	"fmt"
	"os"

	"github.com/sqlhist/sqlhist/results"
)

// sqlhist merge: saved -r -o json results of several machines, each
// shown and merged; a file that is not one is placed with its line and a
// caret.
func ExampleMergeFiles() {
	files := map[string]string{"cut.json": "{\"label\": \"board1\",\n  \"results\": 5\n}\n"}
	read := func(name string) ([]byte, error) { return []byte(files[name]), nil }
	ok := results.MergeFiles(os.Stdout, os.Stdout, "table", []string{"cut.json"}, read)
	fmt.Println("merged:", ok)
	// Output:
	// cut.json:2:14: results: a JSON number, not a list of results: not the -o json output of sqlhist -r
	//   2 |   "results": 5
	//     |              ^
	// merged: false
}

// A --out FILE of -i: interval N goes to FILE with .N before its
// extensions.
func ExampleIntervalPath() {
	fmt.Println(results.IntervalPath("offcpu.pb.gz", 3), results.IntervalPath("/tmp/out", 2))
	// Output: offcpu.3.pb.gz /tmp/out.2
}
