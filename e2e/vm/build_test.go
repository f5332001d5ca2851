package vm

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseKconfigFragment(t *testing.T) {
	lines, err := parseKconfig(`# a comment
CONFIG_FTRACE=y

  CONFIG_LOCALVERSION="-x \"y\""
# CONFIG_MODULES is not set
CONFIG_LOG_BUF_SHIFT=17
`, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []kconfigLine{
		{Sym: "FTRACE", Value: "y", Line: 2},
		{Sym: "LOCALVERSION", Value: `"-x \"y\""`, Line: 4},
		{Sym: "MODULES", Value: "n", Line: 5},
		{Sym: "LOG_BUF_SHIFT", Value: "17", Line: 6},
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("got %+v\nwant %+v", lines, want)
	}
	if got := lines[2].String(); got != "# CONFIG_MODULES is not set" {
		t.Errorf("String of an unset line = %q", got)
	}
	for _, bad := range []string{
		"FTRACE=y",                         // no CONFIG_ prefix
		"CONFIG_FTRACE",                    // no value
		"CONFIG_FTRACE=",                   // empty value
		"CONFIG_FTRACE=y\nCONFIG_FTRACE=y", // twice
		"CONFIG_FTRACE=y\n# CONFIG_FTRACE is not set",
		"CONFIG_FTRACE=y # trailing comment",
		"CONFIG_FTRACE=yes",
		`CONFIG_LOCALVERSION="-x`,
		`CONFIG_LOCALVERSION="-x" y`,
	} {
		if _, err := parseKconfig(bad, true); err == nil {
			t.Errorf("fragment %q: no error", bad)
		}
	}
	// A .config (not strict) skips what is not a setting.
	if l, err := parseKconfig("#\n# Automatically generated file\nCONFIG_A=y\nCONFIG_EMPTY=\nnoise\n", false); err != nil || len(l) != 1 || l[0].Sym != "A" {
		t.Errorf("lenient parse = %+v, %v", l, err)
	}
}

// TestTinyFragment checks the repository's fragment parses and sets what
// the boot-time and hist tests rely on.
func TestTinyFragment(t *testing.T) {
	for _, k := range Kernels {
		if k.Build == nil {
			continue
		}
		s, err := k.Build.settings()
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		have := map[string]string{}
		for _, l := range s {
			have[l.Sym] = l.Value
		}
		for _, sym := range []string{"BOOT_CONFIG", "BOOTTIME_TRACING", "HIST_TRIGGERS", "SYNTH_EVENTS", "KPROBE_EVENTS",
			"UPROBE_EVENTS", "FTRACE_SYSCALLS", "POSIX_TIMERS", "FUTEX", "EPOLL", "EVENTFD", "BLK_DEV_INITRD", "RD_GZIP", "SERIAL_8250_CONSOLE"} {
			if have[sym] != "y" {
				t.Errorf("%s: CONFIG_%s=%q, want y", k.Name, sym, have[sym])
			}
		}
		if k.DebArch() != "amd64" {
			t.Errorf("%s: a built kernel of %s", k.Name, k.DebArch())
		}
	}
	ents, err := fs.ReadDir(kconfigFS, "kconfig")
	if err != nil || len(ents) == 0 {
		t.Fatalf("embedded kconfig directory: %v, %d files", err, len(ents))
	}
}

func TestBuildKey(t *testing.T) {
	parse := func(s string) []kconfigLine {
		t.Helper()
		l, err := parseKconfig(s, true)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	base := parse("CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n")
	k := buildKey("6.1.192-2", base)
	if !strings.HasPrefix(k, "6.1.192-2-") || len(k) != len("6.1.192-2-")+12 {
		t.Errorf("key %q: want 6.1.192-2-<12 hex digits>", k)
	}
	same := map[string]string{
		"comments and blank lines": "# the fragment\n\nCONFIG_A=y\n# more\nCONFIG_B=y\n# CONFIG_C is not set\n",
		"another order":            "# CONFIG_C is not set\nCONFIG_B=y\nCONFIG_A=y\n",
	}
	for what, s := range same {
		if got := buildKey("6.1.192-2", parse(s)); got != k {
			t.Errorf("%s changed the key: %q, was %q", what, got, k)
		}
	}
	differ := map[string]struct {
		version string
		text    string
	}{
		"another source version": {"6.1.192-3", "CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n"},
		"a setting dropped":      {"6.1.192-2", "CONFIG_A=y\nCONFIG_B=y\n"},
		"a setting added":        {"6.1.192-2", "CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\nCONFIG_D=y\n"},
		"a value changed":        {"6.1.192-2", "CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\n"},
		"unset turned on":        {"6.1.192-2", "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=y\n"},
	}
	for what, d := range differ {
		if got := buildKey(d.version, parse(d.text)); got == k {
			t.Errorf("%s: the key stayed %q", what, k)
		}
	}
	if got := buildKey("1:6.1-2~bpo", base); strings.ContainsAny(got, ":/") {
		t.Errorf("key %q is not a safe directory name", got)
	}
}

func TestBuildSettingsExtra(t *testing.T) {
	b := &KernelBuild{Source: "linux-source-6.1", Fragment: "tiny.fragment", Extra: []string{"CONFIG_X_ONLY_HERE=y", "# CONFIG_ACPI is not set"}}
	s, err := b.settings()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := (&KernelBuild{Source: "linux-source-6.1", Fragment: "tiny.fragment"}).settings()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != len(plain)+1 {
		t.Errorf("with Extra: %d settings, want %d (one added, one overridden)", len(s), len(plain)+1)
	}
	got := map[string]kconfigLine{}
	for _, l := range s {
		got[l.Sym] = l
	}
	if got["ACPI"].Value != "n" || got["ACPI"].Line != 0 {
		t.Errorf("Extra did not override ACPI: %+v", got["ACPI"])
	}
	if got["X_ONLY_HERE"].Value != "y" {
		t.Errorf("Extra line missing: %+v", got)
	}
	if buildKey("1", s) == buildKey("1", plain) {
		t.Error("Extra lines do not change the key")
	}
	if _, err := (&KernelBuild{Fragment: "no-such.fragment"}).settings(); err == nil {
		t.Error("a missing fragment: no error")
	}
	if _, err := (&KernelBuild{Fragment: "tiny.fragment", Extra: []string{"CONFIG_A"}}).settings(); err == nil {
		t.Error("a malformed Extra line: no error")
	}
}

// A .config as make olddefconfig leaves it: the fragment asked for
// FTRACE, HIST_TRIGGERS and SYNTH_EVENTS, MODULES off, a LOCALVERSION and
// a number; SYNTH_EVENTS was dropped (unmet dependency) and the number
// differs.
const sampleDotConfig = `#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.1.192 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT="gcc (Debian 12.2.0-14) 12.2.0"
CONFIG_LOCALVERSION="-sqlhist"
# CONFIG_LOCALVERSION_AUTO is not set
CONFIG_FTRACE=y
CONFIG_HIST_TRIGGERS=y
# CONFIG_SYNTH_EVENTS is not set
CONFIG_LOG_BUF_SHIFT=12
# CONFIG_MODULES is not set
`

func TestCheckKconfig(t *testing.T) {
	frag, err := parseKconfig(`CONFIG_FTRACE=y
CONFIG_HIST_TRIGGERS=y
CONFIG_SYNTH_EVENTS=y
CONFIG_BOOT_CONFIG=y
# CONFIG_MODULES is not set
# CONFIG_KPROBES is not set
CONFIG_LOCALVERSION="-sqlhist"
CONFIG_LOG_BUF_SHIFT=17
`, true)
	if err != nil {
		t.Fatal(err)
	}
	bad := checkKconfig(sampleDotConfig, frag)
	var got []string
	for _, m := range bad {
		got = append(got, m.String())
	}
	want := []string{
		"CONFIG_SYNTH_EVENTS (want y, is not set)", // dropped
		"CONFIG_BOOT_CONFIG (want y, is not set)",  // absent from .config altogether
		"CONFIG_LOG_BUF_SHIFT (want 17, is 12)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mismatches:\n got %q\nwant %q", got, want)
	}
	if bad[0].Want.Line != 3 {
		t.Errorf("SYNTH_EVENTS reported at line %d, want 3", bad[0].Want.Line)
	}
	// Everything held: nothing to report.
	ok, _ := parseKconfig("CONFIG_FTRACE=y\n# CONFIG_MODULES is not set\n", true)
	if bad := checkKconfig(sampleDotConfig, ok); len(bad) != 0 {
		t.Errorf("unexpected mismatches %v", bad)
	}
}

func TestMergeKconfig(t *testing.T) {
	frag, _ := parseKconfig("CONFIG_SYNTH_EVENTS=y\n# CONFIG_FTRACE is not set\nCONFIG_NEW=y\n", true)
	merged := mergeKconfig(sampleDotConfig, frag)
	if strings.Contains(merged, "# CONFIG_SYNTH_EVENTS is not set") || strings.Contains(merged, "CONFIG_FTRACE=y") {
		t.Errorf("the old settings of merged symbols stayed:\n%s", merged)
	}
	for _, l := range []string{"CONFIG_SYNTH_EVENTS=y\n", "# CONFIG_FTRACE is not set\n", "CONFIG_NEW=y\n", "CONFIG_HIST_TRIGGERS=y\n", `CONFIG_LOCALVERSION="-sqlhist"` + "\n"} {
		if strings.Count(merged, l) != 1 {
			t.Errorf("want %q once in the merged .config:\n%s", l, merged)
		}
	}
	if bad := checkKconfig(merged, frag); len(bad) != 0 {
		t.Errorf("the merge does not hold the fragment: %v", bad)
	}
}

func TestKconfigDefined(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernel/trace/Kconfig", "menuconfig FTRACE\n\tbool \"Tracers\"\nconfig HIST_TRIGGERS\n\tdepends on FTRACE\n")
	write("arch/x86/Kconfig.debug", "config UNWINDER_GUESS\n\tbool\n")
	write("kernel/trace/notes.txt", "config EPROBE_EVENTS\n")
	got := kconfigDefined(dir, []string{"FTRACE", "HIST_TRIGGERS", "UNWINDER_GUESS", "EPROBE_EVENTS"})
	want := map[string]bool{"FTRACE": true, "HIST_TRIGGERS": true, "UNWINDER_GUESS": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defined = %v, want %v", got, want)
	}
}

func TestBuiltKernelNames(t *testing.T) {
	for _, name := range []string{"6.1-boot", "5.10-hist"} {
		k, err := LookupKernel(name)
		if err != nil {
			t.Fatal(err)
		}
		if !k.Built() || k.DebArch() != "amd64" {
			t.Errorf("%s: built %v, arch %s", name, k.Built(), k.DebArch())
		}
		if v := k.ShortVersion(); v+"-"+strings.SplitN(name, "-", 2)[1] != name {
			t.Errorf("%s: ShortVersion %q", name, v)
		}
	}
	// A suite still names Debian's prebuilt kernel, not a built one.
	for _, suite := range []string{"bookworm", "bullseye"} {
		if k, _ := LookupKernel(suite); k.Built() {
			t.Errorf("LookupKernel(%q) = built kernel %s", suite, k.Name)
		}
	}
}
