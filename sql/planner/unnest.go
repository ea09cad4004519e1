package planner

import (
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// UNNEST in FROM: alone (FROM UNNEST(ARRAY[1, 2]) AS u(x)), or after a comma or a CROSS JOIN (or a JOIN ... ON
// TRUE, or LEFT JOIN ... ON TRUE to keep rows whose array is empty) reading the columns before it, as Flink's
// CROSS JOIN UNNEST and Postgres' LATERAL do. Each row becomes a row per element; the operator keeps nothing, so a
// changelog stays one and a time attribute stays one.

// unnestNode is in's columns but its last (the array or map), then the element's columns.
type unnestNode struct {
	in  node
	cfg operators.UnnestConfig
	pos int
	out []Col
}

func (n *unnestNode) columns() []Col   { return n.out }
func (n *unnestNode) children() []node { return []node{n.in} }

// bindUnnest expands the rows of left (nil: one row of no columns) by the array u reads from them.
func (b *binder) bindUnnest(left node, u *parser.Unnest, outer bool) (node, error) {
	if left == nil {
		left = &valuesNode{rows: [][]expr.Expr{{}}}
	}
	if len(u.Args) != 1 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, u.P, "UNNEST of several arrays is not supported; unnest one")
	}
	lcols := left.columns()
	x, err := (&exprBinder{sc: &scope{cols: lcols}, params: b.params, tz: b.tz}).bind(u.Args[0])
	if err != nil {
		return nil, err
	}
	if !expr.IsNested(x.Type()) {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, u.Args[0].Pos(), "UNNEST needs an array or a map, not %s", expr.TypeName(x.Type()))
	}
	pre := appendColumns(left, []expr.Expr{x})
	n := &unnestNode{in: pre, pos: u.P, cfg: operators.UnnestConfig{Outer: outer, Ordinality: u.Ordinality}}
	_, schema, err := operators.NewUnnest(n.cfg, schemaOf(pre.columns()))
	if err != nil {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, u.P, "%v", err)
	}
	names := u.Columns
	nElem := schema.NumFields() - len(lcols)
	if len(names) > nElem {
		return nil, sqlerr.New(sqlerr.InvalidColumnReference, u.P, "%q has %d columns available but %d columns specified", u.Alias, nElem, len(names))
	}
	n.out = append([]Col{}, lcols...)
	for i := len(lcols); i < schema.NumFields(); i++ {
		f := schema.Field(i)
		name := f.Name
		if k := i - len(lcols); k < len(names) {
			name = names[k]
		} else if f.Name == "unnest" && u.Alias != "" && len(names) == 0 {
			name = u.Alias // Postgres names a scalar UNNEST's column after its alias
		}
		n.out = append(n.out, Col{Name: name, Table: u.Alias, Type: f.Type})
	}
	if len(names) > 0 {
		n.cfg.Names = make([]string, nElem)
		for k := range nElem {
			n.cfg.Names[k] = n.out[len(lcols)+k].Name
		}
		if u.Ordinality {
			n.cfg.Names = n.cfg.Names[:nElem-1]
		}
	}
	return n, nil
}

// lowerUnnest lowers an unnest node: a stateless operator after its input, at its parallelism.
func (l *lowering) lowerUnnest(n *unnestNode) (*PNode, error) {
	in, err := l.lower(n.in)
	if err != nil {
		return nil, err
	}
	factory, _, err := operators.NewUnnest(n.cfg, schemaOf(n.in.columns()))
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	what := "a row per element of " + keyLabel(n.in, len(n.in.columns())-1)
	if n.cfg.Outer {
		what += " (an empty or NULL array keeps its row, with NULLs)"
	}
	return l.add(&PNode{ID: "unnest", Kind: exec.OperatorNode, Parallelism: in.Parallelism,
		Inputs: []PEdge{{From: in, Exchange: exec.ForwardExchange()}}, Label: "Unnest", Details: []string{what},
		newOperator: factory}), nil
}
