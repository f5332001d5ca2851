package tracefs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	// A key or value that is an expression is printed as its text:
	// "common_timestamp/1000000", "16-8-4-2".
	keyNameRE = regexp.MustCompile(`(?:^|, )([A-Za-z_0-9][A-Za-z0-9_.+*/-]*):(?: |$)`)
	// A constant the kernel folded (vals=16-8-4-2) has no name: "  : 2".
	valNameRE = regexp.MustCompile(`(?:^|\s)([A-Za-z_$0-9][A-Za-z0-9_.$+*/-]*|)( \(%\))?:`)
)

// parseHistKeys splits "a: 1, b: x" into keys; mods are the key modifiers
// from the trigger, used when there is one per key. A stack trace key is
// written "name: " in text, and its frames are the next of stacks.
func parseHistKeys(text string, mods []string, stacks [][]string) ([]HistValue, error) {
	locs := keyNameRE.FindAllStringSubmatchIndex(text, -1)
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

var bracketNumRE = regexp.MustCompile(`\[\s*\d+\]$`)

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
	case bracketNumRE.MatchString(raw):
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
	locs := valNameRE.FindAllStringSubmatchIndex(text, -1)
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
		case mods[v.Name] == "graph":
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
