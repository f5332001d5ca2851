package planner

import (
	"strconv"

	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// synthScalars are the scalar type names the kernel's synthetic event
// parser accepts (synth_field_size).
var synthScalars = map[string]bool{
	"s64": true, "u64": true, "s32": true, "u32": true, "s16": true, "u16": true,
	"s8": true, "u8": true, "char": true, "unsigned char": true, "int": true,
	"unsigned int": true, "long": true, "unsigned long": true, "bool": true,
	"pid_t": true, "gfp_t": true,
}

// synthField chooses the synthetic field type for a value of type t.
//
// Older kernels accept a parameter only when its type text equals the
// field's, so a type the synthetic parser knows (pid_t, int, u64 …) is kept
// as it is; other integer types (size_t, pointers …) become the fixed-width
// type of the same size and signedness.
func (p *planner) synthField(name string, t vtype, pos, end source.Pos) *SynthField {
	f := &SynthField{Name: name, Pos: pos, End: end}
	if (t.Kind == tracefs.KindString || t.Kind == tracefs.KindDynString) && p.feat.BrokenSynthStrings {
		x := p.diags.Add(pos, end, "%s is a string, and Linux 5.10.237 and later 5.10 releases corrupt the string fields of synthetic events (%s): the kernel stores each one twice, which shifts every field after it and writes past the event (5.10.y lacks the upstream fixes 9971c3f94448 and e1a453a57bc7)", name, p.feat.Target())
		x.Hint = "select numbers only in a JOIN here (the pid rather than the task's name); a histogram without JOIN can still key by CAST(common_pid AS EXECNAME)"
		// The field is still typed below: the rest of the plan is built
		// (and thrown away) as for any refused statement.
	}
	switch t.Kind {
	case tracefs.KindString:
		f.Type, f.Array = "char", "["+strconv.Itoa(t.Size)+"]"
		if t.Size > 256 {
			p.diags.Add(pos, end, "%s is a %d-byte string; synthetic string fields hold at most 256", name, t.Size)
		}
	case tracefs.KindDynString:
		f.Type, f.Array = "char", "[]"
		if !p.feat.DynStrings {
			p.diags.Add(pos, end, "%s", p.feat.Lacks(name+" is a dynamic string: passing it to a synthetic event", "dynamic-strings"))
		}
	case tracefs.KindDynArray:
		if t.Kernel != "unsigned long[]" && t.Kernel != "long[]" {
			p.diags.Add(pos, end, "%s is a dynamic array (%s); only strings and stack traces pass to synthetic events", name, t.Kernel)
			return f
		}
		f.Type, f.Array = "unsigned long", "[]"
		if !p.feat.StacktraceVars {
			p.diags.Add(pos, end, "%s", p.feat.Lacks("passing a stack trace to a synthetic event", "stacktrace-variables"))
		}
	case tracefs.KindArray:
		p.diags.Add(pos, end, "%s is an array (%s); only strings and stack traces pass to synthetic events", name, t.Kernel)
	default:
		if synthScalars[t.Kernel] {
			f.Type = t.Kernel
			return f
		}
		f.Type = fixedWidth(t.Size, t.Signed)
		if f.Type == "" {
			p.diags.Add(pos, end, "%s has type %s of size %d, which a synthetic event cannot hold", name, t.Kernel, t.Size)
		}
	}
	return f
}

// synthScalarSize is the size the kernel gives a scalar synthetic field
// (synth_field_size): long and unsigned long are the target's word.
func synthScalarSize(typ string, word int) int {
	switch typ {
	case "u8", "s8", "char", "unsigned char", "bool":
		return 1
	case "u16", "s16":
		return 2
	case "u32", "s32", "int", "unsigned int", "pid_t", "gfp_t":
		return 4
	case "long", "unsigned long":
		return word
	}
	return 8
}

func fixedWidth(size int, signed bool) string {
	var s string
	switch size {
	case 1:
		s = "8"
	case 2:
		s = "16"
	case 4:
		s = "32"
	case 8:
		s = "64"
	default:
		return ""
	}
	if signed {
		return "s" + s
	}
	return "u" + s
}

// synthEvent describes a synthetic event as an event of the catalog, so
// later statements can read from it: the kernel's common fields, then the
// synthetic event's own. word is the size of unsigned long on the target.
func synthEvent(s *Synth, common []*tracefs.Field, word int) *tracefs.Event {
	ev := &tracefs.Event{System: "synthetic", Name: s.Name}
	ev.Fields = append(ev.Fields, common...)
	for _, f := range s.Fields {
		tf := &tracefs.Field{Name: f.Name, Base: f.Type, Decl: f.Type + f.Array, Size: synthScalarSize(f.Type, word), Kind: tracefs.KindInt}
		switch {
		case f.Array == "[]" && f.Type == "char":
			tf.Decl, tf.Kind, tf.Size = "__data_loc char[]", tracefs.KindDynString, 8
		case f.Array == "[]":
			tf.Decl, tf.Kind, tf.Size = "unsigned long[]", tracefs.KindDynArray, 8
		case f.Array != "":
			n, _ := strconv.Atoi(f.Array[1 : len(f.Array)-1])
			tf.Len, tf.Size, tf.Kind = n, n, tracefs.KindString
		default:
			tf.Signed = !(f.Type[0] == 'u' || f.Type == "gfp_t")
		}
		ev.Fields = append(ev.Fields, tf)
	}
	return ev
}

// defaultCommonFields are the common fields of every event of the kernels
// sqlhist knows, for a catalog that has no sched_switch to read them from.
func defaultCommonFields() []*tracefs.Field {
	field := func(decl, name string, offset, size int, signed bool) *tracefs.Field {
		return &tracefs.Field{Name: name, Decl: decl, Base: decl, Offset: offset, Size: size, Signed: signed, Kind: tracefs.KindInt}
	}
	return []*tracefs.Field{field("unsigned short", "common_type", 0, 2, false), field("unsigned char", "common_flags", 2, 1, false),
		field("unsigned char", "common_preempt_count", 3, 1, false), field("int", "common_pid", 4, 4, true)}
}

// SynthFormat describes a synthetic event as an event of a catalog: the
// kernel's common fields, then the synthetic event's own, laid out as the
// kernel lays them out. word is the size of unsigned long on the target.
// The stream engine, which makes synthetic events itself, reads them
// through it.
func SynthFormat(s *Synth, word int) *tracefs.Event {
	return synthEvent(s, defaultCommonFields(), word)
}
