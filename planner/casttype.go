package planner

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/compiler"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// castTypes maps the target of CAST(x AS TYPE), as the compiler gives it
// (words joined, upper case: UNSIGNEDINT), to the scalar type of a
// synthetic field the kernel knows (synth_field_size).
var castTypes = map[string]string{
	"U8": "u8", "U16": "u16", "U32": "u32", "U64": "u64",
	"S8": "s8", "S16": "s16", "S32": "s32", "S64": "s64",
	"CHAR": "char", "UNSIGNEDCHAR": "unsigned char", "INT": "int", "UNSIGNEDINT": "unsigned int",
	"LONG": "long", "UNSIGNEDLONG": "unsigned long", "BOOL": "bool", "PID_T": "pid_t", "GFP_T": "gfp_t",
}

// castStringRE matches CHAR[N] and CHAR[] (a static or dynamic string).
var castStringRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^CHAR\[([0-9]*)\]$`) })

// cTypeRE matches targets that name a C type the kernel's synthetic
// events lack (u128, __u32, size_t, short, float …), so that they are
// refused as types rather than as unknown display modifiers.
var cTypeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(__)?[US][0-9]+$|_T$|^(UNSIGNED|SIGNED)|SHORT|FLOAT|DOUBLE|LONGLONG|\[|\*`)
})

// isTypeCast reports whether c names a synthetic field type (one the
// kernel has or not) rather than a display modifier.
func isTypeCast(c *compiler.Cast) bool {
	if c.HasArg {
		return false
	}
	_, known := castTypes[c.Target]
	return known || cTypeRE().MatchString(c.Target)
}

// typeCast returns the CAST that chooses the synthetic field type of a
// JOIN item, and the expression it wraps; nil and e when there is none.
func typeCast(e compiler.Expr) (*compiler.Cast, compiler.Expr) {
	if c, ok := e.(*compiler.Cast); ok && isTypeCast(c) {
		return c, compiler.Unparen(c.X)
	}
	return nil, e
}

// castField gives f the type c names, when the kernel passes a value of
// type t to it (check_synth_field): a string to char[] (or to char[N] of
// its own N), a number to a type of the same text, or of the same size
// and signedness ("Param type doesn't match synthetic event field type").
func (p *planner) castField(f *SynthField, t vtype, c *compiler.Cast) {
	if m := castStringRE().FindStringSubmatch(c.Target); m != nil {
		p.castString(f, t, c, m[1])
		return
	}
	typ, known := castTypes[c.Target]
	if !known {
		x := p.diags.Add(c.TargetPos, c.TargetEnd, "the kernel's synthetic events have no type %s: their fields are u8, u16, u32, u64, s8, s16, s32, s64, char, unsigned char, int, unsigned int, long, unsigned long, bool, pid_t, gfp_t, char[N] or char[]", castTypeText(c.Target))
		x.Hint = p.fittingTypes(t)
		return
	}
	if !t.isNumeric() {
		x := p.diags.Add(c.TargetPos, c.TargetEnd, "CAST(… AS %s): %s is %s, not a number", typ, f.Name, t.Kernel)
		x.Hint = p.fittingTypes(t)
		return
	}
	size, signed := synthScalarSize(typ, p.wordSize()), synthSigned(typ)
	if typ != t.Kernel && (size != t.Size || signed != t.Signed) {
		x := p.diags.Add(c.TargetPos, c.TargetEnd, "CAST(… AS %s): %s is %s (%s) and %s is %s; the kernel passes a value only to a synthetic field of its own type, or of the same size and signedness", typ, f.Name, t.Kernel, sizeSign(t.Size, t.Signed), typ, sizeSign(size, signed))
		x.Hint = p.fittingTypes(t)
		return
	}
	f.Type, f.Array = typ, ""
}

// castString types a string field: char[] (dynamic, 5.10) takes any
// string, char[N] only a fixed string of N bytes.
func (p *planner) castString(f *SynthField, t vtype, c *compiler.Cast, n string) {
	if t.Kind != tracefs.KindString && t.Kind != tracefs.KindDynString {
		p.diags.Add(c.TargetPos, c.TargetEnd, "CAST(… AS char[%s]): %s is %s, not a string", n, f.Name, t.Kernel)
		return
	}
	if n == "" {
		if !p.feat.DynStrings {
			p.diags.Add(c.TargetPos, c.TargetEnd, "%s", p.feat.Lacks("a char[] (dynamic string) synthetic field", "dynamic-strings"))
			return
		}
		f.Type, f.Array = "char", "[]"
		return
	}
	size, err := strconv.Atoi(n)
	if t.Kind == tracefs.KindDynString || err != nil || size != t.Size {
		x := p.diags.Add(c.TargetPos, c.TargetEnd, "CAST(… AS char[%s]): %s is %s; the kernel passes a string to a char[N] field only from a fixed string of the same N", n, f.Name, t.Kernel)
		x.Hint = "CAST(… AS char[]) takes any string"
		return
	}
	f.Type, f.Array = "char", "["+n+"]"
}

// synthSigned is the kernel's synth_field_signed: a type is unsigned when
// its text starts with u (u32, unsigned int …) or is gfp_t.
func synthSigned(typ string) bool {
	return !strings.HasPrefix(typ, "u") && typ != "gfp_t"
}

func sizeSign(size int, signed bool) string {
	if signed {
		return fmt.Sprintf("%d-byte signed", size)
	}
	return fmt.Sprintf("%d-byte unsigned", size)
}

// castTypeText shows a CAST target as written, lower case with its words
// apart (the compiler joins UNSIGNED SHORT into UNSIGNEDSHORT).
func castTypeText(target string) string {
	t := strings.ToLower(target)
	for _, w := range []string{"unsigned", "signed"} {
		if rest, ok := strings.CutPrefix(t, w); ok && rest != "" {
			return w + " " + rest
		}
	}
	return t
}

// fittingTypes is a hint naming the types a value of type t can be cast
// to.
func (p *planner) fittingTypes(t vtype) string {
	switch {
	case t.Kind == tracefs.KindString:
		return fmt.Sprintf("a string of %d bytes fits char[%d] and char[]", t.Size, t.Size)
	case t.Kind == tracefs.KindDynString:
		return "a dynamic string fits char[]"
	case !t.isNumeric():
		return "a stack trace's synthetic type is fixed (unsigned long[])"
	}
	var fit []string
	for _, typ := range castTypes {
		if synthScalarSize(typ, p.wordSize()) == t.Size && synthSigned(typ) == t.Signed {
			fit = append(fit, typ)
		}
	}
	sort.Strings(fit)
	return fmt.Sprintf("this value (%s, %s) fits %s", t.Kernel, sizeSign(t.Size, t.Signed), strings.Join(fit, ", "))
}

// errTypeCastInHistogram refuses a synthetic field type where there is no
// synthetic event field: a histogram key or value keeps its field's type.
func errTypeCastInHistogram(d *source.Diags, c *compiler.Cast) {
	x := d.Add(c.TargetPos, c.TargetEnd, "CAST(… AS %s) chooses the type of a synthetic event field: it applies to the items of a JOIN, and a histogram's keys and values keep their fields' types", castTypeText(c.Target))
	x.Hint = "display modifiers here are HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME, LOG2, BUCKETS=N or _COUNTER_"
}

// signedParam returns the trace() parameter that passes op to field f.
// The kernel checks a parameter whose type text differs from the field's
// by size and signedness, but a field of the end event passed as it is
// becomes a variable that has lost its sign (create_field_var), so it
// fails against a signed field of another type text ("Param type doesn't
// match synthetic event field type"): such a value goes through a
// variable of the end trigger, which keeps the sign.
func (js *joinState) signedParam(f *SynthField, op operand) *Expr {
	if op.x.Kind == ExprVar || f.Array != "" || !op.typ.isNumeric() || f.Type == op.typ.Kernel || !synthSigned(f.Type) {
		return op.x
	}
	v := js.names.take(js.name + "_" + f.Name)
	js.end.Vars = append(js.end.Vars, Var{Name: v, Expr: op.x})
	return varExpr(v)
}
