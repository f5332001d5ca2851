// Package nohugepages turns transparent huge pages off for the process
// that imports it, as early as a package's initialisation can.
//
// Debian's kernels (and many others) have transparent huge pages
// "always" on: the first touch of a 2 MiB stretch of the Go heap then
// has the kernel find and zero a whole huge page. sqlhist's heap is a
// few MiB, so each such fault is mostly waste: in a Debian 6.1 guest on
// one vCPU counted by instructions, a stream run's fixed cost fell from
// about 37 M guest ns to 32 M and its resident size by 3 MiB (see
// docs/cost.md). The faults the runtime makes before any init are left
// to LinkFlag.
//
// The setting (prctl PR_SET_THP_DISABLE) is the process's and is kept
// across fork and exec: the programs sqlhist starts (ssh, sh, awk) run
// without huge pages too. Elsewhere than Linux the package does
// nothing.
package nohugepages

// LinkFlag is the linker flag that turns huge pages off for the heap
// from its first page, before any package's init: it makes the Go
// runtime's GODEBUG=disablethp=1 the binary's default (the variable the
// go command itself sets from go.mod's godebug lines, which refuse this
// setting, as does //go:debug). Without it, the runtime's first heap
// pages may each cost a zeroed huge page: a one-vCPU Debian 6.1 guest
// counted 17.3 to 21.9 M guest ns for `sqlhist --version` without it,
// 16.1 to 16.3 M with it (docs/cost.md). Every build of the command the
// project makes (make build, make dist, the suite's guests) passes it as
// go build -ldflags=LinkFlag; a plain go build or go run still runs,
// with those faults. The environment's GODEBUG overrides it.
const LinkFlag = "-X=runtime.godebugDefault=disablethp=1"
