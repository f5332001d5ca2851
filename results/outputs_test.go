package results

import "testing"

func TestIntervalPath(t *testing.T) {
	for in, want := range map[string]string{
		"offcpu.pb.gz": "offcpu.3.pb.gz", "/tmp/x/out": "/tmp/x/out.3", "a.folded": "a.3.folded", "d.v/.hidden": "d.v/.hidden.3",
	} {
		if got := IntervalPath(in, 3); got != want {
			t.Errorf("intervalPath(%q) = %q, want %q", in, got, want)
		}
	}
}
