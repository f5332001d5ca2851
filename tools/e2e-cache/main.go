// Command e2e-cache shows or empties the e2e harness's cache (kernels,
// their apt state, built kernels, other architectures' busybox):
// $SQLHIST_CACHE_DIR, else ~/.cache/sqlhist, shared by every clone.
//
//	e2e-cache size    one line per entry and the total
//	e2e-cache clean   removes everything (the next run downloads and builds again)
package main

import (
	"fmt"
	"os"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "size" && os.Args[1] != "clean") {
		fmt.Fprintln(os.Stderr, "usage: e2e-cache size|clean")
		os.Exit(2)
	}
	if os.Args[1] == "clean" {
		root, freed, err := vm.CleanCache()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e-cache:", err)
			os.Exit(1)
		}
		fmt.Printf("emptied %s (%s)\n", root, human(freed))
		return
	}
	root, entries, err := vm.CacheUsage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-cache:", err)
		os.Exit(1)
	}
	var total int64
	for _, e := range entries {
		fmt.Printf("%10s  %s\n", human(e.Bytes), e.Path)
		total += e.Bytes
	}
	fmt.Printf("%10s  %s\n", human(total), root)
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
