package planner

import (
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Set operations besides UNION ALL are aggregations over a UNION ALL, as Flink and RisingWave plan them, so they
// follow changelogs like any group aggregate (a row leaves a UNION when its last copy is retracted, enters an
// EXCEPT when the last copy on the right goes):
//
//   - L UNION R is SELECT DISTINCT over L UNION ALL R;
//   - L INTERSECT R and L EXCEPT R tag each row with its side (?l 1 ?r 0 on the left, 0 1 on the right), group the
//     UNION ALL of both by every column and keep a group by its counts: INTERSECT when both are positive, EXCEPT
//     when the left's is and the right's is 0;
//   - the ALL forms emit each group as many times as Postgres does (INTERSECT ALL the smaller count, EXCEPT ALL
//     the left's minus the right's): the aggregate computes that count and a replicateNode repeats the row.
//
// NULLs are equal in all of them (a GROUP BY key), as SQL's set operations say. The state is the aggregate's: the
// counts of every distinct row, kept.

// replicateNode repeats each row of in as many times as in's last column says, and drops that column.
type replicateNode struct {
	in  node
	out []Col
}

func (n *replicateNode) columns() []Col   { return n.out }
func (n *replicateNode) children() []node { return []node{n.in} }

// bindSetOp binds UNION, INTERSECT and EXCEPT (UNION ALL: bindUnionAll).
func (b *binder) bindSetOp(s *parser.SetOp) (node, error) {
	// The columns' names and number: the left input's.
	left, _, err := b.bindBody(s.L, false)
	if err != nil {
		return nil, err
	}
	lcols := left.columns()
	var names []string
	for _, i := range visible(lcols) {
		names = append(names, lcols[i].Name)
	}
	n := len(names)
	// The right input must match: checked here, so the errors name the operation written.
	right, _, err := b.bindBody(s.R, false)
	if err != nil {
		return nil, err
	}
	rcols := right.columns()
	rvis := visible(rcols)
	op := strings.ToUpper(s.Op)
	if len(rvis) != n {
		return nil, sqlerr.New(sqlerr.SyntaxError, s.P, "each %s query must have the same number of columns", op)
	}
	for i, li := range visible(lcols) {
		if _, ok := commonType(lcols[li].Type, rcols[rvis[i]].Type); !ok {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, s.P, "%s types %s and %s cannot be matched", op,
				expr.TypeName(lcols[li].Type), expr.TypeName(rcols[rvis[i]].Type))
		}
	}
	inner := make([]string, n)
	for i := range inner {
		inner[i] = "?c" + strconv.Itoa(i)
	}
	col := func(table, name string) parser.Expr { return &parser.ColumnRef{P: s.P, Table: table, Name: name} }
	lit := func(v string) parser.Expr { return &parser.Literal{P: s.P, Kind: parser.LitInt, Text: v} }
	derived := func(body parser.QueryBody, alias string, cols []string) parser.TableExpr {
		return &parser.DerivedTable{P: s.P, Query: &parser.Query{P: s.P, Body: body}, Alias: alias, Columns: cols}
	}
	var items []parser.SelectItem
	var keys []parser.Expr
	for i, name := range names {
		items = append(items, parser.SelectItem{P: s.P, Expr: col("?u", inner[i]), Alias: name})
		keys = append(keys, col("?u", inner[i]))
	}
	if s.Op == "union" {
		all := &parser.SetOp{P: s.P, Op: "union", All: true, L: s.L, R: s.R}
		core := &parser.SelectCore{P: s.P, Distinct: true, Items: items, From: []parser.TableExpr{derived(all, "?u", inner)}}
		bq, err := b.bindQuery(&parser.Query{P: s.P, Body: core})
		if err != nil {
			return nil, err
		}
		return visibleOnly(bq.root, bq.visible), nil
	}
	// Each side tagged: SELECT its columns, 1, 0 FROM (L) (0, 1 for R).
	side := func(body parser.QueryBody, l, r string) parser.QueryBody {
		var its []parser.SelectItem
		for i := range names {
			its = append(its, parser.SelectItem{P: s.P, Expr: col("?s", inner[i])})
		}
		its = append(its, parser.SelectItem{P: s.P, Expr: lit(l), Alias: "?l"}, parser.SelectItem{P: s.P, Expr: lit(r), Alias: "?r"})
		return &parser.SelectCore{P: s.P, Items: its, From: []parser.TableExpr{derived(body, "?s", inner)}}
	}
	tagged := &parser.SetOp{P: s.P, Op: "union", All: true, L: side(s.L, "1", "0"), R: side(s.R, "0", "1")}
	sum := func(name string) parser.Expr {
		return &parser.Func{P: s.P, Name: "sum", Args: []parser.Expr{col("?u", name)}}
	}
	cmp := func(op string, l, r parser.Expr) parser.Expr { return &parser.Binary{P: s.P, Op: op, L: l, R: r} }
	cl, cr := sum("?l"), sum("?r")
	var having, count parser.Expr
	if s.Op == "intersect" {
		having = cmp("and", cmp(">", cl, lit("0")), cmp(">", cr, lit("0")))
		// the smaller count
		count = &parser.Case{P: s.P, Whens: []parser.When{{Cond: cmp("<", cl, cr), Result: cl}}, Else: cr}
	} else {
		having = cmp("and", cmp(">", cl, lit("0")), cmp("=", cr, lit("0")))
		if s.All {
			having = cmp(">", cl, cr)
		}
		count = cmp("-", cl, cr)
	}
	if s.All {
		items = append(items, parser.SelectItem{P: s.P, Expr: count, Alias: "?copies"})
	}
	core := &parser.SelectCore{P: s.P, Items: items, GroupBy: keys, Having: having,
		From: []parser.TableExpr{derived(tagged, "?u", append(append([]string{}, inner...), "?l", "?r"))}}
	bq, err := b.bindQuery(&parser.Query{P: s.P, Body: core})
	if err != nil {
		return nil, err
	}
	root := visibleOnly(bq.root, bq.visible)
	if !s.All {
		return root, nil
	}
	cols := root.columns()
	return &replicateNode{in: root, out: cols[:len(cols)-1]}, nil
}

// lowerReplicate lowers a replicateNode: a stateless operator after its input, at its parallelism.
func (l *lowering) lowerReplicate(n *replicateNode) (*PNode, error) {
	in, err := l.lower(n.in)
	if err != nil {
		return nil, err
	}
	factory, _, err := operators.NewReplicate(schemaOf(n.in.columns()))
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return l.add(&PNode{ID: "replicate", Kind: exec.OperatorNode, Parallelism: in.Parallelism,
		Inputs: []PEdge{{From: in, Exchange: exec.ForwardExchange()}}, Label: "Replicate",
		Details:     []string{"repeats: each row as many times as its count (" + n.in.columns()[len(n.out)].Name + "), for INTERSECT ALL and EXCEPT ALL"},
		newOperator: factory}), nil
}
