package tracefs

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// countingFS records every access to the file system it wraps, by kind.
type countingFS struct {
	fsys fs.FS

	mu       sync.Mutex
	opens    map[string]int
	stats    map[string]int
	readDirs map[string]int
}

func newCountingFS(fsys fs.FS) *countingFS {
	return &countingFS{fsys: fsys, opens: map[string]int{}, stats: map[string]int{}, readDirs: map[string]int{}}
}

func (c *countingFS) Open(name string) (fs.File, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return c.fsys.Open(name)
}

func (c *countingFS) Stat(name string) (fs.FileInfo, error) {
	c.mu.Lock()
	c.stats[name]++
	c.mu.Unlock()
	return fs.Stat(c.fsys, name)
}

func (c *countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.mu.Lock()
	c.readDirs[name]++
	c.mu.Unlock()
	return fs.ReadDir(c.fsys, name)
}

func (c *countingFS) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.opens)
	clear(c.stats)
	clear(c.readDirs)
}

func (c *countingFS) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.opens) + len(c.stats) + len(c.readDirs)
}

func openCounted(t *testing.T, version string) (*Catalog, *countingFS) {
	t.Helper()
	cfs := newCountingFS(embeddedFS(t, version))
	return Open(cfs), cfs
}

func TestCatalogOpenReadsNothing(t *testing.T) {
	cat, cfs := openCounted(t, "6.1")
	if cat.FS() != fs.FS(cfs) {
		t.Errorf("FS() is not the file system given to Open")
	}
	if n := cfs.total(); n != 0 {
		t.Errorf("Open touched the file system %d times: opens %v stats %v readdirs %v", n, cfs.opens, cfs.stats, cfs.readDirs)
	}
}

func TestCatalogEventReadsOnlyItsFormat(t *testing.T) {
	cat, cfs := openCounted(t, "6.1")
	ev, err := cat.Event("sched", "sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	if ev.FullName() != "sched/sched_switch" || ev.Field("next_pid") == nil {
		t.Errorf("Event = %s with fields %v", ev.FullName(), ev.FieldNames())
	}
	want := map[string]int{"events/sched/sched_switch/format": 1}
	if diff := cmp.Diff(want, cfs.opens); diff != "" {
		t.Errorf("opens (-want +got):\n%s", diff)
	}
	if len(cfs.readDirs) != 0 || len(cfs.stats) != 0 {
		t.Errorf("Event listed or stat'ed: readdirs %v stats %v", cfs.readDirs, cfs.stats)
	}

	// A second lookup is served from the cache.
	cfs.reset()
	again, err := cat.Event("sched", "sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	if again != ev {
		t.Errorf("second Event returned a different *Event")
	}
	if n := cfs.total(); n != 0 {
		t.Errorf("second Event touched the file system: opens %v", cfs.opens)
	}
}

// Systems answers from the event list: one read, and the listing of the
// one system the list leaves out (ftrace's); no stat, no format.
func TestCatalogSystemsReadsTheEventList(t *testing.T) {
	cat, cfs := openCounted(t, "6.1")
	got, err := cat.Systems("sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sched"}, got); diff != "" {
		t.Errorf("Systems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"available_events": 1}, cfs.opens); diff != "" {
		t.Errorf("opens (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"events": 1, "events/ftrace": 1}, cfs.readDirs); diff != "" {
		t.Errorf("listings (-want +got):\n%s", diff)
	}
	if len(cfs.stats) != 0 {
		t.Errorf("Systems stat'ed %v", cfs.stats)
	}
	// An event of the ftrace system, which the list leaves out, and a
	// second name: nothing read again.
	cfs.reset()
	if got, err := cat.Systems("function"); err != nil || !slices.Equal(got, []string{"ftrace"}) {
		t.Errorf("Systems(function) = %v, %v; want [ftrace]", got, err)
	}
	if _, err := cat.Systems("sched_waking"); err != nil {
		t.Fatal(err)
	}
	if n := cfs.total(); n != 0 {
		t.Errorf("later Systems read again: opens %v stats %v readdirs %v", cfs.opens, cfs.stats, cfs.readDirs)
	}
}

// noListFS hides the event list of a catalog, as an older copy lacks it.
type noListFS struct{ fs.FS }

func (n noListFS) Open(name string) (fs.File, error) {
	if name == eventList {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return n.FS.Open(name)
}

// Without an event list, Systems stats the name's format in each system
// and reads no other format.
func TestCatalogSystemsReadsNoOtherFormat(t *testing.T) {
	cfs := newCountingFS(noListFS{embeddedFS(t, "6.1")})
	cat := Open(cfs)
	got, err := cat.Systems("sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sched"}, got); diff != "" {
		t.Errorf("Systems (-want +got):\n%s", diff)
	}
	for p := range cfs.opens {
		if strings.HasSuffix(p, "/format") && !strings.HasSuffix(p, "/sched_switch/format") {
			t.Errorf("Systems opened %s", p)
		}
	}
	for p := range cfs.stats {
		if !strings.HasSuffix(p, "/sched_switch/format") {
			t.Errorf("Systems stat'ed %s", p)
		}
	}
	if diff := cmp.Diff(map[string]int{"events": 1}, cfs.readDirs); diff != "" {
		t.Errorf("Systems listed directories other than events/ (-want +got):\n%s", diff)
	}
	if len(cfs.stats) < 50 {
		t.Errorf("Systems stat'ed %d paths, want one per system", len(cfs.stats))
	}

	// The system list is read once.
	cfs.reset()
	if _, err := cat.Systems("sched_waking"); err != nil {
		t.Fatal(err)
	}
	if len(cfs.readDirs) != 0 {
		t.Errorf("second Systems listed %v again", cfs.readDirs)
	}
}

// The event list and the listings of the systems it leaves out name the
// events the directories do, in every embedded catalog: what Systems and
// Names answer from.
func TestCatalogEventListIsTheDirectories(t *testing.T) {
	for _, a := range Arches {
		for _, v := range EmbeddedKernelsOf(a) {
			fsys, err := EmbeddedOf(v, a)
			if err != nil {
				t.Fatal(err)
			}
			withList, err := Open(fsys).Names()
			if err != nil {
				t.Fatal(err)
			}
			fromDirs, err := Open(noListFS{fsys}).Names()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromDirs, withList); diff != "" {
				t.Errorf("%s %s: the event list's names differ from the directories' (-dirs +list):\n%s", v, a.Name, diff)
			}
			if !Open(fsys).hasEventList() {
				t.Errorf("%s %s: no event list", v, a.Name)
			}
		}
	}
}

func TestCatalogSystems(t *testing.T) {
	cat := Open(embeddedFS(t, "6.1"))
	tests := []struct {
		event string
		want  []string
	}{
		{"sched_switch", []string{"sched"}},
		{"irq_handler_entry", []string{"irq"}},
		{"sys_enter_openat", []string{"syscalls"}},
		{"no_such_event", nil},
		{"sched/sched_switch", nil}, // not an identifier: never looked up
		{"../sched/sched_switch", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := cat.Systems(tt.event)
		if err != nil {
			t.Errorf("Systems(%q): %v", tt.event, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Systems(%q) (-want +got):\n%s", tt.event, diff)
		}
	}
}

// An event name held by several systems lists each, sorted.
func TestCatalogSystemsAmbiguous(t *testing.T) {
	format := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("name: " + name + "\nID: 1\nformat:\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n")}
	}
	cat := Open(fstest.MapFS{
		"events/zeta/dup/format":   format("dup"),
		"events/alpha/dup/format":  format("dup"),
		"events/alpha/solo/format": format("solo"),
		"events/enable":            &fstest.MapFile{Data: []byte("0\n")},
	})
	got, err := cat.Systems("dup")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "zeta"}, got); diff != "" {
		t.Errorf("Systems(dup) (-want +got):\n%s", diff)
	}
	names, err := cat.Names()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha/dup", "alpha/solo", "zeta/dup"}, names); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestCatalogNames(t *testing.T) {
	fsys := embeddedFS(t, "6.1")
	cat := Open(fsys)
	got, err := cat.Names()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(got) {
		t.Errorf("Names is not sorted")
	}
	// Every directory holding a format file is listed, and nothing else.
	var want []string
	err = fs.WalkDir(fsys, "events", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		parts := strings.Split(p, "/")
		if d.IsDir() && len(parts) == 3 {
			want = append(want, parts[1]+"/"+parts[2])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	for _, n := range []string{"sched/sched_switch", "irq/irq_handler_entry", "kmem/kmalloc"} {
		if !slices.Contains(got, n) {
			t.Errorf("Names lacks %s", n)
		}
	}
}

func TestCatalogDefine(t *testing.T) {
	cat := Open(embeddedFS(t, "6.1"))
	ev := &Event{System: "synthetic", Name: "wakeup_lat", Fields: []*Field{{Name: "lat", Decl: "u64", Base: "u64", Size: 8, Kind: KindInt}}}
	if _, err := cat.Event("synthetic", "wakeup_lat"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Define: Event error %v, want fs.ErrNotExist", err)
	}
	cat.Define(ev)

	if !cat.Defined("synthetic", "wakeup_lat") || cat.Defined("sched", "sched_switch") {
		t.Errorf("Defined: want true for the defined event only")
	}
	got, err := cat.Event("synthetic", "wakeup_lat")
	if err != nil || got != ev {
		t.Errorf("Event after Define = %v, %v; want the defined event", got, err)
	}
	systems, err := cat.Systems("wakeup_lat")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"synthetic"}, systems); diff != "" {
		t.Errorf("Systems (-want +got):\n%s", diff)
	}
	names, err := cat.Names()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "synthetic/wakeup_lat") || !slices.Contains(names, "sched/sched_switch") {
		t.Errorf("Names lacks the defined or a real event (%d names)", len(names))
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names is not sorted after Define")
	}
}

// Defined events are found even when the file system has no events/.
func TestCatalogDefineWithoutEvents(t *testing.T) {
	cat := Open(fstest.MapFS{})
	cat.Define(&Event{System: "synthetic", Name: "v"})
	systems, err := cat.Systems("v")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"synthetic"}, systems); diff != "" {
		t.Errorf("Systems (-want +got):\n%s", diff)
	}
	names, err := cat.Names()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"synthetic/v"}, names); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestCatalogUnknownEvent(t *testing.T) {
	cat := Open(embeddedFS(t, "6.1"))
	for _, tc := range [][2]string{{"sched", "no_such_event"}, {"no_such_system", "sched_switch"}, {"irq", "sched_switch"}} {
		ev, err := cat.Event(tc[0], tc[1])
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Event(%q, %q) = %v, %v; want an error wrapping fs.ErrNotExist", tc[0], tc[1], ev, err)
		}
	}
}

func TestCatalogNoEvents(t *testing.T) {
	cat := Open(fstest.MapFS{"README": &fstest.MapFile{Data: []byte("hist:keys=")}})
	if got, err := cat.Systems("sched_switch"); !errors.Is(err, ErrNoEvents) {
		t.Errorf("Systems = %v, %v; want ErrNoEvents", got, err)
	}
	if got, err := cat.Names(); !errors.Is(err, ErrNoEvents) {
		t.Errorf("Names = %v, %v; want ErrNoEvents", got, err)
	}
	if _, err := cat.Event("sched", "sched_switch"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Event error %v, want fs.ErrNotExist", err)
	}
}

func TestCatalogBadFormats(t *testing.T) {
	cat := Open(fstest.MapFS{
		"events/s/renamed/format": &fstest.MapFile{Data: []byte("name: other\nID: 1\n")},
		"events/s/broken/format":  &fstest.MapFile{Data: []byte("name: broken\nID: 1\n\tfield:unsigned long *;\toffset:0;\tsize:4;\tsigned:1;\n")},
	})
	tests := []struct{ event, wantErr string }{
		{"renamed", `events/s/renamed/format: format names event "other"`},
		{"broken", `events/s/broken/format: line 3: declaration "unsigned long *" has no field name`},
	}
	for _, tt := range tests {
		ev, err := cat.Event("s", tt.event)
		if err == nil {
			t.Errorf("Event(s, %s) = %+v, want an error", tt.event, ev)
			continue
		}
		if err.Error() != tt.wantErr {
			t.Errorf("Event(s, %s) error %q, want %q", tt.event, err, tt.wantErr)
		}
		if errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Event(s, %s): a malformed format must not read as a missing event", tt.event)
		}
	}
}

func TestCatalogHasFile(t *testing.T) {
	withList := Open(fstest.MapFS{
		"FILES":          &fstest.MapFile{Data: []byte("README\ndynamic_events\nerror_log\n")},
		"synthetic_file": &fstest.MapFile{Data: []byte("present on disk but not in FILES")},
	})
	direct := Open(fstest.MapFS{
		"dynamic_events": &fstest.MapFile{},
		"events/enable":  &fstest.MapFile{},
	})
	tests := []struct {
		name string
		cat  *Catalog
		file string
		want bool
	}{
		{"FILES lists it", withList, "dynamic_events", true},
		{"FILES lists it last", withList, "error_log", true},
		{"FILES does not list it", withList, "synthetic_events", false},
		{"FILES wins over the directory", withList, "synthetic_file", false},
		{"no partial line match", withList, "dynamic", false},
		{"no FILES: present", direct, "dynamic_events", true},
		{"no FILES: directory", direct, "events", true},
		{"no FILES: absent", direct, "synthetic_events", false},
	}
	for _, tt := range tests {
		if got := tt.cat.HasFile(tt.file); got != tt.want {
			t.Errorf("%s: HasFile(%q) = %v, want %v", tt.name, tt.file, got, tt.want)
		}
	}
}

// Systems looks a name up in the event list's text; the full index, read
// line by line, must give the same systems for every name: every event
// of every embedded catalog, and a list of hostile lines (space around
// them and around the colon, a second colon, a slash, CRLF, names that
// hold another as a prefix or suffix, repeated lines, no final newline).
func TestCatalogListedIsTheIndex(t *testing.T) {
	check := func(what string, fsys fs.FS, names []string) {
		t.Helper()
		full := Open(fsys)
		if err := full.ensureIndex(); err != nil {
			t.Fatal(err)
		}
		lazy := Open(fsys)
		for _, n := range names {
			got, err := lazy.Systems(n)
			if err != nil {
				t.Fatalf("%s: Systems(%q): %v", what, n, err)
			}
			want := slices.Clone(full.index[n])
			if !IsIdent(n) {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: Systems(%q) = %q, the full index %q", what, n, got, want)
			}
		}
	}
	for _, a := range Arches {
		for _, v := range EmbeddedKernelsOf(a) {
			fsys, err := EmbeddedOf(v, a)
			if err != nil {
				t.Fatal(err)
			}
			all, err := Open(fsys).Names()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range all {
				_, e, _ := strings.Cut(n, "/")
				names = append(names, e)
			}
			check(v+" "+a.Name, fsys, names)
		}
	}
	list := "sched:sched_switch\n  sched:sched_waking  \nirq :irq_handler_entry\nirq: irq_handler_exit\n" +
		"a:b:ev\nsys:ev/x\n:lonely\nsys:\nnocolon\nsys:ev\r\nsys:ev2\nsys:xev\nother:ev\nsys:ev\n\n" +
		"tail:sched_switch"
	fsys := fstest.MapFS{
		"available_events":           &fstest.MapFile{Data: []byte(list)},
		"events/enable":              &fstest.MapFile{Data: []byte("0\n")},
		"events/sched/enable":        &fstest.MapFile{Data: []byte("0\n")},
		"events/ftrace/function/id":  &fstest.MapFile{Data: []byte("1\n")},
		"events/ftrace/sched_switch": &fstest.MapFile{Mode: fs.ModeDir},
	}
	names := []string{"sched_switch", "sched_waking", "irq_handler_entry", "irq_handler_exit", " irq_handler_exit",
		"b:ev", "ev", "ev/x", "lonely", "ev2", "xev", "function", "nocolon", "sys", "tail", "x"}
	check("hostile list", fsys, names)
	// What the lines say, spelled out.
	cat := Open(fsys)
	for n, want := range map[string][]string{
		"sched_switch": {"ftrace", "sched", "tail"},
		"ev":           {"other", "sys", "sys"}, // "sys:ev\r" and "sys:ev"
		"ev2":          {"sys"},
		"lonely":       nil,
		"function":     {"ftrace"},
	} {
		if got, _ := cat.Systems(n); !slices.Equal(got, want) {
			t.Errorf("hostile list: Systems(%q) = %q, want %q", n, got, want)
		}
	}
}
