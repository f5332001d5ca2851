package main

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// maxPID is the kernel's PID_MAX_LIMIT on 64-bit systems: no thread id is
// larger.
const maxPID = 4 * 1024 * 1024

// tasks turns -p PID and -L TID into the thread ids the triggers keep,
// sorted and without duplicates, with the flags for the script's comments
// and, for -p, a note saying which threads were found.
//
// The kernel's events record the thread (common_pid is task->pid); no
// event field holds the process (tgid). So -L TID filters on that thread,
// and -p PID on the threads the process has when sqlhist runs, read from
// /proc/PID/task of this machine, as the perf-tools kprobe tool does.
// Threads the process starts later are not traced. The kernel's own PID
// filter, set_event_pid, is not used: it also matches thread ids, applies
// to every event of the instance (other users' triggers too), changes
// what sched_switch and sched_waking record, and could only be undone by
// truncating the file, dropping PIDs others put there.
func (o *options) tasks(e env) (tids []int, flags, note string, code int) {
	if len(o.pids) == 0 && len(o.tids) == 0 {
		return nil, "", "", exitOK
	}
	if len(o.pids) > 0 && o.kernel != "" {
		return nil, "", "", usageError(e, "-p reads the threads of process %s from this machine's /proc, but --kernel compiles for another machine: give that machine's thread ids with -L", strings.Join(o.pids, ","))
	}
	// The comment names the ids as parsed, not the flags' raw text.
	var given []string
	for _, v := range o.tids {
		ids, code := parseIDs(e, "-L", "thread id", v, 0)
		if code != exitOK {
			return nil, "", "", code
		}
		tids = append(tids, ids...)
		given = append(given, "-L "+joinInts(ids, ","))
	}
	var found []string
	for _, v := range o.pids {
		pids, code := parseIDs(e, "-p", "process id", v, 1)
		if code != exitOK {
			return nil, "", "", code
		}
		given = append(given, "-p "+joinInts(pids, ","))
		for _, pid := range pids {
			threads, code := threadsOf(e, pid)
			if code != exitOK {
				return nil, "", "", code
			}
			tids = append(tids, threads...)
			found = append(found, fmt.Sprintf("%d (threads %s)", pid, joinInts(threads, " ")))
		}
	}
	slices.Sort(tids)
	tids = slices.Compact(tids)
	if len(found) > 0 {
		note = "-p: process " + strings.Join(found, ", process ") + " as sqlhist found them; threads started later are not traced"
	}
	return tids, strings.Join(given, " "), note, exitOK
}

// parseIDs parses a comma-separated list of ids (what: "thread id") no
// smaller than low.
func parseIDs(e env, flag, what, v string, low int) ([]int, int) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < low || n > maxPID {
			return nil, usageError(e, "%s %q: %q is not a %s (a number from %d to %d)", flag, v, s, what, low, maxPID)
		}
		out = append(out, n)
	}
	return out, exitOK
}

// threadsOf lists /proc/PID/task: the ids of the process's threads.
func threadsOf(e env, pid int) ([]int, int) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	fsys, err := e.dir(dir)
	var ents []fs.DirEntry
	if err == nil {
		ents, err = fs.ReadDir(fsys, ".")
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sqlhist: -p %d: no such process on this machine (%v)\n", pid, err)
		return nil, exitQuery
	}
	var out []int
	for _, d := range ents {
		if n, err := strconv.Atoi(d.Name()); err == nil {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		fmt.Fprintf(e.stderr, "sqlhist: -p %d: the process has no threads left (%s is empty)\n", pid, dir)
		return nil, exitQuery
	}
	slices.Sort(out)
	return out, exitOK
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}
