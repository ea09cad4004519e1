package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// Comparisons, boolean logic, IS [NOT] NULL/TRUE/FALSE and IN: arrow compute kernels ("equal", "less", ...,
// "and_kleene", "or_kleene", "not", "is_null", "is_in") once the operands have one common type.

func init() {
	for op := range compareFns {
		register(bindCompare, op)
	}
	register(bindLogic, "and", "or")
	register(bindNot, "not")
	register(bindIsNull, "is_null", "is_not_null")
	register(bindIsBool, "is_true", "is_not_true", "is_false", "is_not_false")
	register(bindIn, "in")
	register(bindBetween, "between")
}

var compareFns = map[string]string{
	"=": "equal", "<>": "not_equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
}

// arrowKernel calls an arrow compute function on the argument values.
func arrowKernel(fn string, opts compute.FunctionOptions) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		var buf [3]compute.Datum
		ds := buf[:0]
		for _, a := range args {
			ds = append(ds, a.datum())
		}
		d, err := compute.CallFunction(ec.cc, fn, opts, ds...)
		if err != nil {
			return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
		}
		return fromDatum(d)
	}
}

// adoptCompare resolves untyped operands of a comparison: NULL takes the other type, and a string constant
// facing a non-string type is cast to it (so ts > '2026-01-01 00:00:01' compares timestamps).
func adoptCompare(a, b Expr) (Expr, Expr, error) {
	var err error
	switch {
	case isNull(a.Type()) && !isNull(b.Type()):
		a = NullOf(b.Type())
	case isNull(b.Type()) && !isNull(a.Type()):
		b = NullOf(a.Type())
	case isStringConst(a) && !isString(b.Type()) && !isNull(b.Type()):
		a, err = Cast(a, b.Type())
	case isStringConst(b) && !isString(a.Type()) && !isNull(a.Type()):
		b, err = Cast(b, a.Type())
	}
	return a, b, err
}

func bindCompare(op string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(op, args)
	}
	a, b, err := adoptCompare(args[0], args[1])
	if err != nil {
		return nil, err
	}
	at, bt := a.Type(), b.Type()
	t, ok := commonType(at, bt)
	if !ok {
		return nil, opNotExist(op, at, bt)
	}
	if isNull(t) {
		return NullOf(TypeBool), nil
	}
	if a, err = coerce(a, t); err != nil {
		return nil, err
	}
	if b, err = coerce(b, t); err != nil {
		return nil, err
	}
	if op == "!=" {
		op = "<>"
	}
	fn := compareFns[op]
	return &callExpr{name: op, args: []Expr{a, b}, typ: TypeBool, strict: true, render: infix(op),
		kern: func(ec *evalCtx, args []value) (value, error) { return compareValues(ec, fn, args[0], args[1]) }}, nil
}

// compareValues runs arrow's comparison fn ("equal", "less", ...) on two values of one type. arrow-go has no
// ordering kernels for booleans, so those (false < true) are a loop here.
func compareValues(ec *evalCtx, fn string, a, b value) (value, error) {
	if a.dataType().ID() == arrow.BOOL && fn != "equal" && fn != "not_equal" {
		x, y := boolsOf(a), boolsOf(b)
		return boolLoop(ec, []value{a, b}, func(i int) bool {
			p, q := x.at(i), y.at(i)
			switch fn {
			case "less":
				return !p && q
			case "less_equal":
				return !p || q
			case "greater":
				return p && !q
			}
			return p || !q
		})
	}
	switch a.dataType().ID() {
	case arrow.FLOAT64:
		if hasNaN[float64](a) || hasNaN[float64](b) {
			return compareFloatsPG[float64](ec, fn, a, b)
		}
	case arrow.FLOAT32:
		if hasNaN[float32](a) || hasNaN[float32](b) {
			return compareFloatsPG[float32](ec, fn, a, b)
		}
	}
	d, err := compute.CallFunction(ec.cc, fn, nil, a.datum(), b.datum())
	if err != nil {
		return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return fromDatum(d)
}

func hasNaN[T float32 | float64](v value) bool {
	p := primOf[T](v)
	if p.isConst() {
		return !p.cnull && p.c != p.c
	}
	for _, x := range p.vals {
		if x != x {
			return true
		}
	}
	return false
}

// compareFloatsPG compares floats the way Postgres does, so that NaN sorts and groups: NaN equals NaN and is
// greater than every other value (IEEE says every comparison with NaN is false). Only batches with a NaN take
// this loop.
func compareFloatsPG[T float32 | float64](ec *evalCtx, fn string, a, b value) (value, error) {
	x, y := primOf[T](a), primOf[T](b)
	at := func(p *prim[T], i int) T {
		if p.isConst() {
			return p.c
		}
		return p.vals[i]
	}
	return boolLoop(ec, []value{a, b}, func(i int) bool {
		p, q := at(&x, i), at(&y, i)
		var c int
		switch pn, qn := p != p, q != q; {
		case pn && qn:
			c = 0
		case pn:
			c = 1
		case qn:
			c = -1
		case p < q:
			c = -1
		case p > q:
			c = 1
		}
		switch fn {
		case "equal":
			return c == 0
		case "not_equal":
			return c != 0
		case "less":
			return c < 0
		case "less_equal":
			return c <= 0
		case "greater":
			return c > 0
		}
		return c >= 0
	})
}

func needBool(what string, e Expr) (Expr, error) {
	switch {
	case isBool(e.Type()):
		return e, nil
	case isNull(e.Type()):
		return NullOf(TypeBool), nil
	case isStringConst(e):
		return Cast(e, TypeBool)
	}
	return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "argument of %s must be type boolean, not type %s", what, TypeName(e.Type()))
}

// bindLogic binds AND/OR (Kleene three-valued) over two or more arguments, left to right. When the right side
// can meet a bad value it is evaluated only on the rows the left side has not decided (see shortCircuit).
func bindLogic(name string, args []Expr) (Expr, error) {
	if len(args) < 2 {
		return nil, fnNotExist(name, args)
	}
	what := "AND"
	if name == "or" {
		what = "OR"
	}
	var acc Expr
	for _, a := range args {
		b, err := needBool(what, a)
		if err != nil {
			return nil, err
		}
		if acc == nil {
			acc = b
			continue
		}
		if b.fallible() {
			acc = &shortCircuit{or: name == "or", left: acc, right: b}
		} else {
			acc = &callExpr{name: name, args: []Expr{acc, b}, typ: TypeBool, kern: arrowKernel(name+"_kleene", nil),
				render: infix(what)}
		}
		acc = fold(acc)
	}
	return acc, nil
}

func bindNot(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	a, err := needBool("NOT", args[0])
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: []Expr{a}, typ: TypeBool, kern: arrowKernel("not", nil), strict: true,
		render: func(s []string) string { return "(NOT " + s[0] + ")" }}, nil
}

func bindIsNull(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	want := name == "is_null"
	text := "IS NULL"
	if !want {
		text = "IS NOT NULL"
	}
	return &callExpr{name: name, args: args, typ: TypeBool, render: postfix(text),
		kern: func(ec *evalCtx, args []value) (value, error) {
			a := args[0]
			if a.isScalar() {
				return value{sc: scalar.NewBooleanScalar(a.sc.IsValid() != want)}, nil
			}
			return nullMask(ec, a.arr, want), nil
		}}, nil
}

// nullMask is a non-null boolean array: true where arr is null (want) or not null (!want).
func nullMask(ec *evalCtx, arr arrow.Array, want bool) value {
	n := arr.Len()
	buf := memory.NewResizableBuffer(ec.mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bs := buf.Bytes()
	switch {
	case arr.NullN() == 0:
		fill(bs, !want)
	case arr.NullN() == n && arr.DataType().ID() == arrow.NULL:
		fill(bs, want)
	default:
		d := arr.Data()
		if want {
			bitutil.InvertBitmap(d.Buffers()[0].Bytes(), d.Offset(), n, bs, 0)
		} else {
			bitutil.CopyBitmap(d.Buffers()[0].Bytes(), d.Offset(), n, bs, 0)
		}
	}
	data := array.NewData(TypeBool, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	out := array.MakeFromData(data)
	data.Release()
	buf.Release()
	return value{arr: out}
}

func fill(bs []byte, v bool) {
	var b byte
	if v {
		b = 0xff
	}
	for i := range bs {
		bs[i] = b
	}
}

func bindIsBool(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	text := map[string]string{"is_true": "IS TRUE", "is_not_true": "IS NOT TRUE", "is_false": "IS FALSE", "is_not_false": "IS NOT FALSE"}[name]
	a, err := needBool(text, args[0])
	if err != nil {
		return nil, err
	}
	wantTrue := name == "is_true" || name == "is_not_true"
	negate := name == "is_not_true" || name == "is_not_false"
	return &callExpr{name: name, args: []Expr{a}, typ: TypeBool, render: postfix(text),
		kern: func(ec *evalCtx, args []value) (value, error) {
			in := boolsOf(args[0])
			if args[0].isScalar() {
				r := !in.cnull && in.c == wantTrue
				return value{sc: scalar.NewBooleanScalar(r != negate)}, nil
			}
			out := newBoolOut(ec)
			for i := 0; i < ec.n; i++ {
				r := !in.null(i) && in.at(i) == wantTrue
				out.set(i, r != negate)
			}
			return out.finish(), nil
		}}, nil
}

// bindIn binds x IN (v1, v2, ...). With constant values it is arrow's is_in over a value set built once, with
// SQL's NULL rules (NULL when x is NULL, or when x is not found and the list holds a NULL). With non-constant
// values it is x = v1 OR x = v2 ...
func bindIn(name string, args []Expr) (Expr, error) {
	if len(args) < 2 {
		return nil, fnNotExist(name, args)
	}
	x, list := args[0], args[1:]
	allConst := true
	for _, v := range list {
		if !IsConstant(v) {
			allConst = false
		}
	}
	if !allConst {
		var acc Expr
		for _, v := range list {
			eq, err := Call("=", x, v)
			if err != nil {
				return nil, err
			}
			if acc == nil {
				acc = eq
			} else if acc, err = Call("or", acc, eq); err != nil {
				return nil, err
			}
		}
		return acc, nil
	}
	// the type: x's, unless x is NULL or a string constant facing other types
	t := x.Type()
	if isNull(t) {
		return NullOf(TypeBool), nil
	}
	vals := make([]Expr, len(list))
	for i, v := range list {
		xv, vv, err := adoptCompare(x, v)
		if err != nil {
			return nil, err
		}
		ct, ok := commonType(xv.Type(), vv.Type())
		if !ok {
			return nil, opNotExist("=", x.Type(), v.Type())
		}
		if !arrow.TypeEqual(ct, t) {
			if CommonNumeric(ct, t) != nil {
				t = CommonNumeric(ct, t)
			} else {
				t = ct
			}
		}
		vals[i] = vv
	}
	x, err := coerce(x, t)
	if err != nil {
		return nil, err
	}
	b := array.NewBuilder(memory.DefaultAllocator, t)
	defer b.Release()
	for _, v := range vals {
		c, err := coerce(v, t)
		if err != nil {
			return nil, err
		}
		sc, ok := ConstantValue(c)
		if !ok {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "IN list value %s did not fold", v)
		}
		if err := scalar.Append(b, sc); err != nil {
			return nil, sqlerr.Wrap(sqlerr.InternalError, err)
		}
	}
	set := b.NewArray()
	opts := &compute.SetOptions{ValueSet: compute.NewDatumWithoutOwning(set), NullBehavior: compute.NullMatchingInconclusive}
	return &inExpr{callExpr: callExpr{name: name, args: []Expr{x}, typ: TypeBool, strict: true,
		kern: arrowKernel("is_in", opts)}, list: vals}, nil
}

type inExpr struct {
	callExpr
	list []Expr
}

func (e *inExpr) String() string {
	s := "(" + e.args[0].String() + " IN ("
	for i, v := range e.list {
		if i > 0 {
			s += ", "
		}
		s += v.String()
	}
	return s + "))"
}

func (e *inExpr) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(e, ctx, rec)
}

func bindBetween(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	lo, err := Call(">=", args[0], args[1])
	if err != nil {
		return nil, err
	}
	hi, err := Call("<=", args[0], args[2])
	if err != nil {
		return nil, err
	}
	return Call("and", lo, hi)
}
