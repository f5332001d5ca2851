package emit

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sqlhist/sqlhist/source"
)

// bootSignature starts every bootconfig sqlhist writes (BootHeader's
// first line): how --initrd tells its own bootconfigs from others.
const bootSignature = "# Boot-time tracing written by sqlhist"

// ForeignBootconfigError is an initrd's bootconfig that sqlhist did not
// write: adding to it could change what someone else's keys do.
type ForeignBootconfigError struct {
	Size      int
	FirstLine string
}

func (e *ForeignBootconfigError) Error() string {
	return fmt.Sprintf("it carries a bootconfig that sqlhist did not write (%d bytes, first line %q); sqlhist adds only to its own: "+
		"remove that one first (tools/bootconfig: bootconfig -d FILE) or add this query's -o bootconfig to it by hand", e.Size, e.FirstLine)
}

// MergeBootconfig returns the bootconfig an initrd that carries old (""
// for none) should carry once text, a bootconfig of BootCommands, is
// added (text is the Bootconfig of cmds for opt): text alone; old with text appended when old is sqlhist's (one or
// more of its bootconfigs, concatenated); old as it is when it already
// holds text (same is then true). It refuses a foreign old, and a merge
// the kernel would reject or apply in another order than text needs:
// keys given a value twice ("Value is redefined": the kernel then drops
// the whole bootconfig), or an event that old puts before one it needs
// (the kernel applies the events of a group together, where the group
// first appears).
func MergeBootconfig(old, text string, cmds []Command, opt BootOptions) (merged string, same bool, err error) {
	if strings.TrimSpace(old) == "" {
		return text, false, nil
	}
	if !strings.HasPrefix(old, bootSignature) {
		first, _, _ := strings.Cut(old, "\n")
		if len(first) > 60 {
			first = first[:60] + "…"
		}
		return "", false, &ForeignBootconfigError{Size: len(old), FirstLine: first}
	}
	for _, b := range splitBootconfigs(old) {
		if b == text {
			return old, true, nil
		}
	}
	merged = old
	if !strings.HasSuffix(merged, "\n") {
		merged += "\n"
	}
	merged += "\n" + text
	if err := CheckBootconfig(merged); err != nil {
		return "", false, fmt.Errorf("its sqlhist bootconfig and this one cannot be combined: %v", err)
	}
	if err := checkEventOrder(merged, cmds, opt); err != nil {
		return "", false, err
	}
	if len(merged) > BootconfigMax {
		return "", false, fmt.Errorf("its bootconfig and this one make %d bytes; the kernel takes at most %d", len(merged), BootconfigMax)
	}
	return merged, false, nil
}

// splitBootconfigs cuts concatenated sqlhist bootconfigs apart at their
// signature lines, each with the blank line before it removed.
func splitBootconfigs(s string) []string {
	var out []string
	for {
		i := strings.Index(s[1:], "\n\n"+bootSignature)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+2])
		s = s[i+3:]
	}
}

// eventKey matches the line that opens an event's block, as Bootconfig
// writes it.
var eventKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(ftrace\.(?:instance\.[A-Za-z0-9_-]+\.)?event\.[A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+) \{$`)
})

// eventOrder is the order in which the kernel applies the event blocks of
// a bootconfig: groups in the order they first appear, each group's
// events in the order they first appear.
func eventOrder(s string) []string {
	var groups []string
	events := map[string][]string{}
	seen := map[string]bool{}
	for _, m := range eventKey().FindAllStringSubmatch(s, -1) {
		g, ev := m[1], m[1]+"."+m[2]
		if _, ok := events[g]; !ok {
			groups = append(groups, g)
			events[g] = nil
		}
		if !seen[ev] {
			seen[ev] = true
			events[g] = append(events[g], ev)
		}
	}
	var out []string
	for _, g := range groups {
		out = append(out, events[g]...)
	}
	return out
}

// checkEventOrder checks that the kernel, applying merged, applies every
// event block of cmds after the blocks it needs (its start trigger's
// event, the synthetic events it fires).
func checkEventOrder(merged string, cmds []Command, opt BootOptions) error {
	pos := map[string]int{}
	for i, ev := range eventOrder(merged) {
		pos[ev] = i
	}
	var diags source.Diags
	nodes, order := bootNodes(cmds, opt, &diags)
	for _, k := range order {
		n := nodes[k]
		for _, d := range slices.Sorted(maps.Keys(n.deps)) {
			a, b := nodes[d].eventKey(), n.eventKey()
			if pos[a] > pos[b] {
				return fmt.Errorf("this query needs %s applied before %s, and the kernel would apply them the other way round "+
					"(it applies the events of a group together, where the group first appears, and the bootconfig there has %s first); "+
					"print the queries into one bootconfig instead (one -f file with all of them)", a, b, groupOf(b))
			}
		}
	}
	return nil
}

func groupOf(eventKey string) string {
	i := strings.LastIndexByte(eventKey, '.')
	return eventKey[:i]
}

// CheckBootconfig parses text as lib/bootconfig.c does, as far as the
// rules a concatenation can break: it returns the kernel's error for a
// key given a value twice with "=" ("Value is redefined"; "+=" appends
// and ":=" overrides) and for braces that do not match.
func CheckBootconfig(text string) error {
	p := &bootParser{s: text, values: map[string]bool{}}
	return p.parse()
}

type bootParser struct {
	s      string
	i      int
	stack  []string // the keys of the open braces
	values map[string]bool
}

func (p *bootParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.s[:p.i], "\n")
	return fmt.Errorf("bootconfig line %d: "+format, append([]any{line}, args...)...)
}

func (p *bootParser) key(word string) string {
	word = strings.TrimSpace(word)
	if len(p.stack) == 0 {
		return word
	}
	return p.stack[len(p.stack)-1] + "." + word
}

func (p *bootParser) parse() error {
	start := 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
			start = p.i
			continue
		case '{':
			p.stack = append(p.stack, p.key(p.s[start:p.i]))
		case '}':
			if len(p.stack) == 0 {
				return p.errorf("unexpected closing brace")
			}
			p.stack = p.stack[:len(p.stack)-1]
		case '=', '+', ':':
			op := c
			k := p.key(p.s[start:p.i])
			if op != '=' {
				if p.i+1 >= len(p.s) || p.s[p.i+1] != '=' {
					return p.errorf("wrong %q operator", op)
				}
				p.i++
			}
			if op == '=' && p.values[k] {
				return p.errorf("Value is redefined: %s", k)
			}
			p.values[k] = true
			p.i++
			if err := p.skipValues(); err != nil {
				return err
			}
			start = p.i
			continue
		}
		p.i++
		if c == '{' || c == '}' || c == ';' || c == '\n' {
			start = p.i
		}
	}
	if len(p.stack) > 0 {
		return p.errorf("brace of %s is not closed", p.stack[len(p.stack)-1])
	}
	return nil
}

// skipValues moves past a value or an array of values: quoted, or up to
// one of ",;\n#}"; a comma continues the array, on the next line too.
func (p *bootParser) skipValues() error {
	for {
		for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
			p.i++
		}
		if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '\'') {
			end := strings.IndexByte(p.s[p.i+1:], p.s[p.i])
			if end < 0 {
				return p.errorf("value has no closing quote")
			}
			p.i += end + 2
		}
		for p.i < len(p.s) && !strings.ContainsRune(",;\n#}", rune(p.s[p.i])) {
			p.i++
		}
		if p.i >= len(p.s) || p.s[p.i] != ',' {
			return nil
		}
		p.i++
		for p.i < len(p.s) && strings.ContainsRune(" \t\n", rune(p.s[p.i])) {
			p.i++
		}
	}
}
