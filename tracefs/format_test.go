package tracefs

import (
	"archive/zip"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// embeddedFS returns the embedded catalog of a kernel or fails the test.
func embeddedFS(t *testing.T, version string) fs.FS {
	t.Helper()
	if version == "5.10-nohist" {
		// Debian's 5.10 without hist triggers, kept as test data.
		r, err := zip.OpenReader("testdata/linux-5.10-nohist.zip")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	fsys, err := Embedded(version)
	if err != nil {
		t.Fatalf("Embedded(%q): %v", version, err)
	}
	return fsys
}

// TestParseFormatEmbeddedCatalogs parses every format file of every
// embedded catalog: real text from real kernels.
func TestParseFormatEmbeddedCatalogs(t *testing.T) {
	for _, v := range []string{"5.10-nohist", "5.10", "6.1", "6.12", "7.2"} {
		t.Run(v, func(t *testing.T) {
			fsys := embeddedFS(t, v)
			n := 0
			err := fs.WalkDir(fsys, "events", func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() || d.Name() != "format" {
					return nil
				}
				parts := strings.Split(p, "/")
				if len(parts) != 4 {
					return nil // events/header_page and the like
				}
				system, event := parts[1], parts[2]
				data, err := fs.ReadFile(fsys, p)
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return nil
				}
				ev, err := ParseFormat(system, string(data))
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return nil
				}
				n++
				if ev.Name != event || ev.System != system {
					t.Errorf("%s: parsed as %s/%s", p, ev.System, ev.Name)
				}
				if ev.ID <= 0 {
					t.Errorf("%s: ID %d", p, ev.ID)
				}
				if len(ev.Fields) < 4 || ev.Fields[0].Name != "common_type" {
					t.Errorf("%s: fields %v, want the common fields first", p, ev.FieldNames())
				}
				for _, f := range ev.Fields {
					if !IsIdent(f.Name) {
						t.Errorf("%s: field name %q is not an identifier (decl %q)", p, f.Name, f.Decl)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// The 5.10 we build is a tinyconfig kernel: 888 events.
			if want := map[bool]int{true: 850, false: 1000}[v == "5.10"]; n < want {
				t.Errorf("parsed %d format files, want the whole catalog (> %d)", n, want)
			}
		})
	}
}

// TestParseFormatFields checks selected fields of real format files.
func TestParseFormatFields(t *testing.T) {
	tests := []struct {
		kernel, system, event string
		want                  Field
	}{
		{"6.1", "sched", "sched_switch", Field{Name: "prev_comm", Decl: "char[16]", Base: "char", Len: 16, Offset: 8, Size: 16, Signed: true, Kind: KindString}},
		{"6.1", "sched", "sched_switch", Field{Name: "prev_pid", Decl: "pid_t", Base: "pid_t", Offset: 24, Size: 4, Signed: true, Kind: KindInt}},
		{"6.1", "sched", "sched_switch", Field{Name: "prev_state", Decl: "long", Base: "long", Offset: 32, Size: 8, Signed: true, Kind: KindInt}},
		{"6.1", "sched", "sched_switch", Field{Name: "common_type", Decl: "unsigned short", Base: "unsigned short", Offset: 0, Size: 2, Kind: KindInt}},
		// The brackets of a dynamic string sit on the type; Base keeps the
		// __data_loc prefix.
		{"6.1", "irq", "irq_handler_entry", Field{Name: "name", Decl: "__data_loc char[]", Base: "char", Offset: 12, Size: 4, Signed: true, Kind: KindDynString}},
		{"6.1", "syscalls", "sys_enter_openat", Field{Name: "filename", Decl: "const char *", Base: "const char *", Offset: 24, Size: 8, Kind: KindPointer}},
		{"6.1", "syscalls", "sys_enter_read", Field{Name: "count", Decl: "size_t", Base: "size_t", Offset: 32, Size: 8, Kind: KindInt}},
		{"6.1", "syscalls", "sys_enter_read", Field{Name: "buf", Decl: "char *", Base: "char *", Offset: 24, Size: 8, Kind: KindPointer}},
		{"6.1", "raw_syscalls", "sys_enter", Field{Name: "args", Decl: "unsigned long[6]", Base: "unsigned long", Len: 6, Offset: 16, Size: 48, Kind: KindArray}},
		{"6.1", "tcp", "tcp_retransmit_skb", Field{Name: "saddr", Decl: "__u8[4]", Base: "__u8", Len: 4, Offset: 34, Size: 4, Kind: KindArray}},
		{"6.1", "kmem", "kmalloc", Field{Name: "call_site", Decl: "unsigned long", Base: "unsigned long", Offset: 8, Size: 8, Kind: KindInt}},
		{"6.1", "kmem", "kmalloc", Field{Name: "ptr", Decl: "const void *", Base: "const void *", Offset: 16, Size: 8, Kind: KindPointer}},
		// Array lengths written as expressions or macros keep their text.
		{"5.10-nohist", "ftrace", "branch", Field{Name: "func", Decl: "char[30+1]", Base: "char", Len: -1, Offset: 12, Size: 31, Signed: true, Kind: KindString}},
		{"5.10-nohist", "tcp", "tcp_probe", Field{Name: "saddr", Decl: "__u8[sizeof(struct sockaddr_in6)]", Base: "__u8", Len: -1, Offset: 8, Size: 28, Kind: KindArray}},
		{"5.10-nohist", "ext4", "ext4_fc_stats", Field{Name: "fc_ineligible_rc", Decl: "unsigned int[EXT4_FC_REASON_MAX]", Base: "unsigned int", Len: -1, Offset: 12, Size: 44, Kind: KindArray}},
		// Dynamic arrays of numbers.
		{"6.12", "ipi", "ipi_raise", Field{Name: "target_cpus", Decl: "__data_loc unsigned long[]", Base: "unsigned long", Offset: 8, Size: 4, Kind: KindDynArray}},
		{"6.12", "ras", "non_standard_event", Field{Name: "buf", Decl: "__data_loc u8[]", Base: "u8", Offset: 52, Size: 4, Kind: KindDynArray}},
	}
	for _, tt := range tests {
		t.Run(tt.kernel+"/"+tt.event+"/"+tt.want.Name, func(t *testing.T) {
			fsys := embeddedFS(t, tt.kernel)
			data, err := fs.ReadFile(fsys, path.Join("events", tt.system, tt.event, "format"))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := ParseFormat(tt.system, string(data))
			if err != nil {
				t.Fatal(err)
			}
			got := ev.Field(tt.want.Name)
			if got == nil {
				t.Fatalf("no field %q in %v", tt.want.Name, ev.FieldNames())
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("field %s (-want +got):\n%s", tt.want.Name, diff)
			}
		})
	}
}

func TestParseFormatEvent(t *testing.T) {
	text := "name: demo\nID: 42\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" +
		"\tfield:__rel_loc char[] label;\toffset:8;\tsize:4;\tsigned:1;\n" +
		"\tfield:u64 value;\toffset:16;\tsize:8;\tsigned:0;\n\n" +
		"print fmt: \"field:int ignored;\toffset:0;\tsize:4;\tsigned:1;\"\n" +
		"\tfield:int after_print;\toffset:0;\tsize:4;\tsigned:1;\n"
	ev, err := ParseFormat("demo_sys", text)
	if err != nil {
		t.Fatal(err)
	}
	want := &Event{System: "demo_sys", Name: "demo", ID: 42, Fields: []*Field{
		{Name: "common_type", Decl: "unsigned short", Base: "unsigned short", Offset: 0, Size: 2, Kind: KindInt},
		{Name: "common_pid", Decl: "int", Base: "int", Offset: 4, Size: 4, Signed: true, Kind: KindInt},
		{Name: "label", Decl: "__rel_loc char[]", Base: "char", Offset: 8, Size: 4, Signed: true, Kind: KindDynString},
		{Name: "value", Decl: "u64", Base: "u64", Offset: 16, Size: 8, Kind: KindInt},
	}, PrintFmt: "\"field:int ignored;\toffset:0;\tsize:4;\tsigned:1;\""}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("ParseFormat (-want +got):\n%s", diff)
	}
	if got := ev.FullName(); got != "demo_sys/demo" {
		t.Errorf("FullName() = %q, want %q", got, "demo_sys/demo")
	}
	if diff := cmp.Diff([]string{"common_type", "common_pid", "label", "value"}, ev.FieldNames()); diff != "" {
		t.Errorf("FieldNames (-want +got):\n%s", diff)
	}
	if f := ev.Field("missing"); f != nil {
		t.Errorf("Field(missing) = %+v, want nil", f)
	}
	for _, tc := range []struct {
		name             string
		isString, common bool
	}{{"common_pid", false, true}, {"label", true, false}, {"value", false, false}} {
		f := ev.Field(tc.name)
		if f.IsString() != tc.isString || f.IsCommon() != tc.common {
			t.Errorf("%s: IsString %v IsCommon %v, want %v %v", tc.name, f.IsString(), f.IsCommon(), tc.isString, tc.common)
		}
	}
}

// A format without "print fmt:" ends at the end of the text.
func TestParseFormatNoPrintFmt(t *testing.T) {
	ev, err := ParseFormat("s", "name: e\nID: 1\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &Event{System: "s", Name: "e", ID: 1, Fields: []*Field{{Name: "comm", Decl: "char[16]", Base: "char", Len: 16, Offset: 8, Size: 16, Signed: true, Kind: KindString}}}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseFormatErrors(t *testing.T) {
	const head = "name: e\nID: 1\nformat:\n"
	tests := []struct {
		name, in, wantErr string
	}{
		{"no name line", "ID: 1\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n", "format has no name line"},
		{"no name before print fmt", "ID: 1\nprint fmt: \"\"\n", "format has no name line"},
		{"empty", "", "format has no name line"},
		{"bad ID", "name: e\nID: twelve\n", "line 2: bad ID"},
		{"bad offset", head + "\tfield:int a;\toffset:x;\tsize:4;\tsigned:1;\n", "line 4: field a: bad offset \"x\""},
		{"bad size", head + "\tfield:int a;\toffset:0;\tsize:;\tsigned:1;\n", "field a: bad size"},
		{"bad signed", head + "\tfield:int a;\toffset:0;\tsize:4;\tsigned:yes;\n", "field a: bad signed"},
		{"declaration without a name", head + "\tfield:int *;\toffset:0;\tsize:8;\tsigned:0;\n", "declaration \"int *\" has no field name"},
		{"array without a name", head + "\tfield:int [4];\toffset:0;\tsize:16;\tsigned:0;\n", "has no field name"},
		{"empty declaration", head + "\tfield:;\toffset:0;\tsize:4;\tsigned:0;\n", "has no field name"},
		{"unbalanced bracket", head + "\tfield:int a];\toffset:0;\tsize:4;\tsigned:0;\n", "malformed declaration \"int a]\""},
		{"field line without attributes", head + "\tfield:int a\n", "malformed field line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseFormat("s", tt.in)
			if err == nil {
				t.Fatalf("ParseFormat = %+v, want an error containing %q", ev, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestIsIdent(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"_", true},
		{"sched_switch", true},
		{"__data_loc", true},
		{"A1_b2", true},
		{"x9", true},
		{"9x", false},
		{"0", false},
		{"a-b", false},
		{"a.b", false},
		{"a b", false},
		{"a$", false},
		{"$a", false},
		{"é", false},
		{"a\x00", false},
		{"sym-offset", false},
	}
	for _, tt := range tests {
		if got := IsIdent(tt.in); got != tt.want {
			t.Errorf("IsIdent(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		KindInt: "integer", KindString: "string", KindDynString: "dynamic string",
		KindArray: "array", KindDynArray: "dynamic array", KindPointer: "pointer",
		Kind(99): "unknown",
	}
	for k, w := range want {
		if got := k.String(); got != w {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, w)
		}
	}
}

// The print fmt line is kept, as the kernel wrote it, for --describe.
func TestParseFormatPrintFmt(t *testing.T) {
	cat := Open(embeddedFS(t, "6.1"))
	ev, err := cat.Event("sched", "sched_wakeup")
	if err != nil {
		t.Fatal(err)
	}
	want := `"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, REC->target_cpu`
	if ev.PrintFmt != want {
		t.Errorf("PrintFmt = %q, want %q", ev.PrintFmt, want)
	}
	noFmt, err := ParseFormat("s", "name: e\nID: 1\nformat:\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n")
	if err != nil {
		t.Fatal(err)
	}
	if noFmt.PrintFmt != "" {
		t.Errorf("PrintFmt without a print fmt line = %q, want empty", noFmt.PrintFmt)
	}
}
