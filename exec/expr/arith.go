package expr

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/clinksql/clinksql/sqlerr"
)

// Arithmetic. Floats go through arrow compute's kernels. Integers use the hand-written loops below, because
// arrow-go v18.8.0's checked kernels miss signed overflow toward the negative side (MinInt64 + -1 and
// MinInt64 / -1 pass unnoticed, verified against the module), and SQL must report those as 22003. DECIMAL uses
// decimal.go's exact kernels (Postgres' result scales, not arrow's Redshift rules). Timestamps, dates and
// intervals are integers underneath and reuse the integer loops.

func init() {
	register(bindArith, "+", "-", "*", "/", "%")
	register(bindMod, "mod")
	register(bindNeg, "neg")
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// Error kinds of the integer loops.
const (
	okRow uint8 = iota
	badRange
	badDivZero
)

func minOf[T integer]() T {
	var z T
	return T(-1) << (unsafe.Sizeof(z)*8 - 1)
}

func addInt[T integer](x, y T) (T, uint8) {
	s := x + y
	if (y > 0 && s < x) || (y < 0 && s > x) {
		return 0, badRange
	}
	return s, okRow
}

func subInt[T integer](x, y T) (T, uint8) {
	d := x - y
	if (y > 0 && d > x) || (y < 0 && d < x) {
		return 0, badRange
	}
	return d, okRow
}

func mulInt[T integer](x, y T) (T, uint8) {
	if x == 0 || y == 0 {
		return 0, okRow
	}
	p := x * y
	m := minOf[T]()
	if p/x != y || (x == -1 && y == m) || (y == -1 && x == m) {
		return 0, badRange
	}
	return p, okRow
}

func divInt[T integer](x, y T) (T, uint8) {
	if y == 0 {
		return 0, badDivZero
	}
	if y == -1 {
		if x == minOf[T]() {
			return 0, badRange
		}
		return -x, okRow
	}
	return x / y, okRow
}

func modInt[T integer](x, y T) (T, uint8) {
	if y == 0 {
		return 0, badDivZero
	}
	if y == -1 {
		return 0, okRow
	}
	return x % y, okRow
}

func rangeErr(t arrow.DataType) *sqlerr.Error {
	switch t.ID() {
	case arrow.TIMESTAMP, arrow.DATE32:
		return sqlerr.New("22008", sqlerr.NoPos, "%s out of range", shortTypeName(t))
	case arrow.DURATION:
		return sqlerr.New("22008", sqlerr.NoPos, "interval out of range")
	case arrow.DECIMAL128:
		return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "numeric field overflow")
	}
	return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "%s out of range", TypeName(t))
}

func shortTypeName(t arrow.DataType) string {
	if isTimestamp(t) {
		return "timestamp"
	}
	return TypeName(t)
}

func divZeroErr() *sqlerr.Error {
	return sqlerr.New(sqlerr.DivisionByZero, sqlerr.NoPos, "division by zero")
}

// intLoop applies op row by row; a bad row becomes NULL (counted) or fails the evaluation. The loops are
// specialised per operator and for array-array, array-constant and constant-array, so the common case reads
// straight slices with the operation inlined; rows are rescanned only when one of them was bad.
func intLoop[T integer](ec *evalCtx, a, b value, typ arrow.DataType, op byte) (value, error) {
	pa, pb := primOf[T](a), primOf[T](b)
	out := newPrimOut[T](ec, typ)
	out.initValidity(a, b)
	vals := out.vals
	var anyBad uint8
	switch {
	case !pa.isConst() && !pb.isConst():
		anyBad = loopAA(op, pa.vals[:len(vals)], pb.vals[:len(vals)], vals)
	case !pa.isConst():
		anyBad = loopAC(op, pa.vals[:len(vals)], pb.c, vals)
	case pa.isConst() && pb.isConst():
		r, e := intOp[T](op)(pa.c, pb.c)
		for i := range vals {
			vals[i] = r
		}
		anyBad = e
	default:
		anyBad = loopCA(op, pa.c, pb.vals[:len(vals)], vals)
	}
	if anyBad != okRow {
		f := intOp[T](op)
		for i := range vals {
			if out.isNull(i) {
				continue
			}
			if _, bad := f(pa.at(i), pb.at(i)); bad != okRow {
				e := rangeErr(typ)
				if bad == badDivZero {
					e = divZeroErr()
				}
				if err := ec.bad(e, i); err != nil {
					out.release()
					return value{}, err
				}
				out.setNull(i)
			}
		}
	}
	return out.finish(), nil
}

func intOp[T integer](op byte) func(x, y T) (T, uint8) {
	switch op {
	case '+':
		return addInt[T]
	case '-':
		return subInt[T]
	case '*':
		return mulInt[T]
	case '/':
		return divInt[T]
	}
	return modInt[T]
}

func loopAA[T integer](op byte, av, bv, out []T) (anyBad uint8) {
	bv = bv[:len(av)]
	out = out[:len(av)]
	switch op {
	case '+':
		for i, x := range av {
			r, e := addInt(x, bv[i])
			out[i], anyBad = r, anyBad|e
		}
	case '-':
		for i, x := range av {
			r, e := subInt(x, bv[i])
			out[i], anyBad = r, anyBad|e
		}
	case '*':
		for i, x := range av {
			r, e := mulInt(x, bv[i])
			out[i], anyBad = r, anyBad|e
		}
	case '/':
		for i, x := range av {
			r, e := divInt(x, bv[i])
			out[i], anyBad = r, anyBad|e
		}
	default:
		for i, x := range av {
			r, e := modInt(x, bv[i])
			out[i], anyBad = r, anyBad|e
		}
	}
	return anyBad
}

func loopCA[T integer](op byte, c T, bv, out []T) (anyBad uint8) {
	out = out[:len(bv)]
	switch op {
	case '+': // commutative: the array-constant loop
		return loopAC(op, bv, c, out)
	case '*':
		return loopAC(op, bv, c, out)
	case '-':
		for i, y := range bv {
			r, e := subInt(c, y)
			out[i], anyBad = r, anyBad|e
		}
	case '/':
		for i, y := range bv {
			r, e := divInt(c, y)
			out[i], anyBad = r, anyBad|e
		}
	default:
		for i, y := range bv {
			r, e := modInt(c, y)
			out[i], anyBad = r, anyBad|e
		}
	}
	return anyBad
}

func loopAC[T integer](op byte, av []T, c T, out []T) (anyBad uint8) {
	out = out[:len(av)]
	switch op {
	case '+':
		for i, x := range av {
			r, e := addInt(x, c)
			out[i], anyBad = r, anyBad|e
		}
	case '-':
		for i, x := range av {
			r, e := subInt(x, c)
			out[i], anyBad = r, anyBad|e
		}
	case '*':
		for i, x := range av {
			r, e := mulInt(x, c)
			out[i], anyBad = r, anyBad|e
		}
	case '/', '%':
		if c == 0 {
			return badDivZero
		}
		if c > 1 && uint64(c) < 1<<32 { // (c = 1 would overflow the multiplier)
			// division by a constant: Lemire's fastmod/fastdiv for the (usual) values in [0, 2^32); others, and
			// negative ones, use the hardware division
			d := uint64(c)
			m := ^uint64(0)/d + 1
			for i, x := range av {
				if u := uint64(x); u < 1<<32 {
					if op == '/' {
						q, _ := bits.Mul64(m, u)
						out[i] = T(q)
					} else {
						r, _ := bits.Mul64(m*u, d)
						out[i] = T(r)
					}
				} else if op == '/' {
					out[i] = x / c
				} else {
					out[i] = x % c
				}
			}
			return okRow
		}
		f := intOp[T](op)
		for i, x := range av {
			r, e := f(x, c)
			out[i], anyBad = r, anyBad|e
		}
	}
	return anyBad
}

// intKernel dispatches an integer operator on the physical width of typ.
func intKernel(op string, typ arrow.DataType) kernel {
	switch typ.ID() {
	case arrow.INT8:
		return intKernelT[int8](op, typ)
	case arrow.INT16:
		return intKernelT[int16](op, typ)
	case arrow.INT32, arrow.DATE32:
		return intKernelT[int32](op, typ)
	}
	return intKernelT[int64](op, typ)
}

func intKernelT[T integer](op string, typ arrow.DataType) kernel {
	code := op[0]
	return func(ec *evalCtx, args []value) (value, error) {
		return intLoop[T](ec, args[0], args[1], typ, code)
	}
}

// floatKernel runs an arrow compute arithmetic function; division by zero (which arrow reports for the whole
// call) is redone row by row so that only the offending rows become NULL.
func floatKernel(op string, typ arrow.DataType) kernel {
	fn := map[string]string{"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}[op]
	return func(ec *evalCtx, args []value) (value, error) {
		d, err := compute.CallFunction(ec.cc, fn, nil, args[0].datum(), args[1].datum())
		if err == nil {
			r, err := fromDatum(d)
			if err != nil {
				return r, err
			}
			if typ.ID() == arrow.FLOAT32 {
				return floatOverflow[float32](ec, op[0], args[0], args[1], r)
			}
			return floatOverflow[float64](ec, op[0], args[0], args[1], r)
		}
		if op != "/" {
			return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
		}
		if typ.ID() == arrow.FLOAT32 {
			return floatDivLoop[float32](ec, args[0], args[1], typ)
		}
		return floatDivLoop[float64](ec, args[0], args[1], typ)
	}
}

// floatOverflow turns an infinite result of finite operands into a bad value (22003 "value out of range:
// overflow"), and for * and / a zero result of operands that cannot give zero (non-zero factors; a non-zero
// dividend over a finite divisor) into 22003 "value out of range: underflow", as Postgres' float4/float8
// arithmetic reports them. r is taken over.
func floatOverflow[T float32 | float64](ec *evalCtx, op byte, a, b, r value) (value, error) {
	pa, pb := primOf[T](a), primOf[T](b)
	at := func(p *prim[T], i int) T {
		if p.isConst() {
			return p.c
		}
		return p.vals[i]
	}
	// The scan that finds nothing to report stays on the kernel's result: only a result that is infinite or zero
	// is checked against its operands (a NULL row's garbage may only send a batch to the loop below).
	suspect := func(x T, i int) bool {
		return (x == 0 || math.IsInf(float64(x), 0)) && floatRange(op, at(&pa, i), at(&pb, i), x) != nil
	}
	pr := primOf[T](r)
	if pr.isConst() {
		if pr.cnull || !suspect(pr.c, 0) {
			return r, nil
		}
	} else {
		found := false
		for i, x := range pr.vals {
			if suspect(x, i) {
				found = true
				break
			}
		}
		if !found {
			return r, nil
		}
	}
	arr, err := ec.materialize(r)
	if err != nil {
		return value{}, err
	}
	defer arr.Release()
	out := newPrimOut[T](ec, arr.DataType())
	out.initValidity(value{arr: arr})
	vals := primOf[T](value{arr: arr}).vals
	for i := range out.vals {
		if out.isNull(i) {
			continue
		}
		v := vals[i]
		if err := floatRange(op, at(&pa, i), at(&pb, i), v); err != nil {
			if err := ec.bad(err, i); err != nil {
				out.release()
				return value{}, err
			}
			out.setNull(i)
			continue
		}
		out.vals[i] = v
	}
	return out.finish(), nil
}

// floatRange is Postgres' check of x op y = r (float8_pl, float8_mul, float8_div, ...): nil, or the 22003 error.
func floatRange[T float32 | float64](op byte, x, y, r T) *sqlerr.Error {
	inf := func(v T) bool { return math.IsInf(float64(v), 0) }
	switch {
	case inf(r) && !inf(x) && !inf(y):
		return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: overflow")
	case r == 0 && op == '*' && x != 0 && y != 0, r == 0 && op == '/' && x != 0 && !inf(y):
		return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: underflow")
	}
	return nil
}

func floatDivLoop[T float32 | float64](ec *evalCtx, a, b value, typ arrow.DataType) (value, error) {
	pa, pb := primOf[T](a), primOf[T](b)
	out := newPrimOut[T](ec, typ)
	out.initValidity(a, b)
	for i := range out.vals {
		if out.isNull(i) {
			continue
		}
		x, y := pa.at(i), pb.at(i)
		if y == 0 && x == x { // NaN / 0 is NaN (Postgres' float8div)
			if err := ec.bad(divZeroErr(), i); err != nil {
				out.release()
				return value{}, err
			}
			out.setNull(i)
			continue
		}
		if err := floatRange('/', x, y, x/y); err != nil {
			if err := ec.bad(err, i); err != nil {
				out.release()
				return value{}, err
			}
			out.setNull(i)
			continue
		}
		out.vals[i] = x / y
	}
	return out.finish(), nil
}

// viewKernel runs k over integer views of temporal arguments and gives the result type out.
func viewKernel(k kernel, in []arrow.DataType, out arrow.DataType) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		var buf [2]value
		views := buf[:0]
		for i, a := range args {
			if a.arr != nil {
				a.arr.Retain()
			}
			views = append(views, retypeValue(a, in[i]))
		}
		defer func() {
			for _, v := range views {
				v.release()
			}
		}()
		r, err := k(ec, views)
		if err != nil {
			return value{}, err
		}
		return retypeValue(r, out), nil
	}
}

func bindArith(op string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(op, args)
	}
	a, b := args[0], args[1]
	// an untyped NULL or string literal takes the other side's type, as Postgres resolves unknown literals
	if isNull(a.Type()) && isNull(b.Type()) {
		a, b = NullOf(TypeBigint), NullOf(TypeBigint)
	}
	var err error
	if a, b, err = adoptLiteral(a, b); err != nil {
		return nil, err
	}
	at, bt := a.Type(), b.Type()
	mk := func(x, y Expr, typ arrow.DataType, k kernel, canFail bool) Expr {
		return &callExpr{name: op, args: []Expr{x, y}, typ: typ, kern: k, strict: true, canFail: canFail, render: infix(op)}
	}
	switch {
	case isNumeric(at) && isNumeric(bt):
		t := CommonNumeric(at, bt)
		switch {
		case isDecimal(t):
			return bindDecimalArith(op, a, b)
		case isFloat(t):
			if op == "%" {
				return nil, opNotExist(op, at, bt)
			}
			if a, err = coerce(a, t); err != nil {
				return nil, err
			}
			if b, err = coerce(b, t); err != nil {
				return nil, err
			}
			return mk(a, b, t, floatKernel(op, t), true), nil // overflow and underflow for every operator, / also division by zero
		}
		if a, err = coerce(a, t); err != nil {
			return nil, err
		}
		if b, err = coerce(b, t); err != nil {
			return nil, err
		}
		return mk(a, b, t, intKernel(op, t), intCanFail(op, b)), nil
	}
	i64 := TypeBigint
	i64k := func(o string) kernel { return intKernelT[int64](o, i64) }
	ts, iv := TypeTimestamp, TypeInterval
	if IsTimestampTZ(at) || IsTimestampTZ(bt) {
		ts = TypeTimestampTZ // an instant plus a duration is an instant
		if isTimestamp(at) && isTimestamp(bt) && IsTimestampTZ(at) != IsTimestampTZ(bt) {
			return nil, fnNotExist(op, []Expr{a, b}) // the planner reads the TIMESTAMP in the session's zone first
		}
	}
	switch {
	case isTimestamp(at) && isInterval(bt) && (op == "+" || op == "-"):
		return mk(a, b, ts, tsKernel(i64k(op), []arrow.DataType{i64, i64}, ts), true), nil
	case isInterval(at) && isTimestamp(bt) && op == "+":
		return mk(a, b, ts, tsKernel(i64k(op), []arrow.DataType{i64, i64}, ts), true), nil
	case isTimestamp(at) && isTimestamp(bt) && op == "-":
		return mk(a, b, iv, tsKernel(i64k(op), []arrow.DataType{i64, i64}, iv), true), nil
	case isInterval(at) && isInterval(bt) && (op == "+" || op == "-"):
		return mk(a, b, iv, tsKernel(i64k(op), []arrow.DataType{i64, i64}, iv), true), nil
	case isInterval(at) && isInteger(bt) && (op == "*" || op == "/"):
		if b, err = coerce(b, i64); err != nil {
			return nil, err
		}
		return mk(a, b, iv, tsKernel(i64k(op), []arrow.DataType{i64, i64}, iv), true), nil
	case isInteger(at) && isInterval(bt) && op == "*":
		if a, err = coerce(a, i64); err != nil {
			return nil, err
		}
		return mk(a, b, iv, tsKernel(i64k(op), []arrow.DataType{i64, i64}, iv), true), nil
	case isInterval(at) && (isFloat(bt) || isDecimal(bt)) && (op == "*" || op == "/"):
		if b, err = coerce(b, TypeDouble); err != nil {
			return nil, err
		}
		return mk(a, b, iv, intervalFloatKernel(op), true), nil
	case (isFloat(at) || isDecimal(at)) && isInterval(bt) && op == "*":
		if a, err = coerce(a, TypeDouble); err != nil {
			return nil, err
		}
		return mk(b, a, iv, intervalFloatKernel(op), true), nil
	case isDate(at) && isInteger(bt) && (op == "+" || op == "-"):
		if b, err = coerce(b, TypeInt); err != nil {
			return nil, err
		}
		i32 := TypeInt
		return mk(a, b, TypeDate, tsKernel(intKernelT[int32](op, i32), []arrow.DataType{i32, i32}, TypeDate), true), nil
	case isInteger(at) && isDate(bt) && op == "+":
		if a, err = coerce(a, TypeInt); err != nil {
			return nil, err
		}
		i32 := TypeInt
		return mk(b, a, TypeDate, tsKernel(intKernelT[int32](op, i32), []arrow.DataType{i32, i32}, TypeDate), true), nil
	case isDate(at) && isDate(bt) && op == "-":
		i32 := TypeInt
		return mk(a, b, i32, tsKernel(intKernelT[int32](op, i32), []arrow.DataType{i32, i32}, i32), true), nil
	case isDate(at) && isInterval(bt) && (op == "+" || op == "-"):
		if a, err = Cast(a, ts); err != nil {
			return nil, err
		}
		return bindArith(op, []Expr{a, b})
	case isInterval(at) && isDate(bt) && op == "+":
		if b, err = Cast(b, ts); err != nil {
			return nil, err
		}
		return bindArith(op, []Expr{a, b})
	}
	return nil, opNotExist(op, at, bt)
}

// intCanFail reports whether integer op with right operand b can meet a bad value: / and % by a constant other
// than 0 and -1 cannot.
func intCanFail(op string, b Expr) bool {
	if op != "/" && op != "%" {
		return true
	}
	v, null, ok := ConstantInt64(b)
	return !ok || (!null && (v == 0 || v == -1))
}

// tsKernel is viewKernel, with range errors named after the result type.
func tsKernel(k kernel, in []arrow.DataType, out arrow.DataType) kernel {
	inner := viewKernel(k, in, out)
	return func(ec *evalCtx, args []value) (value, error) {
		v, err := inner(ec, args)
		if err != nil {
			if se, ok := err.(*sqlerr.Error); ok && se.Code == sqlerr.NumericOutOfRange {
				return value{}, rangeErr(out)
			}
		}
		return v, err
	}
}

// adoptLiteral gives an untyped NULL, or a string constant facing a number, the type of the other operand.
func adoptLiteral(a, b Expr) (Expr, Expr, error) {
	var err error
	switch {
	case isNull(a.Type()) && !isNull(b.Type()):
		a = NullOf(b.Type())
	case isNull(b.Type()) && !isNull(a.Type()):
		b = NullOf(a.Type())
	case isStringConst(a) && !isString(b.Type()) && (isNumeric(b.Type()) || isBool(b.Type())):
		a, err = Cast(a, b.Type())
	case isStringConst(b) && !isString(a.Type()) && (isNumeric(a.Type()) || isBool(a.Type())):
		b, err = Cast(b, a.Type())
	}
	return a, b, err
}

// intervalFloatKernel multiplies or divides an interval by a double, rounding to microseconds.
func intervalFloatKernel(op string) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		pa, pb := primOf[int64](args[0]), primOf[float64](args[1])
		out := newPrimOut[int64](ec, TypeInterval)
		out.initValidity(args[0], args[1])
		for i := range out.vals {
			if out.isNull(i) {
				continue
			}
			x, y := float64(pa.at(i)), pb.at(i)
			var r float64
			if op == "*" {
				r = x * y
			} else {
				if y == 0 {
					if err := ec.bad(divZeroErr(), i); err != nil {
						out.release()
						return value{}, err
					}
					out.setNull(i)
					continue
				}
				r = x / y
			}
			r = math.Round(r)
			if math.IsNaN(r) || r >= 9.2e18 || r <= -9.2e18 {
				if err := ec.bad(rangeErr(TypeInterval), i); err != nil {
					out.release()
					return value{}, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = int64(r)
		}
		return out.finish(), nil
	}
}

func bindMod(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	a, b, err := adoptLiteral(args[0], args[1])
	if err != nil {
		return nil, err
	}
	if !isNumeric(a.Type()) || !isNumeric(b.Type()) || isFloat(a.Type()) || isFloat(b.Type()) {
		return nil, fnNotExist(name, args)
	}
	e, err := bindArith("%", []Expr{a, b})
	if err != nil {
		return nil, err
	}
	c := e.(*callExpr)
	c.name, c.render = "mod", nil
	return c, nil
}

func bindNeg(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	a := args[0]
	t := a.Type()
	if isNull(t) {
		return NullOf(TypeBigint), nil
	}
	mk := func(k kernel, canFail bool) Expr {
		return &callExpr{name: name, args: []Expr{a}, typ: t, kern: k, strict: true, canFail: canFail, render: prefix("-")}
	}
	switch {
	case isInteger(t), isInterval(t):
		sub := intKernel("-", t)
		if isInterval(t) {
			sub = tsKernel(intKernelT[int64]("-", TypeBigint), []arrow.DataType{TypeBigint, TypeBigint}, t)
		}
		zero := value{sc: zeroScalar(t)}
		return mk(func(ec *evalCtx, args []value) (value, error) {
			return sub(ec, []value{zero, args[0]})
		}, true), nil
	case isFloat(t):
		return mk(func(ec *evalCtx, args []value) (value, error) {
			d, err := compute.CallFunction(ec.cc, "negate", nil, args[0].datum())
			if err != nil {
				return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
			}
			return fromDatum(d)
		}, false), nil
	case isDecimal(t):
		return mk(decimalNegKernel(t.(*arrow.Decimal128Type)), false), nil
	}
	return nil, sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "operator does not exist: - %s", TypeName(t))
}
