#!/bin/sh
# Runs every case under /work/cases in this kernel and reports with @@ markers.
# Each case: compile with the static sqlhist against the live tracefs, apply
# the script with sh, check error_log, enable the synthetic events, run a
# workload, collect the trace and hist files, tear down, compare state.
T=/sys/kernel/tracing
SQLHIST=/work/sqlhist

# gstate is the whole tracefs state that sqlhist may touch: every trigger
# file, dynamic_events, synthetic events, instances.
gstate() {
	cat $T/dynamic_events
	grep -H '^[^#]' $T/events/*/*/trigger 2>/dev/null
	ls $T/events/synthetic $T/events/sqlhist 2>/dev/null
	ls $T/instances
}

# state is the part a case touches: every line but the comments of each
# file its script writes to ($files, listed once a case), as FILE:LINE
# (a file that is absent or holds only comments shows no line), its
# synthetic events and probes, and the instances. Two processes: each
# fork costs 10-20 ms under TCG, and a case takes five snapshots.
state() {
	[ -n "$files" ] && grep -H -v '^#' $files 2>/dev/null
	ls $T/events/synthetic $T/events/sqlhist $T/instances 2>/dev/null
}

uptime_us() {
	read up idle < /proc/uptime
	s=${up%.*}; f=${up#*.}
	echo $(( s * 1000000 + ${f#0} * 10000 ))
}

# workload exercises what the cases trace: context switches and wakeups
# (sleep), opens and reads (dd really calls read(); busybox cat uses
# sendfile), allocations, softirqs and timers, sleeps in uninterruptible
# state (toggling an event's enable waits for RCU in D state), and the
# uprobed Go program.
workload() {
	i=0
	while [ $i -lt 8 ]; do
		sleep 0.01
		dd if=/proc/version of=/dev/null bs=32 2>/dev/null
		cat /etc/passwd > /dev/null
		ls /work /proc/self > /dev/null
		# A small static Go program for the uprobe cases, twice a round
		# (a Go program's start costs 0.1 s of TCG time, a third of the
		# rest of an iteration; its threads' wakeups are not needed).
		[ $((i % 4)) -eq 0 ] && /work/bin/demo > /dev/null
		# Serial interrupts (irq_handler_entry/exit); the host skips @@noise.
		echo "@@noise $i" > /dev/console
		# Resetting a buffer makes this shell wait for RCU in uninterruptible
		# sleep: the D-state switches the prev_state == 2 cases look for.
		# (Removing a trigger no longer does on 7.2: a kernel thread frees it.)
		echo > $T/instances/sqlhist_dstate/trace
		i=$((i + 1))
	done
}

# events prints the event lines of the trace buffer and of the snapshot
# buffer: an onmax().snapshot() handler swaps the two, so the lines that
# were in trace are in snapshot after a new maximum (which can come after
# the synthetic event is disabled: the handler runs on the end trigger).
events() {
	cat $T/trace
	[ -e $T/snapshot ] && cat $T/snapshot
}

# fired reports whether the current case has fired: each of its synthetic
# events has a line in trace, or, when it has none, each histogram has hits.
fired() {
	if [ -n "$synths" ]; then
		for s in $synths; do events | grep -q " $s: " || return 1; done
		return 0
	fi
	for h in $hists; do
		grep -q 'Hits: [1-9]' $h || return 1
	done
}

mkdir -p /etc
echo "root:x:0:0:root:/root:/bin/sh" > /etc/passwd
echo "@@kernel $(uname -r)"
# What the host checks a task name or a pid against: the pid bound, and
# the applets of the busybox every process of this guest runs from.
echo "@@pidmax $(cat /proc/sys/kernel/pid_max 2>/dev/null)"
echo "@@applets"
busybox --list
echo "@@end"
mkdir $T/instances/sqlhist_dstate
gstate > /tmp/global-before.txt
# The programs a task of this guest may be named after (without a fork
# per case: under TCG each costs 10-20 ms).
programs=$(for f in /work/* /work/bin/*; do echo "${f##*/}"; done)
for dir in /work/cases/*/; do
	name=${dir%/}; name=${name##*/}
	cd $dir
	# Its arguments, one a line, and the instance of its -B, read by the
	# shell itself (no fork).
	args= inst= prev=
	if [ -e args ]; then
		while IFS= read -r a || [ -n "$a" ]; do
			args="$args $a"
			[ "$prev" = -B ] && inst=$a
			prev=$a
		done < args
	fi
	echo "@@case $name"
	read up idle < /proc/uptime
	echo "@@at $up"
	[ -n "$inst" ] && mkdir $T/instances/$inst
	$SQLHIST $args -f query.sql > commands.sh 2> compile.err
	rc=$?
	$SQLHIST $args --teardown -f query.sql > teardown.sh 2>> compile.err
	echo "@@compile $rc"
	cat compile.err
	if [ $rc -ne 0 ]; then
		# Refused: -e must refuse as well, before any write.
		gstate > /tmp/refuse-before.txt
		$SQLHIST $args -e -f query.sql > /dev/null 2> exec.err
		echo "@@refuseexec $?"
		cat exec.err
		gstate > /tmp/refuse-after.txt
		echo "@@refusediff"
		diff /tmp/refuse-before.txt /tmp/refuse-after.txt | sed "s/^@@/ @@/"
		[ -n "$inst" ] && rmdir $T/instances/$inst
		echo "@@end"
		continue
	fi
	echo "@@commands"
	cat commands.sh
	files=$(sed -n 's/.* >> //p' commands.sh teardown.sh | sort -u)
	hists=$(sed -n 's/.* >> \(.*\)\/trigger$/\1\/hist/p' commands.sh | sort -u)
	state > before.txt
	echo > $T/error_log
	echo > $T/trace
	# Clear (not free) the snapshot buffer a previous case may have filled.
	[ -e $T/snapshot ] && echo 2 > $T/snapshot 2>/dev/null
	start=$(uptime_us)
	sh -e commands.sh 2>&1
	echo "@@setup $?"
	state > applied.txt
	echo "@@errorlog"
	cat $T/error_log
	synths=$(sed -n "s/^echo 's:\([A-Za-z0-9_]*\) .*/\1/p" commands.sh)
	for s in $synths; do echo 1 > $T/events/synthetic/$s/enable; done
	# Up to three workload rounds, until every synthetic event has fired
	# (or, without any, every histogram has hits); one for a case that
	# need not fire in a VM (its e2e section says nofire).
	rounds=0
	maxrounds=3
	[ -e nofire ] && maxrounds=1
	while [ $rounds -lt $maxrounds ]; do
		workload > /dev/null 2>&1
		rounds=$((rounds + 1))
		fired && break
	done
	echo "@@rounds $rounds"
	for s in $synths; do echo 0 > $T/events/synthetic/$s/enable; done
	end=$(uptime_us)
	echo "@@elapsed_us $((end - start))"
	# Every task name this guest had that the host can know of: the live
	# tasks, the kernel's saved comms, the programs in /work.
	echo "@@tasks"
	cat /proc/[0-9]*/comm 2>/dev/null
	sed 's/^[0-9]* //' $T/saved_cmdlines
	echo "$programs"
	echo "@@trace"
	for s in $synths; do events | grep " $s: " | head -n 300; done
	for h in $hists; do
		echo "@@hist $h"
		cat $h
	done
	echo > $T/error_log
	sh -e teardown.sh 2>&1
	echo "@@teardown $?"
	echo "@@errorlog"
	cat $T/error_log
	state > after.txt
	echo "@@statediff"
	diff before.txt after.txt
	# The JSON plan of the same query, applied by sqlhist with --plan -e,
	# must leave the tracefs as the script did, and its teardown as before.
	$SQLHIST $args -o json -f query.sql > plan.json 2>/dev/null
	echo "@@planlog"
	$SQLHIST -e --plan plan.json 2>&1
	echo "@@planapply $?"
	state > planapplied.txt
	echo "@@plandiff"
	diff applied.txt planapplied.txt
	echo "@@planlog"
	$SQLHIST -e --teardown --plan plan.json 2>&1
	echo "@@planteardown $?"
	state > planafter.txt
	echo "@@planstatediff"
	diff before.txt planafter.txt
	[ -n "$inst" ] && rmdir $T/instances/$inst
	echo "@@end"
done
gstate > /tmp/global-after.txt
echo "@@globaldiff"
diff /tmp/global-before.txt /tmp/global-after.txt | sed "s/^@@/ @@/"
rmdir $T/instances/sqlhist_dstate
echo "@@done"
