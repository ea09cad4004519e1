package planner

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Params are the $n parameters of a prepared statement. While preparing, Values is nil and binding infers each
// parameter's type from where it is used, as Postgres does for an untyped parameter (compared with or assigned to
// a column: that column's type; anywhere else: TEXT). At execution, Values holds the text form of each value
// (nil is NULL), read as the parameter's type.
type Params struct {
	// Given are the types the client declared or an earlier Prepare inferred; nil entries are inferred.
	Given []arrow.DataType
	// Values are the text forms of the values, $1 first; nil while preparing.
	Values []*string

	inferred []arrow.DataType
}

// Types returns every parameter's type: given, else inferred, else TEXT.
func (p *Params) Types() []arrow.DataType {
	out := make([]arrow.DataType, len(p.Given))
	for i := range out {
		switch {
		case p.Given[i] != nil:
			out[i] = p.Given[i]
		case i < len(p.inferred) && p.inferred[i] != nil:
			out[i] = p.inferred[i]
		default:
			out[i] = arrow.BinaryTypes.String
		}
	}
	return out
}

// infer records that parameter n (1-based) is used as type t, unless its type is already known.
func (p *Params) infer(n int, t arrow.DataType) {
	if p == nil || n < 1 || n > len(p.Given) || p.Given[n-1] != nil || t == nil || t.ID() == arrow.NULL {
		return
	}
	for len(p.inferred) < n {
		p.inferred = append(p.inferred, nil)
	}
	if p.inferred[n-1] == nil {
		p.inferred[n-1] = t
	}
}

// bindParam binds $n: a typed constant when the type is given, else an unknown-typed text constant that the
// context casts (and infer records); NULL text while preparing.
func (p *Params) bindParam(r *parser.ParamRef, tz *time.Location) (expr.Expr, error) {
	if p == nil || r.N < 1 || r.N > len(p.Given) {
		return nil, sqlerr.New(sqlerr.UndefinedParameter, r.P, "there is no parameter $%d", r.N)
	}
	var v expr.Expr
	switch {
	case p.Values == nil:
		v = expr.NullOf(arrow.BinaryTypes.String)
	case p.Values[r.N-1] == nil:
		v = expr.NullOf(arrow.BinaryTypes.String)
	default:
		v = expr.String(*p.Values[r.N-1])
	}
	if t := p.Given[r.N-1]; t != nil && !arrow.TypeEqual(t, arrow.BinaryTypes.String) {
		c, err := castIn(tz, v, t, false)
		if err != nil {
			return nil, posErr(err, r.P)
		}
		return c, nil
	}
	return v, nil
}

// isParam reports whether e is a parameter whose type comes from its context.
func (p *Params) isUntyped(e parser.Expr) (int, bool) {
	r, ok := e.(*parser.ParamRef)
	if !ok || p == nil || r.N < 1 || r.N > len(p.Given) || p.Given[r.N-1] != nil {
		return 0, false
	}
	return r.N, true
}
