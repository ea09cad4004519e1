package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// topNNode is ROW_NUMBER(), RANK() or DENSE_RANK() OVER (PARTITION BY .. ORDER BY ..) (cfg.Rank): its input's
// rows plus the rank. A stream has no end to rank rows up to, so it runs only as a Top-N: a filter rn <= N (rn < N,
// rn = 1) in the enclosing query gives cfg.N (pushdown absorbs it); without one the query is refused. Under RANK
// and DENSE_RANK the filter keeps every row of rank <= N, ties at the boundary included (Postgres' ranks).
type topNNode struct {
	in  node
	cfg agg.TopNConfig
	pos int
	out []Col
}

func (n *topNNode) columns() []Col   { return n.out }
func (n *topNNode) children() []node { return []node{n.in} }

// rankColumn is the scope name of a select list's ranking function column, which no user name can reach.
const rankColumn = "?row_number"

// rankFuncs are the ranking functions (rankNames) as a Top-N runs them.
var rankFuncs = map[string]agg.RankFunc{"row_number": agg.RowNumber, "rank": agg.Rank, "dense_rank": agg.DenseRank}

// bindRank finds ROW_NUMBER(), RANK() or DENSE_RANK() OVER (...) in a select list. When there is one, it returns
// the Top-N node over in and the items with the call replaced by a reference to its column; otherwise in and items
// unchanged.
func (b *binder) bindRank(in node, sc *scope, items []parser.SelectItem, grouped bool) (node, *scope, []parser.SelectItem, error) {
	var found *topNNode
	out := make([]parser.SelectItem, len(items))
	for i, it := range items {
		out[i] = it
		f, ok := it.Expr.(*parser.Func)
		if !ok || f.Over == nil {
			continue
		}
		fn, isRank := rankFuncs[f.Name]
		if !isRank { // other OVER calls are bindOver's
			continue
		}
		call := fn.String() + "()"
		if found != nil {
			return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.P,
				"only one ranking function (ROW_NUMBER(), RANK() or DENSE_RANK()) per SELECT is supported")
		}
		if grouped {
			return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.P, "%s over an aggregated SELECT is not supported; aggregate in a subquery", call)
		}
		if len(f.Args) > 0 || f.Star {
			return nil, nil, nil, sqlerr.New(sqlerr.UndefinedFunction, f.P, "function %s() takes no arguments", f.Name)
		}
		if len(f.Over.OrderBy) == 0 {
			return nil, nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, f.Over.P, "%s needs ORDER BY in its OVER clause", call)
		}
		eb := &exprBinder{sc: sc, params: b.params, fns: b.fns}
		column := func(e parser.Expr, what string) (int, error) {
			x, err := eb.bind(e)
			if err != nil {
				return 0, err
			}
			c, ok := expr.ColumnIndex(x)
			if !ok {
				return 0, sqlerr.New(sqlerr.FeatureNotSupported, e.Pos(), "%s's %s must be columns; compute expressions in a subquery", call, what)
			}
			// A partition key is compared for equality only; an ORDER BY key must sort like its bytes.
			keyOK := rowcodec.KeyType
			if what == "PARTITION BY keys" {
				keyOK = rowcodec.GroupKeyType
			}
			if !keyOK(x.Type()) {
				return 0, sqlerr.New(sqlerr.FeatureNotSupported, e.Pos(), "%s's %s cannot be of type %s", call, what, expr.TypeName(x.Type()))
			}
			return c, nil
		}
		n := &topNNode{in: in, pos: f.P, cfg: agg.TopNConfig{Rank: fn}}
		for _, p := range f.Over.PartitionBy {
			c, err := column(p, "PARTITION BY keys")
			if err != nil {
				return nil, nil, nil, err
			}
			n.cfg.Partition = append(n.cfg.Partition, c)
		}
		for _, o := range f.Over.OrderBy {
			c, err := column(o.Expr, "ORDER BY keys")
			if err != nil {
				return nil, nil, nil, err
			}
			k := agg.SortKey{Col: c, Desc: o.Desc, NullsFirst: o.Desc} // Postgres: NULLs sort as the largest value
			if o.NullsFirst != nil {
				k.NullsFirst = *o.NullsFirst
			}
			n.cfg.Order = append(n.cfg.Order, k)
		}
		name := it.Alias
		if name == "" {
			name = f.Name // Postgres names the column after the function
		}
		n.cfg.RankOut, n.cfg.RankName = true, name
		n.out = append(append([]Col{}, in.columns()...), Col{Name: rankColumn, Type: arrow.PrimitiveTypes.Int64, Hidden: true})
		out[i] = parser.SelectItem{P: it.P, Expr: &parser.ColumnRef{P: f.P, Name: rankColumn}, Alias: name}
		found = n
	}
	if found == nil {
		return in, sc, items, nil
	}
	return found, &scope{cols: found.out}, out, nil
}

// absorbRankFilter takes the bound of a Top-N out of the filter above it: rn <= N, rn < N, rn = 1 (and N >= rn
// spellings); ranks start at 1 under every ranking function, so rn = 1 is rn <= 1 for RANK and DENSE_RANK too. It
// returns the conjuncts that stay a filter.
func absorbRankFilter(n *topNNode, cond expr.Expr) []expr.Expr {
	rank := len(n.out) - 1
	var rest []expr.Expr
	for _, c := range expr.Conjuncts(cond) {
		if bound, ok := rankBound(c, rank); ok {
			if n.cfg.N == 0 || bound < n.cfg.N {
				n.cfg.N = bound
			}
			continue
		}
		rest = append(rest, c)
	}
	return rest
}

func rankBound(c expr.Expr, rank int) (int64, bool) {
	name, ok := expr.CallName(c)
	if !ok {
		return 0, false
	}
	args := expr.Children(c)
	if len(args) != 2 {
		return 0, false
	}
	col, k := args[0], args[1]
	if i, ok := expr.ColumnIndex(k); ok && i == rank {
		col, k = k, col
		name = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">", "=": "="}[name]
	}
	if i, ok := expr.ColumnIndex(col); !ok || i != rank {
		return 0, false
	}
	v, null, ok := expr.ConstantInt64(k)
	if !ok || null {
		return 0, false
	}
	switch {
	case name == "<=" && v >= 1:
		return v, true
	case name == "<" && v >= 2:
		return v - 1, true
	case name == "=" && v == 1:
		return 1, true
	}
	return 0, false
}

// topN lowers a Top-N: a hash exchange on the partition keys (everything to one subtask without them).
func (l *lowering) topN(n *topNNode) (*PNode, error) {
	if n.cfg.N == 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, n.pos,
			"%s() OVER (...) runs only as a Top-N over a stream: filter its result with rn <= N in the enclosing query", n.cfg.Rank)
	}
	in, err := l.lower(n.in)
	if err != nil {
		return nil, err
	}
	cfg := n.cfg
	cfg.InputUpdating = updatingReason(n.in) != ""
	emits := "emits: a changelog (a row is replaced when a better one arrives)"
	if cfg.Rank != agg.RowNumber {
		emits = "emits: a changelog (a row leaves, or changes rank, when a better one arrives; ties at rank N all stay)"
	}
	factory, _, err := agg.NewTopN(cfg, schemaOf(n.in.columns()))
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
	var part, order []string
	for _, p := range cfg.Partition {
		part = append(part, qualified(cols[p]))
	}
	for _, o := range cfg.Order {
		s := qualified(cols[o.Col])
		if o.Desc {
			s += " DESC"
		}
		order = append(order, s)
	}
	pn := &PNode{ID: "rank", Kind: exec.OperatorNode, Parallelism: par, Keyed: true,
		Inputs: []PEdge{{From: in, Exchange: ex}},
		Label:  fmt.Sprintf("Rank: %s() <= %d", cfg.Rank, cfg.N),
		Details: []string{"partition by: [" + strings.Join(part, ", ") + "]", "order by: [" + strings.Join(order, ", ") + "]",
			emits},
		newOperator: factory}
	if len(cfg.Partition) > 0 {
		pn.partitioned = cfg.Partition // its rows are its input's, the rank after them
	}
	return l.add(pn), nil
}
