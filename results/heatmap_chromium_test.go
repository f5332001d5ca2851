package results_test

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/results"
)

// chromium is Debian's headless browser (make test-shells installs it);
// under CI=true its absence fails the test, elsewhere it is skipped with
// the reason.
func chromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed (Debian package chromium): make test-shells installs it")
		}
		t.Skipf("chromium is not installed (Debian package chromium; make test-shells installs it)")
	}
	return p
}

// screenshot renders file in headless Chromium in a window of w×h
// pixels, at one device pixel per CSS pixel, and decodes the PNG.
func screenshot(t *testing.T, bin, file string, w, h int) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--force-color-profile=srgb", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", w, h), "file://"+file)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	t.Logf("chromium rendered %s in %v", filepath.Base(file), time.Since(start).Round(time.Millisecond))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < w || b.Dy() < h {
		t.Fatalf("the screenshot is %v, not %dx%d", b, w, h)
	}
	return img
}

// TestHeatmapInChromium: Chromium renders the fixture's HTML page and its
// SVG; in each screenshot, the middle pixel of every cell where the
// fixture (read without live's code) has events is the colour of its
// count's level in its statement's scale, and of every other cell the
// background's.
func TestHeatmapInChromium(t *testing.T) {
	bin := chromium(t)
	hm := readHeatFixture(t, 0)
	lay := hm.Layout()
	want := heatExpected(t)
	most := map[string]uint64{}
	for k, n := range want {
		ev := strings.SplitN(k, "|", 2)[0]
		most[ev] = max(most[ev], n)
	}
	var bg [3]uint8
	fmt.Sscanf(results.HeatmapBackground, "#%02x%02x%02x", &bg[0], &bg[1], &bg[2])
	dir := t.TempDir()
	for _, ext := range []string{"html", "svg"} {
		file := filepath.Join(dir, "heatmap."+ext)
		if err := os.WriteFile(file, []byte(svgOf(t, hm, ext == "html")), 0o644); err != nil {
			t.Fatal(err)
		}
		img := screenshot(t, bin, file, lay.Width, lay.Height)
		full, empty, bad := 0, 0, 0
		for _, c := range lay.Cells {
			st := hm.Maps[c.Map]
			key := fmt.Sprintf("%s|%s|%d|%d", st.Event, st.Panels[c.Panel].Key, c.Col, c.Exp)
			exp := bg
			n := want[key]
			if n > 0 {
				exp[0], exp[1], exp[2] = results.HeatRGB(results.HeatLevel(n, most[st.Event]))
				full++
			} else {
				empty++
			}
			x, y := c.X+c.W/2, c.Y+c.H/2
			r, g, b, _ := img.At(x, y).RGBA()
			got := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
			if got != exp {
				bad++
				if bad <= 10 {
					t.Errorf("%s: the cell %s (%d events) at (%d, %d) is #%02x%02x%02x, want #%02x%02x%02x", ext, key, n, x, y, got[0], got[1], got[2], exp[0], exp[1], exp[2])
				}
			}
		}
		if full < 19 || empty < 300 {
			t.Errorf("%s: only %d cells with events and %d empty checked", ext, full, empty)
		}
		t.Logf("%s: %d cells with events and %d empty checked, %d wrong", ext, full, empty, bad)
	}
}
