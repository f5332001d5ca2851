package tracefs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// A key's or a value's name. One that is an expression is printed as its
// text: "common_timestamp/1000000", "16-8-4-2"; a constant the kernel
// folded (vals=16-8-4-2) has no name: "  : 2".
func nameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func nameByte(c byte) bool {
	return nameStart(c) || c == '.' || c == '+' || c == '*' || c == '/' || c == '-'
}

// keyNames finds the keys' names in an entry's key text, as
// FindAllStringSubmatchIndex of `(?:^|, )([A-Za-z_0-9][A-Za-z0-9_.+*/-]*):(?: |$)`
// would, without a regular expression (a histogram of a few hundred
// entries took 10 ms on the host, 0.1-0.2 s in a guest under qemu's
// emulation): for each, the match's start and end and the name's.
func keyNames(text string) [][4]int {
	var locs [][4]int
	for i := 0; i < len(text); {
		if i == 0 {
			if m, ok := keyNameAt(text, 0, 0); ok {
				locs, i = append(locs, m), m[1]
				continue
			}
		}
		if strings.HasPrefix(text[i:], ", ") {
			if m, ok := keyNameAt(text, i, i+2); ok {
				locs, i = append(locs, m), m[1]
				continue
			}
		}
		i++
	}
	return locs
}

// keyNameAt matches a key's name at j, "name:" then a space or the end,
// for a match that starts at start.
func keyNameAt(text string, start, j int) ([4]int, bool) {
	if j >= len(text) || !nameStart(text[j]) {
		return [4]int{}, false
	}
	k := j + 1
	for k < len(text) && nameByte(text[k]) {
		k++
	}
	if k >= len(text) || text[k] != ':' {
		return [4]int{}, false
	}
	end := k + 1
	if end < len(text) {
		if text[end] != ' ' {
			return [4]int{}, false
		}
		end++
	}
	return [4]int{start, end, j, k}, true
}

// valNames finds the values' names, as FindAllStringSubmatchIndex of
// `(?:^|\s)([A-Za-z_$0-9][A-Za-z0-9_.$+*/-]*|)( \(%\))?:` would: the
// match, the name (maybe empty) and the " (%)" of a percentage (-1, -1
// without one).
func valNames(text string) [][6]int {
	var locs [][6]int
	for i := 0; i < len(text); {
		if i == 0 {
			if m, ok := valNameAt(text, 0, 0); ok {
				locs = append(locs, m)
				i = max(m[1], 1)
				continue
			}
		}
		if isSpace(text[i]) {
			if m, ok := valNameAt(text, i, i+1); ok {
				locs, i = append(locs, m), m[1]
				continue
			}
		}
		i++
	}
	return locs
}

// isSpace is the regular expressions' \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// valNameAt matches a value's name at j, then " (%)" or not, then ":",
// for a match that starts at start.
func valNameAt(text string, start, j int) ([6]int, bool) {
	k := j
	if k < len(text) && (nameStart(text[k]) || text[k] == '$') {
		k++
		for k < len(text) && (nameByte(text[k]) || text[k] == '$') {
			k++
		}
	}
	m := [6]int{start, 0, j, k, -1, -1}
	if strings.HasPrefix(text[k:], " (%):") {
		m[4], m[5], k = k, k+4, k+4
	}
	if k >= len(text) || text[k] != ':' {
		return m, false
	}
	m[1] = k + 1
	return m, true
}

// parseHistKeys splits "a: 1, b: x" into keys; mods are the key modifiers
// from the trigger, used when there is one per key. A stack trace key is
// written "name: " in text, and its frames are the next of stacks.
func parseHistKeys(text string, mods []string, stacks [][]string) ([]HistValue, error) {
	locs := keyNames(text)
	if len(locs) == 0 || locs[0][0] != 0 {
		return nil, fmt.Errorf("bad key %q", text)
	}
	keys := make([]HistValue, 0, len(locs))
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		mod, known := "", len(mods) == len(locs)
		if known {
			mod = mods[i]
		}
		name := text[loc[2]:loc[3]]
		var fr []string
		if len(stacks) > 0 && strings.HasSuffix(name, "stacktrace") {
			name = strings.TrimSuffix(name, ".stacktrace")
			fr, stacks = stacks[0], stacks[1:]
			if fr == nil {
				fr = []string{} // a stack without frames is still one
			}
		}
		k, err := parseHistKey(name, text[loc[1]:end], mod, known, fr)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// parseHistKey reads one key value s (as printed, padding included). When
// the modifier is known only that modifier's form is accepted; otherwise
// the form is guessed from the text.
func parseHistKey(name, s, mod string, known bool, frames []string) (HistValue, error) {
	v := HistValue{Name: name, Raw: strings.TrimSpace(s)}
	raw := v.Raw
	if !known || frames != nil || !keyModifiers[mod] {
		mod = guessKeyModifier(name, s, frames)
	}
	var err error
	switch mod {
	case "stacktrace":
		// A stack's printed value is its frames, one a line.
		v.Kind, v.Frames, v.Raw = HistStacktrace, frames, strings.Join(frames, "\n")
	case "log2":
		v.Kind = HistLog2
		exp, ok := strings.CutPrefix(raw, "~ 2^")
		v.Num, err = parseUintOK(exp, 10, ok)
	case "buckets":
		v.Kind = HistBuckets
		r, ok := strings.CutPrefix(raw, "~ ")
		lo, hi, ok2 := strings.Cut(r, "-")
		if v.Num, err = parseUintOK(lo, 10, ok && ok2); err == nil {
			v.High, err = parseUintOK(hi, 10, true)
		}
	case "sym", "sym-offset":
		v.Kind = HistSym
		if mod == "sym-offset" {
			v.Kind = HistSymOffset
		}
		addr, sym, ok := strings.Cut(strings.TrimPrefix(raw, "["), "]")
		v.Num, err = parseUintOK(addr, 16, ok && strings.HasPrefix(raw, "["))
		v.Text = strings.TrimSpace(sym)
	case "execname", "syscall":
		v.Kind = HistExecname
		if mod == "syscall" {
			v.Kind = HistSyscall
		}
		i := strings.LastIndex(raw, "[")
		ok := i >= 0 && strings.HasSuffix(raw, "]")
		if ok {
			v.Text = strings.TrimSpace(raw[:i])
			v.Num, err = parseUintOK(strings.TrimSpace(raw[i+1:len(raw)-1]), 10, true)
		} else {
			err = fmt.Errorf("bad value")
		}
	case "hex":
		v.Kind = HistHex
		v.Num, err = parseUintOK(raw, 16, true)
	case "string":
		v.Kind, v.Text = HistString, raw
	default:
		if n, perr := strconv.ParseUint(raw, 10, 64); perr == nil {
			v.Num = n
		} else {
			v.Kind, v.Text = HistString, raw
		}
	}
	if err != nil {
		return v, fmt.Errorf("bad %s key %s: %q", mod, name, raw)
	}
	return v, nil
}

// keyModifiers are the key modifiers whose printed form parseHistKey
// knows; "" and "usecs" print plain numbers (or a string for char[]).
var keyModifiers = map[string]bool{
	"": true, "usecs": true, "hex": true, "sym": true, "sym-offset": true,
	"execname": true, "syscall": true, "log2": true, "buckets": true, "stacktrace": true,
}

var bracketNumRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[\s*\d+\]$`) })

// guessKeyModifier guesses the printed form of a key whose modifier the
// trigger listing did not tell.
func guessKeyModifier(name, s string, frames []string) string {
	raw := strings.TrimSpace(s)
	switch {
	case frames != nil || strings.HasSuffix(name, "stacktrace"):
		return "stacktrace"
	case strings.HasPrefix(raw, "~ 2^"):
		return "log2"
	case strings.HasPrefix(raw, "~ "):
		return "buckets"
	case strings.HasPrefix(raw, "[") && strings.Contains(raw, "] "):
		if strings.Contains(raw, "+0x") {
			return "sym-offset"
		}
		return "sym"
	case bracketNumRE().MatchString(raw):
		// execname pads the comm to 16 columns, syscall the name to 30.
		if strings.Index(s, "[") == 16 {
			return "execname"
		}
		return "syscall"
	}
	if _, err := strconv.ParseUint(raw, 10, 64); err == nil {
		return ""
	}
	if _, err := strconv.ParseUint(raw, 16, 64); err == nil {
		return "hex"
	}
	return "string"
}

func parseUintOK(s string, base int, ok bool) (uint64, error) {
	if !ok {
		return 0, fmt.Errorf("bad value")
	}
	return strconv.ParseUint(strings.TrimSpace(s), base, 64)
}

// parseHistVals reads "  name: V  name2: V" (after a key's closing brace,
// or a handler line). With strict, every value must be a number in its
// field's form; otherwise a value that is not a number is a string (a
// saved char[] field).
func parseHistVals(text string, mods map[string]string, strict bool) ([]HistValue, error) {
	locs := valNames(text)
	if len(locs) == 0 {
		if strings.TrimSpace(text) != "" {
			return nil, fmt.Errorf("bad values %q", text)
		}
		return nil, nil
	}
	if strings.TrimSpace(text[:locs[0][0]]) != "" {
		return nil, fmt.Errorf("bad values %q", text)
	}
	vals := make([]HistValue, 0, len(locs))
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		v := HistValue{Name: text[loc[2]:loc[3]], Raw: strings.TrimSpace(text[loc[1]:end])}
		var err error
		switch {
		case loc[4] >= 0:
			v.Kind = HistPercent
			v.Percent, err = strconv.ParseFloat(v.Raw, 64)
		case mods[v.Name] == "graph" && strings.Trim(v.Raw, "#") == "":
			// A bar is '#'s (none for a small share); the field's own
			// sum, when the trigger has both, prints under the same name.
			v.Kind, v.Text = HistGraph, v.Raw
		case mods[v.Name] == "hex":
			v.Kind = HistHex
			v.Num, err = strconv.ParseUint(v.Raw, 16, 64)
		default:
			v.Num, err = strconv.ParseUint(v.Raw, 10, 64)
			if err != nil && !strict {
				v.Kind, v.Text, err = HistString, v.Raw, nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("bad value %s: %q", v.Name, v.Raw)
		}
		vals = append(vals, v)
	}
	return vals, nil
}
