package stream

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlhist/sqlhist/tracefs"
)

// A TextLayout says how an event's body reads in trace_pipe: the
// literal text of its print format and, between the literals, the
// values it prints. A value that is a field as stored, printed by a
// conversion that shows it whole (%d, %u, %x, %s of a string field …),
// can be read back exactly; any other (an expression of fields, a
// symbolic name, an array element) only takes its place.
//
// Kernels print an event with its format's "print fmt" (the
// options/fields form of 6.3 is not on by default), which is the same
// for the events sqlhist reads on every kernel the suite boots, so one
// reading of the text serves them all; where a field the query needs is
// not printed exactly, the layout says so (see [TextLayout.Missing]).
type TextLayout struct {
	Event *tracefs.Event
	// Lits are the literal texts: Lits[0] before the first value,
	// Lits[i] after value i-1. len(Lits) == len(Values)+1.
	Lits []string
	// Values are what the conversions print, in order.
	Values []TextValue
}

// TextValue is one conversion of a print format.
type TextValue struct {
	// Field is the index in Event.Fields of the field printed whole, or
	// -1 when the value is not a field read back exactly.
	Field int
	// Conv is the conversion letter: 'd', 'u', 'x' or 's'.
	Conv byte
	// Bytes is the size of the conversion's argument (4 for %d, the
	// target's long for %ld, 8 for %lld).
	Bytes int
	// Plain says that the conversion has no flag, width or precision: a
	// decimal is printed without padding, a sign only when negative.
	Plain bool
	// Why says why a value is not read back (Field == -1), and Arg is
	// the argument as the format has it.
	Why, Arg string
}

// NewTextLayout reads the print format of ev. longSize is the bytes of
// a long on the target.
func NewTextLayout(ev *tracefs.Event, longSize int) (*TextLayout, error) {
	fmtText, args, err := splitPrintFmt(ev.PrintFmt)
	if err != nil {
		return nil, fmt.Errorf("%s: print fmt: %v", ev.FullName(), err)
	}
	l := &TextLayout{Event: ev}
	lit := ""
	argi := 0
	for i := 0; i < len(fmtText); i++ {
		c := fmtText[i]
		if c != '%' {
			lit += string(c)
			continue
		}
		if i+1 < len(fmtText) && fmtText[i+1] == '%' {
			lit += "%"
			i++
			continue
		}
		j := i + 1
		for j < len(fmtText) && strings.IndexByte("-+ #0123456789.*", fmtText[j]) >= 0 {
			if fmtText[j] == '*' {
				argi++ // a width or precision taken from an argument
			}
			j++
		}
		plain := j == i+1
		mod := ""
		for j < len(fmtText) && strings.IndexByte("hlzjtL", fmtText[j]) >= 0 {
			mod += string(fmtText[j])
			j++
		}
		if j >= len(fmtText) {
			return nil, fmt.Errorf("%s: print fmt: a conversion without a letter", ev.FullName())
		}
		conv := fmtText[j]
		if conv == 'p' {
			// %p and its extensions (%pS, %pI4, …): letters follow.
			for j+1 < len(fmtText) && (fmtText[j+1] >= 'a' && fmtText[j+1] <= 'z' || fmtText[j+1] >= 'A' && fmtText[j+1] <= 'Z' || fmtText[j+1] >= '0' && fmtText[j+1] <= '9') {
				j++
			}
		}
		i = j
		arg := ""
		if argi < len(args) {
			arg = args[argi]
		}
		argi++
		l.Lits = append(l.Lits, lit)
		lit = ""
		v := textValue(ev, conv, mod, arg, longSize)
		v.Plain = plain
		l.Values = append(l.Values, v)
	}
	l.Lits = append(l.Lits, lit)
	return l, nil
}

// textValue says what one conversion prints of its argument.
func textValue(ev *tracefs.Event, conv byte, mod string, arg string, longSize int) TextValue {
	v := TextValue{Field: -1, Conv: conv, Arg: arg}
	name := ""
	if n, ok := strings.CutPrefix(arg, "REC->"); ok && tracefs.IsIdent(n) {
		name = n
	} else if n, ok := strings.CutPrefix(arg, "__get_str("); ok && strings.HasSuffix(n, ")") && tracefs.IsIdent(n[:len(n)-1]) {
		name = n[:len(n)-1]
	}
	if name == "" {
		shown := arg
		if len(shown) > 40 {
			shown = shown[:40] + "…"
		}
		v.Why = fmt.Sprintf("its print format prints an expression of it (%s), not the field as stored", shown)
		return v
	}
	f := ev.Field(name)
	idx := -1
	for i, g := range ev.Fields {
		if g == f {
			idx = i
		}
	}
	if f == nil || idx < 0 {
		v.Why = fmt.Sprintf("it prints %q, which is not a field", arg)
		return v
	}
	switch conv {
	case 's':
		if !f.IsString() {
			v.Why = "it prints the field with %s"
			return v
		}
		v.Field = idx
		return v
	case 'd', 'i', 'u', 'x', 'X':
		if f.Kind != tracefs.KindInt {
			v.Why = "it prints a number of a field that is not one"
			return v
		}
		switch mod {
		case "hh":
			v.Bytes = 1
		case "h":
			v.Bytes = 2
		case "":
			v.Bytes = 4
		case "l", "z", "t":
			v.Bytes = longSize
		case "ll", "j", "L":
			v.Bytes = 8
		default:
			v.Why = "it prints the field with the length modifier " + mod
			return v
		}
		if f.Size > v.Bytes {
			v.Why = fmt.Sprintf("it prints the %d-byte field as %d bytes", f.Size, v.Bytes)
			return v
		}
		switch conv {
		case 'i':
			v.Conv = 'd'
		case 'X':
			v.Conv = 'x'
		}
		v.Field = idx
		return v
	}
	v.Why = fmt.Sprintf("it prints the field with %%%c", conv)
	return v
}

// splitPrintFmt splits a print fmt into its format string (C escapes
// undone) and its arguments (split at the commas outside parentheses,
// braces and quotes; trimmed).
func splitPrintFmt(pf string) (string, []string, error) {
	pf = strings.TrimSpace(pf)
	if !strings.HasPrefix(pf, `"`) {
		return "", nil, fmt.Errorf("does not start with a string")
	}
	var b strings.Builder
	i := 1
	for ; i < len(pf) && pf[i] != '"'; i++ {
		if pf[i] == '\\' && i+1 < len(pf) {
			i++
			switch pf[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(pf[i])
			}
			continue
		}
		b.WriteByte(pf[i])
	}
	if i >= len(pf) {
		return "", nil, fmt.Errorf("unclosed string")
	}
	rest := strings.TrimSpace(pf[i+1:])
	var args []string
	if rest == "" {
		return b.String(), nil, nil
	}
	if rest[0] != ',' {
		return "", nil, fmt.Errorf("expected a comma after the string")
	}
	rest = rest[1:]
	depth, start := 0, 0
	var quote byte
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		switch {
		case quote != 0:
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(rest[start:j]))
			start = j + 1
		}
	}
	return b.String(), append(args, strings.TrimSpace(rest[start:])), nil
}

// groups splits the values into runs between non-empty literals: the
// text between two such literals holds the values of one run, and a run
// of more than one value cannot be split (nothing marks where one ends).
// Each run is given as the indices of its values; Sep[i] is the literal
// that ends run i ("" for the last, which ends the line).
func (l *TextLayout) groups() (runs [][]int, seps []string) {
	var cur []int
	for i := range l.Values {
		cur = append(cur, i)
		if l.Lits[i+1] != "" || i == len(l.Values)-1 {
			runs = append(runs, cur)
			seps = append(seps, l.Lits[i+1])
			cur = nil
		}
	}
	return runs, seps
}

// Missing says why the field of index field cannot be read from the
// text exactly ("" when it can).
func (l *TextLayout) Missing(field int) string {
	f := l.Event.Fields[field]
	runs, _ := l.groups()
	why := ""
	for _, run := range runs {
		for _, vi := range run {
			v := l.Values[vi]
			if v.Field != field {
				if v.Field < 0 && why == "" && strings.Contains(v.Arg, "REC->"+f.Name) {
					why = v.Why
				}
				continue
			}
			if len(run) > 1 {
				return "its value is printed next to another with nothing between them"
			}
			return ""
		}
	}
	if why != "" {
		return why
	}
	return "its print format does not print it"
}

// Read takes the values of the fields of an event's body as text, by
// the layout: vals[field index] is the text of each field read back
// (numbers as printed). ok is false when the body does not follow the
// layout.
func (l *TextLayout) Read(body string) (vals map[int]string, ok bool) {
	if !strings.HasPrefix(body, l.Lits[0]) {
		return nil, false
	}
	rest := body[len(l.Lits[0]):]
	vals = map[int]string{}
	runs, seps := l.groups()
	for i, run := range runs {
		var seg string
		if seps[i] == "" {
			seg, rest = rest, ""
		} else {
			k := strings.Index(rest, seps[i])
			if k < 0 {
				return nil, false
			}
			seg, rest = rest[:k], rest[k+len(seps[i]):]
		}
		if len(run) == 1 && l.Values[run[0]].Field >= 0 {
			vals[l.Values[run[0]].Field] = seg
		}
	}
	return vals, rest == ""
}

// Number reads a number as the value v printed it, as the field's
// value: the conversion's bits, taken at the field's size and sign.
func (v TextValue) Number(text string, f *tracefs.Field) (uint64, bool) {
	var n uint64
	switch v.Conv {
	case 'x':
		t := strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "0X")
		u, err := strconv.ParseUint(t, 16, 64)
		if err != nil {
			return 0, false
		}
		n = u
	default:
		if strings.HasPrefix(text, "-") {
			s, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return 0, false
			}
			n = uint64(s)
		} else {
			u, err := strconv.ParseUint(text, 10, 64)
			if err != nil {
				return 0, false
			}
			n = u
		}
	}
	return truncate(n, f), true
}
