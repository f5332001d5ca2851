package live_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/tracefs"
)

// --formats DIR/events reads DIR, as --formats DIR does; a directory
// with no events/ at all is refused with what to give instead.
func TestFormatsEventsDir(t *testing.T) {
	emb, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := func(p string) (fs.FS, error) {
		switch p {
		case "/copy":
			return emb, nil
		case "/copy/events":
			return fs.Sub(emb, "events")
		}
		return nil, fs.ErrNotExist
	}
	for _, f := range []string{"/copy", "/copy/events", "/copy/events/"} {
		cat, err := live.OpenCatalog(live.CatalogSource{Formats: f, Dir: dir})
		if err != nil {
			t.Errorf("--formats %s: %v", f, err)
			continue
		}
		if _, err := live.FindEvent(cat, "sched_switch"); err != nil {
			t.Errorf("--formats %s: %v", f, err)
		}
	}
	_, err = live.OpenCatalog(live.CatalogSource{Formats: "/elsewhere", Dir: func(string) (fs.FS, error) { return emb, nil }})
	if err != nil {
		t.Errorf("a directory with events/: %v", err)
	}
	_, err = live.OpenCatalog(live.CatalogSource{Kernel: "6.3"})
	if err == nil || !strings.Contains(err.Error(), "--formats DIR") || !strings.Contains(err.Error(), "--via COMMAND") {
		t.Errorf("--kernel 6.3: %v, want the way forward: --formats or --via", err)
	}
}
