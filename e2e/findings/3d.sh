. /work/lib.sh
uname -r
grep -o 'common_stacktrace\|stacktrace' README | sort | uniq -c
SW=events/sched/sched_waking; SS=events/sched/sched_switch
# records NAME: count and the first record (a stack prints over several lines).
records() {
	echo "  trace lines of $1: $(grep -c " $1: " trace)"
	grep -A 10 " $1: " trace | head -n 11 | sed 's/^ *//; s/^/    /'
}
# common_stacktrace into unsigned long[] (documented form), stacktrace (old name)
tryjoin st1 's:st1 unsigned long[] st; u64 lat' $SW 'hist:keys=pid:s1ts=common_timestamp.usecs,s1st=common_stacktrace' $SS 'hist:keys=next_pid:s1lat=common_timestamp.usecs-$s1ts:onmatch(sched.sched_waking).trace(st1,$s1st,$s1lat)'
tryjoin st2 's:st2 unsigned long[] st; u64 lat' $SW 'hist:keys=pid:s2ts=common_timestamp.usecs,s2st=stacktrace' $SS 'hist:keys=next_pid:s2lat=common_timestamp.usecs-$s2ts:onmatch(sched.sched_waking).trace(st2,$s2st,$s2lat)'
# the spelling from the brief: unsigned long st[]
tryjoin st3 's:st3 unsigned long st[]; u64 lat' $SW 'hist:keys=pid:s3ts=common_timestamp.usecs,s3st=common_stacktrace' $SS 'hist:keys=next_pid:s3lat=common_timestamp.usecs-$s3ts:onmatch(sched.sched_waking).trace(st3,$s3st,$s3lat)'
# a stacktrace key alone (no variable): accepted everywhere with hist triggers?
echo "=== stacktrace as a key"
w $SW/trigger 'hist:keys=common_stacktrace:vals=hitcount'
w $SW/trigger '!hist:keys=common_stacktrace:vals=hitcount' >/dev/null
w $SW/trigger 'hist:keys=stacktrace:vals=hitcount'
w $SW/trigger '!hist:keys=stacktrace:vals=hitcount' >/dev/null
echo "=== leftovers"; cat dynamic_events; grep -v '^#' $SW/trigger $SS/trigger
true
