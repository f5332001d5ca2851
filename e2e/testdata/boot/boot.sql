-- Boot-time tracing, applied by the kernel from a bootconfig before /init
-- runs: initcall latencies, wakeup latencies and open latencies (a kprobe
-- and a kretprobe).
CREATE VIEW initcall_lat AS
SELECT start.func, TIMESTAMP_DELTA_USECS AS lat
FROM initcall_start AS start JOIN initcall_finish AS end ON start.func = end.func;

CREATE VIEW wake_lat AS
SELECT end.next_comm AS comm, end.next_pid AS pid, TIMESTAMP_DELTA_USECS AS lat
FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid;

CREATE VIEW open_lat AS
SELECT start.filename, end.ret, TIMESTAMP_DELTA_USECS AS lat
FROM kprobe(do_sys_openat2, filename=+0($arg2):string) AS start
JOIN kretprobe(do_sys_openat2, ret=$retval:s32) AS end ON start.common_pid = end.common_pid;
