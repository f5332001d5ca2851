package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func TestAdhoc(t *testing.T) {
	path := os.Getenv("ADHOC_SCRIPT")
	if path == "" {
		t.Skip("dev only")
	}
	script, _ := os.ReadFile(path)
	k, err := vm.LookupKernel(os.Getenv("ADHOC_KERNEL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if k, err = vm.Fetch(ctx, k); err != nil {
		t.Fatal(err)
	}
	res, err := vm.Run(ctx, k, vm.Guest{Script: string(script), CombinedOutput: true, Timeout: 10 * time.Minute,
		Files: []vm.File{{Path: "/work/sqlhist", Mode: 0o755, Data: buildStatic(t, "amd64")}}})
	t.Logf("err %v exit %d\n%s", err, res.ExitStatus, res.Stdout)
}
