. /work/lib.sh
uname -r
w dynamic_events 's:wl char comm[16]; pid_t pid; u64 lat'
w events/sched/sched_waking/trigger 'hist:keys=pid:wl_pid=pid,wl_ts=common_timestamp.usecs'
w events/sched/sched_switch/trigger 'hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts:onmatch(sched.sched_waking).trace(wl,next_comm,$wl_pid,$wl_lat)'
w events/synthetic/wl/enable 1
cat dynamic_events
triggers events/sched/sched_waking
triggers events/sched/sched_switch
load
echo 0 > events/synthetic/wl/enable
echo "--- trace (5 lines)"
grep -v '^#' trace | head -n 5
echo "--- lat statistics (us): count min max"
grep ' wl: ' trace | sed 's/.*lat=//' | awk 'NR==1{mn=$1;mx=$1} {n++; if($1<mn)mn=$1; if($1>mx)mx=$1} END{print n, mn, mx}'
echo "--- teardown"
w events/sched/sched_switch/trigger '!hist:keys=next_pid:wl_lat=common_timestamp.usecs-$wl_ts:onmatch(sched.sched_waking).trace(wl,next_comm,$wl_pid,$wl_lat)'
w events/sched/sched_waking/trigger '!hist:keys=pid:wl_pid=pid,wl_ts=common_timestamp.usecs'
w dynamic_events '-:wl'
echo "--- after teardown"
triggers events/sched/sched_waking
triggers events/sched/sched_switch
echo "  [dynamic_events]"; cat dynamic_events
echo "  [synthetic_events]"; cat synthetic_events
ls events/synthetic 2>&1 | sed 's/^/  events\/synthetic: /'
