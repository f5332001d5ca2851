cd /sys/kernel/tracing
w() { f=$1; shift; if echo "$*" >> $f; then echo "ok: $*"; else echo "FAILED: $*"; cat error_log; echo > error_log; fi; }
for n in a open_a; do
w dynamic_events 'p:sqlhist/do_sys_openat2 do_sys_openat2 fd=$arg1:s32'
w dynamic_events 'r:sqlhist/do_sys_openat2__return do_sys_openat2 ret=$retval:s32'
w dynamic_events "s:$n u64 lat"
w events/sqlhist/do_sys_openat2/trigger "hist:keys=common_pid:${n}_ts_us=common_timestamp.usecs"
w events/sqlhist/do_sys_openat2__return/trigger "hist:keys=common_pid:${n}_lat=common_timestamp.usecs-\$${n}_ts_us:onmatch(sqlhist.do_sys_openat2).trace($n,\$${n}_lat)"
w events/sqlhist/do_sys_openat2__return/trigger "!hist:keys=common_pid:${n}_lat=common_timestamp.usecs-\$${n}_ts_us:onmatch(sqlhist.do_sys_openat2).trace($n,\$${n}_lat)"
w events/sqlhist/do_sys_openat2/trigger "!hist:keys=common_pid:${n}_ts_us=common_timestamp.usecs"
w dynamic_events "-:$n"
w dynamic_events '-:sqlhist/do_sys_openat2__return'
w dynamic_events '-:sqlhist/do_sys_openat2'
done
