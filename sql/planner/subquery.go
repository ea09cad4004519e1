package planner

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

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
	if len(rest) == 0 {
		return nil, subs
	}
	return andAll(rest), subs
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
		if x, err = (&exprBinder{sc: outer, params: b.params, tz: b.tz, fns: b.fns}).bind(sp.x); err != nil {
			return nil, err
		}
		if findAggregate(sp.x) != nil {
			return nil, sqlerr.New(sqlerr.GroupingError, sp.p, "aggregate functions are not allowed in WHERE")
		}
		eb := &exprBinder{sc: lay, params: b.params, tz: b.tz, fns: b.fns}
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
		e, err := (&exprBinder{sc: rsc, params: b.params, tz: b.tz, fns: b.fns}).bind(c)
		if err != nil {
			if !undefinedName(err) {
				return nil, nil, nil, err
			}
			var err2 error
			if e, err2 = (&exprBinder{sc: lay, params: b.params, tz: b.tz, fns: b.fns}).bind(c); err2 != nil {
				return nil, nil, nil, err2 // the name is in neither
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

// Scalar subqueries, (SELECT agg(...) FROM ...) used as a value in WHERE or in the select list of a query that
// does not aggregate, are LEFT JOINs of the FROM with the subquery's result, which must be one row per FROM row
// at most, so it must aggregate:
//
//   - uncorrelated: the subquery is a global aggregate (or a SELECT without FROM), one row; the join keys on a
//     constant, so each of its changes re-emits every row of the FROM (Flink does the same);
//   - correlated through equalities inner = outer (its other conjuncts read only its own columns): it is
//     grouped by the inner sides, one row per key, and joined on the equalities.
//
// A FROM row without a partner (an empty subquery, a key the subquery has no row for) gets the value the
// aggregate has over no rows: COUNT 0, the others NULL (Postgres' semantics, not the LEFT JOIN's NULL).

// scalarSubqueries lists the scalar subqueries (not EXISTS, not IN) of es, outer first, in order.
func scalarSubqueries(es ...parser.Expr) []*parser.Subquery {
	var out []*parser.Subquery
	for _, e := range es {
		walkExpr(e, func(x parser.Expr) bool {
			if sq, ok := x.(*parser.Subquery); ok {
				if !sq.Exists {
					out = append(out, sq)
				}
				return false
			}
			return true
		})
	}
	return out
}

// splitLate takes out of where the conjuncts that hold a subquery (bound after the subqueries' joins).
func splitLate(where parser.Expr) (parser.Expr, []parser.Expr) {
	var rest, late []parser.Expr
	for _, c := range astConjuncts(where) {
		if subqueryIn(c) >= 0 {
			late = append(late, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(late) == 0 {
		return where, nil
	}
	if len(rest) == 0 {
		return nil, late
	}
	return andAll(rest), late
}

// singleRow reports whether q returns one row at most: a SELECT that aggregates without GROUP BY, or one without
// FROM.
func singleRow(q *parser.Query) bool {
	core, ok := q.Body.(*parser.SelectCore)
	if !ok || len(core.GroupBy) > 0 {
		return false
	}
	if len(core.From) == 0 {
		return true
	}
	for _, it := range core.Items {
		if findAggregate(it.Expr) != nil {
			return true
		}
	}
	return core.Having != nil
}

// emptyValue is item over no rows: its aggregate calls replaced by their value over none (COUNT 0, others NULL).
func emptyValue(item parser.Expr) parser.Expr {
	switch e := item.(type) {
	case *parser.Func:
		if aggregateNames[e.Name] && e.Over == nil {
			if e.Name == "count" {
				return &parser.Literal{P: e.P, Kind: parser.LitInt, Text: "0"}
			}
			return &parser.Literal{P: e.P, Kind: parser.LitNull}
		}
		c := *e
		c.Args = make([]parser.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = emptyValue(a)
		}
		return &c
	case *parser.Unary:
		c := *e
		c.X = emptyValue(e.X)
		return &c
	case *parser.Binary:
		c := *e
		c.L, c.R = emptyValue(e.L), emptyValue(e.R)
		return &c
	case *parser.Cast:
		c := *e
		c.X = emptyValue(e.X)
		return &c
	case *parser.Case:
		c := *e
		c.Operand, c.Else = emptyValue(e.Operand), emptyValue(e.Else)
		c.Whens = make([]parser.When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = parser.When{Cond: emptyValue(w.Cond), Result: emptyValue(w.Result)}
		}
		return &c
	case *parser.IsNull:
		c := *e
		c.X = emptyValue(e.X)
		return &c
	}
	return item
}

// scalarJoin LEFT JOINs input (whose columns are sc's) with the result of sq and returns the joined node and its
// scope: sc's columns, the subquery's (hidden), and sq bound to its value.
func (b *binder) scalarJoin(input node, sc *scope, sq *parser.Subquery) (node, *scope, error) {
	nl := len(sc.cols)
	core, ok := sq.Query.Body.(*parser.SelectCore)
	if ok && len(core.Items) != 1 {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, sq.P, "subquery must return only one column")
	}
	if !singleRow(sq.Query) {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sq.P,
			"a scalar subquery must aggregate (it could return more than one row): use MAX(...), MIN(...) or a join")
	}
	if len(sq.Query.With) > 0 || len(sq.Query.OrderBy) > 0 || sq.Query.Limit != nil || sq.Query.Offset != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sq.P, "WITH, ORDER BY and LIMIT in a scalar subquery are not supported")
	}
	item := core.Items[0].Expr
	if _, star := item.(*parser.Star); star {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, sq.P, "subquery must return only one column")
	}
	// Split its WHERE: its own conjuncts, and the equalities with the enclosing query.
	var right node
	var keysIn []parser.Expr // the inner sides of the correlating equalities
	var keysOut []expr.Expr  // their outer sides, over sc
	var own []parser.Expr
	if len(core.From) > 0 {
		from, err := b.bindFrom(core.From)
		if err != nil {
			return nil, nil, err
		}
		rsc := &scope{cols: from.columns()}
		for _, c := range astConjuncts(core.Where) {
			if _, err := (&exprBinder{sc: rsc, params: b.params, tz: b.tz, fns: b.fns}).bind(c); err == nil || !undefinedName(err) {
				own = append(own, c) // its own (or an error its binding reports again)
				continue
			}
			bin, ok := c.(*parser.Binary)
			if ok && bin.Op == "=" {
				inner, outer := bin.L, bin.R
				if _, err := (&exprBinder{sc: rsc, params: b.params, tz: b.tz, fns: b.fns}).bind(inner); err != nil {
					inner, outer = outer, inner
				}
				_, errIn := (&exprBinder{sc: rsc, params: b.params, tz: b.tz, fns: b.fns}).bind(inner)
				o, errOut := (&exprBinder{sc: sc, params: b.params, tz: b.tz, fns: b.fns}).bind(outer)
				if errIn == nil && errOut == nil {
					keysIn, keysOut = append(keysIn, inner), append(keysOut, o)
					continue
				}
			}
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, c.Pos(),
				"a correlated scalar subquery may read the enclosing query only in equalities (inner = outer) ANDed in its WHERE")
		}
	}
	// The right input: SELECT keys..., item, 1 FROM ... WHERE own GROUP BY keys (no keys: one row).
	rc := &parser.SelectCore{P: core.P, From: core.From, GroupBy: keysIn}
	for i, k := range keysIn {
		rc.Items = append(rc.Items, parser.SelectItem{P: k.Pos(), Expr: k, Alias: "?k" + strconv.Itoa(i)})
	}
	rc.Items = append(rc.Items, parser.SelectItem{P: item.Pos(), Expr: item, Alias: "?v"},
		parser.SelectItem{P: sq.P, Expr: &parser.Literal{P: sq.P, Kind: parser.LitBool, Text: "true"}, Alias: "?m"})
	for _, c := range own {
		if rc.Where == nil {
			rc.Where = c
		} else {
			rc.Where = &parser.Binary{P: c.Pos(), Op: "and", L: rc.Where, R: c}
		}
	}
	if len(keysIn) > 0 && findAggregate(item) == nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sq.P,
			"a correlated scalar subquery must aggregate (it could return more than one row): use MAX(...), MIN(...) or a join")
	}
	bq, err := b.bindQuery(&parser.Query{P: sq.Query.P, Body: rc})
	if err != nil {
		return nil, nil, err
	}
	right = visibleOnly(bq.root, bq.visible)
	rcols := right.columns()
	var conds []expr.Expr
	for i, o := range keysOut {
		k := rcols[i]
		eq, err := (&exprBinder{params: b.params, tz: b.tz, fns: b.fns}).call(sq.P, "=", o, expr.Column(nl+i, k.Name, k.Type))
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, eq)
	}
	j := newJoin(join.JoinLeft, input, right, sq.P)
	j.constKey = true
	if len(conds) > 0 {
		cond := conds[0]
		if len(conds) > 1 {
			if cond, err = expr.Call("and", conds...); err != nil {
				return nil, nil, posErr(err, sq.P)
			}
		}
		j.cond = cond
	}
	n, err := j.analyze()
	if err != nil {
		return nil, nil, err
	}
	// The joined columns: sc's, then the subquery's, hidden.
	p := &projectNode{in: n}
	for i, c := range n.columns() {
		if i >= nl {
			c = Col{Name: c.Name, Type: c.Type, Hidden: true, QualOnly: true}
		}
		p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
		p.out = append(p.out, c)
	}
	vi, mi := nl+len(keysIn), nl+len(keysIn)+1
	v, m := expr.Column(vi, "?v", rcols[len(keysIn)].Type), expr.Column(mi, "?m", rcols[len(keysIn)+1].Type)
	val := v
	if empty := emptyValue(item); !isNullLiteral(empty) {
		eb := &exprBinder{sc: &scope{}, params: b.params, tz: b.tz, fns: b.fns}
		ev, err := eb.bind(empty)
		if err != nil {
			return nil, nil, err
		}
		if !arrow.TypeEqual(ev.Type(), v.Type()) {
			if ev, err = expr.Cast(ev, v.Type()); err != nil {
				return nil, nil, posErr(err, sq.P)
			}
		}
		unmatched, err := eb.call(sq.P, "is_null", m)
		if err != nil {
			return nil, nil, err
		}
		if val, err = eb.call(sq.P, "case", unmatched, ev, v); err != nil {
			return nil, nil, err
		}
	}
	subs := map[parser.Expr]expr.Expr{sq: val}
	for k, e := range sc.subs {
		subs[k] = e
	}
	return p, &scope{cols: p.out, subs: subs}, nil
}

func isNullLiteral(e parser.Expr) bool {
	lit, ok := e.(*parser.Literal)
	return ok && lit.Kind == parser.LitNull
}

func itemExprs(items []parser.SelectItem) []parser.Expr {
	out := make([]parser.Expr, len(items))
	for i, it := range items {
		out[i] = it.Expr
	}
	return out
}

// andAll is the AND of es (at least one).
func andAll(es []parser.Expr) parser.Expr {
	out := es[0]
	for _, e := range es[1:] {
		out = &parser.Binary{P: e.Pos(), Op: "and", L: out, R: e}
	}
	return out
}
