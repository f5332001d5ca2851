package compiler

import (
	"strconv"

	"github.com/sqlhist/sqlhist/source"
)

// Limits on the input. Each keeps the cost of compiling any input small
// (well under 100 ms; see BenchmarkWorstInputs) and far above what a
// query the kernel could run needs: a trigger or a filter is one write of
// at most a page, and a hist expression holds at most three operators.
const (
	// MaxSourceBytes is the longest script Parse reads. The tidb parser
	// costs about a microsecond a byte, so the worst 64 KiB input is
	// refused or compiled in tens of milliseconds; a script of a hundred
	// statements is a tenth of that.
	MaxSourceBytes = 64 << 10

	// MaxNesting is how deep parentheses and prefix operators (-, !, ~,
	// NOT) may nest in one statement. Deeper input would make every
	// recursive walk of the tree (the parser's, the converter's, the
	// planner's) recurse as deep: 200,000 nested "-" took 300 ms and a
	// million took 6 s and 1.5 GB of stack, and Go ends a program whose
	// stack passes 1 GB.
	MaxNesting = 100
)

// checkSize refuses a script longer than MaxSourceBytes, at the first
// byte past the limit.
func checkSize(src *source.Source) source.Diags {
	var d source.Diags
	if n := len(src.Text); n > MaxSourceBytes {
		x := d.Add(source.PosOf(MaxSourceBytes), source.PosOf(MaxSourceBytes+1),
			"the script is %d bytes; sqlhist reads at most %d", n, MaxSourceBytes)
		x.Hint = "split it into several scripts"
	}
	return d
}

// checkNesting refuses, before the tidb parser sees them, tokens nested
// deeper than MaxNesting: each "(" opens a level (plus one for each prefix
// operator before it), and a run of prefix operators adds as many. Only
// the first place past the limit is reported.
func checkNesting(toks []*token) source.Diags {
	var d source.Diags
	depth, run := 0, 0
	var open []int // the depth to return to at each ")"
	for i, t := range toks {
		switch {
		case isPrefixOp(t) && (i == 0 || !endsOperand(toks[i-1])):
			run++
		case t.kind == tOp && t.text == "(":
			open = append(open, depth)
			depth += run + 1
			run = 0
		case t.kind == tOp && t.text == ")":
			if n := len(open); n > 0 {
				depth, open = open[n-1], open[:n-1]
			}
			run = 0
		case t.kind == tOp && t.text == ";":
			depth, run, open = 0, 0, open[:0]
		default:
			run = 0
		}
		if depth+run > MaxNesting {
			x := d.Add(t.pos, t.end, "nested too deeply: more than %s levels of parentheses and prefix operators", strconv.Itoa(MaxNesting))
			x.Hint = "no trigger or filter the kernel takes nests this deep"
			return d
		}
	}
	return d
}

func isPrefixOp(t *token) bool {
	switch t.kind {
	case tOp:
		return t.text == "-" || t.text == "+" || t.text == "!" || t.text == "~"
	case tKeyword:
		return t.text == "NOT"
	}
	return false
}

// endsOperand reports whether t can end an operand, so that an operator
// after it is binary ("a - b"), not prefix ("- b").
func endsOperand(t *token) bool {
	switch t.kind {
	case tName, tNumber, tString, tCastTarget:
		return true
	case tOp:
		return t.text == ")"
	}
	return false
}
