package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/join"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// joinStrategy is how a join runs.
type joinStrategy uint8

const (
	joinRegular  joinStrategy = iota // every row kept in keyed state; the result is a changelog for outer joins
	joinInterval                     // time-bounded on two time attributes; state cleaned by the watermark
	joinWindow                       // equal window_start and window_end of the same windowing on both sides
	joinTemporal                     // FOR SYSTEM_TIME AS OF the left's time attribute: a versioned right side
	joinLookup                       // FOR SYSTEM_TIME AS OF a processing-time attribute: a table read by key
)

// joinNode joins two inputs. Its columns are the left's then the right's. Until analyze runs (after the WHERE
// clause of the SELECT it belongs to gave its conjuncts), cond is the whole condition; then keys, the time bound
// or window and the residual are split out of it.
type joinNode struct {
	typ         join.JoinType
	left, right node
	// cond is the ON condition (plus the WHERE conjuncts of an inner join that read both sides), over out.
	cond  expr.Expr
	pos   int  // where the join is written, for errors
	comma bool // FROM a, b: a join only through conditions in WHERE
	// constKey lets a join without equalities key on a constant (every row on one subtask): a semi or anti join
	// whose right input is at most one row (subquery.go).
	constKey bool

	analyzed bool
	strategy joinStrategy
	// leftKeys and rightKeys index left's and right's columns pairwise (the equalities of the condition).
	leftKeys, rightKeys []int
	// residual is what remains of cond besides the keys (and the time bounds), over out; nil when nothing.
	residual expr.Expr
	// interval: leftTime + lower <= rightTime <= leftTime + upper (microseconds). temporal: leftTime is the
	// column of FOR SYSTEM_TIME AS OF, rightTime the versions' time.
	leftTime, rightTime int
	lower, upper        int64
	// temporal: the right side was written `r FOR SYSTEM_TIME AS OF col` (asOfP is where col is).
	temporal bool
	asOfP    int
	// window: the window columns of each side.
	leftStart, leftEnd, rightStart, rightEnd int
	out                                      []Col
}

func (n *joinNode) columns() []Col   { return n.out }
func (n *joinNode) children() []node { return []node{n.left, n.right} }

func joinType(kind string) (join.JoinType, bool) {
	switch kind {
	case "inner", "cross", "":
		return join.JoinInner, true
	case "left":
		return join.JoinLeft, true
	case "right":
		return join.JoinRight, true
	case "full":
		return join.JoinFull, true
	}
	return 0, false
}

// bindJoin binds L JOIN R ON/USING: both inputs, then the condition over their columns.
func (b *binder) bindJoin(t *parser.Join) (node, error) {
	typ, ok := joinType(t.Kind)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, t.P, "%s JOIN is not supported", strings.ToUpper(t.Kind))
	}
	left, err := b.joinInput(t.L)
	if err != nil {
		return nil, err
	}
	if u, ok := t.R.(*parser.Unnest); ok {
		// CROSS JOIN UNNEST(a), JOIN UNNEST(a) ON TRUE, LEFT JOIN UNNEST(a) ON TRUE: reads left's rows.
		onTrue := t.On == nil
		if lit, ok := t.On.(*parser.Literal); ok && lit.Kind == parser.LitBool && lit.Text == "true" {
			onTrue = true
		}
		if !onTrue || len(t.Using) > 0 || (typ != join.JoinInner && typ != join.JoinLeft) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, t.P, "a join with UNNEST is CROSS JOIN UNNEST(...), or [LEFT] JOIN UNNEST(...) ON TRUE")
		}
		return b.bindUnnest(left, u, typ == join.JoinLeft)
	}
	var asOf *parser.ColumnRef
	rt := t.R
	if tn, ok := t.R.(*parser.TableName); ok && tn.AsOf != nil {
		c := *tn
		asOf, c.AsOf, rt = tn.AsOf, nil, &c
	}
	right, err := b.joinInput(rt)
	if err != nil {
		return nil, err
	}
	j := newJoin(typ, left, right, t.P)
	if asOf != nil {
		if typ != join.JoinInner && typ != join.JoinLeft {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, t.P, "a join FOR SYSTEM_TIME AS OF is INNER or LEFT, not %s", strings.ToUpper(t.Kind))
		}
		// The time is the left input's: bound over its columns alone.
		e, err := (&exprBinder{sc: &scope{cols: left.columns()}, params: b.params, tz: b.tz, fns: b.fns}).bind(asOf)
		if err != nil {
			return nil, err
		}
		i, _ := expr.ColumnIndex(e)
		j.temporal, j.leftTime, j.asOfP = true, i, asOf.P
	}
	switch {
	case len(t.Using) > 0:
		return b.joinUsing(j, t)
	case t.On != nil:
		if f := findAggregate(t.On); f != nil {
			return nil, sqlerr.New(sqlerr.GroupingError, f.P, "aggregate functions are not allowed in JOIN conditions")
		}
		cond, err := (&exprBinder{sc: &scope{cols: j.out}, params: b.params, tz: b.tz, fns: b.fns}).bind(t.On)
		if err != nil {
			return nil, err
		}
		if err := wantBool(cond, "JOIN/ON", t.On.Pos()); err != nil {
			return nil, err
		}
		j.cond = cond
	case t.Kind != "cross":
		return nil, sqlerr.New(sqlerr.SyntaxError, t.P, "JOIN needs ON or USING")
	}
	return j, nil
}

// joinInput binds one side of a join; a window table function there assigns windows to its rows.
func (b *binder) joinInput(t parser.TableExpr) (node, error) {
	n, err := b.bindTable(t)
	if err != nil {
		return nil, err
	}
	if tvf, ok := n.(*windowTVFNode); ok {
		if tvf.win.Kind == agg.WindowSession {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, tablePos(t), "a SESSION window must be aggregated before a join")
		}
		return &assignNode{tvf: tvf}, nil
	}
	return n, nil
}

func newJoin(typ join.JoinType, left, right node, pos int) *joinNode {
	j := &joinNode{typ: typ, left: left, right: right, pos: pos}
	j.out = append(append(j.out, left.columns()...), right.columns()...)
	return j
}

// joinUsing turns USING (c, ...) into equalities and shows each c once, first (COALESCE of both sides for a FULL
// join, as Postgres does); the sides' own c stay reachable qualified.
func (b *binder) joinUsing(j *joinNode, t *parser.Join) (node, error) {
	nl := len(j.left.columns())
	lsc, rsc := &scope{cols: j.out[:nl]}, &scope{cols: j.out[nl:]}
	var conds []expr.Expr
	p := &projectNode{in: j}
	used := map[int]bool{}
	for _, name := range t.Using {
		li, err := lsc.resolve("", name, t.P)
		if err != nil {
			return nil, err
		}
		ri, err := rsc.resolve("", name, t.P)
		if err != nil {
			return nil, err
		}
		ri += nl
		lc, rc := j.out[li], j.out[ri]
		l, r := expr.Column(li, lc.Name, lc.Type), expr.Column(ri, rc.Name, rc.Type)
		eq, err := expr.Call("=", l, r)
		if err != nil {
			return nil, posErr(err, t.P)
		}
		conds = append(conds, eq)
		merged := l
		switch j.typ {
		case join.JoinRight:
			merged = r
		case join.JoinFull:
			if merged, err = expr.Call("coalesce", l, r); err != nil {
				return nil, posErr(err, t.P)
			}
		}
		p.exprs = append(p.exprs, merged)
		p.out = append(p.out, Col{Name: name, Type: merged.Type()})
		used[li], used[ri] = true, true
	}
	for i, c := range j.out {
		p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
		if used[i] {
			c.Hidden, c.QualOnly = true, true
		}
		p.out = append(p.out, c)
	}
	cond := conds[0]
	if len(conds) > 1 {
		var err error
		if cond, err = expr.Call("and", conds...); err != nil {
			return nil, posErr(err, t.P)
		}
	}
	j.cond = cond
	return p, nil
}

// distributeWhere hands the WHERE conjuncts of a SELECT to the joins of its FROM: a conjunct that reads both sides
// of an inner join becomes part of that join's condition, one that reads a single input of inner joins only is
// applied to that input. It returns the conjuncts left for a filter above the FROM.
func distributeWhere(root node, cond expr.Expr) (node, []expr.Expr, error) {
	var rest []expr.Expr
	for _, c := range expr.Conjuncts(cond) {
		n, placed, err := placeConjunct(root, c, 0)
		if err != nil {
			return nil, nil, err
		}
		root = n
		if !placed {
			rest = append(rest, c)
		}
	}
	return root, rest, nil
}

// placeConjunct tries to move c (over n's columns, shifted by base) into n. Through joins only: a projection
// (a subquery, USING) is a boundary, except the USING projection that re-shows the join's columns.
func placeConjunct(n node, c expr.Expr, base int) (node, bool, error) {
	j, ok := n.(*joinNode)
	if !ok || j.analyzed || j.typ != join.JoinInner {
		return n, false, nil
	}
	cols := expr.Columns(c)
	if len(cols) == 0 {
		return n, false, nil
	}
	nl := len(j.left.columns())
	lo, hi := cols[0]-base, cols[len(cols)-1]-base
	shift := func(d int) expr.Expr { return expr.RemapColumns(c, func(i int) int { return i - d }) }
	switch {
	case hi < nl:
		if l, placed, err := placeConjunct(j.left, c, base); err != nil || placed {
			j.left = l
			return j, placed, err
		}
		j.left = &filterNode{in: j.left, cond: shift(base)}
		return j, true, nil
	case lo >= nl:
		if r, placed, err := placeConjunct(j.right, c, base+nl); err != nil || placed {
			j.right = r
			return j, placed, err
		}
		j.right = &filterNode{in: j.right, cond: shift(base + nl)}
		return j, true, nil
	}
	c = shift(base)
	if j.cond == nil {
		j.cond = c
	} else {
		both, err := expr.Call("and", j.cond, c)
		if err != nil {
			return nil, false, err
		}
		j.cond = both
	}
	return j, true, nil
}

// analyzeJoins picks the strategy of every join in the FROM tree n that is not analyzed yet.
func analyzeJoins(n node) (node, error) {
	switch x := n.(type) {
	case *joinNode:
		if x.analyzed {
			return x, nil
		}
		var err error
		if x.left, err = analyzeJoins(x.left); err != nil {
			return nil, err
		}
		if x.right, err = analyzeJoins(x.right); err != nil {
			return nil, err
		}
		return x.analyze()
	case *filterNode:
		in, err := analyzeJoins(x.in)
		if err != nil {
			return nil, err
		}
		return &filterNode{in: in, cond: x.cond}, nil
	case *projectNode:
		if _, isJoin := x.in.(*joinNode); isJoin {
			in, err := analyzeJoins(x.in)
			if err != nil {
				return nil, err
			}
			c := *x
			c.in = in
			return &c, nil
		}
	}
	return n, nil
}

// timeTerm is a column plus a constant interval: ts, ts + INTERVAL, ts - INTERVAL.
type timeTerm struct {
	col int
	off int64
}

func asTimeTerm(e expr.Expr) (timeTerm, bool) {
	if i, ok := expr.ColumnIndex(e); ok {
		return timeTerm{col: i}, e.Type().ID() == arrow.TIMESTAMP
	}
	name, ok := expr.CallName(e)
	if !ok || (name != "+" && name != "-") {
		return timeTerm{}, false
	}
	args := expr.Children(e)
	if len(args) != 2 {
		return timeTerm{}, false
	}
	col, k := args[0], args[1]
	if name == "+" && expr.IsConstant(col) {
		col, k = k, col
	}
	i, ok := expr.ColumnIndex(col)
	if !ok || col.Type().ID() != arrow.TIMESTAMP || k.Type().ID() != arrow.DURATION {
		return timeTerm{}, false
	}
	us, null, ok := expr.ConstantInt64(k)
	if !ok || null {
		return timeTerm{}, false
	}
	if name == "-" {
		us = -us
	}
	return timeTerm{col: i, off: us}, true
}

// timeBound reads `x op y` where x and y are time terms of different sides: as right.ts >= left.ts + d (lower) or
// right.ts <= left.ts + d (upper).
type timeBound struct {
	leftCol, rightCol int
	lower             bool
	d                 int64
}

func (j *joinNode) asTimeBound(c expr.Expr) (timeBound, bool) {
	name, ok := expr.CallName(c)
	if !ok {
		return timeBound{}, false
	}
	args := expr.Children(c)
	if len(args) != 2 {
		return timeBound{}, false
	}
	x, okx := asTimeTerm(args[0])
	y, oky := asTimeTerm(args[1])
	if !okx || !oky {
		return timeBound{}, false
	}
	nl := len(j.left.columns())
	// normalize to r op l + d
	switch {
	case x.col >= nl && y.col < nl:
	case x.col < nl && y.col >= nl:
		x, y = y, x
		switch name {
		case ">=":
			name = "<="
		case "<=":
			name = ">="
		case ">":
			name = "<"
		case "<":
			name = ">"
		}
	default:
		return timeBound{}, false
	}
	d := y.off - x.off
	b := timeBound{leftCol: y.col, rightCol: x.col - nl}
	switch name {
	case ">=":
		b.lower, b.d = true, d
	case ">":
		b.lower, b.d = true, d+1
	case "<=":
		b.d = d
	case "<":
		b.d = d - 1
	default:
		return timeBound{}, false
	}
	return b, true
}

// analyze splits the condition: equalities between the sides are the keys; time bounds on two time attributes
// make an interval join; equal window_start and window_end of one windowing make a window join; the rest is the
// residual. Keys of different types are cast to their common type on each side.
func (j *joinNode) analyze() (node, error) {
	j.analyzed = true
	nl := len(j.left.columns())
	// residual conjuncts, each with the time bound it states (bounded false when it states none)
	type conjunct struct {
		e       expr.Expr
		bound   timeBound
		bounded bool
	}
	var residual []conjunct
	var lks, rks []expr.Expr
	if j.cond != nil {
		for _, c := range expr.Conjuncts(j.cond) {
			if name, _ := expr.CallName(c); name == "=" {
				args := expr.Children(c)
				lc, rc := expr.Columns(args[0]), expr.Columns(args[1])
				switch {
				case len(lc) > 0 && len(rc) > 0 && lc[len(lc)-1] < nl && rc[0] >= nl:
					lks, rks = append(lks, args[0]), append(rks, args[1])
					continue
				case len(lc) > 0 && len(rc) > 0 && rc[len(rc)-1] < nl && lc[0] >= nl:
					lks, rks = append(lks, args[1]), append(rks, args[0])
					continue
				}
			}
			b, ok := j.asTimeBound(c)
			residual = append(residual, conjunct{e: c, bound: b, bounded: ok})
		}
	}
	if len(lks) == 0 && j.constKey {
		l, r := constKeys()
		lks, rks = []expr.Expr{l}, []expr.Expr{r}
	}
	if len(lks) == 0 {
		what := "this join"
		if j.comma {
			what = "a join written as FROM a, b"
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
			"%s has no equality between its two inputs: a streaming join needs at least one (a cross join would keep every row of both inputs forever)", what)
	}

	if j.temporal {
		if err := j.temporalJoin(lks, rks, nl); err != nil {
			return nil, err
		}
		if len(residual) > 0 {
			conds := make([]expr.Expr, len(residual))
			for i, c := range residual {
				conds[i] = c.e
			}
			j.residual = conds[0]
			if len(conds) > 1 {
				var err error
				if j.residual, err = expr.Call("and", conds...); err != nil {
					return nil, posErr(err, j.pos)
				}
			}
		}
		return j.keyColumns(lks, rks)
	}

	// window join: start = start and end = end of the same windowing
	j.strategy = joinRegular
	ls, le, rs, re := -1, -1, -1, -1
	for k := range lks {
		li, lok := expr.ColumnIndex(lks[k])
		ri, rok := expr.ColumnIndex(rks[k])
		if !lok || !rok {
			continue
		}
		la, ra := attrOf(j.left, li), attrOf(j.right, ri-nl)
		if la.window == "" || la.window != ra.window || la.role != ra.role {
			continue
		}
		if la.role == roleWindowStart {
			ls, rs = li, ri-nl
		} else if la.role == roleWindowEnd {
			le, re = li, ri-nl
		}
	}
	semiAnti := j.typ == join.JoinSemi || j.typ == join.JoinAnti // only the regular join runs them
	if ls >= 0 && le >= 0 && !semiAnti {
		j.strategy = joinWindow
		j.leftStart, j.leftEnd, j.rightStart, j.rightEnd = ls, le, rs, re
	}

	// interval join: a lower and an upper bound on the same two time attributes; the tightest of each
	if j.strategy == joinRegular && !semiAnti {
		for _, lo := range residual {
			if !lo.bounded || !lo.bound.lower {
				continue
			}
			l, r := lo.bound.leftCol, lo.bound.rightCol
			if isProcTime(j.left, l) || isProcTime(j.right, r) {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
					"an interval join on a processing-time attribute (PROCTIME()) is not supported: bound the join by event-time attributes (WATERMARK FOR columns)")
			}
			if !attrOf(j.left, l).rowtime || !attrOf(j.right, r).rowtime {
				continue
			}
			for _, up := range residual {
				if !up.bounded || up.bound.lower || up.bound.leftCol != l || up.bound.rightCol != r {
					continue
				}
				if j.strategy != joinInterval {
					j.strategy, j.leftTime, j.rightTime, j.lower, j.upper = joinInterval, l, r, lo.bound.d, up.bound.d
				} else if l == j.leftTime && r == j.rightTime {
					j.lower, j.upper = max(j.lower, lo.bound.d), min(j.upper, up.bound.d)
				}
			}
		}
		if j.strategy == joinInterval {
			if j.lower > j.upper {
				return nil, sqlerr.New(sqlerr.InvalidParameter, j.pos, "the join's time bounds are empty: no row can match")
			}
			// The bounds on the interval's two columns are the operator's (looser ones are implied); the other
			// conjuncts stay residual.
			rest := residual[:0]
			for _, c := range residual {
				if !c.bounded || c.bound.leftCol != j.leftTime || c.bound.rightCol != j.rightTime {
					rest = append(rest, c)
				}
			}
			residual = rest
		}
	}

	if len(residual) > 0 {
		conds := make([]expr.Expr, len(residual))
		for i, c := range residual {
			conds[i] = c.e
		}
		r := conds[0]
		if len(conds) > 1 {
			var err error
			if r, err = expr.Call("and", conds...); err != nil {
				return nil, posErr(err, j.pos)
			}
		}
		j.residual = r
	}
	if j.strategy == joinWindow {
		lks, rks = dropWindowKeys(j, lks, rks)
	}
	return j.keyColumns(lks, rks)
}

// temporalJoin checks a join FOR SYSTEM_TIME AS OF (an event-time temporal join) and finds the versions' time:
// the AS OF column must be the left's time attribute, and the right side a versioned table read directly (a stream
// or table with a WATERMARK, under filters and projections), keyed by the join's equalities: on its PRIMARY KEY
// when it has one (a changelog must), on the equality columns otherwise (every row the next version of its key).
func (j *joinNode) temporalJoin(lks, rks []expr.Expr, nl int) error {
	if scan, ok := j.right.(*scanNode); ok {
		if _, ok := connectors.LookupOf(scan.obj.Connector()); ok && scan.obj.Kind == catalog.Stream {
			return j.lookupJoin(scan, lks, rks, nl)
		}
	}
	j.strategy = joinTemporal
	if !attrOf(j.left, j.leftTime).rowtime {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.asOfP,
			"FOR SYSTEM_TIME AS OF %s: the column is not a time attribute of the left input (a WATERMARK FOR column); joins as of processing time (PROCTIME()) are lookup joins, over a stream of a lookup connector (connector = 'postgres')",
			qualified(j.left.columns()[j.leftTime]))
	}
	if r := updatingReason(j.left); r != "" {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.pos, "a temporal join needs an append-only left input, but %s", r)
	}
	scan, rt := versionTime(j.right)
	if rt < 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
			"the right side of FOR SYSTEM_TIME AS OF must be a versioned table (a stream or table with a WATERMARK, its version time, read directly) or a stream of a lookup connector (connector = 'postgres')")
	}
	j.rightTime = rt
	var keyCols []string
	for k := range rks {
		ri, ok := expr.ColumnIndex(rks[k])
		var name string
		var sc *scanNode
		if ok {
			sc, name = scanColumn(j.right, ri-nl)
		}
		if sc != scan {
			return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
				"a temporal join's equalities must name columns of the versioned table as they are, not %s", rks[k])
		}
		keyCols = append(keyCols, name)
	}
	pk := scan.obj.PrimaryKey
	if len(pk) == 0 && updatingReason(j.right) != "" {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
			"the versioned table %q of a temporal join is a changelog without a PRIMARY KEY: its versions have no key", scan.obj.Name)
	}
	if len(pk) > 0 {
		for _, c := range pk {
			if !slices.Contains(keyCols, c) {
				return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
					"a temporal join must equate every column of the versioned table's PRIMARY KEY (%s) with the left input, and only those: %s is missing",
					strings.Join(pk, ", "), c)
			}
		}
		for _, c := range keyCols {
			if !slices.Contains(pk, c) {
				return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
					"a temporal join must equate every column of the versioned table's PRIMARY KEY (%s) with the left input, and only those: %s is not in it",
					strings.Join(pk, ", "), c)
			}
		}
	}
	return nil
}

// lookupJoin checks a join FOR SYSTEM_TIME AS OF over a stream of a lookup connector (a table of an external
// database read by key): the AS OF column must be a processing-time attribute of the left, the left append-only,
// and every equality's right side a column of the table. A left key of another type is cast to the table's, so
// the table's columns are compared as they are (and its index serves).
func (j *joinNode) lookupJoin(scan *scanNode, lks, rks []expr.Expr, nl int) error {
	j.strategy = joinLookup
	if !isProcTime(j.left, j.leftTime) {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.asOfP,
			"FOR SYSTEM_TIME AS OF %s: %q (connector '%s') is read by key when each row arrives (a lookup join): the column must be a processing-time attribute of the left input (a column AS PROCTIME())",
			qualified(j.left.columns()[j.leftTime]), scan.obj.Name, scan.obj.Connector())
	}
	if r := updatingReason(j.left); r != "" {
		return sqlerr.New(sqlerr.FeatureNotSupported, j.pos, "a lookup join needs an append-only left input, but %s", r)
	}
	for k := range rks {
		if name, _ := expr.CallName(rks[k]); name == "cast" {
			// The binder widened the table's column to the other side's type: compare in the column's instead.
			if c := expr.Children(rks[k])[0]; func() bool { _, ok := expr.ColumnIndex(c); return ok }() {
				rks[k] = c
			}
		}
		if _, ok := expr.ColumnIndex(rks[k]); !ok {
			return sqlerr.New(sqlerr.FeatureNotSupported, j.pos,
				"a lookup join's equalities must name columns of %q as they are, not %s", scan.obj.Name, rks[k])
		}
		if !arrow.TypeEqual(lks[k].Type(), rks[k].Type()) {
			c, err := expr.Cast(lks[k], rks[k].Type())
			if err != nil {
				return posErr(err, j.pos)
			}
			lks[k] = c
		}
	}
	return nil
}

// scanColumn follows column i of n down filters and plain projections to the scan it reads, and names it there.
func scanColumn(n node, i int) (*scanNode, string) {
	switch x := n.(type) {
	case *scanNode:
		return x, x.out[i].Name
	case *filterNode:
		return scanColumn(x.in, i)
	case *projectNode:
		if j, ok := expr.ColumnIndex(x.exprs[i]); ok {
			return scanColumn(x.in, j)
		}
		if s, ok := x.in.(*scanNode); ok && s.obj.Watermark != nil && x.out[i].Name == s.obj.Watermark.Column {
			return s, x.out[i].Name // a computed WATERMARK column of the stream
		}
	}
	return nil, ""
}

// versionTime finds the versioned table a temporal join's right side reads and the column of its WATERMARK among
// n's columns; -1 when there is none.
func versionTime(n node) (*scanNode, int) {
	for i := range n.columns() {
		if s, name := scanColumn(n, i); s != nil && s.obj.Watermark != nil && name == s.obj.Watermark.Column {
			return s, i
		}
	}
	return nil, -1
}

// dropWindowKeys leaves out of a window join's keys its window_start and window_end equalities when others remain:
// the operator pairs rows within a window only, so those hold for every pair, and keyed on the other columns (one
// integer, say, where the three made a byte string) its per-window tables and its exchanges do less (Nexmark q8).
func dropWindowKeys(j *joinNode, lks, rks []expr.Expr) ([]expr.Expr, []expr.Expr) {
	nl := len(j.left.columns())
	isWindow := func(k int) bool {
		li, lok := expr.ColumnIndex(lks[k])
		ri, rok := expr.ColumnIndex(rks[k])
		return lok && rok && ((li == j.leftStart && ri-nl == j.rightStart) || (li == j.leftEnd && ri-nl == j.rightEnd))
	}
	var l, r []expr.Expr
	for k := range lks {
		if !isWindow(k) {
			l, r = append(l, lks[k]), append(r, rks[k])
		}
	}
	if len(l) == 0 {
		return lks, rks
	}
	return l, r
}

// keyColumns makes every key a column of its side, of one type on both sides: a plain column of the common type
// is used as it is, anything else is computed by a projection that appends it to the side. When a side grows, a
// projection above the join restores the columns the rest of the query was bound to.
func (j *joinNode) keyColumns(lks, rks []expr.Expr) (node, error) {
	nl, nr := len(j.left.columns()), len(j.right.columns())
	var lextra, rextra []expr.Expr
	for k := range lks {
		t, ok := commonType(lks[k].Type(), rks[k].Type())
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, j.pos, "operator does not exist: %s = %s",
				expr.TypeName(lks[k].Type()), expr.TypeName(rks[k].Type()))
		}
		if !rowcodec.KeyType(t) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, j.pos, "a join key of type %s is not supported", expr.TypeName(t))
		}
		side := func(e expr.Expr, base, width int, extra *[]expr.Expr) (int, error) {
			e = expr.RemapColumns(e, func(i int) int { return i - base })
			if !arrow.TypeEqual(e.Type(), t) {
				c, err := expr.Cast(e, t)
				if err != nil {
					return 0, posErr(err, j.pos)
				}
				e = c
			}
			if i, ok := expr.ColumnIndex(e); ok {
				return i, nil
			}
			*extra = append(*extra, e)
			return width + len(*extra) - 1, nil
		}
		li, err := side(lks[k], 0, nl, &lextra)
		if err != nil {
			return nil, err
		}
		ri, err := side(rks[k], nl, nr, &rextra)
		if err != nil {
			return nil, err
		}
		j.leftKeys, j.rightKeys = append(j.leftKeys, li), append(j.rightKeys, ri)
	}
	if len(lextra) == 0 && len(rextra) == 0 {
		return j, nil
	}
	orig := j.out
	j.left, j.right = appendColumns(j.left, lextra), appendColumns(j.right, rextra)
	// The condition was bound over the old layout: right columns move by the left's new columns.
	shift := func(e expr.Expr) expr.Expr {
		if e == nil {
			return nil
		}
		return expr.RemapColumns(e, func(i int) int {
			if i >= nl {
				return i + len(lextra)
			}
			return i
		})
	}
	j.residual = shift(j.residual)
	j.out = append(append([]Col{}, j.left.columns()...), j.right.columns()...)
	p := &projectNode{in: j}
	for i, c := range orig {
		at := i
		if i >= nl {
			at += len(lextra)
		}
		p.exprs = append(p.exprs, expr.Column(at, c.Name, c.Type))
		p.out = append(p.out, c)
	}
	return p, nil
}

// appendColumns projects n's columns plus extra (hidden, unreachable by name).
func appendColumns(n node, extra []expr.Expr) node {
	if len(extra) == 0 {
		return n
	}
	p := &projectNode{in: n}
	for i, c := range n.columns() {
		p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
		p.out = append(p.out, c)
	}
	for k, e := range extra {
		p.exprs = append(p.exprs, e)
		p.out = append(p.out, Col{Name: fmt.Sprintf("?join_key%d", k), Type: e.Type(), Hidden: true, QualOnly: true})
	}
	return p
}

// spec is the operators' view of the join.
func (j *joinNode) spec() join.JoinSpec {
	return join.JoinSpec{Type: j.typ, Left: schemaOf(j.left.columns()), Right: schemaOf(j.right.columns()),
		LeftKeys: j.leftKeys, RightKeys: j.rightKeys, Residual: j.residual}
}

// describe is what EXPLAIN prints about the join.
func (j *joinNode) describe() (label string, details []string) {
	lc, rc := j.left.columns(), j.right.columns()
	var keys []string
	for k := range j.leftKeys {
		keys = append(keys, keyLabel(j.left, j.leftKeys[k])+" = "+keyLabel(j.right, j.rightKeys[k]))
	}
	details = append(details, "keys: ["+strings.Join(keys, ", ")+"]")
	switch j.strategy {
	case joinInterval:
		label = "IntervalJoin: " + j.typ.String()
		details = append(details, fmt.Sprintf("interval: %s BETWEEN %s AND %s", qualified(rc[j.rightTime]),
			shifted(qualified(lc[j.leftTime]), j.lower), shifted(qualified(lc[j.leftTime]), j.upper)),
			"state: rows of both inputs until the watermark passes their bound; append-only")
	case joinLookup:
		label = "LookupJoin: " + j.typ.String()
		details = append(details, "as of: "+qualified(lc[j.leftTime])+" (processing time: the table as it is when a batch is looked up)",
			"state: none (a cache of looked-up keys, not checkpointed); append-only")
	case joinTemporal:
		label = "TemporalJoin: " + j.typ.String()
		details = append(details, fmt.Sprintf("as of: %s (versions by %s)", qualified(lc[j.leftTime]), qualified(rc[j.rightTime])),
			"state: left rows until the watermark passes their time; per key the versions at or above the watermark and the newest below it; append-only")
	case joinWindow:
		label = "WindowJoin: " + j.typ.String()
		details = append(details, "window: "+attrOf(j.left, j.leftStart).window,
			"fires: when the watermark passes window_end; append-only")
	default:
		label = "Join: " + j.typ.String()
		st := "state: every row of both inputs, kept"
		switch j.typ {
		case join.JoinSemi:
			st += "; a left row is emitted while a right row matches it, retracted when its last match goes"
		case join.JoinAnti:
			st += "; a left row is emitted while no right row matches it, retracted when a match arrives"
		case join.JoinInner:
		default:
			st += "; outer rows are retracted when a match arrives"
		}
		details = append(details, st)
	}
	if j.residual != nil {
		named := expr.Substitute(j.residual, func(i int) expr.Expr {
			return expr.Column(i, qualified(j.out[i]), j.out[i].Type)
		})
		details = append(details, "condition: "+named.String())
	}
	return label, details
}

// keyLabel names key column i of a join input: the column, or the expression computed for it.
func keyLabel(side node, i int) string {
	c := side.columns()[i]
	if p, ok := side.(*projectNode); ok && strings.HasPrefix(c.Name, "?join_key") {
		named := expr.Substitute(p.exprs[i], func(k int) expr.Expr {
			in := p.in.columns()[k]
			return expr.Column(k, qualified(in), in.Type)
		})
		return named.String()
	}
	return qualified(c)
}

func qualified(c Col) string {
	if c.Table != "" {
		return c.Table + "." + c.Name
	}
	return c.Name
}

func shifted(col string, us int64) string {
	switch {
	case us > 0:
		return col + " + " + formatInterval(us)
	case us < 0:
		return col + " - " + formatInterval(-us)
	}
	return col
}

// colRole says what a column is to windows and watermarks.
type colRole uint8

const (
	roleNone colRole = iota
	roleWindowStart
	roleWindowEnd
)

// colAttr is what the planner knows of a column beyond its type: whether it is a time attribute (the column of a
// stream's WATERMARK FOR, or a window aggregate's window_end, passed through unchanged) and whether it is the window_start or window_end of a
// windowing, named by window (the window's definition, the same for the two inputs of a window join).
type colAttr struct {
	rowtime bool
	// proctime: a processing-time attribute (PROCTIME(), as a stream's computed column or a view's column):
	// what processing-time windows and lookup joins take; no watermark follows it.
	proctime bool
	role     colRole
	window   string
}

// isProcTime reports whether column i of n is a processing-time attribute: PROCTIME() (a stream's computed
// column `p AS PROCTIME()`, or a SELECT's) passed through unchanged.
func isProcTime(n node, i int) bool { return attrOf(n, i).proctime }

// attrOf finds the attributes of column i of n by following it down the plan.
func attrOf(n node, i int) colAttr {
	switch x := n.(type) {
	case *scanNode:
		if x.obj.Watermark != nil && !x.updating && x.out[i].Name == x.obj.Watermark.Column {
			return colAttr{rowtime: true}
		}
	case *filterNode:
		return attrOf(x.in, i)
	case *overNode:
		if i < len(x.in.columns()) {
			return attrOf(x.in, i)
		}
	case *unnestNode:
		if i < len(x.in.columns())-1 {
			return attrOf(x.in, i) // each row's copies keep its time
		}
	case *projectNode:
		if j, ok := expr.ColumnIndex(x.exprs[i]); ok {
			return attrOf(x.in, j)
		}
		if expr.IsProcTime(x.exprs[i]) {
			return colAttr{proctime: true}
		}
		// A computed WATERMARK column of a stream (scan's projection): its time attribute.
		if s, ok := x.in.(*scanNode); ok && s.obj.Watermark != nil && !s.updating && x.out[i].Name == s.obj.Watermark.Column {
			if comp, err := computedColumns(s.obj.Columns, s.out); err == nil {
				for k, e := range comp {
					if s.obj.Columns[k].Name == x.out[i].Name && e.String() == x.exprs[i].String() {
						return colAttr{rowtime: true}
					}
				}
			}
		}
	case *unionNode:
		var a colAttr
		for k, in := range x.inputs {
			b := attrOf(in, i)
			if k > 0 && b != a {
				return colAttr{}
			}
			a = b
		}
		return a
	case *assignNode:
		n := len(x.tvf.out)
		switch i {
		case n - 2:
			return colAttr{role: roleWindowStart, window: windowIdentity(x.tvf.win)}
		case n - 1:
			return colAttr{role: roleWindowEnd, window: windowIdentity(x.tvf.win)}
		}
		return attrOf(x.tvf.in, i)
	case *aggNode:
		if x.global || x.group {
			return colAttr{}
		}
		if x.propagated {
			if i < x.keys {
				a := attrOf(x.pre, x.cfg.Keys[i])
				if a.role == roleWindowEnd {
					// It fires a window when the watermark reaches its end, as a window aggregate does: its
					// window_end is a time attribute of the output (Nexmark q6's OVER is ordered by it).
					a.rowtime = true
				}
				return a
			}
			return colAttr{}
		}
		if x.cfg.ProcTime {
			// A processing-time window's bounds are plain values downstream: no watermark follows them, so
			// nothing can fire or join by them as windows.
			return colAttr{}
		}
		switch i {
		case x.keys:
			return colAttr{role: roleWindowStart, window: windowIdentity(x.cfg)}
		case x.keys + 1:
			// window_end is a time attribute of the aggregate's output (Flink's window_time): a window's row is
			// emitted before the watermark that passed its end goes on, so downstream it is never late.
			return colAttr{role: roleWindowEnd, window: windowIdentity(x.cfg), rowtime: true}
		}
	case *joinNode:
		nl := len(x.left.columns())
		switch x.strategy {
		case joinInterval:
			if i < nl {
				return attrOf(x.left, i)
			}
			return attrOf(x.right, i-nl)
		case joinTemporal, joinLookup:
			if i < nl {
				return attrOf(x.left, i) // temporal: a left row fires once the watermark passed its time; lookup: at once
			}
		case joinWindow:
			if i < nl {
				if a := attrOf(x.left, i); a.role != roleNone {
					return a
				}
			}
		}
	}
	return colAttr{}
}

// windowIdentity names a windowing by its kind and sizes (not by its time column), so that two inputs windowed
// alike can be joined window by window.
func windowIdentity(w agg.WindowAggConfig) string {
	switch w.Kind {
	case agg.WindowTumble:
		return fmt.Sprintf("TUMBLE(%s, offset %d)", formatInterval(w.Size), w.Offset)
	case agg.WindowHop:
		return fmt.Sprintf("HOP(slide %s, size %s, offset %d)", formatInterval(w.Slide), formatInterval(w.Size), w.Offset)
	case agg.WindowCumulate:
		return fmt.Sprintf("CUMULATE(step %s, size %s, offset %d)", formatInterval(w.Step), formatInterval(w.Size), w.Offset)
	}
	return "" // sessions differ per key: no window join
}

// joinUpdating says why a join's output has retractions, "" when it is append-only.
func joinUpdating(j *joinNode) string {
	if j.strategy != joinRegular {
		return ""
	}
	for _, in := range []node{j.left, j.right} {
		if r := updatingReason(in); r != "" {
			return r
		}
	}
	switch j.typ {
	case join.JoinInner:
	case join.JoinSemi:
		// An append-only right input never takes a match away.
	case join.JoinAnti:
		return "Join (ANTI, regular) retracts a row when its first match arrives"
	default:
		return fmt.Sprintf("Join (%s, regular) retracts a NULL-padded row when its first match arrives", j.typ)
	}
	return ""
}

// join lowers a join: both inputs hash-partitioned on their keys into one keyed operator.
func (l *lowering) join(j *joinNode) (*PNode, error) {
	if j.strategy == joinInterval || j.strategy == joinWindow {
		for _, in := range []node{j.left, j.right} {
			if r := updatingReason(in); r != "" {
				kind := "an interval join"
				if j.strategy == joinWindow {
					kind = "a window join"
				}
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, j.pos, "%s needs append-only inputs, but %s", kind, r)
			}
		}
	}
	if j.strategy == joinLookup {
		return l.lookupJoin(j)
	}
	left, err := l.lower(j.left)
	if err != nil {
		return nil, err
	}
	right, err := l.lower(j.right)
	if err != nil {
		return nil, err
	}
	spec := j.spec()
	spec.Mode = l.settings.Errors
	var factory func(int) exec.Operator
	var id string
	switch j.strategy {
	case joinInterval:
		id = "interval-join"
		factory, _, err = join.NewIntervalJoin(join.IntervalJoinConfig{JoinSpec: spec,
			LeftTime: j.leftTime, RightTime: j.rightTime, Lower: j.lower, Upper: j.upper})
	case joinTemporal:
		id = "temporal-join"
		factory, _, err = join.NewTemporalJoin(join.TemporalJoinConfig{JoinSpec: spec, LeftTime: j.leftTime, RightTime: j.rightTime})
	case joinWindow:
		id = "window-join"
		factory, _, err = join.NewWindowJoin(join.WindowJoinConfig{JoinSpec: spec,
			LeftStart: j.leftStart, LeftEnd: j.leftEnd, RightStart: j.rightStart, RightEnd: j.rightEnd})
	default:
		id = "join"
		factory, _, err = join.NewJoin(join.RegularJoinConfig{JoinSpec: spec, TTL: l.settings.StateTTL,
			LeftUpdating: updatingReason(j.left) != "", RightUpdating: updatingReason(j.right) != ""})
	}
	if err != nil {
		return nil, posErr(err, j.pos)
	}
	label, details := j.describe()
	if j.strategy == joinRegular && l.settings.StateTTL > 0 {
		details = append(details, "state.ttl: "+formatInterval(l.settings.StateTTL)+" (rows idle longer are forgotten)")
	}
	pn := &PNode{ID: id, Kind: exec.OperatorNode, Parallelism: l.settings.Parallelism, Keyed: true,
		Inputs: []PEdge{{From: left, Exchange: keyedInput(left, l.settings.Parallelism, j.leftKeys)},
			{From: right, Exchange: keyedInput(right, l.settings.Parallelism, j.rightKeys)}},
		Label: label, Details: details, newOperator: factory}
	// Both sides' rows of a key meet on the subtask of its hash, and the output is the left row then the right one:
	// partitioned by the key columns of a side that is never NULL-padded.
	switch j.typ {
	case join.JoinInner, join.JoinLeft, join.JoinSemi, join.JoinAnti:
		pn.partitioned = j.leftKeys
	case join.JoinRight:
		off := len(j.left.columns())
		for _, k := range j.rightKeys {
			pn.partitioned = append(pn.partitioned, off+k)
		}
	}
	if j.strategy == joinWindow {
		// join.WindowJoin fires a window when the watermark reaches its end (wm >= end), drops rows of windows
		// already fired, and forwards the watermark unchanged. The row time is the window_end of a side that is
		// never NULL-padded; a full outer join has none.
		switch j.typ {
		case join.JoinInner, join.JoinLeft:
			pn.rowTime, pn.hasRowTime = j.leftEnd, true
		case join.JoinRight:
			pn.rowTime, pn.hasRowTime = len(j.left.columns())+j.rightEnd, true
		}
	}
	return l.add(pn), nil
}

// lookupJoin lowers a lookup join: one operator after the left input, querying the table its connector builds.
func (l *lowering) lookupJoin(j *joinNode) (*PNode, error) {
	scan := j.right.(*scanNode)
	lk, _ := connectors.LookupOf(scan.obj.Connector())
	left, err := l.lower(j.left)
	if err != nil {
		return nil, err
	}
	spec := connectorSpec(scan.obj.Name, schemaOf(scan.out), scan.obj.Columns, scan.obj.PrimaryKey)
	plan, err := lk.BuildLookup(spec, dataOptions(scan.obj.Options), j.rightKeys, connectorEnv(l.env, l.settings))
	if err != nil {
		return nil, posErr(err, j.pos)
	}
	js := j.spec()
	js.Mode = l.settings.Errors
	factory, _, err := join.NewLookupJoin(join.LookupJoinConfig{JoinSpec: js, Table: plan.New, CacheRows: plan.CacheRows,
		CacheTTL: plan.CacheTTL, MaxRetries: plan.MaxRetries})
	if err != nil {
		return nil, posErr(err, j.pos)
	}
	label, details := j.describe()
	details = append(details, plan.Details...)
	pn := &PNode{ID: "lookup-join", Kind: exec.OperatorNode, Parallelism: left.Parallelism,
		Inputs: []PEdge{{From: left, Exchange: exec.ForwardExchange()}}, Label: label, Details: details,
		newOperator: factory}
	pn.partitioned = left.partitioned // each left row stays where it is, its columns first
	return l.add(pn), nil
}
