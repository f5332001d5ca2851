package e2e

import (
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// viaHeatmapChecks draws what -r -i N -o json printed on a guest (out,
// of the JOIN join) with sqlhist heatmap: the SVG and the HTML page are
// well-formed XML and draw the latency. With $SQLHIST_HEATMAP_OUT set it
// also runs the JOIN for 20 s in intervals of 1 s and saves its JSON
// there as heatmap-KERNEL.json (the sample picture of docs/ is drawn
// from it).
func viaHeatmapChecks(t *testing.T, kname, via, bin, join, out string) {
	t.Helper()
	dir := t.TempDir()
	saved := filepath.Join(dir, "intervals.json")
	if err := os.WriteFile(saved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"svg", "html"} {
		pic, err := exec.Command(bin, "heatmap", "-o", format, saved).Output()
		if err != nil {
			t.Errorf("sqlhist heatmap -o %s of the guest's -i: %v", format, err)
			continue
		}
		dec := xml.NewDecoder(strings.NewReader(string(pic)))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("sqlhist heatmap -o %s of the guest's -i: not well-formed: %v", format, err)
				break
			}
		}
		if !strings.Contains(string(pic), "lat (us) by log2 bucket") {
			t.Errorf("sqlhist heatmap -o %s of the guest's -i draws no latency:\n%.2000s", format, pic)
		}
	}
	keep := os.Getenv("SQLHIST_HEATMAP_OUT")
	if keep == "" {
		return
	}
	long, errs, code := sqlhistRun(bin, "--via", via, "-r", "-i", "1", "-d", "20", "-o", "json", join)
	if code != 0 {
		t.Errorf("-i 1 -d 20: exit %d:\n%s", code, errs)
		return
	}
	file := filepath.Join(keep, "heatmap-"+kname+".json")
	if err := os.WriteFile(file, []byte(long), 0o644); err != nil {
		t.Errorf("SQLHIST_HEATMAP_OUT: %v", err)
		return
	}
	t.Logf("%s: saved the JSON of -r -i 1 -d 20 (%d bytes) for the heatmap's sample", file, len(long))
}
