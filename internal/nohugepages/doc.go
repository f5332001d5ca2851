// Package nohugepages turns transparent huge pages off for the process
// that imports it, as early as a package's initialisation can.
//
// Debian's kernels (and many others) have transparent huge pages
// "always" on: the first touch of a 2 MiB stretch of the Go heap then
// has the kernel find and zero a whole huge page. sqlhist's heap is a
// few MiB, so each such fault is mostly waste: in a Debian 6.1 guest on
// one vCPU counted by instructions, a stream run's fixed cost fell from
// about 37 M guest ns to 32 M and its resident size by 3 MiB (see
// docs/cost.md). The Go runtime's own GODEBUG=disablethp=1 does the
// same from the first page but can only be set in the environment; the
// few faults made before this package's init are left.
//
// The setting (prctl PR_SET_THP_DISABLE) is the process's and is kept
// across fork and exec: the programs sqlhist starts (ssh, sh, awk) run
// without huge pages too. Elsewhere than Linux the package does
// nothing.
package nohugepages
