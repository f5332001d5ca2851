package live

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

// Tasks are the threads a query is limited to (sqlhist's -p and -L).
type Tasks struct {
	TIDs  []int  // sorted, without duplicates
	Flags string // the flags as parsed, for the script's comments
	Note  string // for -p, which threads were found
}

// TaskError is a refusal of -p or -L; Usage marks an id that is not one.
type TaskError struct {
	Msg   string
	Usage bool
}

func (e *TaskError) Error() string { return e.Msg }

// ResolveTasks turns -L thread ids and -p process ids (each value a comma
// list) into the thread ids the triggers keep. dir opens /proc/PID/task.
//
// The kernel's events record the thread (common_pid is task->pid); no
// event field holds the process (tgid). So -L TID filters on that thread,
// and -p PID on the threads the process has now, read from
// /proc/PID/task of this machine, as the perf-tools kprobe tool does.
// Threads the process starts later are not traced. The kernel's own PID
// filter, set_event_pid, is not used: it also matches thread ids, applies
// to every event of the instance (other users' triggers too), changes
// what sched_switch and sched_waking record, and could only be undone by
// truncating the file, dropping PIDs others put there.
func ResolveTasks(pids, tids []string, dir func(string) (fs.FS, error)) (*Tasks, error) {
	out := &Tasks{}
	var given, found []string
	for _, v := range tids {
		ids, err := parseIDs("-L", "thread id", v, 0)
		if err != nil {
			return nil, err
		}
		out.TIDs = append(out.TIDs, ids...)
		given = append(given, "-L "+joinInts(ids, ","))
	}
	for _, v := range pids {
		ids, err := parseIDs("-p", "process id", v, 1)
		if err != nil {
			return nil, err
		}
		given = append(given, "-p "+joinInts(ids, ","))
		for _, pid := range ids {
			threads, err := threadsOf(dir, pid)
			if err != nil {
				return nil, err
			}
			out.TIDs = append(out.TIDs, threads...)
			found = append(found, fmt.Sprintf("%d (threads %s)", pid, joinInts(threads, " ")))
		}
	}
	slices.Sort(out.TIDs)
	out.TIDs = slices.Compact(out.TIDs)
	out.Flags = strings.Join(given, " ")
	if len(found) > 0 {
		out.Note = "-p: process " + strings.Join(found, ", process ") + " as sqlhist found them; threads started later are not traced"
	}
	return out, nil
}

// parseIDs parses a comma-separated list of ids no smaller than low.
func parseIDs(flag, what, v string, low int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < low || n > maxPID {
			return nil, &TaskError{Msg: fmt.Sprintf("%s %q: %q is not a %s (a number from %d to %d)", flag, v, s, what, low, maxPID), Usage: true}
		}
		out = append(out, n)
	}
	return out, nil
}

// threadsOf lists /proc/PID/task: the ids of the process's threads.
func threadsOf(dir func(string) (fs.FS, error), pid int) ([]int, error) {
	p := fmt.Sprintf("/proc/%d/task", pid)
	fsys, err := dir(p)
	var ents []fs.DirEntry
	if err == nil {
		ents, err = fs.ReadDir(fsys, ".")
	}
	if err != nil {
		return nil, &TaskError{Msg: fmt.Sprintf("-p %d: no such process on this machine (%v)", pid, err)}
	}
	var out []int
	for _, d := range ents {
		if n, err := strconv.Atoi(d.Name()); err == nil {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, &TaskError{Msg: fmt.Sprintf("-p %d: the process has no threads left (%s is empty)", pid, p)}
	}
	slices.Sort(out)
	return out, nil
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}
