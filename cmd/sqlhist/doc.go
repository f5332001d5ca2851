// Command sqlhist compiles SQL over Linux trace events into the tracefs
// commands that create ftrace synthetic events and hist triggers.
//
// Usage:
//
//	sqlhist [flags] [SQL ...]
//
// The SQL comes from the arguments (joined by spaces) or from -f FILE
// ('-' for standard input). The output is a POSIX shell script on standard
// output, one write per line:
//
//	echo 'LINE' >> /sys/kernel/tracing/FILE
//
// or printf '%s\n' 'LINE' >> … when LINE holds a backslash (dash's echo
// would interpret it), plus "#" comments. Every line appends: truncating a
// trigger file or dynamic_events would remove what is already there.
// Diagnostics go to standard error as file:line:col, the source line and a
// caret. Exit status: 0 ok, 1 bad query or failed apply, 2 bad usage.
//
// # Queries
//
// A JOIN measures something between two events:
//
//	SELECT end.next_comm AS comm, start.pid,
//	       (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
//	FROM sched_waking AS start JOIN sched_switch AS end
//	  ON start.pid = end.next_pid
//	WHERE end.next_prio < 100
//
// becomes a synthetic event with the fields comm, pid and lat, a hist
// trigger on sched_waking that saves what the end needs, and a hist trigger
// on sched_switch that fires the synthetic event. A SELECT without JOIN is
// a histogram on one event:
//
//	SELECT CAST(id AS SYSCALL), COUNT(*) FROM raw_syscalls.sys_enter ORDER BY COUNT(*) DESC
//
// CREATE VIEW name AS SELECT … names a synthetic event that later
// statements of the same script read from. The language is described in
// README.md.
//
// # Event catalogs
//
// Fields and types come from the event format files of a tracefs: --formats
// DIR, else the -t directory when it holds events/, else a catalog embedded
// in the binary (--kernel picks one). Printing never needs root and never
// mounts or writes anything.
//
// # Flags
//
//	-n NAME          synthetic event name (default <from>_to_<join>)
//	-t DIR           tracefs in printed paths and for -e (/sys/kernel/tracing)
//	--formats DIR    event formats to compile against
//	--kernel VER     embedded catalog to compile against
//	-e               apply the commands, undoing them all if one fails
//	--teardown       the commands that remove what the query creates
//	-m VAR, -c VAR   onmax / onchange handler on synthetic field VAR
//	-s, -S F1,F2, -T with -m/-c: snapshot, save fields, fire only then
//	-B NAME          put the triggers in tracefs instance NAME
package main
