package expr

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

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

// CanFail reports whether evaluating e can meet a bad value (a run-time data error, see the package doc); an
// expression that cannot needs no guard against being evaluated on rows it is not meant for.
func CanFail(e Expr) bool { return e.fallible() }

// Equal reports whether a and b are the same expression: the same node kinds, functions, types, constants and
// column indices, all the way down. It answers false when unsure (a node kind it does not know), so a planner
// may compute an expression once for every place that holds an Equal one.
func Equal(a, b Expr) bool {
	switch x := a.(type) {
	case *column:
		y, ok := b.(*column)
		return ok && x.idx == y.idx && arrow.TypeEqual(x.typ, y.typ)
	case *literal:
		y, ok := b.(*literal)
		return ok && arrow.TypeEqual(x.sc.DataType(), y.sc.DataType()) && x.sc.IsValid() == y.sc.IsValid() &&
			(!x.sc.IsValid() || scalar.Equals(x.sc, y.sc))
	case *callExpr:
		y, ok := b.(*callExpr)
		return ok && x.name == y.name && x.strict == y.strict && x.canFail == y.canFail &&
			arrow.TypeEqual(x.typ, y.typ) && equalAll(x.args, y.args) && x.String() == y.String()
	case *inExpr:
		y, ok := b.(*inExpr)
		return ok && x.name == y.name && arrow.TypeEqual(x.typ, y.typ) && equalAll(x.args, y.args) &&
			equalAll(x.list, y.list) && x.String() == y.String()
	case *lazyExpr:
		y, ok := b.(*lazyExpr)
		return ok && x.name == y.name && arrow.TypeEqual(x.typ, y.typ) && equalAll(x.args, y.args) &&
			x.String() == y.String()
	case *shortCircuit:
		y, ok := b.(*shortCircuit)
		return ok && x.or == y.or && Equal(x.left, y.left) && Equal(x.right, y.right)
	}
	return false
}

func equalAll(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
