package emit

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// Quote quotes s for a POSIX shell: the result is one word that the shell
// turns back into exactly s, whatever s holds. It is the only place where
// sqlhist quotes anything for a shell.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PrintOptions control the script printer.
type PrintOptions struct {
	Root  string   // the tracefs root in printed paths, e.g. /sys/kernel/tracing
	Notes []string // printed first, as comments
}

// Print writes cmds as a shell script: one "echo 'LINE' >> PATH" per
// command, always appending. A line that some shell's echo would not
// print as it is is written with printf '%s\n' instead: one holding a
// backslash (dash's and mksh's echo interpret it) and one that is an
// option of echo ("-n", "-e", "-E" or a combination: bash's, busybox's
// and mksh's echo take them, dash's takes "-n").
func Print(w io.Writer, cmds []Command, opt PrintOptions) error {
	var b strings.Builder
	for _, n := range opt.Notes {
		for _, l := range strings.Split(n, "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	for _, c := range cmds {
		if c.Kind == KindDir {
			// A script is appends only: directories are the reader's job.
			fmt.Fprintf(&b, "# %s %s\n", c.Line, Quote(path.Join(opt.Root, c.File)))
			continue
		}
		b.WriteString(Line(c, opt.Root) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Line renders one command as a shell line.
func Line(c Command, root string) string {
	p := Quote(path.Join(root, c.File))
	if safePath(path.Join(root, c.File)) {
		p = path.Join(root, c.File)
	}
	if strings.ContainsRune(c.Line, '\\') || echoOption(c.Line) {
		return fmt.Sprintf("printf '%%s\\n' %s >> %s", Quote(c.Line), p)
	}
	return fmt.Sprintf("echo %s >> %s", Quote(c.Line), p)
}

// echoOption reports whether echo would take s as its options.
func echoOption(s string) bool {
	return len(s) >= 2 && s[0] == '-' && strings.Trim(s[1:], "neE") == ""
}

// safePath reports whether p can be printed without quotes.
func safePath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-+,:@%", c) >= 0) {
			return false
		}
	}
	return p != ""
}
