package planner

import (
	"github.com/sqlhist/sqlhist/compiler"
)

// filterTasks restricts a unit to the threads of Options.Tasks (-p, -L).
//
// Every event records the thread that hit it in common_pid (the kernel's
// task->pid, a thread id), so a histogram keeps the events those threads
// hit. A JOIN is restricted on its start trigger only: the end trigger
// fires only for keys the start trigger saved, so that is enough, and the
// end event's common_pid often names another task (sched_switch's is the
// task switching out). When the JOIN follows a task — a start key that is
// common_pid or a pid_t field, such as sched_waking's pid (the task woken,
// while its common_pid is the waker) — the filter is on that key, so the
// query measures those tasks; otherwise on the start event's common_pid.
// A histogram of a synthetic event this script defines is not filtered
// again: the JOIN that fires it already is, and common_pid there is the
// end event's task.
func (p *planner) filterTasks(q *compiler.Query, u *Unit, names map[string]bool) {
	h := u.Start
	if u.End == nil && h.System == "synthetic" && names[h.Event] {
		p.note("%s: the histogram of %s is not filtered again; the JOIN that fires it is", p.opt.TaskFlag, h.Event)
		return
	}
	field := "common_pid"
	if u.End != nil {
		field = p.taskKey(q)
		if field == "common_pid" {
			p.note("%s: the start trigger on %s keeps the events these threads hit (common_pid); the end trigger only matches what it saved", p.opt.TaskFlag, h.System+"/"+h.Event)
		} else {
			p.note("%s: the start trigger on %s keeps the events whose %s (the task the JOIN follows) is one of these threads; the end trigger only matches what it saved", p.opt.TaskFlag, h.System+"/"+h.Event, field)
		}
	}
	h.Filter = andFilters([]*Filter{taskFilter(field, p.opt.Tasks), h.Filter})
}

// taskKey returns the start event's ON field that holds a task id, or
// common_pid when no key does.
func (p *planner) taskKey(q *compiler.Query) string {
	for _, m := range q.On {
		for _, f := range []*compiler.Field{m.Left, m.Right} {
			r := p.quietField(f)
			if r != nil && r.side == 0 && (r.name == "common_pid" || r.typ.Kernel == "pid_t") {
				return r.name
			}
		}
	}
	return "common_pid"
}

// taskFilter is "field == t1 || field == t2 …".
func taskFilter(field string, tids []int) *Filter {
	var f *Filter
	for _, t := range tids {
		pred := &Filter{Op: FilterPred, Field: field, Cmp: "==", Num: uint64(t)}
		if t < 0 {
			pred.Num, pred.Neg = uint64(-t), true
		}
		f = joinFilters(FilterOr, f, pred)
	}
	return f
}
