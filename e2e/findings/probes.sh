# Probe definitions in dynamic_events: what each kind of probe is accepted
# as, the format files the kernel creates, the error_log texts of the
# refusals sqlhist checks for, and a short trace.
cd /sys/kernel/tracing
w() { f=$1; shift; if echo "$*" >> $f; then echo "ok: $*"; else echo "FAILED: $*"; cat error_log; echo > error_log; fi; }
uname -r
w dynamic_events 'p:sqlhist/do_sys_openat2 do_sys_openat2 dfd=$arg1:s32 filename=+0($arg2):string def=$arg3 x=%si:x32 sym=$arg1:symbol c=$comm arr=+0($arg2):u8[4] st=$stack0 us=+0($arg2):ustring'
w dynamic_events 'r:sqlhist/do_sys_openat2__return do_sys_openat2 ret=$retval:s64'
w dynamic_events 'p:sqlhist/vfs_read_ret vfs_read%return ret=$retval'
w dynamic_events 'e:sqlhist/sys_enter_openat syscalls.sys_enter_openat filename=+0($filename):ustring fl=$flags:x32 raw=$filename'
w dynamic_events 'e:sqlhist/sys_enter_openat_b syscalls/sys_enter_openat f=$filename'
w dynamic_events 'p:sqlhist/bb /bin/busybox:0x1000 a=%di'
w uprobe_events 'p:sqlhist/bb2 /bin/busybox:0x1000 a=%di'
w dynamic_events 'r:sqlhist/bb3 /bin/busybox:0x1000 a=$retval'
w dynamic_events 'p:sqlhist/nosuch no_such_function_xyz'
w dynamic_events 'p:sqlhist/ab_cdefghijklmnopqrstuvwxyz_0123456789_abcdefghijklmnopqrstuvwxyz_0123456789 do_sys_openat2'
w dynamic_events 'p:sqlhist/ret_on_entry do_sys_openat2 r=$retval'
w dynamic_events 'r:sqlhist/arg_on_ret do_sys_openat2 a=$arg1'
w dynamic_events 'p:sqlhist/badtype do_sys_openat2 a=$arg1:u128'
w dynamic_events 'p:sqlhist/strreg do_sys_openat2 a=$arg1:string'
w dynamic_events 'p:sqlhist/longarg do_sys_openat2 a=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0($arg2))))))))))))))'
w dynamic_events 'e:sqlhist/nofield syscalls.sys_enter_openat f=$nosuch'
w dynamic_events 'p:sqlhist/comm2 do_sys_openat2 c=$comm:u64'
w dynamic_events 'p:sqlhist/sym2 do_sys_openat2 c=$arg1:symstr'
w dynamic_events 'p:sqlhist/dup do_sys_openat2 a=$arg1 a=$arg2'
w dynamic_events 'p:sqlhist/mod ext4:ext4_file_open'
w dynamic_events 'p:sqlhist/offs do_sys_openat2+4'
w dynamic_events 'p:sqlhist/bad-name do_sys_openat2'
cat dynamic_events
for e in events/sqlhist/*; do echo "== $e"; cat $e/format; done
cat error_log
echo 1 > events/sqlhist/sys_enter_openat/enable
echo 1 > events/sqlhist/do_sys_openat2/enable
echo 1 > events/sqlhist/do_sys_openat2__return/enable
cat /etc/passwd >/dev/null
echo 0 > events/sqlhist/sys_enter_openat/enable
echo 0 > events/sqlhist/do_sys_openat2/enable
echo 0 > events/sqlhist/do_sys_openat2__return/enable
grep -v '^#' trace | head -20
grep -E '^(do_sys_openat2|do_sys_open|vfs_open|do_filp_open)$' available_filter_functions
for e in $(ls events/sqlhist); do w dynamic_events "-:sqlhist/$e"; done
cat dynamic_events
ls events/sqlhist 2>&1
