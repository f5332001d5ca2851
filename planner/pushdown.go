package planner

import (
	"strings"

	"github.com/sqlhist/sqlhist/compiler"
)

// startNameTerms are the terms of a JOIN's WHERE on the end event's name
// of the task the JOIN keys by, as terms of the start trigger's filter:
// with ON start.pid = end.next_pid, WHERE end.next_comm == "load" keeps
// only the starts of tasks named load (sched_waking's comm is the wakee's
// name at its wakeup, sched_switch's next_comm its name at the switch).
// The end's filter keeps the term: the answer is the same unless a task
// is renamed between a start and its end (by itself, when a wakeup found
// it still running, or by another thread of its process: prctl(PR_SET_NAME),
// /proc/PID/task/TID/comm, exec): such a wakeup, whose start had another
// name, is not counted, and an end whose latest starts had another name
// pairs with the last start that had its name (docs/kernels.md). A term
// is pushed when both events name the task of their key's pid field
// (comm for pid, X_comm for X_pid), as the same kind of string.
func (js *joinState) startNameTerms(where compiler.Expr) []*Filter {
	if where == nil {
		return nil
	}
	p := js.p
	// The end's pid fields the JOIN keys by, and the start's each one
	// is paired with.
	pids := map[string]string{}
	for _, m := range js.q.On {
		l, r := p.quietField(m.Left), p.quietField(m.Right)
		if l == nil || r == nil || l.side == r.side || l.mod != "" || r.mod != "" || l.pseudo || r.pseudo {
			continue
		}
		if l.side == 1 {
			l, r = r, l
		}
		pids[r.name] = l.name
	}
	var terms []*Filter
	for _, c := range conjuncts(where) {
		b, ok := compiler.Unparen(c).(*compiler.Binary)
		if !ok {
			continue
		}
		switch b.Op {
		case compiler.OpEq, compiler.OpNe, compiler.OpGlob, compiler.OpNotGlob:
		default:
			continue
		}
		fe, ok := compiler.Unparen(b.X).(*compiler.Field)
		s, isStr := compiler.Unparen(b.Y).(*compiler.String)
		if !ok || !isStr {
			continue
		}
		f := p.quietField(fe)
		if f == nil || f.side != 1 || f.mod != "" || f.pseudo || !f.typ.isString() {
			continue
		}
		endPid, ok := taskPid(f.name)
		if !ok || f.ev.Field(endPid) == nil {
			continue
		}
		startPid, ok := pids[endPid]
		if !ok {
			continue
		}
		startComm, ok := taskComm(startPid)
		if !ok {
			continue
		}
		field := p.r.sides[0].ev.Field(startComm)
		if field == nil || field.Kind != f.typ.Kind || field.Size != f.typ.Size {
			continue
		}
		q, ok := quoteFilterString(s.Value)
		if !ok {
			continue // the end's term says why
		}
		t := &Filter{Op: FilterPred, Field: startComm, Cmp: b.Op.String(), Str: s.Value, IsStr: true, Quote: q[0]}
		if b.Op == compiler.OpNotGlob {
			t.Cmp = "~"
			t = &Filter{Op: FilterNot, L: t}
		}
		terms = append(terms, t)
	}
	return terms
}

// taskPid is the pid field that goes with a task name field: pid for
// comm, X_pid for X_comm.
func taskPid(comm string) (string, bool) {
	if comm == "comm" {
		return "pid", true
	}
	if x, ok := strings.CutSuffix(comm, "_comm"); ok && x != "" {
		return x + "_pid", true
	}
	return "", false
}

// taskComm is the task name field that goes with a pid field.
func taskComm(pid string) (string, bool) {
	if pid == "pid" {
		return "comm", true
	}
	if x, ok := strings.CutSuffix(pid, "_pid"); ok && x != "" {
		return x + "_comm", true
	}
	return "", false
}

// quoteFilterString quotes s as filterString does, quietly: false when
// it cannot be a filter string.
func quoteFilterString(s string) (string, bool) {
	switch {
	case len(s) > maxFilterString || strings.ContainsAny(s, "\n\x00"):
		return "", false
	case !strings.Contains(s, `"`):
		return `"` + s + `"`, true
	case !strings.Contains(s, `'`):
		return `'` + s + `'`, true
	}
	return "", false
}
