package parser

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/clinksql/clinksql/sqlerr"
	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // TiDB's parser needs a driver for its literal nodes
)

// From TiDB's tree to ours. TiDB records on every expression node the offset of its first token in the text it
// parsed (ast.Node.OriginTextPosition); the rewritten token list maps that back to the user's offset. Nodes
// without an offset (table names, LIMIT values, ORDER BY 1) and the positions Postgres reports that are not a
// node's start (the operator of a binary expression, BETWEEN, LIKE, IN, IS) are found by walking the rewritten
// tokens in source order: conversion runs in source order, and cur is the token every later node starts at or
// after.

var tidbParsers = sync.Pool{New: func() any {
	p := tidb.New()
	mode, err := mysql.GetSQLMode("ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES")
	if err != nil {
		panic(err) // a constant: fails in every test or never
	}
	p.SetSQLMode(mode)
	return p
}}

// pooledTextSize is the longest text whose parser goes back to the pool: one that parsed more would keep that
// much memory alive while idle.
const pooledTextSize = 64 << 10

// tidbParse parses one statement. A panic inside TiDB (its grammar actions are not ours to fix) becomes a syntax
// error at the start of the text. The tree belongs to the pooled parser: the caller runs release once it has
// converted the tree, not before (another statement parsed by the same parser would overwrite it).
func (p *parser) tidbParse(rw *rewritten) (stmt ast.StmtNode, release func(), err error) {
	tp := tidbParsers.Get().(*tidb.Parser)
	release = func() {
		if len(rw.text) <= pooledTextSize {
			tidbParsers.Put(tp) // a parser keeps its last tree (and buffers as large as its text) until reused
		}
	}
	defer func() {
		if e := recover(); e != nil {
			// a parser that panicked is not put back
			stmt, release, err = nil, nil, rw.userError(p, 0)
		}
	}()
	stmts, _, perr := tp.ParseSQL(rw.text)
	if perr != nil {
		release()
		if off, ok := tidbErrorOffset(rw.text, perr); ok {
			return nil, nil, rw.userError(p, off)
		}
		return nil, nil, rw.userError(p, 0)
	}
	if len(stmts) != 1 {
		release()
		return nil, nil, rw.userError(p, len(rw.text))
	}
	return stmts[0], release, nil
}

// tidbQuery parses a query of tokens [lo, hi) through TiDB.
func (p *parser) tidbQuery(lo, hi int) (*Query, error) {
	rw, err := p.rewriteRange(lo, hi, "")
	if err != nil {
		return nil, err
	}
	stmt, release, err := p.tidbParse(rw)
	if err != nil {
		return nil, err
	}
	defer release()
	c := &conv{p: p, rw: rw}
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		return nil, syntaxErrorTok(p.toks[lo])
	}
	q, err := c.query(stmt)
	if err != nil {
		return nil, err
	}
	if err := rw.unusedColumns(p); err != nil {
		return nil, err
	}
	return q, nil
}

// unusedColumns is the error at an alias's column list that no derived table took: TiDB read the alias as
// something else.
func (rw *rewritten) unusedColumns(p *parser) error {
	for _, t := range rw.toks {
		if t.cols != nil && !t.used {
			u := sort.Search(len(p.toks), func(u int) bool { return p.toks[u].Pos >= t.colsP })
			return syntaxErrorTok(p.at(u))
		}
	}
	return nil
}

// parseExprList parses a comma-separated list of expressions of tokens [lo, hi) (as SELECT e1, e2, ...).
func (p *parser) parseExprList(lo, hi int) ([]Expr, error) {
	if lo >= hi {
		return nil, syntaxErrorTok(p.at(hi))
	}
	rw, err := p.rewriteRange(lo, hi, "select")
	if err != nil {
		return nil, err
	}
	stmt, release, err := p.tidbParse(rw)
	if err != nil {
		return nil, err
	}
	defer release()
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil ||
		sel.Limit != nil || sel.Distinct || sel.With != nil || sel.WindowSpecs != nil || sel.Fields == nil {
		return nil, syntaxErrorTok(p.toks[lo])
	}
	c := &conv{p: p, rw: rw}
	var out []Expr
	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			k := c.find(func(t rtok) bool { return t.text == "*" }, -1)
			return nil, c.errAt(k)
		}
		e, err := c.expr(f.Expr)
		if err != nil {
			return nil, err
		}
		if f.AsName.L != "" {
			// An alias is no part of an expression: the word after it is the error.
			k := c.find(func(t rtok) bool { return (t.kind == Ident || t.kind == QuotedIdent) && t.val == f.AsName.O }, -1)
			return nil, c.errAt(k)
		}
		out = append(out, e)
	}
	if err := rw.unusedColumns(p); err != nil {
		return nil, err
	}
	return out, nil
}

// parseExpr parses one expression of tokens [lo, hi).
func (p *parser) parseExpr(lo, hi int) (Expr, error) {
	es, err := p.parseExprList(lo, hi)
	if err != nil {
		return nil, err
	}
	if len(es) != 1 {
		// The comma that separates a second expression is the error.
		d := 0
		for k := lo; k < hi; k++ {
			switch {
			case isOp(p.toks[k], "("):
				d++
			case isOp(p.toks[k], ")"):
				d--
			case d == 0 && isOp(p.toks[k], ","):
				return nil, syntaxErrorTok(p.toks[k])
			}
		}
		return nil, syntaxErrorTok(p.toks[lo])
	}
	return es[0], nil
}

type conv struct {
	p   *parser
	rw  *rewritten
	cur int // the rewritten token every node still to convert starts at or after
	// bodyDepth is the parenthesis depth of the SELECT or set operator of the query body converted last.
	bodyDepth int
	// winRefs are the OVER w of the SELECT being converted, resolved at its WINDOW clause.
	winRefs []*WindowSpec
}

// idx is the rewritten token at offset off.
func (c *conv) idx(off int) int {
	k := sort.Search(len(c.rw.toks), func(k int) bool { return c.rw.toks[k].off >= off })
	return min(k, len(c.rw.toks)-1)
}

// leaf returns the user's offset of the node starting at rewritten offset off and moves cur past its first token.
func (c *conv) leaf(off int) (int, int) {
	k := c.idx(off)
	c.cur = max(c.cur, k+1)
	return c.rw.toks[k].orig, k
}

// find returns the first token from cur that satisfies ok (at depth, unless depth < 0), or -1.
func (c *conv) find(ok func(rtok) bool, depth int) int {
	for k := c.cur; k < len(c.rw.toks); k++ {
		t := c.rw.toks[k]
		if (depth < 0 || t.depth == depth) && ok(t) {
			return k
		}
	}
	return -1
}

func (c *conv) findKw(kw string, depth int) int {
	return c.find(func(t rtok) bool { return t.kw && t.val == kw }, depth)
}

// origAt is the user's offset of rewritten token k (k < 0: where cur is).
func (c *conv) origAt(k int) int {
	if k < 0 {
		k = min(c.cur, len(c.rw.toks)-1)
	}
	if k >= len(c.rw.toks) {
		return c.rw.endTok.Pos
	}
	return c.rw.toks[k].orig
}

func (c *conv) errAt(k int) error {
	if k < 0 || k >= len(c.rw.toks) {
		return syntaxErrorTok(c.rw.endTok)
	}
	return c.rw.userError(c.p, c.rw.toks[k].off)
}

func (c *conv) unsupported(k int, what string) error {
	return notSupported(c.origAt(k), "%s is not supported", what)
}

// query converts a SELECT or set operation with its WITH, ORDER BY and LIMIT.
func (c *conv) query(n ast.Node) (*Query, error) {
	q := &Query{P: -1}
	var with *ast.WithClause
	var order *ast.OrderByClause
	var limit *ast.Limit
	switch n := n.(type) {
	case *ast.SelectStmt:
		with, order, limit = n.With, n.OrderBy, n.Limit
	case *ast.SetOprStmt:
		with, order, limit = n.With, n.OrderBy, n.Limit
	default:
		return nil, c.errAt(c.cur)
	}
	if with != nil {
		k := c.findKw("with", -1)
		q.P = c.origAt(k)
		c.cur = k + 1
		if with.IsRecursive {
			return nil, c.unsupported(k, "WITH RECURSIVE")
		}
		for _, cte := range with.CTEs {
			k := c.find(func(t rtok) bool { return !t.kw && t.val == cte.Name.O }, -1)
			c.cur = max(c.cur, k+1)
			ct := CTE{P: c.origAt(k), Name: cte.Name.O}
			for _, col := range cte.ColNameList {
				ct.Columns = append(ct.Columns, col.O)
			}
			if cte.Query == nil {
				return nil, c.errAt(k)
			}
			sub, err := c.query(cte.Query.Query)
			if err != nil {
				return nil, err
			}
			ct.Query = sub
			q.With = append(q.With, ct)
		}
	}
	var body QueryBody
	var err error
	switch n := n.(type) {
	case *ast.SelectStmt:
		n.With, n.OrderBy, n.Limit = nil, nil, nil
		body, err = c.selectCore(n)
	case *ast.SetOprStmt:
		body, err = c.setOps(n.SelectList)
	}
	if err != nil {
		return nil, err
	}
	q.Body = body
	depth := c.bodyDepth // ORDER BY, LIMIT and OFFSET are at the depth of the body's SELECT or UNION
	if q.P < 0 {
		q.P = bodyPos(body)
	}
	if _, ok := body.(*Values); ok && (order != nil || limit != nil) {
		k := c.find(func(t rtok) bool { return t.kw && (t.val == "order" || t.val == "limit" || t.val == "offset") }, depth)
		return nil, notSupported(c.origAt(k), "ORDER BY, LIMIT and OFFSET on VALUES are not supported")
	}
	if order != nil {
		k := c.findKw("order", depth)
		c.cur = max(c.cur, k+1)
		if q.OrderBy, err = c.orderBy(order.Items); err != nil {
			return nil, err
		}
	}
	if limit != nil {
		if limit.Count != nil {
			k := c.findKw("limit", depth)
			if k >= 0 && k+2 < len(c.rw.toks) && c.rw.toks[k+2].text == "," {
				return nil, c.errAt(k + 2)
			}
			c.cur = max(c.cur, k+1)
			if q.Limit, err = c.limitValue(limit.Count); err != nil {
				return nil, err
			}
		}
		if limit.Offset != nil {
			k := c.findKw("offset", depth)
			c.cur = max(c.cur, k+1)
			if q.Offset, err = c.limitValue(limit.Offset); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}

func bodyPos(b QueryBody) int {
	switch b := b.(type) {
	case *SelectCore:
		return b.P
	case *SetOp:
		return bodyPos(b.L)
	case *Values:
		return b.P
	case *Query:
		return b.P
	}
	return 0
}

// limitValue converts a LIMIT or OFFSET value: TiDB gives it no offset; it is the token at cur.
func (c *conv) limitValue(e ast.ExprNode) (Expr, error) {
	k := min(c.cur, len(c.rw.toks)-1)
	if _, ok := e.(ast.ValueExpr); ok {
		c.cur = k + 1
		return c.literalAt(k)
	}
	return c.expr(e)
}

func (c *conv) orderBy(items []*ast.ByItem) ([]OrderItem, error) {
	var out []OrderItem
	for _, it := range items {
		oi := OrderItem{Desc: it.Desc}
		e := it.Expr
		if f, ok := e.(*ast.FuncCallExpr); ok {
			if ph := c.rw.ph[f.FnName.O]; ph != nil && ph.nulls && len(f.Args) == 1 {
				nf := ph.nullsFirst
				oi.NullsFirst = &nf
				c.leaf(f.OriginTextPosition())
				e = f.Args[0]
			}
		}
		start := c.origAt(c.idx(e.OriginTextPosition()))
		if _, ok := e.(*ast.PositionExpr); ok {
			start = -1
		}
		x, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		if start < 0 {
			start = x.Pos()
		}
		oi.Expr, oi.P = x, start
		out = append(out, oi)
	}
	return out, nil
}

// setOps converts a UNION/EXCEPT/INTERSECT list; INTERSECT binds tighter, as in Postgres.
func (c *conv) setOps(l *ast.SetOprSelectList) (QueryBody, error) {
	type part struct {
		body QueryBody
		op   string
		all  bool
		p    int
	}
	var parts []part
	opDepth := 0
	for i, n := range l.Selects {
		var pt part
		var after *ast.SetOprType
		switch s := n.(type) {
		case *ast.SelectStmt:
			after = s.AfterSetOperator
		case *ast.SetOprSelectList:
			after = s.AfterSetOperator
		}
		if i > 0 {
			if after == nil {
				return nil, c.errAt(c.cur)
			}
			k := c.find(func(t rtok) bool {
				return t.kw && (t.val == "union" || t.val == "except" || t.val == "intersect")
			}, -1)
			c.cur = max(c.cur, k+1)
			pt.p = c.origAt(k)
			if k >= 0 && i == 1 {
				opDepth = c.rw.toks[k].depth
			}
			switch *after {
			case ast.Union:
				pt.op = "union"
			case ast.UnionAll:
				pt.op, pt.all = "union", true
			case ast.Except:
				pt.op = "except"
			case ast.ExceptAll:
				pt.op, pt.all = "except", true
			case ast.Intersect:
				pt.op = "intersect"
			case ast.IntersectAll:
				pt.op, pt.all = "intersect", true
			}
		}
		var err error
		switch s := n.(type) {
		case *ast.SelectStmt:
			if s.With != nil || s.OrderBy != nil || s.Limit != nil {
				var q *Query
				if q, err = c.query(s); err == nil {
					pt.body = q
				}
			} else {
				pt.body, err = c.selectCore(s)
			}
		case *ast.SetOprSelectList:
			if s.With != nil || s.OrderBy != nil || s.Limit != nil {
				q := &Query{}
				if s.With != nil {
					return nil, c.unsupported(c.cur, "WITH inside a parenthesized set operation")
				}
				if q.Body, err = c.setOps(&ast.SetOprSelectList{Selects: s.Selects}); err == nil {
					q.P = bodyPos(q.Body)
					if s.OrderBy != nil {
						k := c.findKw("order", c.bodyDepth)
						c.cur = max(c.cur, k+1)
						q.OrderBy, err = c.orderBy(s.OrderBy.Items)
					}
					if err == nil && s.Limit != nil {
						if s.Limit.Count != nil {
							c.cur = max(c.cur, c.findKw("limit", c.bodyDepth)+1)
							q.Limit, err = c.limitValue(s.Limit.Count)
						}
						if err == nil && s.Limit.Offset != nil {
							c.cur = max(c.cur, c.findKw("offset", c.bodyDepth)+1)
							q.Offset, err = c.limitValue(s.Limit.Offset)
						}
					}
				}
				pt.body = q
			} else {
				pt.body, err = c.setOps(s)
			}
		default:
			return nil, c.errAt(c.cur)
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, pt)
	}
	if len(parts) == 0 {
		return nil, c.errAt(c.cur)
	}
	// INTERSECT first, then UNION and EXCEPT from left to right.
	var stack []part
	for _, pt := range parts {
		if pt.op == "intersect" && len(stack) > 0 {
			top := &stack[len(stack)-1]
			top.body = &SetOp{P: pt.p, Op: pt.op, All: pt.all, L: top.body, R: pt.body}
			continue
		}
		stack = append(stack, pt)
	}
	body := stack[0].body
	for _, pt := range stack[1:] {
		body = &SetOp{P: pt.p, Op: pt.op, All: pt.all, L: body, R: pt.body}
	}
	if len(parts) > 1 {
		c.bodyDepth = opDepth
	}
	return body, nil
}

func (c *conv) selectCore(s *ast.SelectStmt) (QueryBody, error) {
	if s.Kind == ast.SelectStmtKindValues {
		return c.values(s)
	}
	if s.Kind != ast.SelectStmtKindSelect {
		return nil, c.unsupported(c.cur, "this form of query")
	}
	k := c.findKw("select", -1)
	if k < 0 {
		return nil, c.errAt(c.cur)
	}
	c.cur = k + 1
	depth := c.rw.toks[k].depth
	outerRefs := c.winRefs
	c.winRefs = nil
	defer func() { c.bodyDepth, c.winRefs = depth, outerRefs }()
	sc := &SelectCore{P: c.origAt(k), Distinct: s.Distinct}
	if s.LockInfo != nil && s.LockInfo.LockType != ast.SelectLockNone {
		return nil, c.unsupported(c.findKw("for", depth), "FOR UPDATE")
	}
	if s.SelectIntoOpt != nil {
		return nil, c.unsupported(k, "SELECT INTO")
	}
	if len(s.TableHints) > 0 {
		return nil, c.unsupported(k, "optimizer hints")
	}
	if s.Fields != nil {
		for _, f := range s.Fields.Fields {
			var it SelectItem
			if f.WildCard != nil {
				j := c.find(func(t rtok) bool { return t.kind == Op && t.text == "*" }, depth)
				if j < 0 {
					return nil, c.errAt(c.cur)
				}
				c.cur = j + 1
				st := &Star{P: c.origAt(j), Table: f.WildCard.Table.O}
				if f.WildCard.Schema.O != "" {
					return nil, c.unsupported(j, "a schema-qualified star")
				}
				if st.Table != "" && j >= 2 {
					st.P = c.origAt(j - 2)
				}
				it.Expr, it.P = st, st.P
			} else {
				start := c.origAt(c.idx(f.Expr.OriginTextPosition()))
				e, err := c.expr(f.Expr)
				if err != nil {
					return nil, err
				}
				it.Expr, it.P = e, start
				it.Alias = f.AsName.O
			}
			sc.Items = append(sc.Items, it)
		}
	}
	if s.From != nil && s.From.TableRefs != nil {
		j := c.findKw("from", depth)
		if j < 0 {
			return nil, c.errAt(c.cur)
		}
		c.cur = j + 1
		items, err := c.fromItems(s.From.TableRefs, true)
		if err != nil {
			return nil, err
		}
		sc.From = items
	}
	var err error
	if s.Where != nil {
		c.cur = max(c.cur, c.findKw("where", depth)+1)
		if sc.Where, err = c.expr(s.Where); err != nil {
			return nil, err
		}
	}
	if s.GroupBy != nil {
		c.cur = max(c.cur, c.findKw("group", depth)+1)
		if s.GroupBy.Rollup {
			return nil, c.unsupported(c.cur, "WITH ROLLUP")
		}
		if sc.GroupBy, err = c.byExprs(s.GroupBy.Items); err != nil {
			return nil, err
		}
	}
	if s.Having != nil {
		c.cur = max(c.cur, c.findKw("having", depth)+1)
		if sc.Having, err = c.expr(s.Having.Expr); err != nil {
			return nil, err
		}
	}
	if len(s.WindowSpecs) > 0 || len(c.winRefs) > 0 {
		if len(s.WindowSpecs) > 0 {
			k := c.findKw("window", depth)
			if k < 0 {
				return nil, c.errAt(c.cur)
			}
			c.cur = k + 1
		}
		if err := c.namedWindows(s.WindowSpecs, c.winRefs); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// byExprs converts the expressions of a GROUP BY or PARTITION BY list.
func (c *conv) byExprs(items []*ast.ByItem) ([]Expr, error) {
	out := make([]Expr, 0, len(items))
	for _, it := range items {
		e, err := c.expr(it.Expr)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// windowSpec converts the definition of a window whose "(" is rewritten token open (OVER (...) or WINDOW w AS
// (...)); its frame is the one the rewrite took out of the text at that "(" (parser.frames).
func (c *conv) windowSpec(spec *ast.WindowSpec, open int) (*WindowSpec, error) {
	if spec.Frame != nil {
		return nil, c.unsupported(open, "a window frame")
	}
	ws := &WindowSpec{P: c.origAt(open - 1), Frame: c.p.frames[c.origAt(open)]}
	if spec.PartitionBy != nil {
		var err error
		if ws.PartitionBy, err = c.byExprs(spec.PartitionBy.Items); err != nil {
			return nil, err
		}
	}
	if spec.OrderBy != nil {
		var err error
		if ws.OrderBy, err = c.orderBy(spec.OrderBy.Items); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// namedWindows converts the WINDOW clause of a SELECT (cur is past its keyword) and resolves
// the OVER w of that SELECT (refs) against it: each takes a copy of its window's definition, at its own position.
// A name defined twice is 42P20 (as in Postgres), and so is an OVER w without a window w.
func (c *conv) namedWindows(specs []ast.WindowSpec, refs []*WindowSpec) error {
	defs := map[string]*WindowSpec{}
	for i := range specs {
		spec := &specs[i]
		name := c.find(func(t rtok) bool { return strings.EqualFold(t.val, spec.Name.O) }, -1)
		open := c.find(func(t rtok) bool { return t.kind == Op && t.text == "(" }, -1)
		if name < 0 || open < 0 {
			return c.errAt(c.cur)
		}
		if spec.Name.L == "" || spec.Ref.L != "" || spec.OnlyAlias {
			return c.unsupported(open, "a window that extends a named window (WINDOW w AS (v ...))")
		}
		if _, dup := defs[spec.Name.L]; dup {
			return sqlerr.New(sqlerr.WindowingError, c.origAt(name), "window %q is already defined", spec.Name.L)
		}
		c.cur = open + 1
		ws, err := c.windowSpec(spec, open)
		if err != nil {
			return err
		}
		ws.P = c.origAt(name)
		defs[spec.Name.L] = ws
		depth := c.rw.toks[open].depth
		if end := c.find(func(t rtok) bool { return t.kind == Op && t.text == ")" }, depth); end >= 0 {
			c.cur = end + 1
		}
	}
	for _, r := range refs {
		def, ok := defs[r.Ref]
		if !ok {
			return sqlerr.New(sqlerr.WindowingError, r.P, "window %q does not exist", r.Ref)
		}
		p := r.P
		*r = *def
		r.P = p
	}
	return nil
}

// values converts TiDB's VALUES ROW(...), ROW(...), rewrite.go's form of VALUES (...), (...).
func (c *conv) values(s *ast.SelectStmt) (QueryBody, error) {
	k := c.findKw("values", -1)
	if k < 0 {
		return nil, c.errAt(c.cur)
	}
	c.cur = k + 1
	depth := c.rw.toks[k].depth
	defer func() { c.bodyDepth = depth }()
	if s.LockInfo != nil && s.LockInfo.LockType != ast.SelectLockNone {
		return nil, c.unsupported(c.findKw("for", depth), "FOR UPDATE")
	}
	if s.SelectIntoOpt != nil {
		return nil, c.unsupported(k, "VALUES INTO")
	}
	v := &Values{P: c.origAt(k)}
	for _, row := range s.Lists {
		// Every row's ROW is ours, standing at the row's "(".
		rk := c.find(func(t rtok) bool { return t.synth && t.kw && t.val == "row" }, depth)
		if rk < 0 || len(row.Values) == 0 {
			return nil, c.errAt(c.cur)
		}
		c.cur = rk + 2
		xs, err := c.exprs(row.Values)
		if err != nil {
			return nil, err
		}
		if len(v.Rows) > 0 && len(xs) != len(v.Rows[0]) {
			return nil, sqlerr.New(sqlerr.SyntaxError, c.origAt(rk), "VALUES lists must all be the same length")
		}
		v.Rows = append(v.Rows, xs)
	}
	if len(v.Rows) == 0 {
		return nil, c.errAt(c.cur)
	}
	return v, nil
}

// fromItems converts a FROM list; top-level commas make separate items.
func (c *conv) fromItems(n ast.ResultSetNode, top bool) ([]TableExpr, error) {
	j, ok := n.(*ast.Join)
	if !ok || j.Right == nil {
		if ok {
			n = j.Left
		}
		t, err := c.tableExpr(n)
		if err != nil {
			return nil, err
		}
		return []TableExpr{t}, nil
	}
	te, err := c.join(j, top)
	if err != nil {
		return nil, err
	}
	return te, nil
}

// join converts a join; with top, a comma join becomes a list.
func (c *conv) join(j *ast.Join, top bool) ([]TableExpr, error) {
	startK := min(c.cur, len(c.rw.toks)-1)
	depth := c.rw.toks[startK].depth
	parens := false
	if j.ExplicitParens && c.rw.toks[startK].text == "(" {
		parens = true
		c.cur++
		depth++
		top = false
	}
	left, err := c.fromItems(j.Left, top)
	if err != nil {
		return nil, err
	}
	sep := c.find(func(t rtok) bool {
		return t.kind == Op && t.text == "," || t.kw && (t.val == "join" || t.val == "cross" || t.val == "inner" ||
			t.val == "left" || t.val == "right" || t.val == "natural")
	}, depth)
	if sep < 0 {
		return nil, c.errAt(c.cur)
	}
	st := c.rw.toks[sep]
	jn := &Join{P: st.orig}
	switch {
	case j.NaturalJoin:
		return nil, c.unsupported(sep, "NATURAL JOIN")
	case j.StraightJoin:
		return nil, c.unsupported(sep, "STRAIGHT_JOIN")
	case st.text == ",":
		jn.Kind = ","
	case j.Tp == ast.LeftJoin && st.mark == "full":
		jn.Kind = "full"
	case j.Tp == ast.LeftJoin:
		jn.Kind = "left"
	case j.Tp == ast.RightJoin:
		jn.Kind = "right"
	case st.val == "cross":
		jn.Kind = "cross"
	default:
		jn.Kind = "inner"
	}
	jk := sep
	if jn.Kind != "," {
		jk = c.findKw("join", depth)
	}
	c.cur = max(c.cur, jk+1)
	right, err := c.fromItems(j.Right, top && jn.Kind == ",")
	if err != nil {
		return nil, err
	}
	if j.On != nil {
		if jn.On, err = c.expr(j.On.Expr); err != nil {
			return nil, err
		}
	}
	for _, u := range j.Using {
		jn.Using = append(jn.Using, u.Name.O)
	}
	if parens {
		k := c.find(func(t rtok) bool { return t.text == ")" && t.kind == Op }, depth-1)
		c.cur = max(c.cur, k+1)
	}
	if jn.Kind == "," {
		if j.On != nil || len(j.Using) > 0 || !top {
			return nil, c.errAt(sep)
		}
		return append(left, right...), nil
	}
	if len(left) != 1 || len(right) != 1 {
		return nil, c.errAt(sep)
	}
	if jn.Kind == "cross" && (jn.On != nil || jn.Using != nil) {
		return nil, c.errAt(c.findKw("on", depth))
	}
	if jn.Kind != "cross" && jn.On == nil && jn.Using == nil {
		// Postgres requires ON or USING: the token after the right side is the error.
		k := min(c.cur, len(c.rw.toks))
		for k < len(c.rw.toks) && c.rw.toks[k].depth > depth {
			k++
		}
		for k < len(c.rw.toks) && c.rw.toks[k].depth == depth && !c.rw.toks[k].kw && c.rw.toks[k].text != "," && c.rw.toks[k].text != ")" {
			k++ // the right side's alias
		}
		return nil, c.errAt(k)
	}
	jn.L, jn.R = left[0], right[0]
	return []TableExpr{jn}, nil
}

func (c *conv) tableExpr(n ast.ResultSetNode) (TableExpr, error) {
	switch n := n.(type) {
	case *ast.Join:
		items, err := c.join(n, false)
		if err != nil {
			return nil, err
		}
		return items[0], nil
	case *ast.TableSource:
		k := min(c.cur, len(c.rw.toks)-1)
		if n.Lateral {
			return nil, c.unsupported(k, "LATERAL")
		}
		switch src := n.Source.(type) {
		case *ast.TableName:
			if len(src.IndexHints) > 0 || len(src.PartitionNames) > 0 || src.AsOf != nil || src.TableSample != nil {
				return nil, c.unsupported(k, "this table reference")
			}
			if ph := c.rw.ph[src.Name.O]; ph != nil && ph.tvf != nil && src.Schema.O == "" {
				w := *ph.tvf
				w.Alias = n.AsName.O
				c.cur = max(c.cur, c.find(func(t rtok) bool { return t.val == src.Name.O }, -1)+1)
				return &w, nil
			}
			if ph := c.rw.ph[src.Name.O]; ph != nil && ph.unnest != nil && src.Schema.O == "" {
				u := *ph.unnest
				u.Alias = n.AsName.O
				k := c.find(func(t rtok) bool { return t.val == src.Name.O }, -1)
				c.cur = max(c.cur, k+1)
				// The alias, after an optional AS, may carry a column list (rewrite.go).
				a := k + 1
				if a > 0 && a < len(c.rw.toks) && c.rw.toks[a].kw && c.rw.toks[a].val == "as" {
					a++
				}
				if a > 0 && a < len(c.rw.toks) && u.Alias != "" && c.rw.toks[a].cols != nil && c.rw.toks[a].val == u.Alias {
					u.Columns = c.rw.toks[a].cols
					c.rw.toks[a].used = true
				}
				return &u, nil
			}
			first := src.Name.O
			if src.Schema.O != "" {
				first = src.Schema.O
			}
			nk := c.find(func(t rtok) bool { return (t.kind == Ident || t.kind == QuotedIdent) && !t.kw && t.val == first }, -1)
			if nk >= 0 {
				c.cur = nk + 1
			}
			tn := &TableName{P: c.origAt(nk), Schema: src.Schema.O, Name: src.Name.O, Alias: n.AsName.O}
			last := nk // the name's last token carries FOR SYSTEM_TIME AS OF (rewrite.go)
			if src.Schema.O != "" && nk >= 0 && nk+2 < len(c.rw.toks) {
				last = nk + 2
			}
			if last >= 0 && last < len(c.rw.toks) {
				tn.AsOf = c.rw.toks[last].asOf
			}
			return tn, nil
		case *ast.SelectStmt, *ast.SetOprStmt:
			open := c.find(func(t rtok) bool { return t.kind == Op && t.text == "(" }, -1)
			d := &DerivedTable{P: c.origAt(open), Alias: n.AsName.O}
			c.cur = max(c.cur, open+1)
			q, err := c.query(src)
			if err != nil {
				return nil, err
			}
			d.Query = q
			if open >= 0 {
				depth := c.rw.toks[open].depth
				close := c.find(func(t rtok) bool { return t.kind == Op && t.text == ")" }, depth)
				c.cur = max(c.cur, close+1)
				// The alias, after an optional AS, may carry a column list (rewrite.go).
				a := close + 1
				if a > 0 && a < len(c.rw.toks) && c.rw.toks[a].kw && c.rw.toks[a].val == "as" {
					a++
				}
				if a > 0 && a < len(c.rw.toks) && d.Alias != "" && c.rw.toks[a].cols != nil && c.rw.toks[a].val == d.Alias {
					d.Columns = c.rw.toks[a].cols
					c.rw.toks[a].used = true
				}
			}
			return d, nil
		}
	}
	return nil, c.unsupported(c.cur, "this FROM item")
}

// literalAt converts the literal token k.
func (c *conv) literalAt(k int) (Expr, error) {
	if k < 0 || k >= len(c.rw.toks) {
		return nil, c.errAt(k)
	}
	t := c.rw.toks[k]
	l := &Literal{P: t.orig, Text: t.val}
	switch {
	case t.kind == String:
		l.Kind = LitString
	case t.kind == Number:
		l.Kind = numberKind(t.val)
	case t.kind == Param:
		n, _ := strconv.Atoi(t.val)
		return &ParamRef{P: t.orig, N: n}, nil
	case t.kw && t.val == "null":
		l.Kind, l.Text = LitNull, ""
	case t.kw && (t.val == "true" || t.val == "false"):
		l.Kind = LitBool
	case t.fn && c.rw.ph[t.val] != nil && c.rw.ph[t.val].expr != nil:
		c.cur = max(c.cur, k+3)
		return c.rw.ph[t.val].expr, nil
	default:
		return nil, c.unsupported(k, "this literal")
	}
	return l, nil
}

func numberKind(s string) LitKind {
	switch {
	case strings.ContainsAny(s, "eE"):
		return LitFloat
	case strings.Contains(s, "."):
		return LitDecimal
	}
	return LitInt
}

var binaryOps = map[opcode.Op]string{
	opcode.LogicAnd: "and", opcode.LogicOr: "or", opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<",
	opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=", opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*",
	opcode.Div: "/", opcode.Mod: "%",
}

// opTexts are the tokens that spell an operator of ours in the rewritten text.
var opTexts = map[string][]string{
	"and": {"and"}, "or": {"or"}, "=": {"="}, "<>": {"<>", "!="}, "<": {"<"}, "<=": {"<="}, ">": {">"},
	">=": {">="}, "+": {"+"}, "-": {"-"}, "*": {"*"}, "/": {"/"}, "%": {"%"}, "||": {"||"},
	"<=>": {"<=>"}, "^": {"^"}, "<<": {"<<"}, ">>": {">>"},
}

// opBefore finds the operator token of a binary expression: the token just before its right operand (the right
// operand's first token is at rewritten offset rOff), or the first such token from cur.
func (c *conv) opBefore(op string, rOff int) int {
	texts := opTexts[op]
	match := func(t rtok) bool {
		for _, s := range texts {
			if t.val == s && (t.kind == Op || t.kw) {
				return true
			}
		}
		return false
	}
	if k := c.idx(rOff) - 1; k >= c.cur && k >= 0 && match(c.rw.toks[k]) {
		return k
	}
	return c.find(match, -1)
}

// arithLevel is Postgres' precedence of the arithmetic operators and ||: * / % bind tighter than + -, and those
// tighter than || (TiDB binds || tightest of all).
var arithLevel = map[string]int{"||": 1, "+": 2, "-": 2, "*": 3, "/": 3, "%": 3}

// arithOp is the operator of a TiDB node that is x + y, x - y, x * y, x / y, x % y or x || y, or "".
func (c *conv) arithOp(n ast.ExprNode) string {
	switch n := n.(type) {
	case *ast.BinaryOperationExpr:
		switch n.Op {
		case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Div, opcode.Mod:
			return binaryOps[n.Op]
		}
	case *ast.FuncCallExpr:
		// TiDB reads a || b as concat(a, b), which starts where a starts; the user's concat(a, b) starts at its name.
		if n.FnName.L == "concat" && n.Schema.O == "" && len(n.Args) == 2 {
			k := c.idx(n.OriginTextPosition())
			if tok := c.rw.toks[k]; n.Args[0].OriginTextPosition() == n.OriginTextPosition() ||
				!(tok.fn && strings.EqualFold(tok.val, "concat")) {
				return "||"
			}
		}
	}
	return ""
}

// arith converts a run of + - * / % and || in Postgres' precedence (arithLevel; all of them left-associative).
// TiDB groups the run differently, but an in-order walk of its tree gives the operands (parenthesized ones
// stay whole) and operators in the user's order, which are grouped again here.
func (c *conv) arith(n ast.ExprNode) (Expr, error) {
	var operands []ast.ExprNode
	var ops []string
	var walk func(n ast.ExprNode)
	walk = func(n ast.ExprNode) {
		op := c.arithOp(n)
		if op == "" {
			operands = append(operands, n)
			return
		}
		var l, r ast.ExprNode
		switch n := n.(type) {
		case *ast.BinaryOperationExpr:
			l, r = n.L, n.R
		case *ast.FuncCallExpr:
			l, r = n.Args[0], n.Args[1]
		}
		walk(l)
		ops = append(ops, op)
		walk(r)
	}
	walk(n)
	xs := make([]Expr, len(operands))
	ps := make([]int, len(ops))
	var err error
	if xs[0], err = c.expr(operands[0]); err != nil {
		return nil, err
	}
	for i, op := range ops {
		k := c.opBefore(op, operands[i+1].OriginTextPosition())
		if k < 0 {
			return nil, c.errAt(c.cur)
		}
		c.cur = max(c.cur, k+1)
		ps[i] = c.origAt(k)
		if xs[i+1], err = c.expr(operands[i+1]); err != nil {
			return nil, err
		}
	}
	// Precedence climbing: operator i stands between operands i and i+1.
	i := 0
	var climb func(minLevel int) Expr
	climb = func(minLevel int) Expr {
		lhs := xs[i]
		for i < len(ops) && arithLevel[ops[i]] >= minLevel {
			op, p := ops[i], ps[i]
			i++
			rhs := climb(arithLevel[op] + 1)
			lhs = &Binary{P: p, Op: op, L: lhs, R: rhs}
		}
		return lhs
	}
	return climb(0), nil
}

// startDepth is the depth of the token where e starts.
func (c *conv) depthOf(e ast.ExprNode) int {
	return c.rw.toks[c.idx(e.OriginTextPosition())].depth
}

// kwAfter finds keyword kw from cur at the depth where x starts, for the positions Postgres reports at a keyword.
func (c *conv) kwAfter(kws []string, x ast.ExprNode, fallback int) int {
	d := c.depthOf(x)
	k := c.find(func(t rtok) bool {
		for _, kw := range kws {
			if t.kw && t.val == kw {
				return true
			}
		}
		return false
	}, d)
	if k < 0 {
		return fallback
	}
	c.cur = max(c.cur, k+1)
	return c.rw.toks[k].orig
}

func (c *conv) exprs(in []ast.ExprNode) ([]Expr, error) {
	var out []Expr
	for _, e := range in {
		x, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (c *conv) expr(n ast.ExprNode) (Expr, error) {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		c.leaf(n.OriginTextPosition())
		return c.expr(n.Expr)
	case *ast.ColumnNameExpr:
		p, _ := c.leaf(n.OriginTextPosition())
		if ph := c.rw.ph[n.Name.Name.O]; ph != nil && (ph.tvf != nil || ph.unnest != nil) {
			// a window TVF or UNNEST the rewrite took out of the text, where a value is expected
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, p, "a table function is only allowed in FROM")
		}
		if n.Name.Schema.O != "" {
			// t.r.f: field f of ROW column r of t (schemas have no columns of their own here).
			return &Func{P: p, Name: "field", Args: []Expr{&ColumnRef{P: p, Table: n.Name.Schema.O, Name: n.Name.Table.O},
				&Literal{P: p, Kind: LitString, Text: n.Name.Name.O}}}, nil
		}
		return &ColumnRef{P: p, Table: n.Name.Table.O, Name: n.Name.Name.O}, nil
	case ast.ValueExpr:
		if n.OriginTextPosition() == 0 {
			// TiDB gives LAG's and LEAD's offset no offset (the text never starts with a literal): the next number.
			k := c.find(func(t rtok) bool { return t.kind == Number }, -1)
			c.cur = max(c.cur, k+1)
			return c.literalAt(k)
		}
		_, k := c.leaf(n.OriginTextPosition())
		return c.literalAt(k)
	case *ast.PositionExpr:
		// ORDER BY 1: TiDB gives no offset; it is the next number.
		k := c.find(func(t rtok) bool { return t.kind == Number }, -1)
		c.cur = max(c.cur, k+1)
		return c.literalAt(k)
	case *ast.UnaryOperationExpr:
		p, k := c.leaf(n.OriginTextPosition())
		switch n.Op {
		case opcode.Minus, opcode.Plus:
			x, err := c.expr(n.V)
			if err != nil {
				return nil, err
			}
			// Postgres folds a sign into a numeric constant.
			if l, ok := x.(*Literal); ok && n.Op == opcode.Minus && (l.Kind == LitInt || l.Kind == LitDecimal || l.Kind == LitFloat) && !strings.HasPrefix(l.Text, "-") {
				return &Literal{P: p, Kind: l.Kind, Text: "-" + l.Text}, nil
			}
			op := "-"
			if n.Op == opcode.Plus {
				op = "+"
			}
			return &Unary{P: p, Op: op, X: x}, nil
		case opcode.Not:
			x, err := c.expr(n.V)
			if err != nil {
				return nil, err
			}
			return &Unary{P: p, Op: "not", X: x}, nil
		}
		return nil, c.unsupported(k, "operator "+c.rw.toks[k].text)
	case *ast.BinaryOperationExpr:
		if c.arithOp(n) != "" {
			return c.arith(n)
		}
		l, err := c.expr(n.L)
		if err != nil {
			return nil, err
		}
		op, ok := binaryOps[n.Op]
		if n.Op == opcode.NullEQ {
			op = "<=>"
		}
		if n.Op == opcode.Xor || n.Op == opcode.LeftShift || n.Op == opcode.RightShift {
			// Marked operators of ours (rewrite.go): AT TIME ZONE and x[i] as ^, -> and ->> as << and >>.
			text := map[opcode.Op]string{opcode.Xor: "^", opcode.LeftShift: "<<", opcode.RightShift: ">>"}[n.Op]
			k := c.opBefore(text, n.R.OriginTextPosition())
			if k < 0 || c.rw.toks[k].mark == "" {
				return nil, c.errAt(k)
			}
			c.cur = max(c.cur, k+1)
			r, err := c.expr(n.R)
			if err != nil {
				return nil, err
			}
			switch c.rw.toks[k].mark {
			case "at time zone":
				return &Func{P: c.origAt(k), Name: "timezone", Args: []Expr{r, l}}, nil
			case "subscript":
				return &Func{P: c.origAt(k), Name: "element_at", Args: []Expr{l, r}}, nil
			case "->":
				return &Func{P: c.origAt(k), Name: "json_get", Args: []Expr{l, r}}, nil
			case "->>":
				return &Func{P: c.origAt(k), Name: "json_get_text", Args: []Expr{l, r}}, nil
			}
			return nil, c.errAt(k)
		}
		k := c.opBefore(op, n.R.OriginTextPosition())
		if !ok && n.Op != opcode.NullEQ {
			return nil, c.unsupported(k, "operator "+n.Op.String())
		}
		if op == "<=>" {
			if k < 0 || c.rw.toks[k].mark == "" {
				return nil, c.errAt(k)
			}
			op = c.rw.toks[k].mark
		}
		c.cur = max(c.cur, k+1)
		r, err := c.expr(n.R)
		if err != nil {
			return nil, err
		}
		return &Binary{P: c.origAt(k), Op: op, L: l, R: r}, nil
	case *ast.IsNullExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		return &IsNull{P: c.kwAfter([]string{"is"}, n.Expr, x.Pos()), X: x, Not: n.Not}, nil
	case *ast.IsTruthExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		return &IsBool{P: c.kwAfter([]string{"is"}, n.Expr, x.Pos()), X: x, Value: n.True != 0, Not: n.Not}, nil
	case *ast.BetweenExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		b := &Between{P: c.kwAfter([]string{"between"}, n.Expr, x.Pos()), X: x, Not: n.Not}
		if b.Lo, err = c.expr(n.Left); err != nil {
			return nil, err
		}
		if b.Hi, err = c.expr(n.Right); err != nil {
			return nil, err
		}
		return b, nil
	case *ast.PatternInExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		in := &InList{P: c.kwAfter([]string{"in"}, n.Expr, x.Pos()), X: x, Not: n.Not}
		if n.Sel != nil {
			sq, ok := n.Sel.(*ast.SubqueryExpr)
			if !ok {
				return nil, c.unsupported(c.cur, "this IN list")
			}
			c.leaf(sq.OriginTextPosition())
			if in.Sub, err = c.query(sq.Query); err != nil {
				return nil, err
			}
			return in, nil
		}
		if in.List, err = c.exprs(n.List); err != nil {
			return nil, err
		}
		return in, nil
	case *ast.PatternLikeOrIlikeExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		lk := &Like{P: c.kwAfter([]string{"like", "ilike"}, n.Expr, x.Pos()), X: x, Not: n.Not, CaseInsensitive: !n.IsLike}
		if lk.Pattern, err = c.expr(n.Pattern); err != nil {
			return nil, err
		}
		if k := min(c.cur, len(c.rw.toks)-1); n.EscapeExplicit || c.rw.toks[k].kw && c.rw.toks[k].val == "escape" {
			e := c.find(func(t rtok) bool { return t.kw && t.val == "escape" }, -1)
			c.cur = max(c.cur, e+2)
			if lk.Escape, err = c.literalAt(e + 1); err != nil {
				return nil, err
			}
		}
		return lk, nil
	case *ast.PatternRegexpExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		k := c.find(func(t rtok) bool { return t.kw && t.val == "regexp" }, c.depthOf(n.Expr))
		lk := &Like{P: c.origAt(k), X: x, Not: n.Not, Regexp: true}
		if k >= 0 {
			lk.CaseInsensitive = strings.HasSuffix(c.rw.toks[k].mark, "*")
			c.cur = max(c.cur, k+1)
		}
		if lk.Pattern, err = c.expr(n.Pattern); err != nil {
			return nil, err
		}
		return lk, nil
	case *ast.CaseExpr:
		p, _ := c.leaf(n.OriginTextPosition())
		cs := &Case{P: p}
		var err error
		if n.Value != nil {
			if cs.Operand, err = c.expr(n.Value); err != nil {
				return nil, err
			}
		}
		for _, w := range n.WhenClauses {
			cond, err := c.expr(w.Expr)
			if err != nil {
				return nil, err
			}
			res, err := c.expr(w.Result)
			if err != nil {
				return nil, err
			}
			cs.Whens = append(cs.Whens, When{Cond: cond, Result: res})
		}
		if n.ElseClause != nil {
			if cs.Else, err = c.expr(n.ElseClause); err != nil {
				return nil, err
			}
		}
		return cs, nil
	case *ast.SubqueryExpr:
		p, _ := c.leaf(n.OriginTextPosition())
		q, err := c.query(n.Query)
		if err != nil {
			return nil, err
		}
		return &Subquery{P: p, Query: q, Exists: n.Exists}, nil
	case *ast.ExistsSubqueryExpr:
		sq, ok := n.Sel.(*ast.SubqueryExpr)
		k := c.idx(n.OriginTextPosition())
		if !ok {
			return nil, c.unsupported(k, "this EXISTS")
		}
		// TiDB's offset is NOT, EXISTS or the subquery's "(", depending on the form.
		isKwAt := func(k int, kw string) bool {
			return k >= 0 && k < len(c.rw.toks) && c.rw.toks[k].kw && c.rw.toks[k].val == kw
		}
		e := k
		switch {
		case isKwAt(k, "not") && isKwAt(k+1, "exists"):
			e = k + 1
		case isKwAt(k-1, "exists"):
			e = k - 1
		}
		notK := e - 1
		c.cur = max(c.cur, e+1)
		c.leaf(sq.OriginTextPosition())
		q, err := c.query(sq.Query)
		if err != nil {
			return nil, err
		}
		var x Expr = &Subquery{P: c.origAt(e), Query: q, Exists: true}
		if n.Not {
			x = &Unary{P: c.origAt(notK), Op: "not", X: x}
		}
		return x, nil
	case *ast.FuncCallExpr:
		return c.funcCall(n)
	case *ast.AggregateFuncExpr:
		p, k := c.leaf(n.OriginTextPosition())
		f := &Func{P: p, Name: strings.ToLower(n.F), Distinct: n.Distinct}
		if n.Order != nil {
			return nil, c.unsupported(k, "ORDER BY inside an aggregate")
		}
		if c.starCall(k) {
			f.Star = true
			c.cur = max(c.cur, k+3)
			return f, nil
		}
		var err error
		if f.Args, err = c.exprs(n.Args); err != nil {
			return nil, err
		}
		return f, nil
	case *ast.WindowFuncExpr:
		p, k := c.leaf(n.OriginTextPosition())
		f := &Func{P: p, Name: strings.ToLower(n.Name), Distinct: n.Distinct}
		if n.IgnoreNull || n.FromLast {
			return nil, c.unsupported(k, "IGNORE NULLS and FROM LAST")
		}
		if c.starCall(k) {
			f.Star = true
			c.cur = max(c.cur, k+3)
		} else {
			var err error
			if f.Args, err = c.exprs(n.Args); err != nil {
				return nil, err
			}
		}
		o := c.findKw("over", -1)
		c.cur = max(c.cur, o+1)
		spec := n.Spec
		if spec.OnlyAlias {
			// OVER w: resolved against the WINDOW clause at the end of its SELECT (selectCore)
			ws := &WindowSpec{P: c.origAt(o), Ref: spec.Name.L}
			c.cur = max(c.cur, o+2)
			c.winRefs = append(c.winRefs, ws)
			f.Over = ws
			return f, nil
		}
		if spec.Name.L != "" || spec.Ref.L != "" {
			return nil, c.unsupported(o, "a window that extends a named window (OVER (w ...))")
		}
		ws, err := c.windowSpec(&spec, o+1)
		if err != nil {
			return nil, err
		}
		f.Over = ws
		return f, nil
	case *ast.CompareSubqueryExpr:
		return nil, c.unsupported(c.idx(n.OriginTextPosition()), "ANY, SOME and ALL with a subquery")
	case *ast.RowExpr:
		p, k := c.leaf(n.OriginTextPosition())
		if c.rw.toks[k].val != "row" && c.rw.toks[k].text != "(" {
			return nil, c.unsupported(k, "a row constructor")
		}
		args, err := c.exprs(n.Values)
		if err != nil {
			return nil, err
		}
		return &Func{P: p, Name: "row", Args: args}, nil
	case *ast.DefaultExpr:
		return nil, c.unsupported(c.idx(n.OriginTextPosition()), "DEFAULT in an expression")
	}
	k := c.idx(n.OriginTextPosition())
	return nil, c.unsupported(k, fmt.Sprintf("the expression at or near %q", c.rw.toks[k].text))
}

// starCall reports whether the call whose name is rewritten token k is f(*).
func (c *conv) starCall(k int) bool {
	return k+2 < len(c.rw.toks) && c.rw.toks[k+1].text == "(" && c.rw.toks[k+2].text == "*" && c.rw.toks[k+2].kind == Op
}

func (c *conv) funcCall(n *ast.FuncCallExpr) (Expr, error) {
	if c.arithOp(n) != "" { // a || b
		return c.arith(n)
	}
	p, k := c.leaf(n.OriginTextPosition())
	name := n.FnName.O
	if ph := c.rw.ph[name]; ph != nil && n.Schema.O == "" && c.rw.toks[k].synth {
		switch {
		case ph.expr != nil:
			c.cur = max(c.cur, k+3)
			return ph.expr, nil
		case ph.cast != nil || ph.extract != nil:
			if len(n.Args) != 1 {
				return nil, c.errAt(k)
			}
			x, err := c.expr(n.Args[0])
			if err != nil {
				return nil, err
			}
			if ph.cast != nil {
				cs := *ph.cast
				cs.X = x
				return &cs, nil
			}
			ex := *ph.extract
			ex.X = x
			return &ex, nil
		case ph.filter:
			if len(n.Args) != 2 {
				return nil, c.errAt(k)
			}
			agg, err := c.expr(n.Args[0])
			if err != nil {
				return nil, err
			}
			f, ok := agg.(*Func)
			if !ok || f.Filter != nil {
				return nil, c.unsupported(k, "FILTER on something that is not an aggregate call")
			}
			if f.Filter, err = c.expr(n.Args[1]); err != nil {
				return nil, err
			}
			return f, nil
		case ph.ctor != "":
			args, err := c.exprs(n.Args)
			if err != nil {
				return nil, err
			}
			return &Func{P: p, Name: ph.ctor, Args: args}, nil
		}
		return nil, c.errAt(k)
	}
	tok := c.rw.toks[k]
	lname := strings.ToLower(name)
	f := &Func{P: p, Name: lname}
	if tok.kind == QuotedIdent {
		f.Name = name // a quoted name keeps its case
	}
	if n.Schema.O != "" {
		f.Name = n.Schema.O + "." + f.Name
	}
	if lname == "trim" {
		return c.trim(f, n, k)
	}
	var err error
	if f.Args, err = c.exprs(n.Args); err != nil {
		return nil, err
	}
	return f, nil
}

// trim converts TRIM([BOTH|LEADING|TRAILING] [x] FROM s) to btrim/ltrim/rtrim(s[, x]); k is the name token.
func (c *conv) trim(f *Func, n *ast.FuncCallExpr, k int) (Expr, error) {
	f.Name = "btrim"
	var s, x ast.ExprNode
	if len(n.Args) > 0 {
		s = n.Args[0]
	}
	if len(n.Args) > 1 {
		x = n.Args[1]
	}
	if len(n.Args) == 3 {
		if d, ok := n.Args[2].(*ast.TrimDirectionExpr); ok {
			switch d.Direction {
			case ast.TrimLeading:
				f.Name = "ltrim"
			case ast.TrimTrailing:
				f.Name = "rtrim"
			}
		}
		if k+3 < len(c.rw.toks) && c.rw.toks[k+3].kw && c.rw.toks[k+3].val == "from" {
			x = nil // TRIM(BOTH FROM s): TiDB made up the ' '
		}
	}
	if s == nil || len(n.Args) > 3 {
		return nil, c.errAt(k)
	}
	// Source order: the characters come before the string.
	var chars Expr
	if x != nil {
		var err error
		if chars, err = c.expr(x); err != nil {
			return nil, err
		}
	}
	str, err := c.expr(s)
	if err != nil {
		return nil, err
	}
	f.Args = []Expr{str}
	if chars != nil {
		f.Args = append(f.Args, chars)
	}
	return f, nil
}
