package tracefs

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Kind classifies a field by how the kernel stores and compares it.
type Kind int

// The field kinds.
const (
	KindInt       Kind = iota // a scalar integer (or a pointer, compared as one)
	KindString                // a static char array, char name[N]
	KindDynString             // __data_loc char[] or __rel_loc char[]
	KindArray                 // a static array of non-char elements
	KindDynArray              // a __data_loc array of non-char elements (stacks)
	KindPointer               // a pointer: stored as an unsigned long
)

// String returns a short word for the kind, used in diagnostics.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindString:
		return "string"
	case KindDynString:
		return "dynamic string"
	case KindArray:
		return "array"
	case KindDynArray:
		return "dynamic array"
	case KindPointer:
		return "pointer"
	}
	return "unknown"
}

// Field is one field of an event, as its format file declares it.
type Field struct {
	Name   string // field name, e.g. "next_comm"
	Decl   string // the declaration text without the name, e.g. "char[16]", "__data_loc char[]", "const char *"
	Base   string // the element type, e.g. "char", "pid_t", "unsigned long"
	Len    int    // element count of a static array; 0 otherwise
	Offset int
	Size   int
	Signed bool
	Kind   Kind
}

// IsString reports whether the field holds text the kernel compares as a string.
func (f *Field) IsString() bool { return f.Kind == KindString || f.Kind == KindDynString }

// IsCommon reports whether the field is one of the common_ fields every event has.
func (f *Field) IsCommon() bool { return strings.HasPrefix(f.Name, "common_") }

// Event is one trace event and its fields.
type Event struct {
	System string
	Name   string
	ID     int
	Fields []*Field
	// PrintFmt is the text after "print fmt:" in the format file: how the
	// kernel prints the event in trace. It is empty for events that are
	// not read from a format file (see [Catalog.Define]).
	PrintFmt string
}

// FullName returns "system/event".
func (e *Event) FullName() string { return e.System + "/" + e.Name }

// Field returns the named field, or nil.
func (e *Event) Field(name string) *Field {
	for _, f := range e.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FieldNames returns the names of the event's fields in format order.
func (e *Event) FieldNames() []string {
	names := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		names[i] = f.Name
	}
	return names
}

// ParseFormat parses the text of an events/<system>/<event>/format file.
// The system is not part of the file and is given by the caller.
func ParseFormat(system, text string) (*Event, error) {
	ev := &Event{System: system}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(s, "name:"):
			ev.Name = strings.TrimSpace(strings.TrimPrefix(s, "name:"))
		case strings.HasPrefix(s, "ID:"):
			id, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(s, "ID:")))
			if err != nil {
				return nil, fmt.Errorf("line %d: bad ID: %v", line, err)
			}
			ev.ID = id
		case strings.HasPrefix(s, "field:"):
			f, err := parseFieldLine(s)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			ev.Fields = append(ev.Fields, f)
		case strings.HasPrefix(s, "print fmt:"):
			// The print format is the last line that matters.
			ev.PrintFmt = strings.TrimSpace(strings.TrimPrefix(s, "print fmt:"))
			if ev.Name == "" {
				return nil, fmt.Errorf("format has no name line")
			}
			return ev, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if ev.Name == "" {
		return nil, fmt.Errorf("format has no name line")
	}
	return ev, nil
}

// parseFieldLine parses "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;".
func parseFieldLine(s string) (*Field, error) {
	parts := strings.Split(s, ";")
	if len(parts) < 3 {
		return nil, fmt.Errorf("malformed field line %q", s)
	}
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	f, err := parseDecl(decl)
	if err != nil {
		return nil, err
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("field %s: bad %s %q", f.Name, k, v)
		}
		switch k {
		case "offset":
			f.Offset = n
		case "size":
			f.Size = n
		case "signed":
			f.Signed = n != 0
		}
	}
	f.Kind = classify(f)
	return f, nil
}

// parseDecl splits a C declaration such as "char prev_comm[16]",
// "__data_loc char[] name" or "const char * filename" into a Field.
func parseDecl(decl string) (*Field, error) {
	decl = strings.TrimSpace(decl)
	// The name is the last identifier; an array suffix may follow it.
	end := len(decl)
	suffix := ""
	if strings.HasSuffix(decl, "]") {
		open := strings.LastIndexByte(decl, '[')
		if open < 0 {
			return nil, fmt.Errorf("malformed declaration %q", decl)
		}
		suffix = decl[open:]
		end = open
	}
	i := end
	for i > 0 && isIdentByte(decl[i-1]) {
		i--
	}
	name := decl[i:end]
	if name == "" {
		return nil, fmt.Errorf("declaration %q has no field name", decl)
	}
	typ := strings.TrimSpace(decl[:i])
	f := &Field{Name: name, Base: typ}
	switch {
	case suffix == "":
		f.Decl = typ
	case suffix == "[]":
		f.Decl = typ + "[]"
	default:
		n, err := strconv.Atoi(suffix[1 : len(suffix)-1])
		if err != nil {
			// Array lengths given by a macro name: keep the text.
			f.Decl = typ + suffix
			f.Len = -1
		} else {
			f.Decl = typ + suffix
			f.Len = n
		}
	}
	if typ == "" {
		return nil, fmt.Errorf("declaration %q has no type", decl)
	}
	// "__data_loc char[] name": the brackets sit on the type; Base is the
	// element type.
	if strings.HasSuffix(typ, "[]") {
		f.Base = strings.TrimSpace(strings.TrimSuffix(typ, "[]"))
	}
	for _, p := range []string{"__data_loc ", "__rel_loc "} {
		f.Base = strings.TrimPrefix(f.Base, p)
	}
	return f, nil
}

func classify(f *Field) Kind {
	base := f.Base
	dyn := strings.HasPrefix(f.Decl, "__data_loc ") || strings.HasPrefix(f.Decl, "__rel_loc ")
	array := strings.Contains(f.Decl, "[")
	// The kernel (filter_assign_type) takes any array whose type mentions
	// char for a string: char[16], unsigned char[6], __data_loc char[].
	char := strings.Contains(base, "char")
	switch {
	case dyn && char:
		return KindDynString
	case dyn:
		return KindDynArray
	case array && char:
		return KindString
	case array:
		return KindArray
	case strings.HasSuffix(base, "*"):
		return KindPointer
	}
	return KindInt
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// IsIdent reports whether s is a C identifier, the only names the kernel
// accepts for events, fields and variables.
func IsIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}
