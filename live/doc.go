// Package live runs sqlhist's queries on a kernel: it applies the
// commands a plan lowers to, collects, reads the results and removes
// everything again. It is what `sqlhist -e` and `sqlhist -r` do, for Go
// programs that measure latency (agents, test harnesses, CI jobs) and want
// typed results rather than a table to parse.
//
// The steps, each usable alone:
//
//   - [Compile] parses the SQL and plans it against an event catalog
//     (tracefs.Open on a tracefs, or tracefs.Embedded for a kernel sqlhist
//     knows). Its diagnostics are positioned in the SQL.
//   - [Apply] writes commands (emit.Commands of a plan) all or nothing: a
//     refused write undoes the ones before it and comes back as an
//     [ApplyError] with the kernel's error_log entries. [Teardown] writes
//     the removals (emit.Teardown) and can be repeated.
//   - [Run] does the whole of `sqlhist -r` for a plan compiled with
//     [Prepare]'s options: apply in the run's own instance, collect for
//     [Options].Duration or until the context ends, stop the sources so
//     the counts are final, read, tear down on every way out, and return
//     a [results.Report] of [results.Result]s: rows of cells, counts, a
//     JOIN's exact latency statistics and distribution, the kernel's
//     totals. Package results prints them as the command does (table,
//     JSON, CSV, folded stacks, pprof), reads them back and merges them.
//
// A [Target] is the tracefs written to and read from: [Dir] for the
// machine's (root is needed to write), or any fs.FS and tracefs.Writer,
// such as a fake in tests. See the examples.
package live
