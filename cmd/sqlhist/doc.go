// Command sqlhist compiles SQL over Linux trace events into the tracefs
// commands that create ftrace synthetic events and hist triggers, and
// prints them, applies them (-e) or runs them end to end (-r).
//
// Usage:
//
//	sqlhist [flags] [SQL ...]
//
// The SQL comes from the arguments (joined by spaces) or from -f FILE
// ('-' for standard input). A JOIN of two events becomes a synthetic event
// and the hist triggers that fire it; a SELECT without JOIN a histogram:
//
//	SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat
//	FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
//
//	SELECT CAST(id AS SYSCALL), COUNT(*) FROM raw_syscalls.sys_enter ORDER BY COUNT(*) DESC
//
// A histogram also takes MAX(field) (an onmax() handler; there is no
// MIN), arithmetic on its event's fields as a key, the count as
// CAST(COUNT(*) AS PERCENT|GRAPH), and -m/-c with -S/-s on a field of its
// event. SELECT … UNION ALL SELECT … on several events is one
// histogram they share (name=):
//
//	SELECT skbaddr.hex, SUM(len) FROM netif_receive_skb
//	UNION ALL SELECT skbaddr.hex, SUM(len) FROM netif_rx
//
// The output is a POSIX shell script on standard output, one append per
// line, safe to paste on a busybox target:
//
//	echo 'LINE' >> /sys/kernel/tracing/FILE
//
// or printf '%s\n' 'LINE' >> … when LINE holds a backslash or is all
// echo options (-n, -e, -E), plus "#" comments. Fields and types come from --formats DIR, the -t tracefs, or a
// catalog embedded in the binary (--kernel); printing needs no root and
// writes nothing. -e applies all or nothing; --teardown prints (or with -e
// applies) the removals, each synthetic event and probe disabled first
// (with -e, what is not there is skipped and named); -r applies in a private instance, collects for
// -d or until Ctrl-C, prints the results and removes everything; with
// -o folded or -o pprof, results keyed by a stack trace (STACKTRACE) come
// out as folded stacks or a gzipped pprof profile, for flame graphs.
// --describe and --list-events show the catalog. Diagnostics go to
// standard error as file:line:col, the source line and a caret.
//
// libtracefs's sqlhist flags work as there: -m VAR or -c VAR with -s, -S
// FIELDS or -T add onmax/onchange handlers in its order (save, trace,
// snapshot; -T is trace and snapshot, each replacing the default onmatch),
// and -m/-c alone only warn. --size N sizes every histogram's map, in
// scripts, plans and bootconfigs as with -r.
//
// sqlhist merge [-o table|json|csv] FILE.json… reads what -r -o json
// printed on several machines and prints each machine's results and
// their merge: counts, sums and log2 distributions added, the largest
// maximum, percentiles from the merged distribution, rows matched by
// their keys.
//
// --via COMMAND does all of it on another machine with nothing but a
// shell: COMMAND (ssh root@board, adb shell, kubectl exec -i POD -- sh,
// socat - /dev/ttyUSB0,raw,echo=0) runs here with sh -c, and its input
// and output are a POSIX shell on the target, through which every tracefs
// read and write goes (package live/remote). Several --via (or
// --via-file) run the query on a fleet at once and merge the results.
//
// Exit status: 0 ok, 1 bad query or failed apply, 2 bad usage.
//
// `sqlhist --help` lists the flags; README.md describes the language,
// probes, -p/-L and --run in full. The work is done by package
// github.com/sqlhist/sqlhist/live, which Go programs can use directly.
package main
