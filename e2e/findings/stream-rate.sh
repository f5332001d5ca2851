# The stream engine's sustainable rate (FINDINGS.md, "The stream engine:
# cost and rates"): sqlhist -r --engine stream -d 16 reads the events of a
# query while a load makes system calls or wakeups: pace at a set rate,
# or shells running cat in a loop. At 2 s and 12 s into the run the
# script reads the instance's per-CPU stats — the events the buffers took
# (read + still there + overwritten), those sqlhist read, over the ring
# buffer's own clock, and the backlog (in the buffers, not read yet) —
# and the CPU time sqlhist took in between.
#
#   gcc -O2 -static -o /tmp/pace e2e/findings/pace.c
#   CGO_ENABLED=0 go build -o /tmp/sqlhist ./cmd/sqlhist
#   go run ./tools/kexec-script -kernel 6.1 -timeout 30m -bin /tmp/sqlhist \
#       e2e/findings/stream-rate.sh /tmp/pace
#
# LEVELS=loss (set by a script that sources this one) runs instead the
# fastest loads for 90 s, to see whether the buffers overflow.
T=/sys/kernel/tracing
J='SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
S='SELECT CAST(id AS SYSCALL) AS sys, COUNT(*) FROM sys_enter GROUP BY sys'
HZ=100

# stats: every CPU's buffer of instance $1 as "TOOK READ BACKLOG NOW":
# the events it took, those read, those still there, and the newest
# "now ts" (seconds).
stats() {
	cat $T/instances/$1/per_cpu/cpu*/stats | awk '
		/^entries:/ { e += $2; b += $2 } /^overrun:/ { e += $2 }
		/^read events:/ { e += $3; r += $3 }
		/^now ts:/ { if ($3 > n) n = $3 }
		END { printf "%d %d %d %s\n", e, r, b, n }'
}

# cpu: the clock ticks process $1 has run (user + system).
cpu() { awk '{ print $14 + $15 }' /proc/$1/stat; }

# shells N: N shells running cat /proc/self/stat until /tmp/stop exists.
shells() {
	rm -f /tmp/stop
	i=0
	while [ $i -lt $1 ]; do
		( while [ ! -e /tmp/stop ]; do cat /proc/self/stat; done > /dev/null ) &
		i=$((i + 1))
	done
	sleep 20
	touch /tmp/stop
	wait
}

# level LABEL P QUERY LOAD...: LOAD in the background, then the run
# (with -p LOAD's pid when P is p) of D seconds (16), read at 2 s and
# D-4 s.
level() {
	label=$1 p=$2 q=$3
	shift 3
	"$@" > /tmp/load.out 2>&1 &
	LOAD=$!
	sleep 0.5
	P=
	[ $p = p ] && P="-p $LOAD"
	rm -f /tmp/err /tmp/out
	/work/sqlhist -r --engine stream -d ${D:-16} $P -o json "$q" > /tmp/out 2> /tmp/err &
	SQ=$!
	n=0; until grep -q collecting /tmp/err 2>/dev/null; do n=$((n+1)); [ $n -lt 300 ] || { cat /tmp/err; return 1; }; sleep 0.1; done
	U0=$(cut -d' ' -f1 /proc/uptime)
	I=$(ls $T/instances | grep "^sqlhist_$SQ\$")
	sleep 2
	A="$(stats $I) $(cpu $SQ)"
	sleep $((${D:-16} - 6))
	B="$(stats $I) $(cpu $SQ)"
	wait $SQ; rc=$?
	U1=$(cut -d' ' -f1 /proc/uptime)
	wait $LOAD
	# $2-$6 at 2 s and $7-$11 at D-4 s: took, read, backlog, now, ticks.
	echo "$label $A $B $U0 $U1" | awk -v hz=$HZ -v d=${D:-16} '{
		dt = $10 - $5
		printf "@@rate %s: took %.0f/s, read %.0f/s, backlog %d then %d, sqlhist %.0f%% of a CPU, ", $1, ($7 - $2) / dt, ($8 - $3) / dt, $4, $9, ($11 - $6) / hz / dt * 100
		printf "its -d %d run %.1f s", d, $13 - $12 }'
	echo "; exit $rc, lost $(sed -n 's/^  "lost": \([0-9]*\).*/\1/p' /tmp/out), hits $(sed -n 's/^ *"hits": \([0-9]*\).*/\1/p' /tmp/out | head -n 1); $(tr '\n' ' ' < /tmp/load.out)"
	grep -v collecting /tmp/err | head -n 3
}

nproc
uptime
if [ "$LEVELS" = loss ]; then
	D=90
	level syscalls-p-max-90s p "$S" /work/pace syscalls 100000000 94
	level wakeups-max-90s - "$J" /work/pace wakeups 100000000 94
	uptime
	return 0 2>/dev/null || exit 0
fi
# The syscall histogram reads its own read(2)s when it sees every process
# (each read's sys_enter is in the buffer before the read returns it):
# once idle, once beside 10000 calls a second.
level syscalls-all-idle - "$S" sleep 20
level syscalls-all-10000 - "$S" /work/pace syscalls 10000 20
# Of pace's calls alone (-p: the filter keeps sqlhist's own out).
for r in 5000 10000 20000 40000 80000 max; do
	[ $r = max ] && n=100000000 || n=$r
	level syscalls-p-$r p "$S" /work/pace syscalls $n 20
done
for r in 1000 2000 4000 8000 max; do
	[ $r = max ] && n=100000000 || n=$r
	level wakeups-$r - "$J" /work/pace wakeups $n 20
done
for n in 1 2 4; do level wakeups-shells-$n - "$J" shells $n; done
uptime
