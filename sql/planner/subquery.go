package planner

import (
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/join"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Subqueries in WHERE become joins over changelogs, as Flink and RisingWave decorrelate them:
//
//   - EXISTS (q) and x IN (q), ANDed with the rest of WHERE, are a semi join of the FROM with q: a FROM row is
//     emitted while a row of q matches it, and retracted when its last match goes. NOT EXISTS is an anti join
//     (a FROM row while nothing matches it, retracted when a match arrives).
//   - x NOT IN (q) follows Postgres' NULLs: a row passes only when x <> v is TRUE for every v of q, so a NULL x
//     passes only an empty q, and a NULL in q passes nothing. It is the anti join on x = v OR x IS NULL OR v IS NULL.
//   - A correlated subquery (its WHERE reads columns of the enclosing FROM) is a simple SELECT ... FROM ... WHERE:
//     its FROM is the join's right input, its conjuncts that read only its own columns filter that input, and
//     those that read the enclosing FROM's columns are the join's condition (its equalities the keys). A name both
//     FROMs have resolves to the subquery's own, as in SQL.
//   - An uncorrelated subquery is any query: its result is the join's right input.
//
// A semi or anti join needs an equality to key on; where there is none (an uncorrelated EXISTS, the NULL checks
// of NOT IN) the right input is first reduced to at most one row (SELECT DISTINCT 1 ...) and the join keys on a
// constant, so every row of it goes to one subtask.

// subPred is a subquery predicate, one conjunct of a WHERE clause.
type subPred struct {
	p      int
	exists bool        // EXISTS (q), else x IN (q)
	not    bool        // NOT EXISTS, NOT IN
	x      parser.Expr // IN's left operand
	q      *parser.Query
}

// splitSubqueries takes the subquery predicates out of the conjuncts of where: the rest (nil when nothing is left)
// and the predicates, in the order written.
func splitSubqueries(where parser.Expr) (parser.Expr, []subPred) {
	var subs []subPred
	var rest []parser.Expr
	var walk func(e parser.Expr)
	walk = func(e parser.Expr) {
		if b, ok := e.(*parser.Binary); ok && b.Op == "and" {
			walk(b.L)
			walk(b.R)
			return
		}
		if sp, ok := asSubPred(e); ok {
			subs = append(subs, sp)
			return
		}
		rest = append(rest, e)
	}
	if where != nil {
		walk(where)
	}
	if len(subs) == 0 {
		return where, nil
	}
	var out parser.Expr
	for _, e := range rest {
		if out == nil {
			out = e
			continue
		}
		out = &parser.Binary{P: e.Pos(), Op: "and", L: out, R: e}
	}
	return out, subs
}

func asSubPred(e parser.Expr) (subPred, bool) {
	not := false
	for {
		u, ok := e.(*parser.Unary)
		if !ok || u.Op != "not" {
			break
		}
		not, e = !not, u.X
	}
	switch e := e.(type) {
	case *parser.Subquery:
		if e.Exists {
			return subPred{p: e.P, exists: true, not: not, q: e.Query}, true
		}
	case *parser.InList:
		if e.Sub != nil {
			return subPred{p: e.P, not: not != e.Not, x: e.X, q: e.Sub}, true
		}
	}
	return subPred{}, false
}

// subqueryIn finds a subquery inside e that no decorrelation took: its position, or -1.
func subqueryIn(es ...parser.Expr) int {
	pos := -1
	for _, e := range es {
		walkExpr(e, func(x parser.Expr) bool {
			switch x := x.(type) {
			case *parser.Subquery:
				if pos < 0 {
					pos = x.P
				}
				return false
			case *parser.InList:
				if x.Sub != nil && pos < 0 {
					pos = x.P
				}
			}
			return pos < 0
		})
	}
	return pos
}

// simpleCore is q's SELECT when it is one without grouping, DISTINCT, ORDER BY or LIMIT: the form whose WHERE may
// read the enclosing query's columns.
func simpleCore(q *parser.Query) (*parser.SelectCore, bool) {
	core, ok := q.Body.(*parser.SelectCore)
	if !ok || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
		return nil, false
	}
	if core.Distinct || len(core.GroupBy) > 0 || core.Having != nil || len(core.From) == 0 {
		return nil, false
	}
	for _, it := range core.Items {
		if findAggregate(it.Expr) != nil {
			return nil, false
		}
	}
	return core, true
}

// astConjuncts splits e at its top-level ANDs.
func astConjuncts(e parser.Expr) []parser.Expr {
	if e == nil {
		return nil
	}
	if b, ok := e.(*parser.Binary); ok && b.Op == "and" {
		return append(astConjuncts(b.L), astConjuncts(b.R)...)
	}
	return []parser.Expr{e}
}

// undefinedName reports whether err is a name that does not resolve (a column or a table qualifier): in a
// subquery, such a name may be the enclosing query's.
func undefinedName(err error) bool {
	c := sqlerr.Code(err)
	return c == sqlerr.UndefinedColumn || c == sqlerr.UndefinedTable
}

// subqueryJoin joins input (whose columns are outer's) with the subquery of sp as a semi or anti join and returns
// a node with input's columns.
func (b *binder) subqueryJoin(input node, outer *scope, sp subPred) (node, error) {
	nl := len(outer.cols)
	typ := join.JoinSemi
	if sp.not {
		typ = join.JoinAnti
	}
	right, conds, item, err := b.subqueryInput(outer, sp)
	if err != nil {
		return nil, err
	}
	lay := &scope{cols: append(append([]Col{}, outer.cols...), right.columns()...), inner: nl}
	var x expr.Expr
	if !sp.exists {
		if x, err = (&exprBinder{sc: outer, params: b.params}).bind(sp.x); err != nil {
			return nil, err
		}
		if findAggregate(sp.x) != nil {
			return nil, sqlerr.New(sqlerr.GroupingError, sp.p, "aggregate functions are not allowed in WHERE")
		}
		eb := &exprBinder{sc: lay, params: b.params}
		var v expr.Expr
		var vAST parser.Expr = &parser.ColumnRef{P: sp.p, Name: "?"}
		if item != nil {
			vAST = item
		}
		if v, err = item0(eb, item, right, nl); err != nil {
			return nil, err
		}
		l, r, err := eb.coerceUnknown(x, v, sp.x, vAST)
		if err != nil {
			return nil, posErr(err, sp.p)
		}
		eq, err := eb.call(sp.p, "=", l, r)
		if err != nil {
			return nil, err
		}
		if sp.not {
			// NOT IN: no v with x = v, and neither x nor any v NULL (unless there is no v at all).
			if len(conds) == 0 {
				return b.notInUncorrelated(input, outer, right, eq, x, sp)
			}
			xNull, _ := expr.Call("is_null", l)
			vNull, _ := expr.Call("is_null", r)
			if eq, err = eb.call(sp.p, "or", eq, xNull, vNull); err != nil {
				return nil, err
			}
		}
		conds = append(conds, eq)
	}
	if sp.exists && len(conds) == 0 {
		// Uncorrelated EXISTS: whether q has a row at all.
		if right, err = b.oneRowIf(sp.q, nil, sp.p); err != nil {
			return nil, err
		}
	}
	return semiAnti(typ, input, right, conds, sp.p)
}

// item0 binds the one select item of an IN subquery (item, over lay) or, for a bound subquery (item nil), names
// its one column.
func item0(eb *exprBinder, item parser.Expr, right node, nl int) (expr.Expr, error) {
	if item != nil {
		return eb.bind(item)
	}
	c := right.columns()[0]
	return expr.Column(nl, c.Name, c.Type), nil
}

// subqueryInput binds sp's subquery as a join input: right, the conditions over outer's columns then right's that
// correlate it (simple form only), and, for IN in the simple form, its select item (to bind over both).
func (b *binder) subqueryInput(outer *scope, sp subPred) (right node, conds []expr.Expr, item parser.Expr, err error) {
	nl := len(outer.cols)
	core, simple := simpleCore(sp.q)
	if simple && subqueryIn(core.Where) >= 0 {
		// Its own subqueries would need a scope for each level: bound as a query, it must not read this one.
		simple = false
	}
	if simple && !sp.exists {
		if len(core.Items) != 1 {
			return nil, nil, nil, sqlerr.New(sqlerr.SyntaxError, sp.p, "subquery has too many columns")
		}
		if st, ok := core.Items[0].Expr.(*parser.Star); ok {
			return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, st.P, "IN (SELECT * ...) is not supported; name the column")
		}
		item = core.Items[0].Expr
	}
	if !simple {
		bq, err := b.bindQuery(sp.q)
		if err != nil {
			if undefinedName(err) {
				return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sp.q.P,
					"a subquery with GROUP BY, DISTINCT, aggregates, LIMIT or set operations must not read the enclosing query's columns: %v", err)
			}
			return nil, nil, nil, err
		}
		if len(bq.order) > 0 || bq.limit >= 0 || bq.offset > 0 {
			return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sp.q.P, "ORDER BY and LIMIT are only supported at the top of a SELECT")
		}
		right = visibleOnly(bq.root, bq.visible)
		if !sp.exists && len(right.columns()) != 1 {
			return nil, nil, nil, sqlerr.New(sqlerr.SyntaxError, sp.p, "subquery has too many columns")
		}
		return right, nil, nil, nil
	}
	if len(core.From) == 1 {
		right, err = b.joinInput(core.From[0])
	} else {
		right, err = b.bindFrom(core.From)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	rsc := &scope{cols: right.columns()}
	lay := &scope{cols: append(append([]Col{}, outer.cols...), right.columns()...), inner: nl}
	var own []expr.Expr
	for _, c := range astConjuncts(core.Where) {
		if f := findAggregate(c); f != nil {
			return nil, nil, nil, sqlerr.New(sqlerr.GroupingError, f.P, "aggregate functions are not allowed in WHERE")
		}
		e, err := (&exprBinder{sc: rsc, params: b.params}).bind(c)
		if err != nil {
			if !undefinedName(err) {
				return nil, nil, nil, err
			}
			var err2 error
			if e, err2 = (&exprBinder{sc: lay, params: b.params}).bind(c); err2 != nil {
				return nil, nil, nil, err // the subquery's own error: the name is in neither
			}
			if err := wantBool(e, "WHERE", c.Pos()); err != nil {
				return nil, nil, nil, err
			}
			conds = append(conds, e)
			continue
		}
		if err := wantBool(e, "WHERE", c.Pos()); err != nil {
			return nil, nil, nil, err
		}
		own = append(own, e)
	}
	if len(own) > 0 {
		cond := own[0]
		if len(own) > 1 {
			if cond, err = expr.Call("and", own...); err != nil {
				return nil, nil, nil, posErr(err, sp.q.P)
			}
		}
		var rest []expr.Expr
		if right, rest, err = distributeWhere(right, cond); err != nil {
			return nil, nil, nil, posErr(err, sp.q.P)
		}
		if len(rest) > 0 {
			cond = rest[0]
			if len(rest) > 1 {
				if cond, err = expr.Call("and", rest...); err != nil {
					return nil, nil, nil, posErr(err, sp.q.P)
				}
			}
			right = &filterNode{in: right, cond: cond}
		}
	}
	if right, err = analyzeJoins(right); err != nil {
		return nil, nil, nil, err
	}
	return right, conds, item, nil
}

// oneRowIf binds SELECT DISTINCT 1 FROM (q) [WHERE its one column IS NULL, when nullOnly]: one row while q has a
// row (a NULL one), none otherwise.
func (b *binder) oneRowIf(q *parser.Query, nullOnly *bool, pos int) (node, error) {
	core := &parser.SelectCore{P: pos, Distinct: true,
		Items: []parser.SelectItem{{P: pos, Expr: &parser.Literal{P: pos, Kind: parser.LitInt, Text: "1"}, Alias: "?one"}},
		From:  []parser.TableExpr{&parser.DerivedTable{P: pos, Query: q, Alias: "?sub", Columns: []string{"?v"}}}}
	if nullOnly != nil && *nullOnly {
		core.Where = &parser.IsNull{P: pos, X: &parser.ColumnRef{P: pos, Table: "?sub", Name: "?v"}}
	}
	bq, err := b.bindQuery(&parser.Query{P: pos, Body: core})
	if err != nil {
		return nil, err
	}
	return visibleOnly(bq.root, bq.visible), nil
}

// notInUncorrelated is x NOT IN (q) for a q that reads nothing of the enclosing query: an anti join on x = v, one
// that drops every row while q holds a NULL, and one that drops a NULL x while q holds any row.
func (b *binder) notInUncorrelated(input node, outer *scope, right node, eq, x expr.Expr, sp subPred) (node, error) {
	n, err := semiAnti(join.JoinAnti, input, right, []expr.Expr{eq}, sp.p)
	if err != nil {
		return nil, err
	}
	yes := true
	nulls, err := b.oneRowIf(sp.q, &yes, sp.p)
	if err != nil {
		return nil, err
	}
	if n, err = semiAnti(join.JoinAnti, n, nulls, nil, sp.p); err != nil {
		return nil, err
	}
	any, err := b.oneRowIf(sp.q, nil, sp.p)
	if err != nil {
		return nil, err
	}
	xNull, err := expr.Call("is_null", x)
	if err != nil {
		return nil, posErr(err, sp.p)
	}
	return semiAnti(join.JoinAnti, n, any, []expr.Expr{xNull}, sp.p)
}

// semiAnti builds the semi or anti join of left with right on conds (over left's columns then right's; none: a
// constant key, so right must be small) and projects left's columns.
func semiAnti(typ join.JoinType, left, right node, conds []expr.Expr, pos int) (node, error) {
	j := newJoin(typ, left, right, pos)
	j.constKey = true
	if len(conds) > 0 {
		cond := conds[0]
		if len(conds) > 1 {
			var err error
			if cond, err = expr.Call("and", conds...); err != nil {
				return nil, posErr(err, pos)
			}
		}
		j.cond = cond
	}
	n, err := j.analyze()
	if err != nil {
		return nil, err
	}
	p := &projectNode{in: n}
	for i, c := range left.columns() {
		p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
		p.out = append(p.out, c)
	}
	return p, nil
}

// constKeys are the key of a join without equalities: the same constant on both sides.
func constKeys() (l, r expr.Expr) {
	return expr.Int64(0), expr.Int64(0)
}
