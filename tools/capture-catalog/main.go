// Command capture-catalog boots Debian kernels under qemu and saves each
// one's tracefs event catalog as tracefs/catalogs/linux-<kernel>.zip:
//
//	events/<system>/<event>/format   every event's format file
//	events/header_page               the ring buffer's page header (what
//	events/header_event              trace_pipe_raw's pages hold), and its
//	                                 event header (type_len, time_delta)
//	README                           the tracefs README (mini-HOWTO)
//	VERSION                          line 1: uname -r; line 2: Debian package
//	                                 version; line 3: the image package name
//	ARCH                             uname -m (catalogs of other architectures
//	                                 than x86-64 are linux-<version>-<debian arch>.zip)
//	FILES                            the top-level tracefs entries, one per line, sorted
//	available_events                 as the kernel lists it
//
// Entries are sorted and carry a fixed modification time, so the same
// capture gives the same bytes. Run it with `make catalog` or
//
//	go run ./tools/capture-catalog [-kernels 5.10,6.1,6.12,7.2,6.1-arm64,…,6.12-riscv64] [-out tracefs/catalogs]
//
// A kernel the harness builds from source (6.1-boot, 5.10-hist: see
// e2e/README.md) is captured as linux-<name>.zip (linux-6.1-boot.zip, with
// ARCH) and only into a directory given with -out: tracefs/catalogs would
// read the name's suffix as an architecture. The one exception is
// 5.10-hist, whose catalog is the embedded 5.10's (linux-5.10.zip, with
// ARCH): Debian's 5.10 has no hist triggers, and goes only to -out.
package main

import (
	"archive/zip"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sqlhist/sqlhist/e2e/vm"
)

// guestScript copies the catalog out of tracefs into /tmp/cat (tracefs files
// report size 0, so tar cannot read them in place).
const guestScript = `set -e
T=/sys/kernel/tracing
O=/tmp/cat
mkdir -p $O/events
cat $T/README > $O/README
cat $T/available_events > $O/available_events
ls -1 $T | LC_ALL=C sort > $O/FILES
uname -r > $O/VERSION
uname -m > $O/ARCH
cat $T/events/header_page > $O/events/header_page
cat $T/events/header_event > $O/events/header_event
n=0
for f in $T/events/*/*/format; do
	d=${f#$T/}
	mkdir -p $O/${d%/format}
	cat $f > $O/$d
	n=$((n+1))
done
echo "events: $n"
`

// features are README strings worth knowing per kernel.
var features = []string{
	"hist:keys", "trace(<synthetic_event>,param list)", "onmatch(", "common_cpu",
	".buckets", "common_stacktrace", "stacktrace", ".percent", "nohitcount",
	"dynamic_events", "synthetic_events", "e[:[<group>/]", "%return", "symstr", "ustring",
}

// fixedTime is the modification time of every zip entry.
var fixedTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	kernels := flag.String("kernels", "5.10-hist,6.1,6.12,7.2,6.1-arm64,6.12-arm64,7.2-arm64,6.1-armhf,6.12-riscv64", "comma-separated kernels to capture")
	out := flag.String("out", "", "output directory (default <repo>/tracefs/catalogs)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("capture-catalog: ")
	vm.Logf = log.Printf
	outGiven := *out != ""
	if *out == "" {
		root, err := vm.RepoRoot()
		if err != nil {
			log.Fatal(err)
		}
		*out = filepath.Join(root, "tracefs", "catalogs")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	var ks []vm.Kernel
	for _, name := range strings.Split(*kernels, ",") {
		k, err := vm.LookupKernel(strings.TrimSpace(name))
		if err != nil {
			log.Fatal(err)
		}
		switch {
		case k.Name == embedded510.Debian && !outGiven:
			// Its catalog would replace the embedded 5.10's, which is
			// 5.10-hist's (make catalog once did that).
			log.Fatalf("Debian's 5.10 has no hist triggers: the embedded 5.10 catalog is %s's (capture that), or give Debian's a directory with -out", embedded510.Built)
		case k.Built() && !outGiven && k.Name != embedded510.Built:
			log.Fatalf("kernel %s is built from source: give its catalog a directory with -out (it is not one of tracefs/catalogs)", k.Name)
		}
		ks = append(ks, k)
	}
	var summaries []summary
	failed := false
	for _, k := range ks {
		s, err := capture(k, *out)
		if err != nil {
			log.Printf("kernel %s: %v", k.Name, err)
			failed = true
			continue
		}
		summaries = append(summaries, s)
	}
	report(summaries)
	if failed {
		os.Exit(1)
	}
}

type summary struct {
	kernel  vm.Kernel
	path    string
	size    int64
	events  int
	boot    time.Duration
	readme  string
	openat  bool
	entries int
}

func capture(k vm.Kernel, outDir string) (summary, error) {
	ctx := context.Background()
	res, err := vm.RunRetry(ctx, k, vm.Guest{
		Script:  guestScript,
		Collect: []string{"/tmp/cat"},
		Timeout: 10 * time.Minute,
	})
	if err != nil {
		return summary{}, err
	}
	if res.ExitStatus != 0 {
		return summary{}, fmt.Errorf("guest script failed (status %d):\n%s%s", res.ExitStatus, res.Stdout, res.Stderr)
	}
	files := map[string][]byte{}
	events := 0
	for p, b := range res.Files {
		rel, ok := strings.CutPrefix(p, "tmp/cat/")
		if !ok {
			continue
		}
		if strings.HasPrefix(rel, "events/") && strings.HasSuffix(rel, "/format") {
			events++
		}
		files[rel] = b
	}
	for _, need := range []string{"README", "available_events", "FILES", "VERSION", "ARCH", "events/header_page", "events/header_event"} {
		if _, ok := files[need]; !ok {
			return summary{}, fmt.Errorf("guest sent no %s", need)
		}
	}
	if events == 0 {
		return summary{}, fmt.Errorf("no events/*/*/format files came back")
	}
	rel := strings.TrimSpace(string(files["VERSION"]))
	if rel != res.Kernel.Release {
		return summary{}, fmt.Errorf("guest runs %q, expected %q", rel, res.Kernel.Release)
	}
	files["VERSION"] = []byte(rel + "\n" + res.Kernel.Version + "\n" + res.Kernel.Package + "\n")
	// Debian's x86-64 catalogs have no ARCH (catalogName); it must go
	// before the zip is made (dropped after, it stayed in the zip).
	if k.DebArch() == "amd64" && !k.Built() {
		delete(files, "ARCH")
	}
	zb, err := zipFiles(files)
	if err != nil {
		return summary{}, err
	}
	name := catalogName(k)
	if k.Name == embedded510.Built && embeddedDir(outDir) {
		name = "linux-5.10.zip"
	}
	path := filepath.Join(outDir, name)
	if err := os.WriteFile(path, zb, 0o644); err != nil {
		return summary{}, err
	}
	_, openat := files["events/syscalls/sys_enter_openat/format"]
	return summary{kernel: res.Kernel, path: path, size: int64(len(zb)), events: events,
		boot: res.BootTime, readme: string(files["README"]), openat: openat, entries: len(files)}, nil
}

// embedded510 says whose catalog the embedded 5.10 is: the 5.10.262 the
// suite builds with hist triggers (5.10-hist), not Debian's 5.10, which has
// none (the golden cases' want/5.10 sections are 5.10-hist's).
var embedded510 = struct{ Built, Debian string }{"5.10-hist", "5.10"}

// embeddedDir reports whether dir is the repository's tracefs/catalogs.
func embeddedDir(dir string) bool {
	root, err := vm.RepoRoot()
	if err != nil {
		return false
	}
	a, _ := filepath.Abs(dir)
	return a == filepath.Join(root, "tracefs", "catalogs")
}

// catalogName is the zip's name. Debian's x86-64 kernels keep their old
// names, linux-<version>.zip, and no ARCH (which their release tells), so
// re-capturing them gives the same bytes; Debian's kernels of other
// architectures are linux-<version>-<debian arch>.zip. A built kernel's
// is linux-<name>.zip (linux-6.1-boot.zip): never the name of Debian's
// kernel of the same version.
func catalogName(k vm.Kernel) string {
	switch {
	case k.Built():
		return "linux-" + k.Name + ".zip"
	case k.DebArch() != "amd64":
		return "linux-" + k.ShortVersion() + "-" + k.DebArch() + ".zip"
	}
	return "linux-" + k.ShortVersion() + ".zip"
}

// zipFiles writes a deterministic zip: sorted names, fixed times, deflate.
func zipFiles(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: fixedTime})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func report(ss []summary) {
	fmt.Printf("%-10s %-28s %-10s %7s %8s %9s %s\n", "kernel", "release", "version", "events", "zip", "boot", "sys_enter_openat")
	for _, s := range ss {
		fmt.Printf("%-10s %-28s %-10s %7d %8d %9v %v\n", s.kernel.Name, s.kernel.Release, s.kernel.Version,
			s.events, s.size, s.boot.Round(time.Millisecond), s.openat)
	}
	fmt.Printf("\nREADME contains:\n%-38s", "")
	for _, s := range ss {
		fmt.Printf(" %-10s", s.kernel.Name)
	}
	fmt.Println()
	for _, f := range features {
		fmt.Printf("%-38s", f)
		for _, s := range ss {
			mark := "no"
			if strings.Contains(s.readme, f) {
				mark = "yes"
			}
			fmt.Printf(" %-10s", mark)
		}
		fmt.Println()
	}
}
