package stream

import (
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/tracefs"
)

// A format as 5.10 and 6.12 have it for sched_switch: strings, numbers,
// and prev_state printed through an expression.
const switchFormat = `name: sched_switch
ID: 316
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;
	field:u32 flags;	offset:64;	size:4;	signed:0;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d flags=%x", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & 3) ? __print_flags(REC->prev_state & 3, "|", { 1, "S" }) : "R", REC->prev_state & 4 ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio, REC->flags
`

func TestTextLayout(t *testing.T) {
	ev, err := tracefs.ParseFormat("sched", switchFormat)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewTextLayout(ev, 8)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(name string) int {
		for i, f := range ev.Fields {
			if f.Name == name {
				return i
			}
		}
		t.Fatalf("no field %s", name)
		return -1
	}
	for _, f := range []string{"prev_comm", "prev_pid", "next_comm", "next_pid", "next_prio", "flags"} {
		if why := l.Missing(idx(f)); why != "" {
			t.Errorf("%s: %s", f, why)
		}
	}
	if why := l.Missing(idx("prev_state")); !strings.Contains(why, "expression") {
		t.Errorf("prev_state: %q, want it refused as an expression", why)
	}
	if why := l.Missing(idx("common_type")); why == "" {
		t.Error("common_type is not printed")
	}
	body := "prev_comm=a b=c prev_pid=-1 prev_prio=120 prev_state=S+ ==> next_comm=x next_pid=4294 next_prio=007 flags=ffffffff"
	vals, ok := l.Read(body)
	if !ok {
		t.Fatal("the body does not read")
	}
	if vals[idx("prev_comm")] != "a b=c" || vals[idx("next_prio")] != "007" {
		t.Errorf("read %v", vals)
	}
	num := func(field, text string) uint64 {
		var v TextValue
		for _, tv := range l.Values {
			if tv.Field == idx(field) {
				v = tv
			}
		}
		n, ok := v.Number(text, ev.Fields[idx(field)])
		if !ok {
			t.Fatalf("%s %q does not read", field, text)
		}
		return n
	}
	if n := num("prev_pid", "-1"); n != ^uint64(0) {
		t.Errorf("prev_pid -1 reads %x", n)
	}
	if n := num("flags", "ffffffff"); n != 0xffffffff {
		t.Errorf("flags ffffffff reads %x", n)
	}
	if n := num("next_prio", "007"); n != 7 {
		t.Errorf("next_prio 007 reads %d", n)
	}
	for _, bad := range []string{"", "prev_comm=a", "next_comm=x prev_comm=a"} {
		if _, ok := l.Read(bad); ok {
			t.Errorf("%q reads", bad)
		}
	}
}
