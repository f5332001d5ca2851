package stream

import (
	"github.com/sqlhist/sqlhist/tracefs"
)

// Value is one field's value: a number (signed fields sign-extended to
// 64 bits, as the kernel's hist field functions return them), a string,
// or a stack of addresses.
type Value struct {
	N     uint64
	S     string
	Str   bool
	Stack []uint64
}

// Num is a number value.
func Num(n uint64) Value { return Value{N: n} }

// Text is a string value.
func Text(s string) Value { return Value{S: s, Str: true} }

// Event is one event as the engine reads it: its format, when it
// happened (ns of the instance's trace clock), on which CPU, by which
// task, and its fields' values in the order of its format's Fields.
type Event struct {
	Def *tracefs.Event
	TS  uint64
	CPU int
	PID int
	// Fields holds the values of Def.Fields, by index; a field that was
	// not decoded is the zero Value. Common fields (common_pid, …) are
	// among them when the format has them.
	Fields []Value
	// Stack is the kernel stack the event's stacktrace trigger recorded
	// right after it, innermost first; nil when none was recorded.
	Stack []uint64
	// setBy is the action of the machine that set the fields of a
	// synthetic event it fires (each depth reuses one Event).
	setBy *action
}

// field returns the value of the field at index i.
func (e *Event) field(i int) Value {
	if i < 0 || i >= len(e.Fields) {
		return Value{}
	}
	return e.Fields[i]
}
