package expr

import (
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/sqlerr"
)

// Math functions: ABS, ROUND, FLOOR, CEIL, SQRT, POWER. Floats use arrow's kernels (abs, round, floor, ceil,
// sqrt); integers and DECIMAL have exact loops.

func init() {
	register(bindAbs, "abs")
	register(bindRound, "round")
	register(bindFloorCeil, "floor", "ceil", "ceiling")
	register(bindSqrt, "sqrt")
	register(bindPower, "power", "pow")
}

func numArg(name string, args []Expr, i int) (Expr, error) {
	a := args[i]
	switch {
	case isNumeric(a.Type()):
		return a, nil
	case isNull(a.Type()):
		return NullOf(TypeDouble), nil
	}
	return nil, fnNotExist(name, args)
}

func bindAbs(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	a, err := numArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	t := a.Type()
	mk := func(k kernel, canFail bool) Expr {
		return &callExpr{name: name, args: []Expr{a}, typ: t, kern: k, strict: true, canFail: canFail}
	}
	switch {
	case isFloat(t):
		return mk(arrowKernel("abs", nil), false), nil
	case isDecimal(t):
		return mk(func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], t, func(x decimal128.Num) (decimal128.Num, *sqlerr.Error) { return x.Abs(), nil })
		}, false), nil
	}
	// integers: |MinInt| does not fit, which is 22003
	var k kernel
	switch t.ID() {
	case arrow.INT8:
		k = absKernel[int8](t)
	case arrow.INT16:
		k = absKernel[int16](t)
	case arrow.INT32:
		k = absKernel[int32](t)
	default:
		k = absKernel[int64](t)
	}
	return mk(k, true), nil
}

func absKernel[T integer](t arrow.DataType) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		return mapLoop(ec, args[0], t, func(x T) (T, *sqlerr.Error) {
			if x >= 0 {
				return x, nil
			}
			if x == minOf[T]() {
				return 0, rangeErr(t)
			}
			return -x, nil
		})
	}
}

// bindRound: ROUND(x) and ROUND(x, d). DOUBLE/REAL round half to even with one argument (Postgres' rint) and
// half away from zero with digits; DECIMAL rounds half away from zero to scale max(d, 0) (d must be a constant);
// integers are returned unchanged by ROUND(x) and ROUND(x, d >= 0).
func bindRound(name string, args []Expr) (Expr, error) {
	if len(args) != 1 && len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	x, err := numArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	d := int64(0)
	var dexpr Expr
	if len(args) == 2 {
		if dexpr, err = intArg(name, args, args[1]); err != nil {
			return nil, err
		}
		v, null, ok := ConstantInt64(dexpr)
		switch {
		case ok && null:
			return NullOf(x.Type()), nil
		case ok:
			d = v
		case !isFloat(x.Type()):
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "round(numeric, n) needs a constant n")
		}
	}
	t := x.Type()
	switch {
	case isFloat(t):
		if dexpr != nil && !IsConstant(dexpr) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "round(double precision, n) needs a constant n")
		}
		mode := compute.RoundHalfToEven
		if dexpr != nil {
			mode = compute.RoundHalfTowardsInfinity
		}
		opts := &compute.RoundOptions{NDigits: d, Mode: mode}
		return &callExpr{name: name, args: []Expr{x}, typ: t, strict: true, kern: arrowKernel("round", opts)}, nil
	case isInteger(t) && d >= 0:
		return x, nil
	}
	dt := asDecimal(t)
	if x, err = coerce(x, dt); err != nil {
		return nil, err
	}
	scale := int32(max(d, 0))
	if d > 38 {
		scale = 38
	}
	rt := TypeDecimal(min(38, dt.Precision-dt.Scale+scale+1), scale).(*arrow.Decimal128Type)
	return &callExpr{name: name, args: []Expr{x}, typ: rt, strict: true, canFail: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			var z, q, m big.Int
			return mapLoop(ec, args[0], rt, func(v decimal128.Num) (decimal128.Num, *sqlerr.Error) {
				setBig(&z, v)
				// to 10^-d precision, then to scale `scale`
				if drop := int64(dt.Scale) - d; drop > 0 {
					if drop >= int64(len(pow10Big)) {
						z.SetInt64(0) // rounds to nothing at 10^-d beyond the value's digits
					} else {
						divRound(&q, &z, pow10Big[drop], &m)
						z.Set(&q)
						if up := int64(scale) - d; up > 0 && z.Sign() != 0 {
							if up >= int64(len(pow10Big)) {
								return decimal128.Num{}, rangeErr(rt)
							}
							z.Mul(&z, pow10Big[up])
						}
					}
				} else {
					z.Mul(&z, pow10Big[int64(scale)-int64(dt.Scale)])
				}
				if z.CmpAbs(pow10Big[rt.Precision]) >= 0 {
					return decimal128.Num{}, rangeErr(rt)
				}
				return decimal128.FromBigInt(&z), nil
			})
		}}, nil
}

// bindFloorCeil: FLOOR/CEIL of DOUBLE/REAL (arrow kernels), DECIMAL (to scale 0), integers (unchanged).
func bindFloorCeil(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	x, err := numArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	if name == "ceiling" {
		name = "ceil"
	}
	t := x.Type()
	switch {
	case isFloat(t):
		return &callExpr{name: name, args: []Expr{x}, typ: t, strict: true, kern: arrowKernel(name, nil)}, nil
	case isInteger(t):
		return x, nil
	}
	dt := t.(*arrow.Decimal128Type)
	rt := TypeDecimal(min(38, dt.Precision-dt.Scale+1), 0)
	up := name == "ceil"
	return &callExpr{name: name, args: []Expr{x}, typ: rt, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			var z, q, m big.Int
			return mapLoop(ec, args[0], rt, func(v decimal128.Num) (decimal128.Num, *sqlerr.Error) {
				setBig(&z, v)
				q.DivMod(&z, pow10Big[dt.Scale], &m) // Euclidean: q = floor for a positive divisor
				if up && m.Sign() != 0 {
					q.Add(&q, big.NewInt(1))
				}
				return decimal128.FromBigInt(&q), nil
			})
		}}, nil
}

func bindSqrt(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	x, err := numArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	if x, err = coerce(x, TypeDouble); err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: []Expr{x}, typ: TypeDouble, strict: true, canFail: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			if d, err := compute.CallFunction(ec.cc, "sqrt", nil, args[0].datum()); err == nil {
				return fromDatum(d)
			}
			return mapLoop(ec, args[0], TypeDouble, func(v float64) (float64, *sqlerr.Error) {
				if v < 0 {
					return 0, sqlerr.New("2201F", sqlerr.NoPos, "cannot take square root of a negative number")
				}
				return math.Sqrt(v), nil
			})
		}}, nil
}

// bindPower: POWER(x, y) in DOUBLE, with Postgres' errors for 0 to a negative power and a negative number to a
// fractional one (2201F), and for a finite result out of range (22003 overflow, underflow to 0).
func bindPower(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	var out []Expr
	for i := range args {
		a, err := numArg(name, args, i)
		if err != nil {
			return nil, err
		}
		if a, err = coerce(a, TypeDouble); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return &callExpr{name: "power", args: out, typ: TypeDouble, strict: true, canFail: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			xs, ys := primOf[float64](args[0]), primOf[float64](args[1])
			return mapLoopWith(ec, args, TypeDouble, func(i int) (float64, *sqlerr.Error) {
				x, y := xs.at(i), ys.at(i)
				if x == 0 && y < 0 {
					return 0, sqlerr.New("2201F", sqlerr.NoPos, "zero raised to a negative power is undefined")
				}
				if x < 0 && y != math.Trunc(y) {
					return 0, sqlerr.New("2201F", sqlerr.NoPos, "a negative number raised to a non-integer power yields a complex result")
				}
				r := math.Pow(x, y)
				if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
					return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: overflow")
				}
				if r == 0 && x != 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
					return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: underflow")
				}
				return r, nil
			})
		}}, nil
}
