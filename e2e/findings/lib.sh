# Helpers for the FINDINGS experiments (sourced by the scripts; busybox sh).
T=/sys/kernel/tracing
cd $T
echo > error_log 2>/dev/null
test -f error_log || echo "(this kernel has no error_log)"
# w FILE TEXT: append TEXT to FILE, report ok/FAILED and any error_log text.
w() {
	echo "\$ echo '$2' >> $1"
	if echo "$2" >> "$1" 2>/tmp/werr; then
		echo "  -> ok"; wrc=0
	else
		echo "  -> FAILED: $(cat /tmp/werr)"; wrc=1
	fi
	# tracefs files report size 0, so test -s does not work on them.
	if grep -q . error_log; then
		sed 's/^/  error_log: /' error_log
		echo > error_log
	fi
	return $wrc
}
lightload() {
	for i in $(seq 50); do sleep 0.01; done
	for f in /proc/cpuinfo /proc/meminfo /init /bin/busybox; do cat $f >/dev/null; done
	ls -R /sys/kernel/tracing/events >/dev/null 2>&1
}
# tryjoin NAME SYNTH_DEF START_EVENT_DIR START_TRIGGER END_EVENT_DIR END_TRIGGER
# Creates the synthetic event and both triggers, runs a light load, shows
# records, then tears everything down in reverse order.
tryjoin() {
	echo "=== $1"
	if ! w dynamic_events "$2"; then return; fi
	if w $3/trigger "$4"; then
		if w $5/trigger "$6"; then
			echo 1 > events/synthetic/$1/enable
			lightload
			echo 0 > events/synthetic/$1/enable
			records $1 2
			w $5/trigger "!$6" >/dev/null || echo "  (teardown of end trigger failed)"
		fi
		w $3/trigger "!$4" >/dev/null || echo "  (teardown of start trigger failed)"
	fi
	w dynamic_events "-:$1" >/dev/null || echo "  (teardown of $1 failed)"
	echo > trace
}
load() {
	for i in $(seq 200); do sleep 0.01; done
	ls -R / >/dev/null 2>&1
	for f in /bin/busybox /init /proc/cpuinfo; do cat $f > /dev/null; done
}
# triggers EVENT_DIR: show the active triggers of an event (no comments).
triggers() { echo "  [$1/trigger]"; grep -v '^#' $1/trigger | sed 's/^/    /'; }
# records NAME: number of trace lines of synthetic event NAME and a sample.
records() {
	n=$(grep -c " $1: " trace)
	echo "  trace lines of $1: $n"
	grep " $1: " trace | head -n ${2:-3} | sed 's/^ *//; s/^/    /'
}
