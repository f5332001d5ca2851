// Command kexec-script boots a Debian kernel under qemu, copies files into
// the guest's /work and runs a shell script there, printing its output.
//
//	go run ./tools/kexec-script -kernel 6.1 [-bin static-binary] script.sh [more files...]
//	go run ./tools/kexec-script -kernel 6.1-boot -bootconfig boot.bconf [-append "trace_event=…"] script.sh
//	go run ./tools/kexec-script -kernel 6.12-riscv64 -cpus 1 -qemu "-cpu rv64,zicbom=off" script.sh
//
// It is the manual way to try tracefs writes in a real kernel. The script
// runs with busybox sh in /work, tracefs is mounted at /sys/kernel/tracing
// ($TRACEFS). The script's stdout and stderr are printed interleaved; the
// exit status is the script's, or 3 when the VM itself failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

func main() {
	kernel := flag.String("kernel", "6.1", "kernel to boot: "+names())
	bin := flag.String("bin", "", "optional static binary copied to /work/<basename> (mode 0755)")
	timeout := flag.Duration("timeout", 5*time.Minute, "limit for the whole boot")
	console := flag.Bool("console", false, "print the raw console log too (to stderr)")
	verbose := flag.Bool("v", false, "log progress (downloads, builds, boot time) to stderr")
	cmdline := flag.String("append", "", "appended to the kernel command line")
	qemuArgs := flag.String("qemu", "", "extra qemu arguments, split at spaces, after the machine's own (a later -cpu replaces the machine's)")
	cpus := flag.Int("cpus", 0, "the guest's CPUs (default 2)")
	bootconfig := flag.String("bootconfig", "", "bootconfig file appended to the initrd (adds \"bootconfig\" to the command line; needs a kernel with CONFIG_BOOT_CONFIG, e.g. 6.1-boot)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: kexec-script [flags] script.sh [files...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	log.SetFlags(0)
	log.SetPrefix("kexec-script: ")
	if *verbose {
		vm.Logf = log.Printf
	}
	k, err := vm.LookupKernel(*kernel)
	if err != nil {
		log.Print(err)
		os.Exit(2)
	}
	script, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		log.Print(err)
		os.Exit(2)
	}
	g := vm.Guest{Script: string(script), CombinedOutput: true, Timeout: *timeout, Cmdline: *cmdline,
		QemuArgs: strings.Fields(*qemuArgs), CPUs: *cpus}
	if *bootconfig != "" {
		bc, err := os.ReadFile(*bootconfig)
		if err != nil {
			log.Print(err)
			os.Exit(2)
		}
		g.Cmdline = strings.TrimSpace("bootconfig " + g.Cmdline)
		g.Initrd = func(path string) error { return vm.AppendBootconfig(path, string(bc)) }
	}
	add := func(path string, mode os.FileMode) {
		b, err := os.ReadFile(path)
		if err != nil {
			log.Print(err)
			os.Exit(2)
		}
		if mode == 0 {
			mode = 0o644
			if st, err := os.Stat(path); err == nil && st.Mode()&0o111 != 0 {
				mode = 0o755
			}
		}
		g.Files = append(g.Files, vm.File{Path: "/work/" + filepath.Base(path), Mode: mode, Data: b})
	}
	add(flag.Arg(0), 0o755)
	g.Files[0].Path = "/work/script.sh"
	for _, f := range flag.Args()[1:] {
		add(f, 0)
	}
	if *bin != "" {
		add(*bin, 0o755)
	}
	res, err := vm.Run(context.Background(), k, g)
	if *console {
		fmt.Fprint(os.Stderr, res.Console)
	}
	fmt.Print(res.Stdout)
	if err != nil {
		log.Print(err)
		os.Exit(3)
	}
	log.Printf("kernel %s (%s, %s %s): boot %v, total %v, exit status %d",
		k.Name, res.Kernel.Release, res.Kernel.Package, res.Kernel.Version,
		res.BootTime.Round(time.Millisecond), res.Duration.Round(time.Millisecond), res.ExitStatus)
	os.Exit(min(res.ExitStatus, 125))
}

func names() string {
	var n []string
	for _, k := range vm.Kernels {
		n = append(n, k.Name+" ("+k.Suite+")")
	}
	return strings.Join(n, ", ")
}
