package emit

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sqlhist/sqlhist/internal/fuzzguard"
)

var hostile = []string{
	"", "plain", "it's", "'", "''", `"`, `\`, `\'`, "$(touch /tmp/pwned)", "`id`",
	"a\nb", "tab\there", "semi; rm -rf /", "!hist", "*", "~root", "-n", "%s\\n", "\x01\x7f",
	"ünïcödé", "x'; touch /tmp/pwned; echo '",
}

// shellEcho runs the quoted word through sh and returns what printf saw.
func shellRoundTrip(t *testing.T, s string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "printf '%s' "+Quote(s)).Output()
	if err != nil {
		t.Fatalf("sh failed on %q: %v", s, err)
	}
	return string(out)
}

func TestQuoteRoundTrips(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("no sh on this machine")
	}
	for _, s := range hostile {
		if got := shellRoundTrip(t, s); got != s {
			t.Errorf("Quote(%q) came back from sh as %q", s, got)
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // a shell word cannot hold NUL
		}
		// Each input starts a shell: a bound ten times the others'.
		var got string
		fuzzguard.Run(10*fuzzguard.Limit, s, func() { got = shellRoundTrip(t, s) })
		if got != s {
			t.Errorf("Quote(%q) came back from sh as %q", s, got)
		}
	})
}

func TestLineUsesPrintfForBackslashes(t *testing.T) {
	tests := []struct{ line, want string }{
		{`hist:keys=pid if comm ~ "a\b"`, `printf '%s\n' 'hist:keys=pid if comm ~ "a\b"' >> /t/events/x/y/trigger`},
		{`hist:keys=pid if comm == "it's"`, `echo 'hist:keys=pid if comm == "it'\''s"' >> /t/events/x/y/trigger`},
	}
	for _, tt := range tests {
		got := Line(Command{File: "events/x/y/trigger", Line: tt.line}, "/t")
		if got != tt.want {
			t.Errorf("Line(%q)\n got %s\nwant %s", tt.line, got, tt.want)
		}
		// What the shell writes must be the command line itself.
		out, err := exec.Command("sh", "-c", strings.Replace(got, " >> /t/events/x/y/trigger", "", 1)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.line+"\n" {
			t.Errorf("sh printed %q, want %q", out, tt.line+"\n")
		}
	}
}

func TestLineQuotesOddRoots(t *testing.T) {
	got := Line(Command{File: "dynamic_events", Line: "s:x u64 a"}, "/mnt/my tracefs")
	if got != `echo 's:x u64 a' >> '/mnt/my tracefs/dynamic_events'` {
		t.Errorf("got %s", got)
	}
}

func TestTeardownReverses(t *testing.T) {
	cmds := []Command{
		{File: "dynamic_events", Line: "s:x u64 a", Undo: "-:x", What: "synthetic event x"},
		{File: "events/a/b/trigger", Line: "hist:keys=k:v=f", Undo: "!hist:keys=k:v=f", What: "start"},
		{File: "events/c/d/trigger", Line: "hist:keys=k:onmatch(a.b).trace(x,$v)", Undo: "!hist:keys=k:onmatch(a.b).trace(x,$v)", What: "end"},
	}
	td := Teardown(cmds)
	want := []string{"!hist:keys=k:onmatch(a.b).trace(x,$v)", "!hist:keys=k:v=f", "-:x"}
	for i, c := range td {
		if c.Line != want[i] {
			t.Errorf("teardown[%d] = %q, want %q", i, c.Line, want[i])
		}
	}
}
