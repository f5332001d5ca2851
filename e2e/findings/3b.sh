. /work/lib.sh
uname -r
R=events/syscalls/sys_enter_read; RX=events/syscalls/sys_exit_read
KM=events/kmem/kmalloc; KF=events/kmem/kfree
SW=events/sched/sched_waking; SS=events/sched/sched_switch
# size_t (sys_enter_read count, size 8 unsigned)
tryjoin t_sz_u64 's:t_sz_u64 u64 x' $R 'hist:keys=common_pid:a1=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_sz_u64,$a1)'
tryjoin t_sz_sz 's:t_sz_sz size_t x' $R 'hist:keys=common_pid:a2=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_sz_sz,$a2)'
tryjoin t_sz_ul 's:t_sz_ul unsigned long x' $R 'hist:keys=common_pid:a3=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_sz_ul,$a3)'
# unsigned int (sys_enter_read fd: declared unsigned int but size 8)
tryjoin t_ui_u32 's:t_ui_u32 u32 x' $R 'hist:keys=common_pid:b1=fd' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_ui_u32,$b1)'
tryjoin t_ui_ui 's:t_ui_ui unsigned int x' $R 'hist:keys=common_pid:b2=fd' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_ui_ui,$b2)'
tryjoin t_ui_u64 's:t_ui_u64 u64 x' $R 'hist:keys=common_pid:b3=fd' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_ui_u64,$b3)'
# char * buf
tryjoin t_cp_u64 's:t_cp_u64 u64 x' $R 'hist:keys=common_pid:b4=buf' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_cp_u64,$b4)'
# long ret (end field passed directly)
tryjoin t_l_s64 's:t_l_s64 s64 x' $R 'hist:keys=common_pid:c1=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_l_s64,ret)'
tryjoin t_l_long 's:t_l_long long x' $R 'hist:keys=common_pid:c2=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_l_long,ret)'
tryjoin t_l_u64 's:t_l_u64 u64 x' $R 'hist:keys=common_pid:c3=count' $RX 'hist:keys=common_pid:onmatch(syscalls.sys_enter_read).trace(t_l_u64,ret)'
# unsigned long (kmalloc call_site) via variable and kfree call_site directly
tryjoin t_ul_u64 's:t_ul_u64 u64 x' $KM 'hist:keys=ptr:d1=call_site' $KF 'hist:keys=ptr:onmatch(kmem.kmalloc).trace(t_ul_u64,$d1)'
tryjoin t_ul_ul 's:t_ul_ul unsigned long x' $KM 'hist:keys=ptr:d2=call_site' $KF 'hist:keys=ptr:onmatch(kmem.kmalloc).trace(t_ul_ul,$d2)'
tryjoin t_ul_dir 's:t_ul_dir u64 x' $KM 'hist:keys=ptr:d3=bytes_req' $KF 'hist:keys=ptr:onmatch(kmem.kmalloc).trace(t_ul_dir,call_site)'
tryjoin t_kmsz_u64 's:t_kmsz_u64 u64 x' $KM 'hist:keys=ptr:d4=bytes_req' $KF 'hist:keys=ptr:onmatch(kmem.kmalloc).trace(t_kmsz_u64,$d4)'
# int / pid_t (sched_waking prio, pid; sched_switch next_prio directly)
tryjoin t_i_s32 's:t_i_s32 s32 x' $SW 'hist:keys=pid:e1=prio' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_i_s32,$e1)'
tryjoin t_i_int 's:t_i_int int x' $SW 'hist:keys=pid:e2=prio' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_i_int,$e2)'
tryjoin t_i_s32d 's:t_i_s32d s32 x' $SW 'hist:keys=pid:e3=prio' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_i_s32d,next_prio)'
tryjoin t_p_int 's:t_p_int int x' $SW 'hist:keys=pid:e4=pid' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_p_int,$e4)'
tryjoin t_p_s32 's:t_p_s32 s32 x' $SW 'hist:keys=pid:e5=pid' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_p_s32,$e5)'
tryjoin t_i_u32 's:t_i_u32 u32 x' $SW 'hist:keys=pid:e6=prio' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_i_u32,$e6)'
tryjoin t_i_s64 's:t_i_s64 s64 x' $SW 'hist:keys=pid:e7=prio' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_i_s64,$e7)'
# common_cpu
tryjoin t_cpu_u32 's:t_cpu_u32 u32 x' $SW 'hist:keys=pid:f1=common_cpu' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_cpu_u32,$f1)'
tryjoin t_cpu_ui 's:t_cpu_ui unsigned int x' $SW 'hist:keys=pid:f2=common_cpu' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_cpu_ui,$f2)'
tryjoin t_cpu_int 's:t_cpu_int int x' $SW 'hist:keys=pid:f3=common_cpu' $SS 'hist:keys=next_pid:onmatch(sched.sched_waking).trace(t_cpu_int,$f3)'
# timestamps into signed / unsigned long
tryjoin t_ts_s64 's:t_ts_s64 s64 x' $SW 'hist:keys=pid:g1=common_timestamp.usecs' $SS 'hist:keys=next_pid:g2=common_timestamp.usecs-$g1:onmatch(sched.sched_waking).trace(t_ts_s64,$g2)'
tryjoin t_ts_ul 's:t_ts_ul unsigned long x' $SW 'hist:keys=pid:g3=common_timestamp.usecs' $SS 'hist:keys=next_pid:g4=common_timestamp.usecs-$g3:onmatch(sched.sched_waking).trace(t_ts_ul,$g4)'
echo "=== leftovers"
cat dynamic_events; for e in $R $RX $KM $KF $SW $SS; do grep -v '^#' $e/trigger; done
true
