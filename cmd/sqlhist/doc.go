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
// # Only some tasks
//
// -L TID keeps what thread TID does; -p PID the threads process PID has
// when sqlhist runs, listed in /proc/PID/task of this machine (threads
// started later are not traced; -p with --kernel is refused). Both repeat
// and take comma lists. Events record the thread in common_pid; no field
// holds the process id. A histogram is filtered on common_pid. A JOIN is
// filtered on its start trigger only, since the end fires only for keys
// the start saved: on the start key when it names a task (common_pid or a
// pid_t field, such as sched_waking's pid, the task woken), else on the
// start event's common_pid; a comment in the script says which. A
// histogram of a synthetic event the script defines is not filtered again.
// The kernel's set_event_pid is not used: it acts on every event of the
// instance and cannot be undone without truncating it.
//
// # Looking at events
//
// --describe EVENT prints an event's name, system, ID and print format,
// then a table of its fields: name, type, size, offset and signedness, as
// the format file declares them (the kprobe tool's -v). EVENT is event,
// system.event or system/event; an unknown name is exit 1 with the
// nearest name as a hint. With SQL (arguments or -f), the query is
// compiled first and its own events can be described too: a synthetic
// event it defines has no ID, size or offset yet, since the kernel assigns
// them when the script creates the event.
//
// --list-events [GLOB ...] prints the matching events as system/event, one
// per line, sorted. A glob (path.Match syntax: * ? [...]) matches the whole
// system/event name or the event name alone; system.event works too. With
// -f FILE the events the query defines are listed as well. A bad glob is
// exit 2, no match exit 1.
//
// Both read the same catalog a query is compiled against (--kernel,
// --formats, or the live tracefs) and never write anything.
//
// # Probes
//
// FROM and JOIN also take a dynamic probe, created before the triggers and
// removed after them: kprobe(SYMBOL, name=FETCHARG[:TYPE], …),
// kretprobe(SYMBOL, ret=$retval:TYPE, …), uprobe('/path/bin', SYMBOL or
// 0xOFFSET, …), uretprobe(…) and eprobe([SYSTEM.]EVENT,
// name=+0($field):ustring, …). The arguments are checked as the kernel
// would check them, each error at its position; a uprobe's SYMBOL is
// resolved to a file offset from the binary's ELF symbol table. --deref
// reads the const char * fields a query selects through an eprobe. See
// README.md for the whole syntax.
//
// # Running a query
//
// -r applies the query in a private tracefs instance (sqlhist_<pid>, or
// -B NAME), collects for -d or until SIGINT/SIGTERM, reads the results,
// removes everything it created and prints a table: for a JOIN, one row per
// value of the fields that are not the latency, with the count and the
// latency's minimum, average and maximum, then the latency's distribution
// in powers of two; for a histogram query, its entries with their keys
// resolved. -o json and -o csv are for scripts; --events streams the
// synthetic events instead. The teardown runs on every way out.
//
// # Flags
//
//	-n NAME          synthetic event name (default <from>_to_<join>)
//	-t DIR           tracefs in printed paths and for -e (/sys/kernel/tracing)
//	--formats DIR    event formats to compile against
//	--kernel VER     embedded catalog to compile against
//	-e               apply the commands, undoing them all if one fails
//	--teardown       the commands that remove what the query creates
//	-r               apply, collect, print the results, remove everything
//	-d D             with -r: collect for D (10, 0.5, 1m30s); default until Ctrl-C
//	--events         with -r: stream the synthetic events' trace lines
//	-o FORMAT        with -r: table, json or csv
//	--size N         with -r: entries of the histograms read
//	-m VAR, -c VAR   onmax / onchange handler on synthetic field VAR
//	-s, -S F1,F2, -T with -m/-c: snapshot, save fields, fire only then
//	-B NAME          put the triggers in tracefs instance NAME
//	-p PID, -L TID   only the threads of process PID, only thread TID
//	--describe EVENT print EVENT's fields as a table
//	--list-events    list the events matching the GLOB arguments
//	--deref          read selected const char * fields as strings (eprobe)
package main
