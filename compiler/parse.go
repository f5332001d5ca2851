package compiler

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	tidbast "github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser

	"github.com/sqlhist/sqlhist/source"
)

// Parse reads a script of one or more statements. It is the only way into
// the tidb parser. On failure the error is a [Diags] with positions in src.
func Parse(src *source.Source) (*Script, error) {
	if d := checkSize(src); d != nil {
		return nil, d
	}
	toks, diags := lex(src)
	if err := diags.Err(); err != nil {
		diags.Sort()
		return nil, diags
	}
	if d := checkNesting(toks); d != nil {
		return nil, d
	}
	if len(toks) == 1 {
		var d source.Diags
		d.Add(source.NoPos, source.NoPos, "empty query: expected a SELECT statement")
		return nil, d
	}
	rw := rewrite(toks)
	stmts, _, err := tidb.New().ParseSQL(rw.text)
	if err != nil {
		return nil, syntaxError(rw, err)
	}
	c := &converter{rw: rw, src: src}
	script := &Script{}
	ranges := statementRanges(rw.toks)
	for i, st := range stmts {
		var r []*token
		if i < len(ranges) {
			r = ranges[i]
		}
		if q := c.stmt(st, r); q != nil {
			script.Stmts = append(script.Stmts, q)
		}
	}
	if err := c.diags.Err(); err != nil {
		c.diags.Sort()
		return nil, c.diags
	}
	if len(script.Stmts) == 0 {
		// Only semicolons (and comments): nothing to compile.
		var d source.Diags
		d.Add(source.NoPos, source.NoPos, "empty query: expected a SELECT statement")
		return nil, d
	}
	return script, nil
}

// statementRanges splits the tokens at ";" into non-empty statements.
func statementRanges(toks []*token) [][]*token {
	var out [][]*token
	var cur []*token
	for _, t := range toks {
		if t.kind == tEOF || t.kind == tOp && t.text == ";" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	return out
}

var nearRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`near "((?s).*)"\s*$`) })
var totalRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(total length (\d+)\)\s*$`) })

// syntaxError turns a tidb error into a positioned diagnostic. tidb's own
// line and column are not used: the offset is recovered from the length of
// the text it quotes after "near".
func syntaxError(rw *rewritten, err error) source.Diags {
	msg := err.Error()
	off := len(rw.text)
	if m := totalRE().FindStringSubmatch(msg); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil {
			off = len(rw.text) - n
		}
	} else if m := nearRE().FindStringSubmatch(msg); m != nil {
		off = len(rw.text) - len(m[1])
	}
	t := rw.tokenAt(off)
	var d source.Diags
	if t.kind == tEOF {
		d.Add(t.pos, t.end, "syntax error: unexpected end of query")
		return d
	}
	x := d.Add(t.pos, t.end, "syntax error: unexpected %s", describe(t))
	if t.kind == tKeyword {
		x.Hint = "\"" + strings.ToLower(t.text) + "\" is a keyword; to use it as a name write \\" + strings.ToLower(t.text) + " or `" + strings.ToLower(t.text) + "`"
	}
	return d
}

func describe(t *token) string {
	switch t.kind {
	case tKeyword:
		return "keyword " + t.text
	case tName, tCastTarget:
		return "name " + strconv.Quote(t.text)
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + t.text
	}
	return strconv.Quote(t.text)
}

// keep the tidb AST package referenced here; convert.go does the work.
var _ tidbast.StmtNode
