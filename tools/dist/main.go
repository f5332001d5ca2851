// Command dist writes the binaries sqlhist ships: static (CGO_ENABLED=0),
// reproducible (-trimpath, no build id, the module's VCS stamp only)
// linux/amd64, linux/arm64, linux/arm (GOARM=7) and linux/riscv64 builds,
// with a SHA256SUMS file, then checks them:
//
//   - each is a static ELF of its machine (no interpreter, no needed
//     libraries);
//
//   - each prints the same bytes (stdout, stderr, exit status) as the
//     amd64 build for every golden query of testdata/queries that needs no
//     file of its own, compiled against the embedded 6.1 catalog. Foreign
//     binaries run under qemu-user (qemu-<arch>-static, Debian package
//     qemu-user-static; -install-qemu installs it). Without it, the table
//     says "not run" for that binary: nothing is counted as checked.
//
//     go run ./tools/dist [-out dist] [-install-qemu]
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/internal/nohugepages"
)

type target struct {
	goarch, goarm string
	qemu          string // qemu-user binary for running it on another machine
	machine       elf.Machine
	class         elf.Class
}

var targets = []target{
	{goarch: "amd64", qemu: "qemu-x86_64-static", machine: elf.EM_X86_64, class: elf.ELFCLASS64},
	{goarch: "arm64", qemu: "qemu-aarch64-static", machine: elf.EM_AARCH64, class: elf.ELFCLASS64},
	{goarch: "arm", goarm: "7", qemu: "qemu-arm-static", machine: elf.EM_ARM, class: elf.ELFCLASS32},
	{goarch: "riscv64", qemu: "qemu-riscv64-static", machine: elf.EM_RISCV, class: elf.ELFCLASS64},
}

func (t target) file() string { return "sqlhist-linux-" + t.goarch }

func main() {
	out := flag.String("out", "dist", "output directory")
	install := flag.Bool("install-qemu", false, "install qemu-user-static with apt-get when a qemu-user binary is missing")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("dist: ")
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	var sums []string
	for _, t := range targets {
		path := filepath.Join(*out, t.file())
		if err := build(t, path); err != nil {
			log.Fatal(err)
		}
		if err := checkStatic(t, path); err != nil {
			log.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			log.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+t.file())
	}
	sort.Strings(sums)
	if err := os.WriteFile(filepath.Join(*out, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if *install {
		installQemu()
	}
	cases, err := goldenCases()
	if err != nil {
		log.Fatal(err)
	}
	failed := report(*out, cases)
	if failed {
		os.Exit(1)
	}
}

// build compiles one target. -buildid= and -trimpath leave nothing of
// the machine or the time in the binary; the VCS stamp is the commit.
func build(t target, path string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-ldflags=-s -w -buildid= "+nohugepages.LinkFlag, "-o", path, "./cmd/sqlhist")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+t.goarch, "GOARM="+t.goarm)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", t.goarch, err, b)
	}
	return nil
}

// checkStatic reads the ELF header: the machine and class of the target,
// no program interpreter, no needed shared library.
func checkStatic(t target, path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != t.machine || f.Class != t.class {
		return fmt.Errorf("%s: %v %v, want %v %v", path, f.Machine, f.Class, t.machine, t.class)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s has a program interpreter: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("%s needs %v: not static", path, libs)
	}
	return nil
}

func installQemu() {
	for _, t := range targets {
		if _, err := exec.LookPath(t.qemu); err != nil && t.goarch != runtime.GOARCH {
			log.Printf("installing qemu-user-static (for %s)", t.qemu)
			for _, args := range [][]string{{"apt-get", "update"}, {"apt-get", "install", "-y", "--no-install-recommends", "qemu-user-static"}} {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				if b, err := cmd.CombinedOutput(); err != nil {
					log.Fatalf("%v: %v\n%s", args, err, b)
				}
			}
			return
		}
	}
}

// goldenCase is a golden query compiled the same way by every binary.
type goldenCase struct {
	name  string
	query []byte
	args  []string
}

// goldenCases are the golden queries that need no file of their own (no
// tracefs/ formats, no elf/ binaries).
func goldenCases() ([]goldenCase, error) {
	paths, err := filepath.Glob("testdata/queries/*.txtar")
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no golden queries under testdata/queries (run from the repository's root): %v", err)
	}
	var out []goldenCase
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			return nil, err
		}
		c := goldenCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar")}
		own := false
		for _, f := range a.Files {
			switch {
			case f.Name == "query.sql":
				c.query = f.Data
			case f.Name == "args":
				c.args = strings.Fields(string(f.Data))
			case strings.HasPrefix(f.Name, "tracefs/") || strings.HasPrefix(f.Name, "elf/"):
				own = true
			}
		}
		if !own && c.query != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

type outcome struct {
	stdout, stderr string
	code           int
}

// runCase runs a binary (under qemu-user when it is foreign) on a case.
func runCase(bin, qemu string, c goldenCase, dir string) (outcome, error) {
	q := filepath.Join(dir, "query.sql")
	if err := os.WriteFile(q, c.query, 0o644); err != nil {
		return outcome{}, err
	}
	args := append(append([]string{}, c.args...), "--kernel", "6.1", "-t", "/nonexistent/tracefs", "-f", q)
	name := bin
	if qemu != "" {
		name, args = qemu, append([]string{bin}, args...)
	}
	cmd := exec.Command(name, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return outcome{}, err
	}
	return outcome{so.String(), strings.ReplaceAll(se.String(), q, "query.sql"), code}, nil
}

// report checks every binary against the amd64 one and prints a table.
func report(out string, cases []goldenCase) bool {
	dir, err := os.MkdirTemp("", "sqlhist-dist-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	abs := func(t target) string { p, _ := filepath.Abs(filepath.Join(out, t.file())); return p }
	ref := map[string]outcome{}
	var host target
	for _, t := range targets {
		if t.goarch == runtime.GOARCH {
			host = t
		}
	}
	if host.goarch == "" {
		log.Fatalf("no target is this machine's %s: cannot compare outputs", runtime.GOARCH)
	}
	for _, c := range cases {
		o, err := runCase(abs(host), "", c, dir)
		if err != nil {
			log.Fatalf("%s on %s: %v", host.file(), c.name, err)
		}
		ref[c.name] = o
	}
	sums, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	failed := false
	fmt.Printf("%-22s %10s  %-16s %s\n", "binary", "bytes", "sha256", "same output as "+host.file())
	for _, t := range targets {
		st, _ := os.Stat(abs(t))
		sum := ""
		for _, l := range strings.Split(string(sums), "\n") {
			if strings.HasSuffix(l, "  "+t.file()) {
				sum = l[:16]
			}
		}
		verdict := ""
		qemu := ""
		if t.goarch != host.goarch {
			if p, err := exec.LookPath(t.qemu); err == nil {
				qemu = p
			} else {
				verdict = "not run: no " + t.qemu + " (apt-get install qemu-user-static, or -install-qemu)"
			}
		}
		if verdict == "" {
			same, diff := 0, []string{}
			for _, c := range cases {
				o, err := runCase(abs(t), qemu, c, dir)
				if err != nil {
					diff = append(diff, c.name+": "+err.Error())
					continue
				}
				if o != ref[c.name] {
					diff = append(diff, c.name)
					continue
				}
				same++
			}
			verdict = fmt.Sprintf("%d of %d golden queries", same, len(cases))
			if len(diff) > 0 {
				failed = true
				verdict += "; differ: " + strings.Join(diff, ", ")
			}
		}
		fmt.Printf("%-22s %10d  %-16s %s\n", t.file(), st.Size(), sum, verdict)
	}
	return failed
}
