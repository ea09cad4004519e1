package planner

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// bindSelect binds SELECT ... FROM ... WHERE ... GROUP BY ... HAVING ...: a filter, then an aggregation if there
// is one, then the projection of the select list.
func (b *binder) bindSelect(s *parser.SelectCore, wantOrder bool) (node, *selectInfo, error) {
	var aggCalls []*parser.Func
	for _, it := range s.Items {
		aggCalls = collectAggregates(it.Expr, aggCalls)
	}
	if s.Having != nil {
		aggCalls = collectAggregates(s.Having, aggCalls)
	}
	if s.Distinct {
		// SELECT DISTINCT a, b is GROUP BY a, b.
		if len(s.GroupBy) > 0 || len(aggCalls) > 0 || s.Having != nil {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, s.P, "SELECT DISTINCT with GROUP BY or aggregates is not supported")
		}
		d := *s
		d.Distinct = false
		for _, it := range s.Items {
			if st, ok := it.Expr.(*parser.Star); ok {
				return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, st.P, "SELECT DISTINCT * is not supported; list the columns")
			}
			key := it.Expr
			if lit, ok := key.(*parser.Literal); ok {
				key = &parser.Unary{P: lit.P, Op: "+", X: lit} // a constant, not a GROUP BY ordinal
			}
			d.GroupBy = append(d.GroupBy, key)
		}
		s = &d
	}
	grouped := len(s.GroupBy) > 0 || len(aggCalls) > 0 || s.Having != nil

	from, err := b.bindFrom(s.From)
	if err != nil {
		return nil, nil, err
	}
	tvf, _ := from.(*windowTVFNode)
	input := from
	inCols := from.columns()
	switch {
	case tvf != nil && grouped:
		// The aggregation absorbs the window function: rows flow from its input, whose columns are the TVF's
		// columns without window_start and window_end.
		input, inCols = tvf.in, tvf.out[:len(tvf.out)-2]
	case tvf != nil:
		// Not aggregated: every row gets the window_start and window_end of each window it falls in.
		if tvf.win.Kind == agg.WindowSession {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, s.P,
				"a SESSION window must be aggregated: GROUP BY window_start, window_end (sessions end only when they close)")
		}
		if tvf.win.ProcTime {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, tvf.timeColP,
				"a window table function over a processing-time attribute (PROCTIME()) must be aggregated in the same SELECT: GROUP BY window_start, window_end")
		}
		input = &assignNode{tvf: tvf}
	}
	sc := &scope{cols: inCols}

	where, subs := splitSubqueries(s.Where)
	where, late := splitLate(where)
	if where != nil {
		if f := findAggregate(where); f != nil {
			return nil, nil, sqlerr.New(sqlerr.GroupingError, f.P, "aggregate functions are not allowed in WHERE")
		}
		cond, err := (&exprBinder{sc: sc, params: b.params, tz: b.tz, fns: b.fns}).bind(where)
		if err != nil {
			return nil, nil, err
		}
		if err := wantBool(cond, "WHERE", where.Pos()); err != nil {
			return nil, nil, err
		}
		var rest []expr.Expr
		if input, rest, err = distributeWhere(input, cond); err != nil {
			return nil, nil, posErr(err, s.Where.Pos())
		}
		if len(rest) > 0 {
			cond = rest[0]
			if len(rest) > 1 {
				if cond, err = expr.Call("and", rest...); err != nil {
					return nil, nil, posErr(err, s.Where.Pos())
				}
			}
			input = &filterNode{in: input, cond: cond}
		}
	}
	if input, err = analyzeJoins(input); err != nil {
		return nil, nil, err
	}
	for _, sp := range subs {
		if input, err = b.subqueryJoin(input, sc, sp); err != nil {
			return nil, nil, err
		}
	}
	scalars := scalarSubqueries(late...)
	if !grouped {
		scalars = append(scalars, scalarSubqueries(itemExprs(s.Items)...)...)
	}
	for _, sq := range scalars {
		if input, sc, err = b.scalarJoin(input, sc, sq); err != nil {
			return nil, nil, err
		}
	}
	if len(late) > 0 {
		cond, err := (&exprBinder{sc: sc, params: b.params, tz: b.tz, fns: b.fns}).bind(andAll(late))
		if err != nil {
			return nil, nil, err
		}
		if err := wantBool(cond, "WHERE", late[0].Pos()); err != nil {
			return nil, nil, err
		}
		input = &filterNode{in: input, cond: cond}
	}
	if !grouped {
		return b.project(input, sc, nil, s.Items, wantOrder)
	}
	agg, ab, err := b.bindAggregate(s, input, sc, tvf, aggCalls)
	if err != nil {
		return nil, nil, err
	}
	var top node = agg
	if s.Having != nil {
		cond, err := (&exprBinder{sc: &scope{cols: agg.out}, agg: ab, params: b.params, tz: b.tz, fns: b.fns}).bind(s.Having)
		if err != nil {
			return nil, nil, err
		}
		if err := wantBool(cond, "HAVING", s.Having.Pos()); err != nil {
			return nil, nil, err
		}
		top = &filterNode{in: agg, cond: cond}
	}
	return b.project(top, &scope{cols: agg.out}, ab, s.Items, wantOrder)
}

func wantBool(e expr.Expr, clause string, pos int) error {
	if e.Type().ID() != arrow.BOOL && e.Type().ID() != arrow.NULL {
		return sqlerr.New(sqlerr.DatatypeMismatch, pos, "argument of %s must be type boolean, not type %s", clause, expr.TypeName(e.Type()))
	}
	return nil
}

// project binds the select list over in.
func (b *binder) project(in node, sc *scope, ab *aggBinding, items []parser.SelectItem, wantOrder bool) (node, *selectInfo, error) {
	in, sc, err := b.bindOver(in, sc, items, ab != nil)
	if err != nil {
		return nil, nil, err
	}
	in, sc, items, err = b.bindRank(in, sc, items, ab != nil)
	if err != nil {
		return nil, nil, err
	}
	eb := &exprBinder{sc: sc, agg: ab, params: b.params, tz: b.tz, fns: b.fns}
	p := &projectNode{in: in}
	info := &selectInfo{}
	for _, it := range items {
		if star, ok := it.Expr.(*parser.Star); ok {
			if ab != nil {
				return nil, nil, sqlerr.New(sqlerr.GroupingError, star.P, "SELECT * is not allowed with GROUP BY; list the columns")
			}
			matched := false
			for _, i := range visible(sc.cols) {
				c := sc.cols[i]
				if star.Table != "" && c.Table != star.Table {
					continue
				}
				matched = true
				p.exprs = append(p.exprs, expr.Column(i, c.Name, c.Type))
				p.out = append(p.out, Col{Name: c.Name, Type: c.Type})
				p.pos = append(p.pos, star.P)
				info.items = append(info.items, parser.SelectItem{Expr: &parser.ColumnRef{Table: c.Table, Name: c.Name}})
			}
			if star.Table != "" && !matched {
				return nil, nil, sqlerr.New(sqlerr.UndefinedTable, star.P, "missing FROM-clause entry for table %q", star.Table)
			}
			continue
		}
		e, err := eb.bind(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		name := it.Alias
		if name == "" {
			name = columnName(it.Expr)
		}
		p.exprs = append(p.exprs, e)
		p.out = append(p.out, Col{Name: name, Type: e.Type()})
		p.pos = append(p.pos, it.P)
		info.items = append(info.items, it)
	}
	if wantOrder {
		info.extra = func(e parser.Expr) (int, error) {
			x, err := eb.bind(e)
			if err != nil {
				return 0, err
			}
			p.exprs = append(p.exprs, x)
			p.out = append(p.out, Col{Name: columnName(e), Type: x.Type(), Hidden: true})
			p.pos = append(p.pos, e.Pos())
			return len(p.exprs) - 1, nil
		}
	}
	return p, info, nil
}

// columnName is the name Postgres gives an unaliased select item.
func columnName(e parser.Expr) string {
	switch e := e.(type) {
	case *parser.ColumnRef:
		return e.Name
	case *parser.Func:
		return e.Name
	case *parser.Cast:
		if n := columnName(e.X); n != "?column?" {
			return n
		}
		return lower(e.Type.Name)
	case *parser.Extract:
		return "extract"
	case *parser.Case:
		return "case"
	}
	return "?column?"
}

// findAggregate returns the first aggregate call in e, or nil.
func findAggregate(e parser.Expr) *parser.Func {
	var calls []*parser.Func
	calls = collectAggregates(e, calls)
	if len(calls) > 0 {
		return calls[0]
	}
	return nil
}

// collectAggregates appends the aggregate calls of e (not looking inside them).
func collectAggregates(e parser.Expr, acc []*parser.Func) []*parser.Func {
	walkExpr(e, func(x parser.Expr) bool {
		if f, ok := x.(*parser.Func); ok && aggregateNames[f.Name] && f.Over == nil {
			acc = append(acc, f)
			return false
		}
		return true
	})
	return acc
}

// walkExpr calls fn for e and, while fn returns true, its sub-expressions.
func walkExpr(e parser.Expr, fn func(parser.Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	w := func(xs ...parser.Expr) {
		for _, x := range xs {
			walkExpr(x, fn)
		}
	}
	switch e := e.(type) {
	case *parser.Unary:
		w(e.X)
	case *parser.Binary:
		w(e.L, e.R)
	case *parser.IsNull:
		w(e.X)
	case *parser.IsBool:
		w(e.X)
	case *parser.Between:
		w(e.X, e.Lo, e.Hi)
	case *parser.InList:
		w(e.X)
		w(e.List...)
	case *parser.Like:
		w(e.X, e.Pattern, e.Escape)
	case *parser.Case:
		w(e.Operand, e.Else)
		for _, wh := range e.Whens {
			w(wh.Cond, wh.Result)
		}
	case *parser.Cast:
		w(e.X)
	case *parser.Extract:
		w(e.X)
	case *parser.Func:
		w(e.Args...)
		w(e.Filter)
	}
}

// aggBinding maps the expressions an aggregation computes to its output columns, for binding the select list and
// HAVING over it.
type aggBinding struct {
	in  *scope // the aggregation's input columns (for error messages)
	out []Col
	fps map[string]int
}

func (a *aggBinding) lookup(e parser.Expr) (int, bool) {
	i, ok := a.fps[fingerprint(a.in, e)]
	return i, ok
}

// bindAggregate builds the aggregation of a grouped select: the window (from a window TVF, a legacy GROUP BY
// TUMBLE(...), or none in a bounded SELECT), the keys and the aggregate calls.
func (b *binder) bindAggregate(s *parser.SelectCore, input node, sc *scope, tvf *windowTVFNode, calls []*parser.Func) (*aggNode, *aggBinding, error) {
	eb := &exprBinder{sc: sc, params: b.params, tz: b.tz, fns: b.fns}
	ab := &aggBinding{in: sc, fps: map[string]int{}}
	n := &aggNode{}
	var cfg agg.WindowAggConfig
	var timeExpr expr.Expr
	var keyASTs []parser.Expr
	var winLabel string
	haveStart, haveEnd := false, false
	var legacy *parser.Func

	for _, g := range s.GroupBy {
		if ref, ok := g.(*parser.ColumnRef); ok && tvf != nil && (ref.Name == "window_start" || ref.Name == "window_end") {
			if ref.Name == "window_start" {
				haveStart = true
			} else {
				haveEnd = true
			}
			continue
		}
		if f, ok := g.(*parser.Func); ok && (f.Name == "tumble" || f.Name == "hop" || f.Name == "session") {
			if legacy != nil || tvf != nil {
				return nil, nil, sqlerr.New(sqlerr.GroupingError, f.P, "only one window per GROUP BY")
			}
			legacy = f
			continue
		}
		if f := findAggregate(g); f != nil {
			return nil, nil, sqlerr.New(sqlerr.GroupingError, f.P, "aggregate functions are not allowed in GROUP BY")
		}
		if lit, ok := g.(*parser.Literal); ok && lit.Kind == parser.LitInt {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, lit.P, "GROUP BY ordinals are not supported; name the expression")
		}
		keyASTs = append(keyASTs, g)
	}

	we, window := windowKeys(keyASTs, input, sc)
	switch {
	case tvf != nil:
		if !haveStart || !haveEnd {
			return nil, nil, sqlerr.New(sqlerr.GroupingError, s.P, "a window table function needs GROUP BY window_start, window_end")
		}
		cfg = tvf.win
		tc := tvf.win.TimeCol
		timeExpr = expr.Column(tc, sc.cols[tc].Name, sc.cols[tc].Type)
		winLabel = windowLabel(cfg, tvf.timeCol)
		for _, p := range tvf.partition {
			found := false
			for _, k := range keyASTs {
				if ref, ok := k.(*parser.ColumnRef); ok {
					if i, err := sc.resolve(ref.Table, ref.Name, ref.P); err == nil && i == p {
						found = true
					}
				}
			}
			if !found {
				return nil, nil, sqlerr.New(sqlerr.GroupingError, s.P, "SESSION's PARTITION BY column %q must be in GROUP BY", sc.cols[p].Name)
			}
		}
	case legacy != nil:
		var err error
		cfg, timeExpr, winLabel, err = b.legacyWindow(legacy, sc)
		if err != nil {
			return nil, nil, err
		}
		if tc, ok := expr.ColumnIndex(timeExpr); ok && isProcTime(input, tc) {
			cfg.ProcTime = true
			winLabel = windowLabel(cfg, sc.cols[tc].Name)
		}
	case we != nil:
		// GROUP BY window_start, window_end (under any names) of rows windowed upstream: the same windows again,
		// each emitted once when the watermark passes its end (Flink's window propagation). Every window end is
		// its own tiny TUMBLE window ending there, and window_start and window_end stay keys.
		n.propagated = true
		cfg = agg.WindowAggConfig{Kind: agg.WindowTumble, Size: 1}
		var err error
		if timeExpr, err = expr.Call("-", we, expr.Interval(1)); err != nil {
			return nil, nil, posErr(err, s.P)
		}
		winLabel = "the input's windows: " + window
	case !b.bounded || updatingReason(input) != "":
		// A continuous GROUP BY without a window (or one over a changelog): every change of a group's result is
		// emitted as it happens.
		n.group = true
		winLabel = "none: the result is updated as rows arrive"
	default:
		n.global = true
		cfg = agg.WindowAggConfig{Kind: agg.WindowTumble, Size: math.MaxInt64}
		timeExpr = expr.Timestamp(0)
		winLabel = "whole input"
	}

	pre := &projectNode{in: input}
	addPre := func(e expr.Expr, name string) int {
		pre.exprs = append(pre.exprs, e)
		pre.out = append(pre.out, Col{Name: name, Type: e.Type()})
		return len(pre.exprs) - 1
	}
	var keyCols []Col
	for _, k := range keyASTs {
		e, err := eb.bind(k)
		if err != nil {
			return nil, nil, err
		}
		c := Col{Name: columnName(k), Type: e.Type()}
		if ref, ok := k.(*parser.ColumnRef); ok {
			i, _ := sc.resolve(ref.Table, ref.Name, ref.P)
			c.Table = sc.cols[i].Table
		}
		cfg.Keys = append(cfg.Keys, addPre(e, c.Name))
		keyCols = append(keyCols, c)
	}
	if !n.group {
		cfg.TimeCol = addPre(timeExpr, "event_time")
	}
	// An aggregate's argument or filter equal to one an earlier aggregate already has is computed once (COUNT(*)
	// FILTER (WHERE p) and COUNT(DISTINCT x) FILTER (WHERE p) share p).
	firstAggPre := len(pre.exprs)
	addAggPre := func(e expr.Expr, name string) int {
		for i := firstAggPre; i < len(pre.exprs); i++ {
			if expr.Equal(pre.exprs[i], e) {
				return i
			}
		}
		return addPre(e, name)
	}
	cfg.Aggs = nil
	var aggNames []string
	seen := map[string]int{}
	var aggOrder []string
	for _, f := range calls {
		fp := fingerprint(sc, f)
		if _, dup := seen[fp]; dup {
			continue
		}
		spec := agg.AggSpec{Arg: -1, Filter: -1}
		switch {
		case f.Name == "count" && f.Star:
			spec.Func = agg.AggCountStar
		case f.Star:
			return nil, nil, sqlerr.New(sqlerr.SyntaxError, f.P, "%s(*) is only valid for COUNT", f.Name)
		case len(f.Args) != 1:
			return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s takes one argument", f.Name)
		}
		var cond expr.Expr
		if f.Filter != nil {
			if g := findAggregate(f.Filter); g != nil {
				return nil, nil, sqlerr.New(sqlerr.GroupingError, g.P, "aggregate functions are not allowed in FILTER")
			}
			var err error
			if cond, err = eb.bind(f.Filter); err != nil {
				return nil, nil, err
			}
			if err := wantBool(cond, "FILTER", f.Filter.Pos()); err != nil {
				return nil, nil, err
			}
		}
		if spec.Func != agg.AggCountStar {
			if g := findAggregate(f.Args[0]); g != nil {
				return nil, nil, sqlerr.New(sqlerr.GroupingError, g.P, "aggregate function calls cannot be nested")
			}
			arg, err := eb.bind(f.Args[0])
			if err != nil {
				return nil, nil, err
			}
			fn, err := aggFunc(f, arg.Type())
			if err != nil {
				return nil, nil, err
			}
			if cond != nil && expr.CanFail(arg) {
				// The argument is evaluated only for the rows the filter keeps (as in Postgres): CASE evaluates its
				// THEN branch for those rows only, so 1 / x FILTER (WHERE x <> 0) cannot fail. The NULL it gives
				// the other rows is ignored like any NULL argument, and the filter still drops them. An argument
				// that cannot fail is evaluated on every row: the filter drops the rows it should not count.
				if arg, err = expr.Call("case", cond, arg); err != nil {
					return nil, nil, sqlerr.Wrap(sqlerr.InternalError, err)
				}
			}
			spec.Func = fn
			spec.Arg = addAggPre(arg, f.Name+"_arg")
		} else if f.Distinct {
			return nil, nil, sqlerr.New(sqlerr.SyntaxError, f.P, "COUNT(DISTINCT *) is not valid")
		}
		if cond != nil {
			spec.Filter = addAggPre(cond, f.Name+"_filter")
		}
		seen[fp] = len(cfg.Aggs)
		cfg.Aggs = append(cfg.Aggs, spec)
		aggNames = append(aggNames, f.Name)
		aggOrder = append(aggOrder, fp)
	}

	n.pre, n.cfg, n.keys = pre, cfg, len(keyCols)
	_, outSchema, err := n.newOperator(expr.ErrorsFail) // validates; lowering builds it with the session's mode
	if err != nil {
		return nil, nil, sqlerr.Wrap(sqlerr.FeatureNotSupported, err).WithPos(s.P)
	}
	// Output columns: keys, window_start, window_end, aggregates (types from the operator).
	nk := len(keyCols)
	for i := 0; i < outSchema.NumFields(); i++ {
		f := outSchema.Field(i)
		c := Col{Name: f.Name, Type: f.Type}
		switch {
		case i < nk:
			c = keyCols[i]
			c.Type = f.Type
		case i >= nk+n.winCols():
			c.Name = aggNames[i-nk-n.winCols()]
		case i == nk:
			c.Name = "window_start"
		case i == nk+1:
			c.Name = "window_end"
		}
		n.out = append(n.out, c)
	}
	ab.out = n.out
	for i, k := range keyASTs {
		ab.fps[fingerprint(sc, k)] = i
	}
	if tvf != nil {
		// window_start and window_end, bare or qualified by the window function's alias, are the aggregate's
		// window columns.
		for i, name := range []string{"window_start", "window_end"} {
			ab.fps[fingerprint(nil, &parser.ColumnRef{Name: name})] = nk + i
			if table := tvf.out[0].Table; table != "" {
				ab.fps[fingerprint(nil, &parser.ColumnRef{Table: table, Name: name})] = nk + i
			}
		}
	}
	if legacy != nil {
		kind := legacy.Name
		args := legacy.Args
		for _, suffix := range []string{"_start", "_end", "_rowtime"} {
			f := &parser.Func{Name: kind + suffix, Args: args}
			idx := nk
			if suffix != "_start" {
				idx = nk + 1
			}
			ab.fps[fingerprint(sc, f)] = idx
		}
	}
	for i, fp := range aggOrder {
		ab.fps[fp] = nk + n.winCols() + i
	}
	n.label = winLabel
	return n, ab, nil
}

// windowKeys returns the window_end column (as an expression over sc) and the windowing when GROUP BY keys hold
// both window_start and window_end of one windowing of an append-only input; nil otherwise.
func windowKeys(keys []parser.Expr, input node, sc *scope) (end expr.Expr, window string) {
	if updatingReason(input) != "" {
		return nil, ""
	}
	var start expr.Expr
	for _, k := range keys {
		ref, ok := k.(*parser.ColumnRef)
		if !ok {
			continue
		}
		i, err := sc.resolve(ref.Table, ref.Name, ref.P)
		if err != nil {
			continue
		}
		a := attrOf(input, i)
		if a.window == "" || (window != "" && a.window != window) {
			continue
		}
		c := expr.Column(i, sc.cols[i].Name, sc.cols[i].Type)
		switch a.role {
		case roleWindowStart:
			start, window = c, a.window
		case roleWindowEnd:
			end, window = c, a.window
		}
	}
	if start == nil || end == nil {
		return nil, ""
	}
	return end, window
}

// aggFunc checks an aggregate's argument type and picks the operator's function.
func aggFunc(f *parser.Func, t arrow.DataType) (agg.AggFunc, error) {
	numeric := false
	if _, ok := numericRank(t); ok {
		numeric = true
	}
	switch f.Name {
	case "count":
		if f.Distinct {
			return agg.AggCountDistinct, nil
		}
		return agg.AggCount, nil
	case "sum", "avg":
		if f.Distinct {
			return 0, sqlerr.New(sqlerr.FeatureNotSupported, f.P, "%s(DISTINCT ...) is not supported", f.Name)
		}
		if !numeric && t.ID() != arrow.NULL {
			return 0, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s(%s) does not exist", f.Name, expr.TypeName(t))
		}
		if f.Name == "sum" {
			return agg.AggSum, nil
		}
		return agg.AggAvg, nil
	case "min", "max":
		switch t.ID() {
		case arrow.BINARY, arrow.DURATION, arrow.NULL:
			return 0, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s(%s) does not exist", f.Name, expr.TypeName(t))
		}
		if f.Name == "min" {
			return agg.AggMin, nil
		}
		return agg.AggMax, nil
	}
	return 0, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s does not exist", f.Name)
}

// legacyWindow reads GROUP BY TUMBLE(ts, size) / HOP(ts, slide, size) / SESSION(ts, gap).
func (b *binder) legacyWindow(f *parser.Func, sc *scope) (agg.WindowAggConfig, expr.Expr, string, error) {
	var cfg agg.WindowAggConfig
	want := map[string]int{"tumble": 2, "hop": 3, "session": 2}[f.Name]
	if len(f.Args) != want {
		return cfg, nil, "", sqlerr.New(sqlerr.UndefinedFunction, f.P, "%s takes %d arguments in GROUP BY", upper(f.Name), want)
	}
	ref, ok := f.Args[0].(*parser.ColumnRef)
	if !ok {
		return cfg, nil, "", sqlerr.New(sqlerr.FeatureNotSupported, f.Args[0].Pos(), "the time attribute of %s must be a column", upper(f.Name))
	}
	tc, err := sc.resolve(ref.Table, ref.Name, ref.P)
	if err != nil {
		return cfg, nil, "", err
	}
	if sc.cols[tc].Type.ID() != arrow.TIMESTAMP {
		return cfg, nil, "", sqlerr.New(sqlerr.DatatypeMismatch, ref.P, "the time attribute of %s must be a TIMESTAMP column", upper(f.Name))
	}
	var durs []int64
	for _, a := range f.Args[1:] {
		v, err := (&exprBinder{sc: &scope{}, params: b.params, tz: b.tz, fns: b.fns}).bind(a)
		if err != nil {
			return cfg, nil, "", err
		}
		us, null, ok := expr.ConstantInt64(v)
		if !ok || null || v.Type().ID() != arrow.DURATION || us <= 0 {
			return cfg, nil, "", sqlerr.New(sqlerr.DatatypeMismatch, a.Pos(), "%s arguments must be positive INTERVAL constants", upper(f.Name))
		}
		durs = append(durs, us)
	}
	switch f.Name {
	case "tumble":
		cfg.Kind, cfg.Size = agg.WindowTumble, durs[0]
	case "hop":
		cfg.Kind, cfg.Slide, cfg.Size = agg.WindowHop, durs[0], durs[1]
	case "session":
		cfg.Kind, cfg.Gap = agg.WindowSession, durs[0]
	}
	if expr.IsTimestampTZ(sc.cols[tc].Type) {
		cfg.Zone = b.tz
	}
	return cfg, expr.Column(tc, sc.cols[tc].Name, sc.cols[tc].Type), windowLabel(cfg, ref.Name), nil
}
