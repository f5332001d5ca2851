T=/sys/kernel/tracing
cd $T
mkdir instances/dstate
echo 'hist:keys=prev_comm' > /dev/null
echo 'hist:keys=prev_comm if prev_state == 2' >> events/sched/sched_switch/trigger
i=0; while [ $i -lt 15 ]; do echo > $T/instances/dstate/trace; sleep 0.01; i=$((i+1)); done
echo "reset-trace: $(grep -c . events/sched/sched_switch/hist) lines"; grep -E '^\{|Hits' events/sched/sched_switch/hist | head -5
echo '!hist:keys=prev_comm if prev_state == 2' >> events/sched/sched_switch/trigger
echo 'hist:keys=prev_comm if prev_state == 2' >> events/sched/sched_switch/trigger
i=0; while [ $i -lt 15 ]; do echo 'traceoff' >> events/signal/signal_deliver/trigger; echo '!traceoff' >> events/signal/signal_deliver/trigger; i=$((i+1)); done
echo "traceoff toggle:"; grep -E '^\{|Hits' events/sched/sched_switch/hist | head -5
echo '!hist:keys=prev_comm if prev_state == 2' >> events/sched/sched_switch/trigger
rmdir instances/dstate && echo removed
