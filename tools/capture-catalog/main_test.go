package main

import (
	"testing"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func TestCatalogName(t *testing.T) {
	names := map[string]string{}
	for _, k := range vm.Kernels {
		n := catalogName(k)
		if other, ok := names[n]; ok {
			t.Errorf("kernels %s and %s would both write %s", other, k.Name, n)
		}
		names[n] = k.Name
	}
	for kernel, want := range map[string]string{
		"5.10": "linux-5.10.zip", "6.1": "linux-6.1.zip", "6.1-arm64": "linux-6.1-arm64.zip",
		"6.1-armhf": "linux-6.1-armhf.zip", "6.12-riscv64": "linux-6.12-riscv64.zip", "6.1-boot": "linux-6.1-boot.zip", "5.10-hist": "linux-5.10-hist.zip",
	} {
		k, err := vm.LookupKernel(kernel)
		if err != nil {
			t.Fatal(err)
		}
		if got := catalogName(k); got != want {
			t.Errorf("%s: %s, want %s", kernel, got, want)
		}
	}
}
