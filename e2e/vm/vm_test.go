package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestCpioRoundTrip(t *testing.T) {
	in := []CpioEntry{
		{Name: "bin", Mode: modeDir | 0o755},
		{Name: "bin/sh", Mode: modeSymlink | 0o777, Data: []byte("/bin/busybox")},
		{Name: "dev/console", Mode: modeCharDev | 0o600, Major: 5, Minor: 1},
		{Name: "init", Mode: modeRegular | 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		{Name: "odd", Mode: modeRegular | 0o644, Data: []byte("x")}, // odd sizes exercise padding
		{Name: "empty", Mode: modeRegular | 0o644},
		{Name: "a/b/c/long-name-to-pad", Mode: modeRegular | 0o600, Data: bytes.Repeat([]byte{0, 1, 2}, 1001)},
	}
	var buf bytes.Buffer
	w := NewCpioWriter(&buf)
	for _, e := range in {
		if err := w.WriteEntry(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", buf.Len())
	}
	out, err := ReadCpio(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d entries, want %d", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Name != b.Name || a.Mode != b.Mode || !bytes.Equal(a.Data, b.Data) || a.Major != b.Major || a.Minor != b.Minor {
			t.Errorf("entry %d: got %+v, want %+v", i, b, a)
		}
	}
	// Cross-check with GNU cpio when the host has it.
	if cpio, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command(cpio, "-t", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -t: %v", err)
		}
		var names []string
		for _, e := range in {
			names = append(names, e.Name)
		}
		if strings.TrimSpace(string(got)) != strings.Join(names, "\n") {
			t.Errorf("cpio -t lists:\n%s\nwant:\n%s", got, strings.Join(names, "\n"))
		}
	}
}

func TestInitramfs(t *testing.T) {
	im, err := NewInitramfs("")
	if err != nil {
		t.Fatal(err)
	}
	im.Symlink("/bin/sh", "/bin/busybox")
	if err := im.Add(File{Path: "/work/deep/x", Mode: 0o755, Data: []byte("bin")}); err != nil {
		t.Fatal(err)
	}
	if err := im.Add(File{Path: "relative"}); err == nil {
		t.Error("relative path accepted")
	}
	img, err := im.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	img2, _ := im.Bytes()
	if !bytes.Equal(img, img2) {
		t.Error("initramfs image is not deterministic")
	}
	zr, err := gzip.NewReader(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := ReadCpio(zr)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]CpioEntry{}
	for _, e := range ents {
		if _, dup := seen[e.Name]; dup {
			t.Errorf("duplicate %s", e.Name)
		}
		// Parents must come first.
		if i := strings.LastIndex(e.Name, "/"); i > 0 {
			if p, ok := seen[e.Name[:i]]; !ok || p.Mode&modeTypeMsk != modeDir {
				t.Errorf("%s comes before its directory", e.Name)
			}
		}
		seen[e.Name] = e
	}
	if e := seen["work/deep/x"]; e.Mode != modeRegular|0o755 || string(e.Data) != "bin" {
		t.Errorf("work/deep/x = %+v", e)
	}
	if e := seen["dev/console"]; e.Mode&modeTypeMsk != modeCharDev || e.Major != 5 || e.Minor != 1 {
		t.Errorf("dev/console = %+v", e)
	}
	if e := seen["bin/sh"]; e.Mode&modeTypeMsk != modeSymlink || string(e.Data) != "/bin/busybox" {
		t.Errorf("bin/sh = %+v", e)
	}
}

func TestInitramfsBusyboxNoSelfLink(t *testing.T) {
	bb, err := StaticBusybox()
	if err != nil {
		t.Skip(err)
	}
	im, err := NewInitramfs(bb)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range im.entries {
		if e.Mode&modeTypeMsk == modeSymlink && strings.HasSuffix(name, "/busybox") {
			t.Errorf("%s is a symlink (it would point at itself)", name)
		}
	}
	for _, want := range []string{"bin/sh", "bin/mount", "bin/tar", "bin/base64"} {
		if _, ok := im.entries[want]; !ok {
			t.Errorf("no %s applet link", want)
		}
	}
	if e := im.entries["bin/busybox"]; e.Mode&modeTypeMsk != modeRegular {
		t.Errorf("bin/busybox is not a regular file")
	}
}

func tarGzBase64(t *testing.T, files map[string]string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, n := range []string{"tmp/a", "tmp/sub/b"} {
		if c, ok := files[n]; ok {
			tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(c))})
			tw.Write([]byte(c))
		}
	}
	tw.Close()
	zw.Close()
	s := base64.StdEncoding.EncodeToString(buf.Bytes())
	// busybox base64 wraps at 76 columns; the console adds CRs.
	var lines []string
	for len(s) > 76 {
		lines = append(lines, s[:76])
		s = s[76:]
	}
	lines = append(lines, s)
	return strings.Join(lines, "\r\n")
}

func TestParseConsole(t *testing.T) {
	const n = "0123456789abcdef"
	files := map[string]string{"tmp/a": "alpha\n", "tmp/sub/b": strings.Repeat("format\n", 100)}
	con := "qemu-system-x86_64: warning: TCG doesn't support requested feature\r\n" +
		"[    0.000000] Linux version 6.1.0\r\n" +
		"@@SQLHIST-BEGIN-" + n + "@@\r\n" +
		"line one\r\n" +
		"\r\n" +
		"no newline at end" + "@@SQLHIST-END-" + n + " status=3@@\r\n" +
		"@@SQLHIST-STDERR-" + n + "@@\r\n" +
		"sh: write error: Invalid argument\r\n" +
		"@@SQLHIST-STDERR-END-" + n + "@@\r\n" +
		"@@SQLHIST-FILES-" + n + "@@\r\n" +
		tarGzBase64(t, files) + "\r\n" +
		"@@SQLHIST-FILES-END-" + n + "@@\r\n" +
		"@@SQLHIST-DONE-" + n + "@@\r\n" +
		"[    4.1] reboot: Power down\r\n"
	p, err := parseConsole(con, n)
	if err != nil {
		t.Fatal(err)
	}
	if !p.begun || !p.ended || !p.done {
		t.Fatalf("flags: %+v", p)
	}
	if want := "line one\n\nno newline at end\n"; p.stdout != want {
		t.Errorf("stdout = %q, want %q", p.stdout, want)
	}
	if p.status != 3 {
		t.Errorf("status = %d", p.status)
	}
	if want := "sh: write error: Invalid argument\n"; p.stderr != want {
		t.Errorf("stderr = %q, want %q", p.stderr, want)
	}
	if len(p.files) != 2 || string(p.files["tmp/a"]) != files["tmp/a"] || string(p.files["tmp/sub/b"]) != files["tmp/sub/b"] {
		t.Errorf("files = %v", p.files)
	}

	// A marker with another nonce (e.g. from a nested run) is not ours.
	p, _ = parseConsole(strings.ReplaceAll(con, "END-"+n+" ", "END-ffffffffffffffff "), n)
	if p.ended {
		t.Error("foreign end marker accepted")
	}
	// A crash in the middle: begun, not ended.
	p, _ = parseConsole("@@SQLHIST-BEGIN-"+n+"@@\nhalf\n[ 3.0] Kernel panic - not syncing\n", n)
	if !p.begun || p.ended || p.stdout != "half\n[ 3.0] Kernel panic - not syncing\n" {
		t.Errorf("crash: %+v", p)
	}
	// Never booted.
	p, _ = parseConsole("qemu: could not load kernel\n", n)
	if p.begun {
		t.Error("begun without marker")
	}
	// Corrupt payload is an error.
	bad := strings.Replace(con, "@@SQLHIST-FILES-"+n+"@@\r\n", "@@SQLHIST-FILES-"+n+"@@\r\n!!!", 1)
	if _, err := parseConsole(bad, n); err == nil {
		t.Error("corrupt payload accepted")
	}
}

// A console that lost its last line (the DONE marker) before the guest
// powered off still brought everything back when each section the guest
// was asked for came whole; one that lost a section's end did not.
func TestParseConsoleLostDone(t *testing.T) {
	const n = "0123456789abcdef"
	files := tarGzBase64(t, map[string]string{"tmp/a": "alpha\n"})
	head := "@@SQLHIST-BEGIN-" + n + "@@\r\nout\r\n@@SQLHIST-END-" + n + " status=0@@\r\n"
	stderr := "@@SQLHIST-STDERR-" + n + "@@\r\nerr\r\n@@SQLHIST-STDERR-END-" + n + "@@\r\n"
	fileSec := "@@SQLHIST-FILES-" + n + "@@\r\n" + files + "\r\n@@SQLHIST-FILES-END-" + n + "@@\r\n"
	down := "[  564.213599] reboot: Power down\r\n"
	combined := Guest{CombinedOutput: true}
	collect := Guest{Collect: []string{"/tmp/a"}}
	for _, c := range []struct {
		name string
		con  string
		g    Guest
		want bool
	}{
		{"combined, DONE lost", head + down, combined, true},
		{"stderr whole, DONE lost", head + stderr + down, Guest{}, true},
		{"stderr cut", head + "@@SQLHIST-STDERR-" + n + "@@\r\nerr\r\n" + down, Guest{}, false},
		{"files whole, DONE lost", head + stderr + fileSec + down, collect, true},
		{"files cut", head + stderr + "@@SQLHIST-FILES-" + n + "@@\r\n" + files[:20] + "\r\n" + down, collect, false},
		{"no END", "@@SQLHIST-BEGIN-" + n + "@@\r\nout\r\n" + down, combined, false},
		{"DONE there", head + stderr + "@@SQLHIST-DONE-" + n + "@@\r\n" + down, collect, true},
	} {
		p, err := parseConsole(c.con, n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := p.complete(c.g); got != c.want {
			t.Errorf("%s: complete = %t, want %t (%+v)", c.name, got, c.want, p)
		}
	}
	// The init script drains the console before it powers off.
	if s := initScript(n, combined); !strings.Contains(s, "stty -F /dev/console \"$(stty -F /dev/console -g)\"") ||
		strings.Index(s, "stty -F") > strings.Index(s, "poweroff -f") {
		t.Errorf("no drain of the console before poweroff:\n%s", s)
	}
}

func TestInitScriptMarkersNotLiteral(t *testing.T) {
	// Printing /init must not produce a marker: the nonce is only
	// spliced in when the shell runs.
	n := "0123456789abcdef"
	s := initScript(n, Guest{Collect: []string{"/tmp/out"}})
	p, _ := parseConsole(s, n)
	if p.begun {
		t.Error("the init script text contains a literal begin marker")
	}
	if !strings.Contains(s, "tar -cz -C / 'tmp/out' | base64") {
		t.Errorf("collect command missing:\n%s", s)
	}
}

func TestInfraError(t *testing.T) {
	var err error = &InfraError{Kernel: "6.1", Reason: "timed out", Console: "a\nb\n"}
	wrapped := fmt.Errorf("boot: %w", err)
	if !IsInfra(wrapped) || IsInfra(errors.New("x")) {
		t.Error("IsInfra")
	}
	if !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "b") {
		t.Error(err.Error())
	}
}

func TestLookupKernel(t *testing.T) {
	for _, n := range []string{"5.10", "6.1", "6.12", "7.2", "6.12-riscv64", "trixie"} {
		if _, err := LookupKernel(n); err != nil {
			t.Error(err)
		}
	}
	if _, err := LookupKernel("4.19"); err == nil {
		t.Error("unknown kernel accepted")
	}
}

func TestFindVmlinuz(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(d+"/usr/lib/modules/7.2.13+deb14-cloud-amd64", 0o755)
	os.WriteFile(d+"/usr/lib/modules/7.2.13+deb14-cloud-amd64/vmlinuz", []byte("k"), 0o644)
	if p, rel := findVmlinuz(d); rel != "7.2.13+deb14-cloud-amd64" || p == "" {
		t.Errorf("sid layout: %q %q", p, rel)
	}
	d = t.TempDir()
	os.MkdirAll(d+"/boot", 0o755)
	os.WriteFile(d+"/boot/vmlinuz-6.1.0-56-cloud-amd64", []byte("k"), 0o644)
	if _, rel := findVmlinuz(d); rel != "6.1.0-56-cloud-amd64" {
		t.Errorf("boot layout: %q", rel)
	}
	// riscv64's image is boot/vmlinux-<release> (uncompressed), and a
	// vmlinuz beside a vmlinux wins.
	d = t.TempDir()
	os.MkdirAll(d+"/boot", 0o755)
	os.WriteFile(d+"/boot/vmlinux-6.12.117+deb13-riscv64", []byte("k"), 0o644)
	if p, rel := findVmlinuz(d); rel != "6.12.117+deb13-riscv64" || !strings.HasSuffix(p, "/boot/vmlinux-6.12.117+deb13-riscv64") {
		t.Errorf("riscv64 layout: %q %q", p, rel)
	}
	os.WriteFile(d+"/boot/vmlinuz-6.12.117+deb13-riscv64", []byte("k"), 0o644)
	if p, _ := findVmlinuz(d); !strings.HasSuffix(p, "/boot/vmlinuz-6.12.117+deb13-riscv64") {
		t.Errorf("vmlinuz and vmlinux: %q", p)
	}
}

// TestMachineOf: every kernel's architecture has a machine, and one whose
// qemu EnsureHostTools does not install names its Debian package.
func TestMachineOf(t *testing.T) {
	for _, k := range Kernels {
		m, err := MachineOf(k.Arch)
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		if !slices.Contains(hostQemus, m.Qemu) && m.Package == "" {
			t.Errorf("%s: %s is not a host tool and has no package", k.Name, m.Qemu)
		}
	}
	if m, _ := MachineOf("riscv64"); m.Qemu != "qemu-system-riscv64" || m.Package != "qemu-system-misc" || !strings.HasPrefix(m.Cmdline, "console=ttyS0 ") {
		t.Errorf("riscv64: %+v", m)
	}
}
