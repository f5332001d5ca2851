. /work/lib.sh
uname -r
# records NAME: count, a sample and min/max of every numeric field.
records() {
	n=$(grep -c " $1: " trace)
	echo "  trace lines of $1: $n (uptime now $(cut -d' ' -f1 /proc/uptime) s)"
	grep " $1: " trace | head -n 2 | sed 's/^ *//; s/^/    /'
	grep " $1: " trace | sed "s/.* $1: //" | awk '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); k = kv[1]; v = kv[2] + 0;
		  if (!(k in mn) || v < mn[k]) mn[k] = v; if (!(k in mx) || v > mx[k]) mx[k] = v } }
		END { for (k in mn) printf "    %s: min %.0f max %.0f\n", k, mn[k], mx[k] }'
}
lightload() {
	for i in $(seq 100); do sleep 0.01; done
	ls -R /sys/kernel/tracing/events >/dev/null 2>&1
}
SW=events/sched/sched_waking; SS=events/sched/sched_switch
echo "(uptime at start $(cut -d' ' -f1 /proc/uptime) s; absolute timestamps would be about that many s, i.e. ~1e9-1e10 ns or ~1e6-1e7 us)"
tryjoin c1 's:c1 u64 us' $SW 'hist:keys=pid:c1ts=common_timestamp' $SS 'hist:keys=next_pid:c1d=common_timestamp-$c1ts,c1us=$c1d/1000:onmatch(sched.sched_waking).trace(c1,$c1us)'
tryjoin c2 's:c2 u64 ns' $SW 'hist:keys=pid:c2ts=common_timestamp' $SS 'hist:keys=next_pid:c2d=common_timestamp-$c2ts:onmatch(sched.sched_waking).trace(c2,$c2d)'
tryjoin c3 's:c3 u64 us' $SW 'hist:keys=pid:c3ts=common_timestamp.usecs' $SS 'hist:keys=next_pid:c3us=common_timestamp.usecs-$c3ts:onmatch(sched.sched_waking).trace(c3,$c3us)'
# All forms on the same records:
tryjoin c5 's:c5 u64 ns; u64 usdiv; u64 us' $SW 'hist:keys=pid:c5ts=common_timestamp,c5tsu=common_timestamp.usecs' $SS 'hist:keys=next_pid:c5d=common_timestamp-$c5ts,c5q=$c5d/1000,c5u=common_timestamp.usecs-$c5tsu:onmatch(sched.sched_waking).trace(c5,$c5d,$c5q,$c5u)'
# Division applied to the delta inside one expression, no intermediate variable:
tryjoin c6 's:c6 u64 us' $SW 'hist:keys=pid:c6ts=common_timestamp' $SS 'hist:keys=next_pid:c6us=common_timestamp/1000-$c6ts/1000:onmatch(sched.sched_waking).trace(c6,$c6us)'
# .usecs on the end side only, divided start (mixing units):
tryjoin c7 's:c7 u64 us' $SW 'hist:keys=pid:c7ts=common_timestamp' $SS 'hist:keys=next_pid:c7q=$c7ts/1000,c7us=common_timestamp.usecs-$c7q:onmatch(sched.sched_waking).trace(c7,$c7us)'
echo "=== leftovers"; cat dynamic_events; grep -v '^#' $SW/trigger $SS/trigger
true
