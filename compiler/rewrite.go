package compiler

import (
	"strconv"
	"strings"
)

// numberBase offsets placeholder numbers so they cannot be confused with
// anything else in the rewritten text (which holds no user numbers).
const numberBase int64 = 100000000000000000

// rewritten is the text given to tidb and the way back to the source.
type rewritten struct {
	text   string
	toks   []*token
	pieces []piece // in rewritten-text order
	names  map[string]*token
	nums   map[int64]*token
	strs   map[string]*token
}

// piece is a run of rewritten text produced for one source token; inserted
// text (parentheses around comma-separated WHERE groups) has tok set to
// the token that follows it.
type piece struct {
	rw  int
	tok *token
}

// mergeCastTargets replaces the tokens after AS inside CAST(… AS …) with
// one tCastTarget token, so that HEX, SYM-OFFSET or BUCKETS=10 reach the
// converter whole.
func mergeCastTargets(toks []*token) []*token {
	var out []*token
	type frame struct{ cast bool }
	var stack []frame
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		out = append(out, t)
		switch {
		case t.kind == tOp && t.text == "(":
			isCast := i > 0 && toks[i-1].kind == tKeyword && toks[i-1].text == "CAST"
			stack = append(stack, frame{cast: isCast})
		case t.kind == tOp && t.text == ")":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case t.kind == tKeyword && t.text == "AS" && len(stack) > 0 && stack[len(stack)-1].cast:
			// Collect everything up to the closing parenthesis of the CAST.
			j := i + 1
			for j < len(toks) && toks[j].kind != tEOF && !(toks[j].kind == tOp && (toks[j].text == ")" || toks[j].text == ";")) {
				j++
			}
			if j == i+1 {
				continue
			}
			first, last := toks[i+1], toks[j-1]
			var text strings.Builder
			for _, x := range toks[i+1 : j] {
				text.WriteString(x.text)
			}
			out = append(out, &token{kind: tCastTarget, text: text.String(), pos: first.pos, end: last.end})
			i = j - 1
		}
	}
	return out
}

// rewrite builds the placeholder text for tidb.
func rewrite(toks []*token) *rewritten {
	toks = mergeCastTargets(toks)
	rw := &rewritten{toks: toks, names: map[string]*token{}, nums: map[int64]*token{}, strs: map[string]*token{}}
	var b strings.Builder
	put := func(s string, t *token) {
		// No space before "(": tidb wants COUNT( and SUM( without one.
		if b.Len() > 0 && s != "(" {
			b.WriteByte(' ')
		}
		rw.pieces = append(rw.pieces, piece{rw: b.Len(), tok: t})
		b.WriteString(s)
	}
	whereComma := wrapWhereGroups(toks)
	clause := ""
	depth := 0
	var castDepth []int
	for i, t := range toks {
		switch t.kind {
		case tEOF:
			if clause == "where" && whereComma {
				put(")", t)
			}
			continue
		case tName:
			ph := "zq" + strconv.Itoa(i)
			rw.names[ph] = t
			put(ph, t)
		case tCastTarget:
			ph := "zq" + strconv.Itoa(i)
			rw.names[ph] = t
			put(ph, t)
		case tNumber:
			v := numberBase + int64(i)
			rw.nums[v] = t
			put(strconv.FormatInt(v, 10), t)
		case tString:
			ph := "zs" + strconv.Itoa(i)
			rw.strs[ph] = t
			put("'"+ph+"'", t)
		case tKeyword:
			switch t.text {
			case "CAST":
				ph := "zq" + strconv.Itoa(i)
				rw.names[ph] = t
				put(ph, t)
				castDepth = append(castDepth, depth+1)
				continue
			case "AS":
				if n := len(castDepth); n > 0 && castDepth[n-1] == depth {
					put(",", t)
					continue
				}
			}
			if depth == 0 {
				switch t.text {
				case "ON":
					clause = "on"
				case "WHERE":
					put("WHERE", t)
					clause = "where"
					if whereComma {
						put("(", toks[i+1])
					}
					continue
				case "GROUP", "ORDER", "LIMIT", "HAVING", "SELECT", "UNION":
					if clause == "where" && whereComma {
						put(")", t)
					}
					clause = ""
				}
			}
			put(t.text, t)
		case tOp:
			switch t.text {
			case "(":
				depth++
				put("(", t)
			case ")":
				if n := len(castDepth); n > 0 && castDepth[n-1] == depth {
					castDepth = castDepth[:n-1]
				}
				depth--
				put(")", t)
			case ",":
				switch {
				case depth == 0 && clause == "where" && whereComma:
					put(") AND (", t)
				case depth == 0 && clause == "on":
					put("AND", t)
				default:
					put(",", t)
				}
			case ";":
				if clause == "where" && whereComma {
					put(")", t)
				}
				clause = ""
				depth = 0
				put(";", t)
			case "==":
				put("=", t)
			case "<>":
				put("!=", t)
			case "&&":
				put("AND", t)
			case "||":
				put("OR", t)
			case "!":
				put("NOT", t)
			case "~":
				put("LIKE", t)
			case "!~":
				put("NOT LIKE", t)
			default:
				put(t.text, t)
			}
		}
	}
	rw.text = b.String()
	return rw
}

// wrapWhereGroups reports whether some WHERE clause uses sqlhist's
// top-level comma ("WHERE a, b" means "(a) AND (b)").
func wrapWhereGroups(toks []*token) bool {
	in, depth := false, 0
	for _, t := range toks {
		switch {
		case t.kind == tKeyword && t.text == "WHERE" && depth == 0:
			in = true
		case t.kind == tKeyword && depth == 0 && (t.text == "GROUP" || t.text == "ORDER" || t.text == "LIMIT" || t.text == "HAVING" || t.text == "UNION"):
			in = false
		case t.kind == tOp && t.text == "(":
			depth++
		case t.kind == tOp && t.text == ")":
			depth--
		case t.kind == tOp && t.text == ";":
			in, depth = false, 0
		case t.kind == tOp && t.text == "," && in && depth == 0:
			return true
		}
	}
	return false
}

// tokenAt returns the source token whose rewritten text starts at or after
// the rewritten offset off.
func (rw *rewritten) tokenAt(off int) *token {
	for _, p := range rw.pieces {
		if p.rw >= off {
			return p.tok
		}
	}
	return rw.toks[len(rw.toks)-1]
}
