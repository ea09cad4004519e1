package planner

import (
	"github.com/clinksql/clinksql/exec/expr"
)

// pushdown rewrites a logical plan so that work happens as early as it can:
//
//   - a filter above a projection moves below it (the projection then computes only the rows that pass), its
//     column references replaced by the projected expressions;
//   - two filters in a row become one (AND);
//   - a projection of a projection becomes one, where no expression of the lower one would be computed twice.
//
// Views and subqueries are projections, so a WHERE over a view lands next to the view's own WHERE, right after
// the source, and the whole chain runs as one Calc operator.
func pushdown(n node) node {
	switch n := n.(type) {
	case *filterNode:
		in := pushdown(n.in)
		switch c := in.(type) {
		case *projectNode:
			cond := expr.Substitute(n.cond, func(i int) expr.Expr { return c.exprs[i] })
			return &projectNode{in: pushdown(&filterNode{in: c.in, cond: cond}), exprs: c.exprs, out: c.out, pos: c.pos}
		case *filterNode:
			if both, err := expr.Call("and", c.cond, n.cond); err == nil {
				return &filterNode{in: c.in, cond: both}
			}
		case *topNNode:
			t := *c
			rest := absorbRankFilter(&t, n.cond)
			if len(rest) == 0 {
				return &t
			}
			if cond, err := expr.Call("and", rest...); len(rest) > 1 && err == nil {
				return &filterNode{in: &t, cond: cond}
			}
			return &filterNode{in: &t, cond: rest[0]}
		}
		return &filterNode{in: in, cond: n.cond}
	case *projectNode:
		in := pushdown(n.in)
		if c, ok := in.(*projectNode); ok && fusable(n.exprs, c.exprs) {
			exprs := make([]expr.Expr, len(n.exprs))
			for i, e := range n.exprs {
				exprs[i] = expr.Substitute(e, func(j int) expr.Expr { return c.exprs[j] })
			}
			return &projectNode{in: c.in, exprs: exprs, out: n.out, pos: n.pos}
		}
		return &projectNode{in: in, exprs: n.exprs, out: n.out, pos: n.pos}
	case *aggNode:
		pre := pushdown(n.pre)
		if p, ok := pre.(*projectNode); ok {
			c := *n
			c.pre = p
			return &c
		}
		// The aggregate's input must stay a projection (its columns are what the operator was built for).
		return n
	case *unionNode:
		u := &unionNode{out: n.out}
		for _, in := range n.inputs {
			u.inputs = append(u.inputs, pushdown(in))
		}
		return u
	case *assignNode:
		c := *n.tvf
		c.in = pushdown(c.in)
		return &assignNode{tvf: &c}
	case *joinNode:
		c := *n
		c.left, c.right = pushdown(n.left), pushdown(n.right)
		return &c
	case *topNNode:
		c := *n
		c.in = pushdown(n.in)
		return &c
	case *replicateNode:
		return &replicateNode{in: pushdown(n.in), out: n.out}
	case *overNode:
		c := *n
		c.in = pushdown(n.in)
		return &c
	case *unnestNode:
		c := *n
		c.in = pushdown(n.in)
		return &c
	}
	return n
}

// fusable reports whether the upper projection can absorb the lower one: every lower expression that is not a
// plain column or a constant is read at most once.
func fusable(upper, lower []expr.Expr) bool {
	uses := map[int]int{}
	var count func(e expr.Expr)
	count = func(e expr.Expr) {
		if i, ok := expr.ColumnIndex(e); ok {
			uses[i]++
			return
		}
		for _, ch := range expr.Children(e) {
			count(ch)
		}
	}
	for _, e := range upper {
		count(e)
	}
	for i, n := range uses {
		if n > 1 {
			if _, col := expr.ColumnIndex(lower[i]); !col && !expr.IsConstant(lower[i]) {
				return false
			}
		}
	}
	return true
}
