package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Over aggregation (Flink's): aggregates and LAG with OVER (PARTITION BY ... ORDER BY <time attribute> [frame]) in
// a select list that does not aggregate. Every such call of one SELECT shares one window (partition, order and
// frame), computed by one agg.NewOverAggregate operator that appends a column per call; the calls bind to those
// columns (scope.subs). The ORDER BY is the input's time attribute, ascending: a row is emitted once the watermark
// passes its time, with the values of its frame, so the result is append-only and the time attribute stays one.

// overNode is its input's columns plus one (hidden) column per function of cfg.
type overNode struct {
	in    node
	cfg   agg.OverConfig
	pos   int
	frame string // the frame as written, for EXPLAIN
	out   []Col
}

func (n *overNode) columns() []Col   { return n.out }
func (n *overNode) children() []node { return []node{n.in} }

// overCalls lists the OVER calls of items other than the ranking functions (bindRank's), outer first.
func overCalls(items []parser.SelectItem) []*parser.Func {
	var out []*parser.Func
	for _, it := range items {
		walkExpr(it.Expr, func(x parser.Expr) bool {
			f, ok := x.(*parser.Func)
			if ok && f.Over != nil && !rankNames[f.Name] {
				out = append(out, f)
				return false
			}
			return true
		})
	}
	return out
}

// rankNames are the window functions that run as a Top-N (topn.go).
var rankNames = map[string]bool{"row_number": true, "rank": true, "dense_rank": true}

// sameWindow reports whether two OVER clauses are the same window.
func sameWindow(a, b *parser.WindowSpec) bool {
	fp := func(w *parser.WindowSpec) string {
		var sb strings.Builder
		for _, p := range w.PartitionBy {
			sb.WriteString(fingerprint(nil, p) + ";")
		}
		sb.WriteString("|")
		for _, o := range w.OrderBy {
			fmt.Fprintf(&sb, "%s %v %v;", fingerprint(nil, o.Expr), o.Desc, o.NullsFirst)
		}
		if f := w.Frame; f != nil {
			fmt.Fprintf(&sb, "|%v %d %s %d %s", f.Range, f.Start.Kind, fingerprint(nil, f.Start.Offset), f.End.Kind, fingerprint(nil, f.End.Offset))
		}
		return sb.String()
	}
	return fp(a) == fp(b)
}

// bindOver plans the OVER calls of items over in (whose scope is sc): the over node and its scope, in which each
// call binds to its column; in and sc unchanged when there is none.
func (b *binder) bindOver(in node, sc *scope, items []parser.SelectItem, grouped bool) (node, *scope, error) {
	calls := overCalls(items)
	if len(calls) == 0 {
		return in, sc, nil
	}
	f0 := calls[0]
	if grouped {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f0.P, "%s() OVER (...) in a SELECT that aggregates is not supported; aggregate in a subquery", f0.Name)
	}
	for _, f := range calls[1:] {
		if !sameWindow(f0.Over, f.Over) {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.Over.P, "every OVER clause of a SELECT must be the same window (as in Flink)")
		}
	}
	w := f0.Over
	eb := &exprBinder{sc: sc, params: b.params, tz: b.tz, fns: b.fns}
	// The arguments, filters and defaults that are not columns are computed by a projection under the operator.
	pre := &projectNode{in: in}
	for i, c := range in.columns() {
		pre.exprs = append(pre.exprs, expr.Column(i, c.Name, c.Type))
		pre.out = append(pre.out, c)
	}
	column := func(e expr.Expr) int {
		if i, ok := expr.ColumnIndex(e); ok {
			return i
		}
		pre.exprs = append(pre.exprs, e)
		pre.out = append(pre.out, Col{Name: fmt.Sprintf("?over_arg%d", len(pre.exprs)), Type: e.Type(), Hidden: true, QualOnly: true})
		return len(pre.exprs) - 1
	}
	n := &overNode{pos: w.P}
	for _, p := range w.PartitionBy {
		x, err := eb.bind(p)
		if err != nil {
			return nil, nil, err
		}
		n.cfg.Partition = append(n.cfg.Partition, column(x))
	}
	if len(w.OrderBy) != 1 {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, w.P,
			"OVER needs ORDER BY a time attribute (a stream's WATERMARK column), ascending, and nothing else")
	}
	o := w.OrderBy[0]
	ox, err := eb.bind(o.Expr)
	if err != nil {
		return nil, nil, err
	}
	tc, ok := expr.ColumnIndex(ox)
	if ok && isProcTime(in, tc) {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, o.P,
			"OVER ORDER BY a processing-time attribute (PROCTIME()) is not supported: order by an event-time attribute (a stream's WATERMARK column)")
	}
	if !ok || o.Desc || !attrOf(in, tc).rowtime {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, o.P,
			"OVER needs ORDER BY a time attribute (a stream's WATERMARK column), ascending: rows are taken in time order as the watermark passes them")
	}
	n.cfg.TimeCol = tc
	if err := bindFrame(w.Frame, &n.cfg, eb); err != nil {
		return nil, nil, err
	}
	n.frame = frameText(w.Frame)
	subs := map[parser.Expr]expr.Expr{}
	for k, e := range sc.subs {
		subs[k] = e
	}
	var outFuncs []Col
	for _, f := range calls {
		fn := agg.OverFunc{Filter: -1, Default: -1, Arg: -1, Name: f.Name}
		switch {
		case f.Name == "lag" && f.Filter != nil:
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.P, "FILTER is not implemented for non-aggregate window functions")
		case f.Name == "lag":
			if f.Star || f.Distinct || len(f.Args) < 1 || len(f.Args) > 3 {
				return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, f.P, "LAG takes (value [, offset [, default]])")
			}
			x, err := eb.bind(f.Args[0])
			if err != nil {
				return nil, nil, err
			}
			fn.Lag, fn.Arg, fn.Offset = true, column(x), 1
			if len(f.Args) > 1 {
				k, err := b.constInt(f.Args[1], "LAG's offset")
				if err != nil {
					return nil, nil, err
				}
				if k < 1 {
					return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.Args[1].Pos(), "LAG's offset must be at least 1")
				}
				fn.Offset = k
			}
			if len(f.Args) > 2 {
				d, err := eb.bind(f.Args[2])
				if err != nil {
					return nil, nil, err
				}
				if !arrow.TypeEqual(d.Type(), x.Type()) {
					if d, err = castIn(b.tz, d, x.Type(), false); err != nil {
						return nil, nil, posErr(err, f.Args[2].Pos())
					}
				}
				fn.Default = column(d)
			}
		case f.Name == "lead":
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.P,
				"LEAD() OVER (...) over a stream is not supported: a row would wait for rows that have not arrived (use LAG, ordered the other way, in a query over the result)")
		case aggregateNames[f.Name]:
			fn.Func, err = overAggFunc(f)
			if err != nil {
				return nil, nil, err
			}
			if !f.Star {
				if len(f.Args) != 1 {
					return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, f.P, "%s takes one argument", f.Name)
				}
				x, err := eb.bind(f.Args[0])
				if err != nil {
					return nil, nil, err
				}
				fn.Arg = column(x)
			}
			if f.Filter != nil {
				c, err := eb.bind(f.Filter)
				if err != nil {
					return nil, nil, err
				}
				if err := wantBool(c, "FILTER", f.Filter.Pos()); err != nil {
					return nil, nil, err
				}
				fn.Filter = column(c)
			}
		default:
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.P, "window function %s() is not supported", f.Name)
		}
		n.cfg.Funcs = append(n.cfg.Funcs, fn)
	}
	n.in = pre
	if isIdentity(pre.exprs, in.columns()) {
		n.in = in
	}
	_, schema, err := agg.NewOverAggregate(n.cfg, schemaOf(n.in.columns()))
	if err != nil {
		return nil, nil, posErr(err, w.P)
	}
	n.out = append([]Col{}, n.in.columns()...)
	for i, f := range calls {
		c := Col{Name: fmt.Sprintf("?over%d", i), Type: schema.Field(len(n.in.columns()) + i).Type, Hidden: true, QualOnly: true}
		outFuncs = append(outFuncs, c)
		subs[f] = expr.Column(len(n.in.columns())+i, f.Name, c.Type)
	}
	n.out = append(n.out, outFuncs...)
	return n, &scope{cols: n.out, subs: subs}, nil
}

func overAggFunc(f *parser.Func) (agg.AggFunc, error) {
	switch f.Name {
	case "count":
		switch {
		case f.Star:
			return agg.AggCountStar, nil
		case f.Distinct:
			return agg.AggCountDistinct, nil
		}
		return agg.AggCount, nil
	case "sum":
		return agg.AggSum, nil
	case "min":
		return agg.AggMin, nil
	case "max":
		return agg.AggMax, nil
	case "avg":
		return agg.AggAvg, nil
	}
	return 0, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s does not exist", f.Name)
}

// bindFrame sets the frame of cfg: SQL's default (RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) without one.
func bindFrame(f *parser.Frame, cfg *agg.OverConfig, eb *exprBinder) error {
	if f == nil {
		cfg.Range, cfg.Preceding = true, -1
		return nil
	}
	cfg.Range = f.Range
	if f.End.Kind != parser.BoundCurrentRow {
		return sqlerr.New(sqlerr.FeatureNotSupported, f.End.P, "a window frame must end at CURRENT ROW over a stream (rows after it have not arrived)")
	}
	switch f.Start.Kind {
	case parser.BoundUnboundedPreceding:
		cfg.Preceding = -1
	case parser.BoundCurrentRow:
		cfg.Preceding = 0
	case parser.BoundPreceding:
		v, err := eb.bind(f.Start.Offset)
		if err != nil {
			return err
		}
		n, null, ok := expr.ConstantInt64(v)
		switch {
		case !ok || null || n < 0:
			return sqlerr.New(sqlerr.InvalidParameter, f.Start.P, "a frame offset must be a non-negative constant")
		case f.Range && v.Type().ID() != arrow.DURATION:
			return sqlerr.New(sqlerr.FeatureNotSupported, f.Start.P, "a RANGE frame over a time attribute needs an INTERVAL offset")
		case !f.Range && v.Type().ID() == arrow.DURATION:
			return sqlerr.New(sqlerr.DatatypeMismatch, f.Start.P, "a ROWS frame's offset is a number of rows, not an INTERVAL")
		}
		cfg.Preceding = n
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, f.Start.P, "a window frame must start before the current row")
	}
	return nil
}

func frameText(f *parser.Frame) string {
	if f == nil {
		return "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
	}
	kind := "ROWS"
	if f.Range {
		kind = "RANGE"
	}
	start := "UNBOUNDED PRECEDING"
	switch f.Start.Kind {
	case parser.BoundCurrentRow:
		start = "CURRENT ROW"
	case parser.BoundPreceding:
		start = parser.Format(f.Start.Offset) + " PRECEDING"
	}
	return kind + " BETWEEN " + start + " AND CURRENT ROW"
}

// lowerOver lowers an over node: a hash exchange on the partition keys (everything to one subtask without them).
func (l *lowering) lowerOver(n *overNode) (*PNode, error) {
	if r := updatingReason(n.in); r != "" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, n.pos, "an OVER window needs an append-only input, but %s", r)
	}
	in, err := l.lower(n.in)
	if err != nil {
		return nil, err
	}
	cfg := n.cfg
	cfg.Mode = l.settings.Errors
	factory, _, err := agg.NewOverAggregate(cfg, schemaOf(n.in.columns()))
	if err != nil {
		return nil, posErr(err, n.pos)
	}
	par := l.settings.Parallelism
	ex := keyedInput(in, par, cfg.Partition)
	if len(cfg.Partition) == 0 {
		par, ex = 1, exec.RebalanceExchange()
		if in.Parallelism == 1 {
			ex = exec.ForwardExchange()
		}
	}
	cols := n.in.columns()
	var part, funcs []string
	for _, p := range cfg.Partition {
		part = append(part, qualified(cols[p]))
	}
	for _, f := range cfg.Funcs {
		switch {
		case f.Lag:
			d := "NULL"
			if f.Default >= 0 {
				d = qualified(cols[f.Default])
			}
			funcs = append(funcs, fmt.Sprintf("lag(%s, %d, %s)", qualified(cols[f.Arg]), f.Offset, d))
		default:
			funcs = append(funcs, describeAgg(agg.AggSpec{Func: f.Func, Arg: f.Arg, Filter: f.Filter}, cols, f.Name))
		}
	}
	keep := "the rows a later frame or LAG reaches"
	if cfg.Preceding < 0 {
		keep = "the running aggregates"
	}
	pn := &PNode{ID: "over-agg", Kind: exec.OperatorNode, Parallelism: par, Keyed: true,
		Inputs: []PEdge{{From: in, Exchange: ex}}, Label: "OverAggregate",
		Details: []string{"partition by: [" + strings.Join(part, ", ") + "]", "order by: " + qualified(cols[cfg.TimeCol]),
			"frame: " + n.frame, "functions: [" + strings.Join(funcs, ", ") + "]",
			"emits: each row once, when the watermark passes its time; late rows are dropped and counted",
			"state: per partition, rows waiting for the watermark and " + keep},
		newOperator: factory}
	if len(cfg.Partition) > 0 {
		pn.partitioned = cfg.Partition
	}
	// Rows leave in time order as the watermark passes them, before it: the time column stays the row time.
	pn.rowTime, pn.hasRowTime = cfg.TimeCol, true
	return l.add(pn), nil
}
