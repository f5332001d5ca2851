T=/sys/kernel/tracing
cd $T
try() { echo > error_log; if echo "$2" >> "$1" 2>/dev/null; then echo "OK   $2"; else echo "FAIL $2"; sed -n '1,3p' error_log | sed 's/^/     /'; fi; }
load() { i=0; while [ $i -lt 10 ]; do dd if=/proc/version of=/dev/null bs=16 2>/dev/null; sleep 0.01; i=$((i+1)); done; }
rm1() { echo "!$2" >> $1 2>/dev/null || echo "   (could not remove from $1)"; }
echo "== uname $(uname -r)"
run() { # name decl start end-vars params
  try dynamic_events "s:$1 $2"
  S="hist:keys=pid:$3"
  E="hist:keys=next_pid:$4:onmatch(sched.sched_waking).trace($1,$5)"
  try events/sched/sched_waking/trigger "$S"
  try events/sched/sched_switch/trigger "$E"
  echo 1 > events/synthetic/$1/enable 2>/dev/null; load; echo 0 > events/synthetic/$1/enable 2>/dev/null
  grep " $1: " trace | head -3 | sed 's/^.*: '$1': /   /'
  rm1 events/sched/sched_switch/trigger "$E"; rm1 events/sched/sched_waking/trigger "$S"
  echo "-:$1" >> dynamic_events; echo > trace
}
# T1: same-trigger chain: delta then /1000, compare with .usecs delta
run t1 'u64 ns; u64 us; u64 ref' 'a_ts=common_timestamp,a_tsu=common_timestamp.usecs' 'a_d=common_timestamp-$a_ts,a_us=$a_d/1000,a_ref=common_timestamp.usecs-$a_tsu' '$a_d,$a_us,$a_ref'
# T2: start var minus constant; T3 field minus start var; prio printed for reference
run t2 'int pm1; int nmp; int prio' 'b_p=prio,b_q=prio,b_r=prio' 'b_x=$b_p-1,b_y=next_prio-$b_q' '$b_x,$b_y,$b_r'
# T4: same-trigger chain with the var as the second operand
run t4 'int v; int prio' 'c_p=prio,c_r=prio' 'c_1=$c_p-1,c_2=next_prio-$c_1' '$c_2,$c_r'
# T5: constant operand in a single expression: (end-start)/1000 impossible flat; check prio*2+$p
run t5 'int w; int prio' 'd_p=prio,d_r=prio' 'd_w=next_prio*2+$d_p' '$d_w,$d_r'
