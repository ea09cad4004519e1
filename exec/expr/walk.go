package expr

import "slices"

// Children returns the direct arguments of e (nil for columns and constants).
func Children(e Expr) []Expr {
	if w, ok := e.(withArgs); ok {
		return w.children()
	}
	return nil
}

// Columns returns the batch columns e reads, sorted, without duplicates.
func Columns(es ...Expr) []int {
	var out []int
	var walk func(e Expr)
	walk = func(e Expr) {
		if c, ok := e.(*column); ok {
			out = append(out, c.idx)
			return
		}
		for _, ch := range Children(e) {
			walk(ch)
		}
	}
	for _, e := range es {
		if e != nil {
			walk(e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RemapColumns returns e with every column index i replaced by f(i) (e itself is not changed). Operators use it
// to evaluate over a batch that holds only the columns an expression reads.
func RemapColumns(e Expr, f func(int) int) Expr {
	switch n := e.(type) {
	case *column:
		c := *n
		c.idx = f(n.idx)
		return &c
	case *literal:
		return n
	case *callExpr:
		c := *n
		c.args = remapAll(n.args, f)
		return &c
	case *inExpr:
		c := *n
		c.args = remapAll(n.args, f)
		return &c
	case *lazyExpr:
		c := *n
		c.args = remapAll(n.args, f)
		return &c
	case *shortCircuit:
		return &shortCircuit{or: n.or, left: RemapColumns(n.left, f), right: RemapColumns(n.right, f)}
	}
	return e
}

func remapAll(es []Expr, f func(int) int) []Expr {
	out := make([]Expr, len(es))
	for i, a := range es {
		out[i] = RemapColumns(a, f)
	}
	return out
}

func (e *inExpr) children() []Expr { return e.args }

// Substitute returns e with every column reference i replaced by f(i), which must have the column's type (the
// planner merges a projection into what reads it: a filter pushed below a projection, two projections fused).
// e itself is not changed; a nil f(i) keeps the column.
func Substitute(e Expr, f func(int) Expr) Expr {
	switch n := e.(type) {
	case *column:
		if r := f(n.idx); r != nil {
			return r
		}
		return n
	case *literal:
		return n
	case *callExpr:
		c := *n
		c.args = substituteAll(n.args, f)
		return &c
	case *inExpr:
		c := *n
		c.args = substituteAll(n.args, f)
		return &c
	case *lazyExpr:
		c := *n
		c.args = substituteAll(n.args, f)
		return &c
	case *shortCircuit:
		return &shortCircuit{or: n.or, left: Substitute(n.left, f), right: Substitute(n.right, f)}
	}
	return e
}

func substituteAll(es []Expr, f func(int) Expr) []Expr {
	out := make([]Expr, len(es))
	for i, a := range es {
		out[i] = Substitute(a, f)
	}
	return out
}

// CallName returns the function or operator name of a call ("=", ">=", "+", "and", "cast"...), ok false for a
// column or a constant. The planner reads join conditions with it.
func CallName(e Expr) (name string, ok bool) {
	switch n := e.(type) {
	case *callExpr:
		return n.name, true
	case *shortCircuit:
		if n.or {
			return "or", true
		}
		return "and", true
	case *inExpr:
		return "in", true
	case *lazyExpr:
		return n.name, true
	}
	return "", false
}

// Conjuncts splits e at its top-level ANDs: a AND (b AND c) gives a, b, c.
func Conjuncts(e Expr) []Expr {
	if name, ok := CallName(e); ok && name == "and" {
		var out []Expr
		for _, c := range Children(e) {
			out = append(out, Conjuncts(c)...)
		}
		return out
	}
	return []Expr{e}
}
