package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// synthField is one field of a synthetic event as the script declares it.
type synthField struct {
	typ   string // "u64", "pid_t", "unsigned int", "char", "unsigned long"
	name  string
	size  int  // N of char[N]; 0 otherwise
	array bool // char[] or char[N], unsigned long[] (a stack)
}

func (f synthField) isString() bool { return f.typ == "char" && f.array }
func (f synthField) isStack() bool  { return f.array && f.typ != "char" }

// isPid: a pid_t, or an integer field named pid or *_pid.
func (f synthField) isPid() bool {
	if f.array {
		return false
	}
	if f.typ == "pid_t" {
		return true
	}
	return (f.name == "pid" || strings.HasSuffix(f.name, "_pid")) && intTypes[f.typ]
}

// isTask: a string field that holds a task's name. A char[16] is one:
// 16 is TASK_COMM_LEN, the size of every comm field of the events the
// cases join (sched_switch's next_comm and prev_comm, sched_waking's comm)
// and of nothing else they pass; a dynamic string is one when its name
// says so (common_pid.execname and COMM give char[], as do file names
// and irq names, which are not task names).
func (f synthField) isTask() bool {
	if !f.isString() {
		return false
	}
	if f.size == 16 {
		return true
	}
	switch f.name {
	case "task", "waker", "wakee", "prev", "prevc":
		return true
	}
	return strings.Contains(f.name, "comm")
}

var intTypes = map[string]bool{"int": true, "unsigned int": true, "s32": true, "u32": true, "s64": true, "u64": true,
	"long": true, "unsigned long": true, "s16": true, "u16": true}

var (
	// echo 's:NAME fields' >> …/dynamic_events, echo 'NAME fields' >> …/synthetic_events
	synthDefRE = regexp.MustCompile(`(?m)^echo '(?:s:(?:synthetic/)?([A-Za-z0-9_]+)|([A-Za-z0-9_]+)) ([^']*)' >> \S*/(dynamic_events|synthetic_events)$`)
	arrayRE    = regexp.MustCompile(`^(.*?)\[(\d*)\]$`)
)

// synthDefs returns the fields of each synthetic event the script
// defines, by event name, in the order declared.
func synthDefs(commands string) map[string][]synthField {
	defs := map[string][]synthField{}
	for _, m := range synthDefRE.FindAllStringSubmatch(commands, -1) {
		name := m[1]
		if m[4] == "synthetic_events" {
			if m[1] != "" {
				continue // s: goes to dynamic_events only
			}
			name = m[2]
		} else if m[1] == "" {
			continue // p:, e:, r: … in dynamic_events
		}
		var fields []synthField
		for _, decl := range strings.Split(m[3], ";") {
			w := strings.Fields(decl)
			if len(w) < 2 {
				continue
			}
			f := synthField{name: w[len(w)-1], typ: strings.Join(w[:len(w)-1], " ")}
			for _, s := range []*string{&f.name, &f.typ} {
				if a := arrayRE.FindStringSubmatch(*s); a != nil {
					*s = a[1]
					f.array = true
					f.size, _ = strconv.Atoi(a[2])
				}
			}
			fields = append(fields, f)
		}
		defs[name] = fields
	}
	return defs
}

// defaultPidMax bounds a pid when the guest did not print its pid_max:
// the largest pid_max Linux allows (PID_MAX_LIMIT on 64-bit).
const defaultPidMax = 4194304

var numberRE = regexp.MustCompile(`^-?[0-9]+$`)

// kernelThreadRE matches the names of kernel threads, which may have
// exited before the guest listed its tasks: per-CPU threads (name/N),
// kworkers (kworker/N:M, kworker/uN:M, with flags like -events or H), RCU's
// threads and the idle tasks.
var kernelThreadRE = regexp.MustCompile(`^(kworker/[0-9u]+:[0-9]+[A-Za-z]*(-[A-Za-z0-9_]+)?|(ksoftirqd|migration|cpuhp|idle_inject|watchdog|rcuc|rcuop|rcuos)/[0-9]+|swapper(/[0-9]+)?|rcu_[a-z_]+|kthreadd|irq/[0-9]+-.+)$`)

// checkFields checks every line of each synthetic event against the
// event's definition: each declared field once, in order, nothing else; a
// pid between 0 and the guest's pid_max; a string non-empty printable
// ASCII that fits its array, never the "(efault)" of 5.10.237+; a task
// name one the guest had (r.tasks, when it said) or a kernel thread's. It
// returns one problem per kind of failure, with the number of lines and
// the first of them.
func checkFields(commands string, trace []string, r *caseResult) []string {
	defs := synthDefs(commands)
	pidMax := uint64(defaultPidMax)
	if r != nil && r.pidMax > 0 {
		pidMax = r.pidMax
	}
	type failure struct {
		n     int
		first string
	}
	fails := map[string]*failure{}
	var order []string
	fail := func(kind, line string) {
		f := fails[kind]
		if f == nil {
			f = &failure{}
			fails[kind] = f
			order = append(order, kind)
		}
		if f.n == 0 {
			f.first = line
		}
		f.n++
	}
	for _, l := range trace {
		m := synthLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		fields, ok := defs[m[1]]
		if !ok {
			continue
		}
		vals, ok := splitFields(strings.TrimRight(m[2], " "), fields)
		if !ok {
			fail(fmt.Sprintf("%s: the line does not have the fields %s in that order and nothing else", m[1], fieldNames(fields)), l)
			if strings.Contains(m[2], "(efault)") {
				fail(fmt.Sprintf("%s: a string is \"(efault)…\" (the 5.10.237+ synthetic string bug)", m[1]), l)
			}
			continue
		}
		for i, v := range vals { // fewer than the fields after a stack
			f := fields[i]
			switch {
			case f.isStack():
				// The stack follows on lines of its own; the guest keeps
				// the first line only.
			case f.isString():
				limit := 255
				if f.size > 0 {
					limit = f.size - 1
				}
				switch {
				case strings.Contains(v, "(efault)"):
					fail(fmt.Sprintf("%s: %s is \"(efault)…\" (the 5.10.237+ synthetic string bug)", m[1], f.name), l)
				case v == "" || !printable(v):
					fail(fmt.Sprintf("%s: %s is empty or not printable ASCII", m[1], f.name), l)
				case len(v) > limit:
					fail(fmt.Sprintf("%s: %s has %d bytes, more than a char[%d] holds", m[1], f.name, len(v), f.size), l)
				case f.isTask() && r != nil && r.tasks != nil && !r.tasks[v] && !kernelThreadRE.MatchString(v):
					fail(fmt.Sprintf("%s: %s=%s is no task the guest had", m[1], f.name, v), l)
				}
			case !numberRE.MatchString(v):
				fail(fmt.Sprintf("%s: %s is not a number", m[1], f.name), l)
			case f.isPid():
				if n, err := strconv.ParseUint(v, 10, 64); err != nil || n >= pidMax {
					fail(fmt.Sprintf("%s: %s=%s is no pid (pid_max %d)", m[1], f.name, v, pidMax), l)
				}
			}
		}
	}
	var problems []string
	for _, k := range order {
		problems = append(problems, fmt.Sprintf("%s: %d lines, e.g. %q", k, fails[k].n, fails[k].first))
	}
	return problems
}

// splitFields splits "a=1 name=x y b=2" into the values of the declared
// fields, in order: a string may hold spaces, a number may not, and a
// stack field ends the line ("st=STACK:").
func splitFields(text string, fields []synthField) ([]string, bool) {
	var vals []string
	for i, f := range fields {
		rest, ok := strings.CutPrefix(text, f.name+"=")
		if !ok {
			return nil, false
		}
		if f.isStack() {
			return append(vals, rest), rest == "STACK:"
		}
		if i == len(fields)-1 {
			// The rest of the line is the last value: a string's, whatever
			// it holds; a number's, if it is one word.
			return append(vals, rest), f.isString() || !strings.Contains(rest, " ")
		}
		next := " " + fields[i+1].name + "="
		var j int
		if f.isString() {
			j = strings.Index(rest, next)
		} else {
			j = strings.IndexByte(rest, ' ')
			if j >= 0 && !strings.HasPrefix(rest[j:], next) {
				return nil, false
			}
		}
		if j < 0 {
			return nil, false
		}
		vals = append(vals, rest[:j])
		text = rest[j+1:]
	}
	return vals, text == ""
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func fieldNames(fields []synthField) string {
	var n []string
	for _, f := range fields {
		n = append(n, f.name)
	}
	return strings.Join(n, " ")
}
