package planner

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/join"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// binder binds one statement's query against the catalog.
type binder struct {
	env Env
	cat *catalog.Catalog
	// bounded is set for an ad-hoc SELECT: internal streams are read up to now, and a plain GROUP BY is one
	// window that ends with the input.
	bounded bool
	// ctes are the WITH entries in scope, innermost last.
	ctes []map[string]*parser.Query
	// reads collects the catalog objects the query reads (after view expansion), for the catalog's DROP rules.
	reads []string
	// views collects the views expanded, so a view records what it reads.
	views []string
	depth int
	// params are the statement's $n parameters (nil: a statement without them, where $n is an error).
	params *Params
	// system are the system relations' snapshots taken for this statement: one per relation, so that a relation
	// read twice (a self-join, a subquery) shows the same rows both times.
	system map[string]*SystemTable
	// tz is the session's time zone (Settings.TimeZone; nil: UTC).
	tz *time.Location
	// fns resolves user-defined functions and records the ones the statement uses (function.go).
	fns *funcScope
}

func (b *binder) read(name string) {
	if !slices.Contains(b.reads, name) {
		b.reads = append(b.reads, name)
	}
}

// boundQuery is a bound query with its top-level ORDER BY and LIMIT, which only an ad-hoc SELECT may use.
type boundQuery struct {
	root    node
	order   []orderKey
	limit   int64 // -1: none
	offset  int64
	visible int // the first visible columns of root are the result; the rest are ORDER BY keys
}

type orderKey struct {
	col        int
	desc       bool
	nullsFirst bool
}

func (b *binder) bindQuery(q *parser.Query) (*boundQuery, error) {
	b.depth++
	defer func() { b.depth-- }()
	if b.depth > 64 {
		return nil, sqlerr.New(sqlerr.ConfigurationLimit, q.P, "query nesting too deep (views referring to each other?)")
	}
	if len(q.With) > 0 {
		m := map[string]*parser.Query{}
		for _, c := range q.With {
			if _, dup := m[c.Name]; dup {
				return nil, sqlerr.New(sqlerr.DuplicateObject, c.P, "WITH query name %q specified more than once", c.Name)
			}
			if len(c.Columns) > 0 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, c.P, "WITH column lists are not supported")
			}
			m[c.Name] = c.Query
		}
		b.ctes = append(b.ctes, m)
		defer func() { b.ctes = b.ctes[:len(b.ctes)-1] }()
	}
	root, sel, err := b.bindBody(q.Body, len(q.OrderBy) > 0)
	if err != nil {
		return nil, err
	}
	bq := &boundQuery{root: root, limit: -1, visible: len(root.columns())}
	if len(q.OrderBy) > 0 {
		if err := b.bindOrderBy(bq, q.OrderBy, sel); err != nil {
			return nil, err
		}
	}
	if q.Limit != nil {
		n, err := b.constInt(q.Limit, "LIMIT")
		if err != nil {
			return nil, err
		}
		bq.limit = n
	}
	if q.Offset != nil {
		n, err := b.constInt(q.Offset, "OFFSET")
		if err != nil {
			return nil, err
		}
		bq.offset = n
	}
	return bq, nil
}

func (b *binder) constInt(e parser.Expr, what string) (int64, error) {
	if n, ok := b.params.isUntyped(e); ok {
		b.params.infer(n, arrow.PrimitiveTypes.Int64)
	}
	if _, isParam := e.(*parser.ParamRef); isParam && b.params != nil && b.params.Values == nil {
		return math.MaxInt64, nil // preparing: the value comes at execution
	}
	v, err := (&exprBinder{sc: &scope{}, params: b.params, tz: b.tz, fns: b.fns}).bind(e)
	if err == nil && v.Type().ID() == arrow.STRING {
		v, err = expr.Cast(v, arrow.PrimitiveTypes.Int64)
	}
	if err != nil {
		return 0, err
	}
	n, null, ok := expr.ConstantInt64(v)
	if !ok || null || n < 0 {
		return 0, sqlerr.New(sqlerr.DatatypeMismatch, e.Pos(), "argument of %s must be a non-negative integer constant", what)
	}
	return n, nil
}

// selectInfo is what ORDER BY needs from the select that produced a result: its items' AST, to match ORDER BY
// expressions against, and a way to bind more expressions in the select's scope.
type selectInfo struct {
	items []parser.SelectItem
	// extra binds an ORDER BY expression that is not a select item as a hidden output column.
	extra func(e parser.Expr) (int, error)
}

// bindOrderBy resolves ORDER BY items: an output column name, an ordinal, or an expression of the select.
func (b *binder) bindOrderBy(bq *boundQuery, items []parser.OrderItem, sel *selectInfo) error {
	cols := bq.root.columns()
	for _, it := range items {
		col := -1
		switch e := it.Expr.(type) {
		case *parser.Literal:
			if e.Kind == parser.LitInt {
				var n int
				fmt.Sscan(e.Text, &n)
				if n < 1 || n > bq.visible {
					return sqlerr.New(sqlerr.InvalidColumnReference, e.P, "ORDER BY position %d is not in select list", n)
				}
				col = n - 1
			}
		case *parser.ColumnRef:
			if e.Table == "" {
				for i := 0; i < bq.visible; i++ {
					if cols[i].Name == e.Name {
						col = i
						break
					}
				}
			}
		}
		if col < 0 && sel != nil {
			fp := fingerprint(nil, it.Expr)
			for i, si := range sel.items {
				if fingerprint(nil, si.Expr) == fp {
					col = i
					break
				}
			}
			if col < 0 && sel.extra != nil {
				var err error
				if col, err = sel.extra(it.Expr); err != nil {
					return err
				}
			}
		}
		if col < 0 {
			return sqlerr.New(sqlerr.FeatureNotSupported, it.P, "ORDER BY must name an output column here")
		}
		nf := it.Desc
		if it.NullsFirst != nil {
			nf = *it.NullsFirst
		}
		bq.order = append(bq.order, orderKey{col: col, desc: it.Desc, nullsFirst: nf})
	}
	return nil
}

func (b *binder) bindBody(body parser.QueryBody, wantOrder bool) (node, *selectInfo, error) {
	switch body := body.(type) {
	case *parser.SelectCore:
		return b.bindSelect(body, wantOrder)
	case *parser.Values:
		n, err := b.bindValues(body)
		return n, nil, err
	case *parser.Query:
		bq, err := b.bindQuery(body)
		if err != nil {
			return nil, nil, err
		}
		if len(bq.order) > 0 || bq.limit >= 0 || bq.offset > 0 {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, body.P, "ORDER BY and LIMIT are only supported at the top of a SELECT")
		}
		return bq.root, nil, nil
	case *parser.SetOp:
		if body.Op != "union" || !body.All {
			n, err := b.bindSetOp(body)
			return n, nil, err
		}
		n, err := b.bindUnionAll(body)
		return n, nil, err
	}
	return nil, nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "query body %T", body)
}

// bindUnionAll binds L UNION ALL R (nested unions flatten into one node): the inputs must have the same number of
// columns, each column's types must unify (as VALUES columns do), and the names are the first input's.
func (b *binder) bindUnionAll(s *parser.SetOp) (node, error) {
	var bodies []parser.QueryBody
	var flatten func(q parser.QueryBody)
	flatten = func(q parser.QueryBody) {
		if op, ok := q.(*parser.SetOp); ok && op.Op == "union" && op.All {
			flatten(op.L)
			flatten(op.R)
			return
		}
		bodies = append(bodies, q)
	}
	flatten(s)
	var inputs []node
	for _, q := range bodies {
		n, _, err := b.bindBody(q, false)
		if err != nil {
			return nil, err
		}
		n = visibleOnly(n, len(visible(n.columns())))
		if len(inputs) > 0 && len(n.columns()) != len(inputs[0].columns()) {
			return nil, sqlerr.New(sqlerr.SyntaxError, s.P, "each UNION query must have the same number of columns")
		}
		inputs = append(inputs, n)
	}
	first := inputs[0].columns()
	u := &unionNode{}
	for j, c := range first {
		t := c.Type
		for _, in := range inputs[1:] {
			ct, ok := commonType(t, in.columns()[j].Type)
			if !ok {
				return nil, sqlerr.New(sqlerr.DatatypeMismatch, s.P, "UNION types %s and %s cannot be matched",
					expr.TypeName(t), expr.TypeName(in.columns()[j].Type))
			}
			t = ct
		}
		u.out = append(u.out, Col{Name: c.Name, Type: t})
	}
	for _, in := range inputs {
		p := &projectNode{in: in}
		for j, c := range in.columns() {
			e := expr.Column(j, c.Name, c.Type)
			if !arrow.TypeEqual(c.Type, u.out[j].Type) {
				cast, err := expr.Cast(e, u.out[j].Type)
				if err != nil {
					return nil, posErr(err, s.P)
				}
				e = cast
			}
			p.exprs = append(p.exprs, e)
			p.out = append(p.out, Col{Name: u.out[j].Name, Type: u.out[j].Type})
		}
		u.inputs = append(u.inputs, p)
	}
	return u, nil
}

func (b *binder) bindValues(v *parser.Values) (node, error) { return b.bindValuesAs(v, nil) }

// isUntypedParam reports whether e is a $n whose type comes from its context.
func (b *binder) isUntypedParam(e parser.Expr) bool {
	_, ok := b.params.isUntyped(e)
	return ok
}

// isUnknownLiteral reports whether e is a quoted string or NULL literal: Postgres types such a constant by where it
// goes ('2026-01-01' into a TIMESTAMP column is a timestamp).
func isUnknownLiteral(e parser.Expr) bool {
	lit, ok := e.(*parser.Literal)
	return ok && (lit.Kind == parser.LitString || lit.Kind == parser.LitNull)
}

// bindValuesAs binds VALUES rows. hint, when given, is the type each column is headed for (INSERT's target
// columns): quoted literals are read as that type directly.
func (b *binder) bindValuesAs(v *parser.Values, hint []arrow.DataType) (node, error) {
	if len(v.Rows) == 0 {
		return nil, sqlerr.New(sqlerr.SyntaxError, v.P, "VALUES needs at least one row")
	}
	eb := &exprBinder{sc: &scope{}, params: b.params, tz: b.tz, fns: b.fns}
	n := &valuesNode{}
	width := len(v.Rows[0])
	for _, row := range v.Rows {
		if len(row) != width {
			return nil, sqlerr.New(sqlerr.SyntaxError, v.P, "VALUES lists must all be the same length")
		}
		var out []expr.Expr
		for _, e := range row {
			x, err := eb.bind(e)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		n.rows = append(n.rows, out)
	}
	// Each column's type: the hint, else the common type of its typed values (VALUES (1), (2.5) is NUMERIC);
	// quoted literals and NULLs adopt it. A column of only quoted literals is text, as in Postgres.
	for j := range width {
		var t arrow.DataType
		if j < len(hint) && hint[j] != nil {
			t = hint[j]
		} else {
			t = arrow.Null
			for i, row := range n.rows {
				if isUnknownLiteral(v.Rows[i][j]) || b.isUntypedParam(v.Rows[i][j]) {
					continue
				}
				u, ok := commonType(t, row[j].Type())
				if !ok {
					return nil, sqlerr.New(sqlerr.DatatypeMismatch, v.Rows[i][j].Pos(), "VALUES types %s and %s cannot be matched",
						expr.TypeName(t), expr.TypeName(row[j].Type()))
				}
				t = u
			}
			if t.ID() == arrow.NULL {
				t = arrow.BinaryTypes.String
			}
		}
		for i, row := range n.rows {
			if pn, ok := b.params.isUntyped(v.Rows[i][j]); ok {
				b.params.infer(pn, t)
			}
			if (isUnknownLiteral(v.Rows[i][j]) || b.isUntypedParam(v.Rows[i][j])) && !arrow.TypeEqual(row[j].Type(), t) {
				c, err := castIn(b.tz, row[j], t, false)
				if err != nil {
					return nil, posErr(err, v.Rows[i][j].Pos())
				}
				row[j] = c
			}
		}
		if j < len(hint) && hint[j] != nil && expr.IsNested(hint[j]) {
			// ROW(...), ARRAY[...] and MAP[...] take the column's type row by row (their own types differ from
			// row to row: ROW('a', 1) and ROW('b', NULL)).
			t = hint[j]
		} else if j < len(hint) && hint[j] != nil {
			// Typed values keep their own type here; the INSERT's assignment casts (and checks) them.
			t = nil
			for i, row := range n.rows {
				u, ok := commonType(orNull(t), row[j].Type())
				if !ok {
					e := sqlerr.New(sqlerr.DatatypeMismatch, v.Rows[i][j].Pos(), "column %d is of type %s but expression is of type %s",
						j+1, expr.TypeName(hint[j]), expr.TypeName(row[j].Type()))
					e.Hint = "You will need to rewrite or cast the expression."
					return nil, e
				}
				t = u
			}
			if t.ID() == arrow.NULL {
				t = hint[j]
			}
		}
		for i, row := range n.rows {
			if !arrow.TypeEqual(row[j].Type(), t) {
				c, err := castIn(b.tz, row[j], t, false)
				if err != nil {
					return nil, posErr(err, v.Rows[i][j].Pos())
				}
				row[j] = c
			}
		}
		n.out = append(n.out, Col{Name: fmt.Sprintf("column%d", j+1), Type: t})
		n.pos = append(n.pos, exprStart(v.Rows[0][j]))
	}
	return n, nil
}

func orNull(t arrow.DataType) arrow.DataType {
	if t == nil {
		return arrow.Null
	}
	return t
}

// commonType is the type two values unify to (for VALUES columns and CASE-like contexts): NULL adopts the other,
// numbers widen, and otherwise the types must be equal.
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL || arrow.TypeEqual(a, b) {
		return a, true
	}
	ra, na := numericRank(a)
	rb, nb := numericRank(b)
	if !na || !nb {
		return nil, false
	}
	if max(ra, rb) == rankDecimal {
		// A DECIMAL meets a DECIMAL or an integer: the larger scale and enough integer digits for both, as
		// expressions combine them (VALUES (0.001), (10) is NUMERIC(13,3), not NUMERIC(3,3)).
		return expr.CommonNumeric(a, b), true
	}
	if ra >= rb {
		return a, true
	}
	return b, true
}

const (
	rankInt16 = iota
	rankInt32
	rankInt64
	rankDecimal
	rankFloat32
	rankFloat64
)

func numericRank(t arrow.DataType) (int, bool) {
	switch t.ID() {
	case arrow.INT16:
		return rankInt16, true
	case arrow.INT32:
		return rankInt32, true
	case arrow.INT64:
		return rankInt64, true
	case arrow.DECIMAL128:
		return rankDecimal, true
	case arrow.FLOAT32:
		return rankFloat32, true
	case arrow.FLOAT64:
		return rankFloat64, true
	}
	return 0, false
}

// bindFrom binds a FROM list. Items after the first join it as inner joins whose conditions come from WHERE
// (distributeWhere).
func (b *binder) bindFrom(from []parser.TableExpr) (node, error) {
	if len(from) == 0 {
		return &valuesNode{rows: [][]expr.Expr{{}}}, nil
	}
	if len(from) == 1 {
		return b.bindTable(from[0])
	}
	n, err := b.joinInput(from[0])
	if err != nil {
		return nil, err
	}
	for _, t := range from[1:] {
		if u, ok := t.(*parser.Unnest); ok { // FROM t, UNNEST(t.a): reads the items before it
			if n, err = b.bindUnnest(n, u, false); err != nil {
				return nil, err
			}
			continue
		}
		r, err := b.joinInput(t)
		if err != nil {
			return nil, err
		}
		j := newJoin(join.JoinInner, n, r, tablePos(t))
		j.comma = true
		n = j
	}
	return n, nil
}

func tablePos(t parser.TableExpr) int {
	switch t := t.(type) {
	case *parser.TableName:
		return t.P
	case *parser.DerivedTable:
		return t.P
	case *parser.Join:
		return t.P
	case *parser.WindowTVF:
		return t.P
	}
	return sqlerr.NoPos
}

func (b *binder) cte(name string) *parser.Query {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if q, ok := b.ctes[i][name]; ok {
			return q
		}
	}
	return nil
}

func (b *binder) bindTable(t parser.TableExpr) (node, error) {
	switch t := t.(type) {
	case *parser.TableName:
		if t.AsOf != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, t.AsOf.P, "FOR SYSTEM_TIME AS OF is supported only on the right side of a JOIN")
		}
		alias := t.Alias
		if alias == "" {
			alias = t.Name
		}
		if t.Schema == SystemSchema {
			return b.systemTable(t, alias)
		}
		if t.Schema != "" && t.Schema != "public" {
			return nil, sqlerr.New(sqlerr.UndefinedTable, t.P, "relation \"%s.%s\" does not exist", t.Schema, t.Name)
		}
		if q := b.cte(t.Name); q != nil {
			bq, err := b.bindQuery(q)
			if err != nil {
				return nil, err
			}
			return b.derived(bq, alias, nil, t.P)
		}
		obj, ok := b.cat.Get(t.Name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, t.P, "relation %q does not exist", t.Name)
		}
		switch obj.Kind {
		case catalog.Sink:
			return nil, sqlerr.New(sqlerr.WrongObjectType, t.P, "%q is a sink: sinks can be written, not read", t.Name)
		case catalog.View:
			q, err := parseViewQuery(obj)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(b.views, obj.Name) {
				b.views = append(b.views, obj.Name)
			}
			bq, err := b.bindQuery(q)
			if err != nil {
				return nil, sqlerr.New(sqlerr.Code(err), t.P, "in view %q: %v", obj.Name, err)
			}
			names := make([]string, len(obj.Columns))
			for i, c := range obj.Columns {
				names[i] = c.Name
			}
			return b.derived(bq, alias, names, t.P)
		}
		b.read(obj.Name)
		return b.scan(obj, alias)
	case *parser.DerivedTable:
		bq, err := b.bindQuery(t.Query)
		if err != nil {
			return nil, err
		}
		return b.derived(bq, t.Alias, t.Columns, t.P)
	case *parser.WindowTVF:
		return b.bindWindowTVF(t)
	case *parser.Join:
		return b.bindJoin(t)
	case *parser.Unnest:
		return b.bindUnnest(nil, t, false)
	}
	return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "table expression %T", t)
}

// derived re-labels a subquery's output as the columns of range variable alias.
func (b *binder) derived(bq *boundQuery, alias string, names []string, pos int) (node, error) {
	if len(bq.order) > 0 || bq.limit >= 0 || bq.offset > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, pos, "ORDER BY and LIMIT are only supported at the top of a SELECT")
	}
	in := bq.root.columns()
	if len(names) > len(in) {
		return nil, sqlerr.New(sqlerr.InvalidColumnReference, pos, "%q has %d columns available but %d columns specified", alias, len(in), len(names))
	}
	p := &projectNode{in: bq.root}
	for i, c := range in {
		if c.Hidden {
			continue
		}
		name := c.Name
		if i < len(names) {
			name = names[i]
		}
		p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
		p.out = append(p.out, Col{Name: name, Table: alias, Type: c.Type})
	}
	return p, nil
}

// scan reads a stream or a materialized view.
func (b *binder) scan(obj *catalog.Object, alias string) (node, error) {
	// A materialized view's or table's changelog is updating unless a bounded read folds it into its rows.
	n := &scanNode{obj: obj, updating: (obj.Kind == catalog.MaterializedView || obj.IsTable()) && !b.bounded || sourceIsChangelog(obj)}
	var all []Col
	var computed map[int]expr.Expr
	phys := map[int]int{} // column of all -> column of the source's (n.out)
	for i, c := range obj.Columns {
		t, err := c.Type.Arrow()
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %s of %s: %v", c.Name, obj.Name, err)
		}
		col := Col{Name: c.Name, Table: alias, Type: t}
		all = append(all, col)
		if c.Computed == "" {
			phys[i] = len(n.out)
			n.out = append(n.out, col)
		}
	}
	if len(all) > len(n.out) {
		var err error
		if computed, err = computedColumns(obj.Columns, n.out); err != nil {
			return nil, err
		}
	}
	// An expression over every column, as the source's rows give it: computed columns replaced by theirs.
	overSource := func(e expr.Expr) expr.Expr {
		return expr.Substitute(e, func(i int) expr.Expr {
			if c, ok := computed[i]; ok {
				return c
			}
			return expr.Column(phys[i], all[i].Name, all[i].Type)
		})
	}
	if obj.Watermark != nil {
		e, err := parseExpr(obj.Watermark.Expr)
		if err != nil {
			return nil, err
		}
		wm, err := (&exprBinder{sc: &scope{cols: all}}).bind(e)
		if err != nil {
			return nil, err
		}
		n.wm, n.wmOf = overSource(wm), obj.Watermark.Expr
	}
	if computed == nil {
		return n, nil
	}
	// The computed columns: a projection after the source (attrOf keeps a computed WATERMARK column a time
	// attribute through it).
	p := &projectNode{in: n}
	for i, c := range all {
		p.exprs = append(p.exprs, overSource(expr.Column(i, c.Name, c.Type)))
		p.out = append(p.out, c)
	}
	return p, nil
}

// bindWindowTVF binds TUMBLE/HOP/SESSION/CUMULATE over its input: the input's columns plus window_start and
// window_end.
func (b *binder) bindWindowTVF(t *parser.WindowTVF) (node, error) {
	in, err := b.bindTable(t.Input)
	if err != nil {
		return nil, err
	}
	cols := in.columns()
	sc := &scope{cols: cols}
	tc, err := sc.resolve("", t.TimeCol, t.TimeColP)
	if err != nil {
		return nil, err
	}
	if cols[tc].Type.ID() != arrow.TIMESTAMP {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, t.TimeColP, "the time attribute of %s must be a TIMESTAMP column, %q is %s",
			upper(t.Kind), t.TimeCol, catalog.TypeOf(cols[tc].Type))
	}
	want := map[string]int{"tumble": 1, "hop": 2, "session": 1, "cumulate": 2}[t.Kind]
	if len(t.Args) != want {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, t.P, "%s takes %d interval argument(s), got %d", upper(t.Kind), want, len(t.Args))
	}
	durs := make([]int64, len(t.Args))
	for i, a := range t.Args {
		v, err := (&exprBinder{sc: &scope{}, params: b.params, tz: b.tz, fns: b.fns}).bind(a)
		if err != nil {
			return nil, err
		}
		us, null, ok := expr.ConstantInt64(v)
		if !ok || null || v.Type().ID() != arrow.DURATION {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, a.Pos(), "%s arguments must be INTERVAL constants", upper(t.Kind))
		}
		if us <= 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameter, a.Pos(), "%s interval must be positive", upper(t.Kind))
		}
		durs[i] = us
	}
	w := &windowTVFNode{in: in, timeCol: t.TimeCol, timeColP: t.TimeColP}
	w.win.TimeCol = tc
	w.win.ProcTime = isProcTime(in, tc) // processing-time windows: fired by the clock, not the watermark
	if expr.IsTimestampTZ(cols[tc].Type) {
		w.win.Zone = b.tz // windows of local days and hours (exec/agg WindowAggConfig.Zone)
	}
	switch t.Kind {
	case "tumble":
		w.win.Kind, w.win.Size = agg.WindowTumble, durs[0]
	case "hop":
		w.win.Kind, w.win.Slide, w.win.Size = agg.WindowHop, durs[0], durs[1]
		if w.win.Size%w.win.Slide != 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameter, t.Args[1].Pos(), "HOP size must be a multiple of its slide")
		}
	case "cumulate":
		w.win.Kind, w.win.Step, w.win.Size = agg.WindowCumulate, durs[0], durs[1]
		if w.win.Size%w.win.Step != 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameter, t.Args[1].Pos(), "CUMULATE size must be a multiple of its step")
		}
	case "session":
		w.win.Kind, w.win.Gap = agg.WindowSession, durs[0]
		for _, p := range t.PartitionBy {
			ref, ok := p.(*parser.ColumnRef)
			if !ok {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, p.Pos(), "SESSION PARTITION BY takes column names")
			}
			i, err := sc.resolve(ref.Table, ref.Name, ref.P)
			if err != nil {
				return nil, err
			}
			w.partition = append(w.partition, i)
		}
	default:
		return nil, sqlerr.New(sqlerr.UndefinedFunction, t.P, "unknown window function %s", t.Kind)
	}
	alias := t.Alias
	w.out = append(w.out, cols...)
	if alias != "" {
		for i := range w.out {
			w.out[i].Table = alias
		}
	}
	w.out = append(w.out, Col{Name: "window_start", Table: alias, Type: cols[tc].Type},
		Col{Name: "window_end", Table: alias, Type: cols[tc].Type})
	return w, nil
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// exprStart is where an expression's text begins (an operator node's P is its operator).
func exprStart(e parser.Expr) int {
	switch e := e.(type) {
	case *parser.Binary:
		return min(e.P, exprStart(e.L))
	case *parser.IsNull:
		return min(e.P, exprStart(e.X))
	case *parser.IsBool:
		return min(e.P, exprStart(e.X))
	case *parser.Between:
		return min(e.P, exprStart(e.X))
	case *parser.InList:
		return min(e.P, exprStart(e.X))
	case *parser.Like:
		return min(e.P, exprStart(e.X))
	case *parser.Cast:
		return min(e.P, exprStart(e.X))
	}
	return e.Pos()
}
