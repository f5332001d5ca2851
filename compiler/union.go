package compiler

import (
	tidbast "github.com/pingcap/tidb/pkg/parser/ast"
)

// unionStmt converts "SELECT … UNION ALL SELECT …": the first SELECT
// becomes the query, the others its Union. ORDER BY and LIMIT after the
// last SELECT apply to the whole union and are copied to every branch.
// UNION without ALL (which removes duplicate rows), EXCEPT and INTERSECT
// have no kernel counterpart and are refused.
func (c *converter) unionStmt(s *tidbast.SetOprStmt) *Query {
	if s.SelectList == nil || len(s.SelectList.Selects) < 2 {
		c.unsupported("UNION", "this UNION")
		return nil
	}
	all := c.toks
	branches := splitAtUnion(all)
	var qs []*Query
	ok := true
	for i, n := range s.SelectList.Selects {
		sel, isSelect := n.(*tidbast.SelectStmt)
		if i < len(branches) {
			c.toks = branches[i]
		}
		if !isSelect {
			c.unsupported("UNION", "a parenthesised UNION: list the SELECTs joined by UNION ALL")
			ok = false
			continue
		}
		if i > 0 && (sel.AfterSetOperator == nil || *sel.AfterSetOperator != tidbast.UnionAll) {
			t := c.keywordTok("SELECT")
			if i-1 < len(unionToks(all)) {
				t = unionToks(all)[i-1]
			}
			c.errorf(t.pos, t.end, "only UNION ALL is supported: the kernel's shared histogram adds up every event of each SELECT (UNION would remove duplicate rows, EXCEPT and INTERSECT compare them)")
			ok = false
			continue
		}
		q := c.selectStmt(sel)
		if q == nil {
			ok = false
			continue
		}
		qs = append(qs, q)
	}
	c.toks = all
	if !ok || len(qs) == 0 {
		return nil
	}
	first := qs[0]
	first.Union = qs[1:]
	first.End = all[len(all)-1].end
	var order []*OrderItem
	if s.OrderBy != nil {
		for _, it := range s.OrderBy.Items {
			order = append(order, &OrderItem{Expr: c.expr(it.Expr), Desc: it.Desc})
		}
	}
	var limit *Number
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			c.unsupported("LIMIT", "LIMIT with an offset")
		}
		limit, _ = c.expr(s.Limit.Count).(*Number)
	}
	for _, q := range qs {
		if order != nil {
			q.OrderBy = order
		}
		if limit != nil {
			q.Limit = limit
		}
	}
	return first
}

// unionToks returns the UNION keywords of a statement's tokens.
func unionToks(toks []*token) []*token {
	var out []*token
	for _, t := range toks {
		if t.kind == tKeyword && t.text == "UNION" {
			out = append(out, t)
		}
	}
	return out
}

// splitAtUnion splits a statement's tokens at its UNION [ALL] keywords,
// so that each SELECT's clauses are found in its own tokens.
func splitAtUnion(toks []*token) [][]*token {
	var out [][]*token
	var cur []*token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tKeyword && t.text == "UNION" {
			out = append(out, cur)
			cur = nil
			if i+1 < len(toks) && toks[i+1].kind == tKeyword && toks[i+1].text == "ALL" {
				i++
			}
			continue
		}
		cur = append(cur, t)
	}
	return append(out, cur)
}
