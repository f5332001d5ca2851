# Which synthetic event names make trace(NAME,...) fail? A wakeup join with
# names of one, two and three letters, on sched events (no probes).
cd /sys/kernel/tracing
echo > error_log
w() { f=$1; shift; if echo "$*" >> $f; then echo "ok: $*"; else echo "FAILED: $*"; cat error_log; echo > error_log; fi; }
for n in a b z x ab abc lat wake; do
	echo "== $n"
	w dynamic_events "s:$n u64 lat"
	w events/sched/sched_waking/trigger "hist:keys=pid:${n}_ts=common_timestamp.usecs"
	w events/sched/sched_switch/trigger "hist:keys=next_pid:${n}_lat=common_timestamp.usecs-\$${n}_ts:onmatch(sched.sched_waking).trace($n,\$${n}_lat)"
	w events/sched/sched_switch/trigger "!hist:keys=next_pid:${n}_lat=common_timestamp.usecs-\$${n}_ts:onmatch(sched.sched_waking).trace($n,\$${n}_lat)"
	w events/sched/sched_waking/trigger "!hist:keys=pid:${n}_ts=common_timestamp.usecs"
	w dynamic_events "-:$n"
done
