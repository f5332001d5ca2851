package emit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/tracefs"
)

// parseBootValue reads one value as lib/bootconfig.c's __xbc_parse_value
// does: an optional quote, then up to the matching quote or, unquoted, up
// to one of ",;\n#}" with the spaces around it trimmed. It returns the
// value and what follows it.
func parseBootValue(t *testing.T, s string) (string, string) {
	t.Helper()
	s = strings.TrimLeft(s, " \t")
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		q := s[0]
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			t.Fatalf("no closing quote in %q", s)
		}
		rest := strings.TrimLeft(s[end+2:], " \t")
		if rest != "" && !strings.ContainsRune(",;\n#}", rune(rest[0])) {
			t.Fatalf("no value delimiter after the quoted value in %q", s)
		}
		return s[1 : end+1], rest
	}
	end := strings.IndexAny(s, ",;\n#}")
	if end < 0 {
		end = len(s)
	}
	return strings.TrimSpace(s[:end]), s[end:]
}

func TestBootValueRoundTrip(t *testing.T) {
	values := []string{
		"pid", "common_timestamp.usecs-$ts0", "$lat", "hitcount.descending",
		"char comm[16]", "u64 lat", "lat.buckets=100", "next_comm == \"bash\"",
		"prev_comm ~ 'ksoft*'", "a, b; c # d } e", "  padded  ", "x=1,y=2",
		"do_sys_openat2 filename=+0($arg2):string", "$(reboot) `id` \\n",
	}
	for _, v := range values {
		got, err := BootValue(v)
		if err != nil {
			t.Errorf("BootValue(%q): %v", v, err)
			continue
		}
		back, rest := parseBootValue(t, got+"\n")
		if back != v || rest != "\n" {
			t.Errorf("BootValue(%q) = %s, read back as %q (rest %q)", v, got, back, rest)
		}
	}
}

func TestBootValueRefusals(t *testing.T) {
	for _, v := range []string{
		`both "quotes" and 'quotes'`, "new\nline", "nul\x00byte", "tab\tinside", "caf\xc3\xa9", "",
	} {
		if got, err := BootValue(v); err == nil && v != "" {
			t.Errorf("BootValue(%q) = %s, want a refusal", v, got)
		} else if v == "" && got != `""` {
			t.Errorf(`BootValue("") = %s, want ""`, got)
		}
	}
}

func TestAttachBootconfigRoundTrip(t *testing.T) {
	for n := 0; n < 9; n++ {
		initrd := bytes.Repeat([]byte{0x1f}, n)
		for _, text := range []string{"a", "ftrace.event.x.y.enable\n", "ab", "abc"} {
			out := AttachBootconfig(initrd, text)
			if len(out)%4 != 0 {
				t.Errorf("initrd %d + %q: %d bytes, not a multiple of 4", n, text, len(out))
			}
			if !bytes.HasSuffix(out, []byte("#BOOTCONFIG\n")) {
				t.Fatalf("no magic at the end")
			}
			size := binary.LittleEndian.Uint32(out[len(out)-20:])
			if int(size) != len(out)-20-n {
				t.Errorf("size %d, want %d", size, len(out)-20-n)
			}
			got, gotText, found, err := SplitBootconfig(out)
			if err != nil || !found || !bytes.Equal(got, initrd) || gotText != text {
				t.Errorf("Split(Attach(%d bytes, %q)) = %d bytes, %q, %v, %v", n, text, len(got), gotText, found, err)
			}
			// Replacing keeps the initrd and only the new text.
			again := AttachBootconfig(got, "new")
			if _, gotText, _, _ := SplitBootconfig(again); gotText != "new" {
				t.Errorf("replaced text %q", gotText)
			}
		}
	}
	plain := []byte("070701not a bootconfig")
	if got, _, found, err := SplitBootconfig(plain); found || err != nil || !bytes.Equal(got, plain) {
		t.Errorf("an initrd without a block: found %v, err %v", found, err)
	}
}

func TestSplitBootconfigCorrupt(t *testing.T) {
	good := AttachBootconfig([]byte("INITRD.."), "ftrace.event.a.b.enable\n")
	bad := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, good...)) }
	cases := map[string][]byte{
		"checksum": bad(func(b []byte) []byte { b[len(b)-16]++; return b }),
		"text":     bad(func(b []byte) []byte { b[9] = 'X'; return b }),
		"size":     bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-20:], 1<<20); return b }),
		"zero":     bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-20:], 0); return b }),
		"short":    []byte("\x01\x02#BOOTCONFIG\n"),
	}
	for name, data := range cases {
		_, _, found, err := SplitBootconfig(data)
		var be *BootBlockError
		if !found || !errors.As(err, &be) {
			t.Errorf("%s: found %v, err %v; want a BootBlockError", name, found, err)
		}
	}
}

func hist(system, event, role string, keys []string, actions ...string) *planner.Hist {
	h := &planner.Hist{System: system, Event: event, Role: role, Keys: planner.MustExprs(keys...)}
	for _, a := range actions {
		x, err := planner.ParseAction(a)
		if err != nil {
			panic(err)
		}
		h.Actions = append(h.Actions, x)
	}
	return h
}

func TestBootconfigOrder(t *testing.T) {
	// Statement 1: a on g1 starts, b on g2 ends; statement 2: c on g2
	// starts, d on g1 ends. g1 must come before g2 and g2 before g1.
	s1 := &planner.Synth{Name: "s1", Fields: []*planner.SynthField{{Name: "x", Type: "u64"}}}
	s2 := &planner.Synth{Name: "s2", Fields: []*planner.SynthField{{Name: "x", Type: "u64"}}}
	plan := &planner.Plan{Units: []*planner.Unit{
		{Synth: s1, Start: hist("g1", "a", "start", []string{"pid"}), End: hist("g2", "b", "end", []string{"pid"}, "onmatch(g1.a).trace(s1,$x)")},
		{Synth: s2, Start: hist("g2", "c", "start", []string{"pid"}), End: hist("g1", "d", "end", []string{"pid"}, "onmatch(g2.c).trace(s2,$x)")},
	}}
	opt := BootOptions{Release: "6.1.0", Features: tracefs.Features{Buckets: true, ReturnSuffix: true}}
	_, diags := Bootconfig(BootCommands(plan, Options{}), opt)
	if len(diags) != 1 || !strings.Contains(diags[0].Msg, "no order") {
		t.Fatalf("a cycle between groups: got %v", diags)
	}
	// One statement whose end event's group appears first in the plan's
	// order: the start group must still be written first.
	plan = &planner.Plan{Units: []*planner.Unit{
		{Synth: s1, Start: hist("g2", "a", "start", []string{"pid"}), End: hist("g1", "b", "end", []string{"pid"}, "onmatch(g2.a).trace(s1,$x)")},
		{Start: hist("g1", "z", "histogram", []string{"pid"})},
	}}
	cmds := BootCommands(plan, Options{})
	cmds[0], cmds[len(cmds)-1] = cmds[len(cmds)-1], cmds[0] // the g1 histogram first
	text, diags := Bootconfig(cmds, opt)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	iSynth := strings.Index(text, "ftrace.event.synthetic.s1 {")
	iStart := strings.Index(text, "ftrace.event.g2.a {")
	iEnd := strings.Index(text, "ftrace.event.g1.b {")
	if iSynth < 0 || iStart < 0 || iEnd < 0 || !(iSynth < iEnd && iStart < iEnd) {
		t.Errorf("synthetic event and start must precede the end:\n%s", text)
	}
	// g1's two events stay together.
	if iZ := strings.Index(text, "ftrace.event.g1.z {"); iZ < 0 || iZ < iStart {
		t.Errorf("the g1 histogram must follow g2 (g1 comes after g2 as a group):\n%s", text)
	}
}

func TestBootconfigActionsForm(t *testing.T) {
	s := &planner.Synth{Name: "lat", Fields: []*planner.SynthField{{Name: "lat", Type: "u64"}}}
	plan := &planner.Plan{Units: []*planner.Unit{{Synth: s,
		Start: &planner.Hist{System: "sched", Event: "sched_waking", Role: "start", Keys: planner.MustExprs("pid"), Vars: []planner.Var{{Name: "ts", Expr: planner.MustExprs("common_timestamp.usecs")[0]}}},
		End:   hist("sched", "sched_switch", "end", []string{"next_pid"}, "onmatch(sched.sched_waking).trace(lat,$l)")}}}
	plan.Units[0].End.Vars = []planner.Var{{Name: "l", Expr: planner.MustExprs("common_timestamp.usecs-$ts")[0]}}
	f, err := planner.ParseFilter(`next_comm != "swapper/0"`)
	if err != nil {
		t.Fatal(err)
	}
	plan.Units[0].End.Filter = f
	text, diags := Bootconfig(BootCommands(plan, Options{}), BootOptions{Release: "5.10.262", Features: tracefs.Features{ReturnSuffix: true}})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := "\tactions += \"hist:keys=pid:ts=common_timestamp.usecs\"\n"
	if !strings.Contains(text, want) {
		t.Errorf("5.10: want the start trigger as an action string %q in\n%s", want, text)
	}
	if !strings.Contains(text, `actions += 'hist:keys=next_pid:l=common_timestamp.usecs-$ts:onmatch(sched.sched_waking).trace(lat,$l) if next_comm != "swapper/0"'`) {
		t.Errorf("5.10: the end trigger in single quotes:\n%s", text)
	}
	if strings.Contains(text, "hist {") {
		t.Errorf("5.10 has no hist subkeys:\n%s", text)
	}
	if _, diags := Bootconfig(BootCommands(plan, Options{}), BootOptions{Release: "5.4.0"}); len(diags) != 1 || !strings.Contains(diags[0].Msg, "needs Linux 5.6") {
		t.Errorf("5.4: %v", diags)
	}
}
