#!/bin/sh
# Runs every case under /work/cases in this kernel and reports with @@ markers.
# Each case: compile with the static sqlhist against the live tracefs, apply
# the script with sh, check error_log, enable the synthetic events, run a
# workload, collect the trace and hist files, tear down, compare state.
#
# The cases come in batches (/work/batches, a line each, made by the host
# from the golden scripts: no two cases of a batch define the same event
# or instance, or share a trigger file whose hist file one of them checks).
# A batch's cases are applied one after another, share one workload, have
# their trace lines and hist files read at once, and are torn down in the
# reverse order: each case's state is compared on the files it writes, and
# the cases applied before it are there both before it is applied and after
# it is torn down, so every case keeps its own verdict.
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
# synthetic events and probes, and the instances (the shell's globs). One
# process: each fork costs 10-20 ms under TCG, and a case takes five
# snapshots.
state() {
	[ -n "$files" ] && grep -H -v '^#' $files 2>/dev/null
	echo $T/events/synthetic/*
	echo $T/events/sqlhist/*
	echo $T/instances/*
}

# show prints a small file with the shell's builtins (no fork).
show() {
	while IFS= read -r l || [ -n "$l" ]; do printf '%s\n' "$l"; done < "$1"
}


# now_us sets now to the guest's uptime in µs (no fork).
now_us() {
	read up idle < /proc/uptime
	s=${up%.*}; f=${up#*.}
	now=$(( s * 1000000 + ${f#0} * 10000 ))
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
		# The suite expedites grace periods around this phase, and an
		# expedited one can end before the shell sleeps (6.1-arm64's
		# offcpu chain once saw no D-state switch in three rounds): the
		# first reset of a round waits for a normal grace period.
		if [ $i -eq 0 ] && [ -w /sys/kernel/rcu_expedited ]; then
			read rcu_was < /sys/kernel/rcu_expedited
			echo 0 > /sys/kernel/rcu_expedited
			echo > $T/instances/sqlhist_dstate/trace
			echo $rcu_was > /sys/kernel/rcu_expedited
		fi
		echo > $T/instances/sqlhist_dstate/trace
		i=$((i + 1))
	done
}

# events writes the event lines of the trace buffer and of the snapshot
# buffer to /tmp/events.txt: an onmax().snapshot() handler swaps the two,
# so the lines that were in trace are in snapshot after a new maximum
# (which can come after the synthetic event is disabled: the handler runs
# on the end trigger). A swap between the two reads would read one buffer
# twice and lose the other (a fresh clone's 7.2-arm64 batch 9: the lines
# of a JOIN that had fired were gone from the batch's last reading, and
# another's line was there twice), so trace is held open while both are
# read, with pause-on-trace set: an open trace then stops the buffers from
# swapping (tracing_stop_tr; without the option, as this guest's kernels
# start, it does not). Kernels without the option always pause.
events() {
	if [ -e $T/snapshot ]; then
		pot=
		[ -e $T/options/pause-on-trace ] && read pot < $T/options/pause-on-trace && echo 1 > $T/options/pause-on-trace
		{ cat $T/snapshot > /tmp/events-snapshot.txt; cat; } < $T/trace > /tmp/events.txt
		[ -n "$pot" ] && echo $pot > $T/options/pause-on-trace
		cat /tmp/events-snapshot.txt >> /tmp/events.txt
	else
		cat $T/trace > /tmp/events.txt
	fi
}

# seen_of sets $seen to those of the synthetic events named in $1 that
# have a line in /tmp/events.txt, each between spaces: one grep for all.
seen_of() {
	seen=" " pat=
	for s in $1; do pat="$pat|$s"; done
	[ -z "$pat" ] && return
	for n in $(grep -oE " (${pat#|}): " /tmp/events.txt | sort -u); do
		seen="$seen${n%:} "
	done
}

# fired reports whether the current case ($synths, $hists) has fired:
# each of its synthetic events is in $seen, or, when it has none, each
# histogram has hits.
fired() {
	if [ -n "$synths" ]; then
		for s in $synths; do
			case "$seen" in *" $s "*) ;; *) return 1 ;; esac
		done
		return 0
	fi
	for h in $hists; do
		grep -q 'Hits: [1-9]' $h || return 1
	done
}

# load reads a case's arguments (its args file, one a line) and the
# instance of its -B, with the shell itself (no fork).
load() {
	args= inst= prev=
	if [ -e args ]; then
		while IFS= read -r a || [ -n "$a" ]; do
			args="$args $a"
			[ "$prev" = -B ] && inst=$a
			prev=$a
		done < args
	fi
}

# compile compiles the case in the current directory (its script, its
# teardown and its JSON plan) with nothing of its batch applied yet, so
# that no case's events or probes are there when another is compiled; a
# case the kernel refuses is done then. It leaves in vars what the later
# steps of the case need.
compile() {
	name=$1
	load
	echo "@@case $name"
	read up idle < /proc/uptime
	echo "@@at $up"
	[ -n "$inst" ] && mkdir $T/instances/$inst
	# One compile writes the script, its teardown and its JSON plan (the
	# plan --plan -e replays after the script's teardown): each sqlhist
	# start costs a few tenths of a second under TCG.
	$SQLHIST $args -f query.sql --teardown-out teardown.sh --plan-out plan.json > commands.sh 2> compile.err
	rc=$?
	echo "@@compile $rc"
	show compile.err
	if [ $rc -ne 0 ]; then
		# Refused: -e must refuse as well, before any write.
		gstate > /tmp/refuse-before.txt
		$SQLHIST $args -e -f query.sql > /dev/null 2> exec.err
		echo "@@refuseexec $?"
		show exec.err
		gstate > /tmp/refuse-after.txt
		echo "@@refusediff"
		diff /tmp/refuse-before.txt /tmp/refuse-after.txt | sed "s/^@@/ @@/"
		[ -n "$inst" ] && rmdir $T/instances/$inst
		echo "@@end"
		return 1
	fi
	[ -n "$inst" ] && rmdir $T/instances/$inst
	echo "@@commands"
	show commands.sh
	# The files the scripts write to, the hist files of the triggers, the
	# synthetic events: one process for the three.
	awk '
		/ >> / { f = $0; sub(/.* >> /, "", f); if (!(f in seen)) { seen[f] = 1; files = files " " f } }
		FILENAME == "commands.sh" && / >> .*\/trigger$/ {
			h = $0; sub(/.* >> /, "", h); sub(/\/trigger$/, "/hist", h)
			if (!(h in hseen)) { hseen[h] = 1; hists = hists " " h }
		}
		FILENAME == "commands.sh" && /^echo '\''s:[A-Za-z0-9_]* / {
			s = $0; sub(/^echo '\''s:/, "", s); sub(/ .*/, "", s); synths = synths " " s
		}
		END { print "files=\"" files "\""; print "hists=\"" hists "\""; print "synths=\"" synths "\"" }
	' commands.sh teardown.sh > vars
	echo "@@end"
}

# setup applies the script of the case in the current directory and
# enables its synthetic events.
setup() {
	name=$1
	load
	. ./vars
	echo "@@case $name"
	[ -n "$inst" ] && mkdir $T/instances/$inst
	state > before.txt
	echo > $T/error_log
	now_us
	echo "start=$now" >> vars
	sh -e commands.sh 2>&1
	rc=$?
	echo "@@setup $rc"
	echo $rc > setuprc
	state > applied.txt
	echo "@@errorlog"
	show $T/error_log
	for s in $synths; do echo 1 > $T/events/synthetic/$s/enable; done
	echo "@@end"
}

# results prints, for the case in the current directory, the rounds it
# took to fire, how long its triggers were installed and its hist files.
results() {
	name=$1
	. ./vars
	echo "@@case $name"
	rounds=$total
	[ -e rounds ] && read rounds < rounds
	echo "@@rounds $rounds"
	echo "@@elapsed_us $((end - start))"
	for h in $hists; do
		echo "@@hist $h"
		cat $h
	done
	if [ -e nofire.txt ]; then
		echo "@@nofire"
		cat nofire.txt
	fi
	echo "@@end"
}

# traces prints, for each case of $1 (NAME:SYNTH,SYNTH … a case), the
# first 300 lines of /tmp/events.txt of each of its synthetic events, in
# one pass over the file: a line's event is its first " NAME: ", as the
# host reads it.
traces() {
	awk -v cases="$1" '
		BEGIN {
			n = split(cases, cs, " ")
			for (i = 1; i <= n; i++) {
				split(cs[i], p, ":"); name[i] = p[1]; ns[i] = split(p[2], syn, ",")
				for (j = 1; j <= ns[i]; j++) { s[i, j] = syn[j]; want[syn[j]] = 1 }
			}
		}
		match($0, / [A-Za-z0-9_]+: /) {
			x = substr($0, RSTART + 1, RLENGTH - 3)
			if ((x in want) && count[x] < 300) { count[x]++; lines[x] = lines[x] $0 "\n" }
		}
		END {
			for (i = 1; i <= n; i++) {
				print "@@case " name[i]; print "@@trace"
				for (j = 1; j <= ns[i]; j++) printf "%s", lines[s[i, j]]
				print "@@end"
			}
		}' /tmp/events.txt
}

# teardown tears the case in the current directory down with its script
# and removes its instance. A case whose script was not applied whole has
# its JSON plan replayed here, alone (replay); the others' plans are
# replayed together once the batch is torn down (replay_batch).
teardown() {
	name=$1
	load
	. ./vars
	echo "@@case $name"
	echo > $T/error_log
	sh -e teardown.sh 2>&1
	echo "@@teardown $?"
	echo "@@errorlog"
	show $T/error_log
	state > after.txt
	echo "@@statediff"
	diff before.txt after.txt
	read rc < setuprc
	[ "$rc" != 0 ] && replay
	[ -n "$inst" ] && rmdir $T/instances/$inst
	echo "@@end"
}

# replay applies the JSON plan of the case in the current directory with
# sqlhist --plan -e, which must leave the tracefs as its script did, and
# removes it with --teardown, which must leave it as before.
replay() {
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
}

# replay_batch replays the JSON plans of the cases of $1 (in the order
# they were applied) with one sqlhist -e (several --plan files, all or
# nothing), once the batch is torn down: each case's files must be as
# with the whole batch applied (applied-all.txt), then, after one
# --teardown -e of them all, as after the batch's teardown (torn.txt).
# Each case keeps its own verdict lines. One process for a batch's plans
# instead of two a case: each sqlhist start costs tenths of a second
# under TCG.
replay_batch() {
	plans=
	for name in $1; do
		cd /work/cases/$name
		. ./vars
		state > torn.txt
		plans="$plans --plan /work/cases/$name/plan.json"
	done
	[ -z "$plans" ] && return
	$SQLHIST -e $plans > /tmp/planlog 2>&1
	rc=$?
	for name in $1; do
		cd /work/cases/$name
		. ./vars
		echo "@@case $name"
		echo "@@planlog"
		show /tmp/planlog
		echo "@@planapply $rc"
		state > planapplied.txt
		echo "@@plandiff"
		diff applied-all.txt planapplied.txt
		echo "@@end"
	done
	$SQLHIST -e --teardown $plans > /tmp/planlog 2>&1
	rc=$?
	# sqlhist makes a plan's instance that is missing; it stays.
	for name in $1; do
		cd /work/cases/$name
		load
		[ -n "$inst" ] && rmdir $T/instances/$inst
	done
	for name in $1; do
		cd /work/cases/$name
		. ./vars
		echo "@@case $name"
		echo "@@planlog"
		show /tmp/planlog
		echo "@@planteardown $rc"
		state > planafter.txt
		echo "@@planstatediff"
		diff torn.txt planafter.txt
		echo "@@end"
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
# A batch's synthetic events share the trace buffer: make it room (the
# size is put back at the end; the tail of a line "7 (expanded: 1408)" is
# the size before the first use).
read kb rest < $T/buffer_size_kb
case "$rest" in *expanded:*) kb=${rest#*expanded: }; kb=${kb%)} ;; esac
echo 8192 > $T/buffer_size_kb
gstate > /tmp/global-before.txt
# The programs a task of this guest may be named after (without a fork
# per case: under TCG each costs 10-20 ms).
programs=$(for f in /work/* /work/bin/*; do echo "${f##*/}"; done)
nbatch=0
while read -r batch <&3; do
	[ -z "$batch" ] && continue
	nbatch=$((nbatch + 1))
	echo "@@batch $nbatch $batch"
	compiled=
	for name in $batch; do
		cd /work/cases/$name
		compile $name && compiled="$compiled $name"
	done
	echo > $T/trace
	# Clear (not free) the snapshot buffer a previous batch may have filled.
	[ -e $T/snapshot ] && echo 2 > $T/snapshot 2>/dev/null
	applied=
	for name in $compiled; do
		cd /work/cases/$name
		setup $name
		applied="$name $applied"
	done
	# Up to three workload rounds, until every case has fired (each of
	# its synthetic events has a line in trace or, without any, each
	# histogram has hits), a case that need not fire in a VM (its e2e
	# section says nofire) aside: one round when only such cases wait.
	total=0
	waiting=$applied
	while [ -n "$waiting" ] && [ $total -lt 3 ]; do
		workload > /dev/null 2>&1
		total=$((total + 1))
		events
		all=
		for name in $waiting; do
			. /work/cases/$name/vars
			all="$all $synths"
		done
		seen_of "$all"
		left= firm=
		for name in $waiting; do
			cd /work/cases/$name
			. ./vars
			if fired; then
				echo $total > rounds
			else
				left="$left $name"
				[ -e nofire ] || firm=1
			fi
		done
		waiting=$left
		[ -z "$firm" ] && break
	done
	# What a case that did not fire can be told by: whether tracing was
	# on, each of its synthetic events' enable and its lines in trace and
	# snapshot, the buffer's counts (results prints it).
	for name in $waiting; do
		cd /work/cases/$name
		. ./vars
		{
			echo "tracing_on $(cat $T/tracing_on)"
			for s in $synths; do
				echo "$s: enable $(cat $T/events/synthetic/$s/enable 2>&1), lines $(grep -c " $s: " /tmp/events.txt)"
			done
			grep -m1 'entries-in-buffer' $T/trace
			[ -e $T/snapshot ] && grep -m1 'entries-in-buffer' $T/snapshot
		} > nofire.txt 2>&1
	done
	[ -z "$applied" ] && continue
	for name in $applied; do
		. /work/cases/$name/vars
		for s in $synths; do echo 0 > $T/events/synthetic/$s/enable; done
	done
	# Each case's files with the whole batch applied and its synthetic
	# events disabled again (as its script leaves them): what the batch's
	# plans applied together must give (replay_batch).
	for name in $applied; do
		cd /work/cases/$name
		. ./vars
		state > applied-all.txt
	done
	now_us
	end=$now
	events
	# Every task name this guest had that the host can know of: the live
	# tasks, the kernel's saved comms, the programs in /work.
	echo "@@tasks $applied"
	cat /proc/[0-9]*/comm 2>/dev/null
	sed 's/^[0-9]* //' $T/saved_cmdlines
	echo "$programs"
	overrun=$(sed -n 's/^overrun: //p' $T/per_cpu/cpu*/stats)
	echo "@@overrun" $overrun
	# The batch's results are read before any of its cases is torn down,
	# then the cases go, the last applied first.
	list=
	for name in $applied; do
		cd /work/cases/$name
		results $name
		. ./vars
		set -- $synths
		oifs=$IFS
		IFS=,
		list="$list $name:$*"
		IFS=$oifs
	done
	traces "$list"
	replayed=
	for name in $applied; do
		cd /work/cases/$name
		teardown $name
		read rc < setuprc
		[ "$rc" = 0 ] && replayed="$name $replayed"
	done
	replay_batch "$replayed"
done 3< /work/batches
cd /work
gstate > /tmp/global-after.txt
echo "@@globaldiff"
diff /tmp/global-before.txt /tmp/global-after.txt | sed "s/^@@/ @@/"
rmdir $T/instances/sqlhist_dstate
echo $kb > $T/buffer_size_kb
echo "@@done"
