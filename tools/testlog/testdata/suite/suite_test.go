// A suite whose failures tools/testlog's test reads back: a kernel
// whose one phase fails among phases that pass, and a test that fails
// on its own.
package suite

import (
	"fmt"
	"testing"
)

func TestKernels(t *testing.T) {
	t.Log("the suite's own line, before its kernels")
	for _, k := range []string{"6.1", "7.2-arm64"} {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			for _, p := range []string{"audit", "queries"} {
				t.Run(p, func(t *testing.T) {
					t.Logf("%s %s: a line of the log", k, p)
					if k == "7.2-arm64" && p == "queries" {
						t.Errorf("case_x on %s: did not fire: synthetic lines map[]", k)
					}
				})
			}
		})
	}
}

func TestAlone(t *testing.T) {
	t.Log(fmt.Sprintf("a long line %0600d", 7))
	for i := 0; i < 5; i++ {
		t.Logf("line %d", i)
	}
	t.Fatal("stopped")
}

func TestPasses(t *testing.T) { t.Log("passing output is not repeated") }
