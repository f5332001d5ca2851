package vm

import (
	"context"
	"os"
	"path"
	"strings"
	"testing"
	"time"
)

func TestModuleOrder(t *testing.T) {
	dep := []byte(`kernel/drivers/char/virtio_console.ko.xz: kernel/drivers/virtio/virtio.ko.xz kernel/drivers/virtio/virtio_ring.ko.xz
kernel/drivers/virtio/virtio_mmio.ko.xz: kernel/drivers/virtio/virtio_ring.ko.xz kernel/drivers/virtio/virtio.ko.xz
kernel/drivers/virtio/virtio_ring.ko.xz:
kernel/drivers/virtio/virtio.ko.xz: kernel/drivers/virtio/virtio_ring.ko.xz
`)
	x := readModuleIndex(dep, []byte("kernel/drivers/tty/hvc/hvc_console.ko\n"))
	got, err := x.order([]string{"virtio-mmio", "virtio_console", "hvc_console"})
	if err != nil {
		t.Fatal(err)
	}
	want := "kernel/drivers/virtio/virtio_ring.ko.xz kernel/drivers/virtio/virtio.ko.xz kernel/drivers/virtio/virtio_mmio.ko.xz kernel/drivers/char/virtio_console.ko.xz"
	if strings.Join(got, " ") != want {
		t.Errorf("order = %v, want %s", got, want)
	}
	if _, err := x.order([]string{"nosuch"}); err == nil {
		t.Error("an unknown module: no error")
	}
	if u := uncompressed("a/b.ko.zst"); u != "a/b.ko" {
		t.Errorf("uncompressed = %s", u)
	}
}

// TestModulesArm64 takes virtio_console and virtio_mmio from 6.1-arm64's
// package (downloading it on the first run).
func TestModulesArm64(t *testing.T) {
	if os.Getenv("SQLHIST_E2E") != "1" {
		t.Skip("set SQLHIST_E2E=1 to fetch kernel packages")
	}
	old := Logf
	Logf = t.Logf
	t.Cleanup(func() { Logf = old })
	k, _ := LookupKernel("6.1-arm64")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	files, err := Modules(ctx, k, "virtio_mmio", "virtio_console")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, path.Base(f.Path))
		if len(f.Data) < 1000 || string(f.Data[1:4]) != "ELF" {
			t.Errorf("%s is not an ELF module (%d bytes)", f.Path, len(f.Data))
		}
	}
	t.Logf("load order: %v", names)
	if len(names) == 0 || names[len(names)-1] != "virtio_console.ko" {
		t.Errorf("load order %v does not end with virtio_console.ko", names)
	}
	// And /init loads them.
	res, err := RunRetry(ctx, k, Guest{Modules: []string{"virtio_mmio", "virtio_console"}, Timeout: 3 * time.Minute,
		Script: "cat /proc/modules | cut -d' ' -f1 | sort"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "virtio\nvirtio_console\nvirtio_mmio\nvirtio_ring\n"; res.Stdout != want {
		t.Errorf("the guest's modules: got %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
}
