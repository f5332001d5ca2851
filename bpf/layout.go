package bpf

import (
	"fmt"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// The layout of a map's keys and values.
//
// A key is the concatenation of its parts, each at an 8-byte aligned
// offset: a number in 8 bytes (masked to its field's size, as the
// kernel's compound key holds it: an s32 -1 keys as 0xffffffff), a
// string in its field's bytes (char[N]: N rounded up to 8; a
// __data_loc string: 256, the kernel's MAX_FILTER_STR_VAL), zero after
// its NUL, as the kernel's strncpy leaves it. The whole key is zeroed
// before its parts are written, so equal keys are equal bytes.
//
// A value is: the count (8 bytes), then each sum (8 bytes), then each
// variable (its value and a set word, 16 bytes), then each onmax or
// onchange handler (the tracked value, then its save() fields, 8 bytes
// each), then the task name (16 bytes) of each .execname key, saved
// when the entry is made.

const (
	partNum = iota
	partStr
	partStack
)

// stackBytes are the bytes of a stack trace: the kernel's hist keys hold
// HIST_STACKTRACE_DEPTH (16) return addresses, zero after the last.
const stackBytes = 16 * 8

// maxDynString is the bytes a __data_loc string key or buffer takes.
const maxDynString = 256

type keyPart struct {
	off, size int
	kind      int
	x         *planner.Expr
	field     *tracefs.Field // the key's field, when it is one
}

type mapDef struct {
	name    string // in the collection: "hist0", "hist1", ...
	keySize int
	valSize int
	entries int
	parts   []keyPart
	sums    []int // offsets
	vars    []int // offsets of the values; the set words precede them
	varSize []int // their bytes
	tracks  []int // offsets, by tracking action (the tracked value; the saved fields follow)
	saved   []int // the saved fields' count, by tracking action
	comm    []int // by key: the offset of the saved task name, -1 when none
	stat    int   // the index of the map's drop counter
	first   *ctrig
	// perCPU says the map is a per-CPU hash: counts and sums added
	// without atomics, one value a CPU, summed when read (Options.PerCPU,
	// for a map without variables, handlers or task names).
	perCPU bool
}

func align8(n int) int { return (n + 7) &^ 7 }

// varBytes is the bytes of variable i's value.
func (m *mapDef) varBytes(i int) int { return m.varSize[i] }

// fieldBytes is the bytes a string field takes in a key, a variable or a
// synthetic event's record: a char[N]'s N rounded up to 8; a __data_loc
// string's 256 (the kernel's MAX_FILTER_STR_VAL), but a synthetic
// event's char[] field's is the most its parameters bring.
func (e *Engine) fieldBytes(ev *tracefs.Event, f *tracefs.Field) int {
	switch f.Kind {
	case tracefs.KindString:
		return align8(f.Size)
	case tracefs.KindDynArray:
		return stackBytes
	}
	if n := e.fcaps[f]; n > 0 {
		return n
	}
	if ev.System == SyntheticSystem && e.synths[ev.Name] == ev {
		if n := e.caps[ev.Name+"/"+f.Name]; n > 0 {
			return n
		}
	}
	return maxDynString
}

// layoutOf lays out the map of the trigger t.
func layoutOf(t *ctrig) (*mapDef, error) {
	m := &mapDef{entries: mapEntries(t.t.Size), first: t}
	off := 0
	for _, k := range t.t.Keys {
		p := keyPart{off: off, size: 8, kind: partNum, x: k}
		if k.Kind == planner.ExprField {
			p.field = t.ev.Field(k.Name)
			if p.field == nil {
				return nil, t.errf(k.String(), "no field %s in %s", k.Name, t.ev.FullName())
			}
			switch p.field.Kind {
			case tracefs.KindString:
				p.kind, p.size = partStr, align8(p.field.Size)
			case tracefs.KindDynString:
				p.kind, p.size = partStr, t.e.fieldBytes(t.ev, p.field)
			case tracefs.KindDynArray:
				if t.ev.System != SyntheticSystem || t.e.synths[t.ev.Name] != t.ev {
					return nil, t.errf(k.String(), "an array key is not compiled")
				}
				// A synthetic event's stack trace field.
				p.kind, p.size = partStack, stackBytes
			case tracefs.KindArray:
				return nil, t.errf(k.String(), "an array key is not compiled")
			}
			if p.kind == partStr && k.Mod != "" {
				return nil, t.errf(k.String(), "modifier .%s on a string key", k.Mod)
			}
		}
		if k.Kind == planner.ExprStack {
			p.kind, p.size = partStack, stackBytes
		}
		if k.Mod == "stacktrace" && p.kind != partStack {
			return nil, t.errf(k.String(), ".stacktrace on a field that is not a stack trace")
		}
		m.parts = append(m.parts, p)
		off += p.size
	}
	m.keySize = off
	v := 8
	for _, x := range t.vals {
		m.sums = append(m.sums, v)
		v += 8
		_ = x
	}
	for i := range t.t.Vars {
		// The set word, then the value: 8 bytes, or a string's.
		v += 8
		m.vars = append(m.vars, v)
		n := 8
		if f := t.strVars[i]; f != nil {
			n = t.e.fieldBytes(t.ev, f)
		}
		if t.stackVars[i] {
			n = stackBytes
		}
		m.varSize = append(m.varSize, n)
		v += n
	}
	for _, a := range t.t.Actions {
		if a.Handler == planner.OnMatch {
			continue
		}
		m.tracks = append(m.tracks, v)
		n := 0
		if a.Kind == planner.ActSave {
			n = len(a.Params)
		}
		m.saved = append(m.saved, n)
		v += 8 + 8*n
	}
	for _, k := range t.t.Keys {
		if k.Mod == "execname" {
			m.comm = append(m.comm, v)
			v += 16
		} else {
			m.comm = append(m.comm, -1)
		}
	}
	m.valSize = v
	if m.keySize > 384 {
		return nil, t.errf("", "the keys take %d bytes; at most 384 are compiled", m.keySize)
	}
	return m, nil
}

// sameShape checks that a trigger sharing a map (name=) keys and sums as
// the map's first trigger does.
func (m *mapDef) sameShape(t *ctrig) error {
	o, err := layoutOf(t)
	if err != nil {
		return err
	}
	if o.keySize != m.keySize || len(o.parts) != len(m.parts) || len(o.sums) != len(m.sums) {
		return t.errf("", "name=%s: the keys or values differ from %s/%s's, which shares the map", t.t.Name, m.first.t.System, m.first.t.Event)
	}
	for i := range o.parts {
		if o.parts[i].kind != m.parts[i].kind || o.parts[i].size != m.parts[i].size {
			return t.errf(t.t.Keys[i].String(), "name=%s: the key differs from %s/%s's, which shares the map", t.t.Name, m.first.t.System, m.first.t.Event)
		}
	}
	if len(t.t.Vars) > 0 || len(t.t.Actions) > 0 || len(m.vars) > 0 || len(m.tracks) > 0 {
		return t.errf("", "name=%s: variables and actions on a shared map are not compiled", t.t.Name)
	}
	return nil
}

func (t *ctrig) errf(what, format string, args ...any) *Error {
	return &Error{Trigger: t.idx, Event: t.t.System + "/" + t.t.Event, What: what, Reason: fmt.Sprintf(format, args...)}
}
