package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// Casts. Lossless numeric widenings and int -> float go through arrow's cast kernel; everything with a
// Postgres-specific rule (range errors, float -> int rounding half to even, numeric rounding half away from
// zero, text input and output forms) is a loop here.

const cannotCoerce = "42846"

func init() {
	register(bindCastFn, "cast")
}

// bindCastFn is cast(x, t) with t given as a NULL literal of the target type.
func bindCastFn(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	return Cast(args[0], args[1].Type())
}

// Cast is an explicit CAST(x AS to) (or x::to). A constant is converted at once, so a bad constant is a bind
// error ('12x'::bigint is 22P02 here, as in Postgres).
func Cast(x Expr, to arrow.DataType) (Expr, error) { return castOf(x, to, false) }

// TryCast is TRY_CAST(x AS to): Cast, except that a value which does not convert gives NULL, which is neither an
// error (in any ErrorMode) nor a bad value. Failures of x itself are x's (TRY_CAST(1/0 AS INT) still divides by
// zero).
func TryCast(x Expr, to arrow.DataType) (Expr, error) { return castOf(x, to, true) }

func castOf(x Expr, to arrow.DataType, try bool) (Expr, error) {
	from := x.Type()
	if arrow.TypeEqual(from, to) {
		return x, nil
	}
	if isNull(from) {
		return NullOf(to), nil
	}
	if isTimestamp(to) && to.(*arrow.TimestampType).Unit != arrow.Microsecond {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "timestamps are microseconds; cast to %s is not supported", to)
	}
	if IsTimestampTZ(from) != IsTimestampTZ(to) {
		// A zone is needed (timezone.go): the planner casts through timezone(), timestamptz_in and
		// timestamptz_out with the session's; here it would be UTC without anyone asking for it.
		return nil, sqlerr.New(cannotCoerce, sqlerr.NoPos, "cannot cast type %s to %s without a time zone", TypeName(from), TypeName(to))
	}
	k, canFail := castKernel(from, to)
	if k == nil {
		return nil, sqlerr.New(cannotCoerce, sqlerr.NoPos, "cannot cast type %s to %s", TypeName(from), TypeName(to))
	}
	name, fn := "cast", "CAST("
	if try {
		name, fn = "try_cast", "TRY_CAST("
		if canFail {
			k = quietKernel(k)
		}
		canFail = false
	}
	e := &callExpr{name: name, args: []Expr{x}, typ: to, kern: k, strict: true, canFail: canFail,
		render: func(a []string) string { return fn + a[0] + " AS " + SQLTypeString(to) + ")" }}
	if IsConstant(x) {
		mem := memory.NewGoAllocator()
		rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
		defer rec.Release()
		arr, err := e.Eval(&Context{Alloc: mem, Mode: ErrorsFail}, rec)
		if err != nil {
			return nil, err
		}
		defer arr.Release()
		sc, err := scalar.GetScalar(arr, 0)
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.InternalError, err)
		}
		return &literal{sc: sc}, nil
	}
	return e, nil
}

// UnconstrainedNumeric is the type of CAST(x AS NUMERIC) without a precision. Postgres' NUMERIC keeps each value's
// own scale, a column of ours has one: a constant gets the narrowest DECIMAL that holds its value at its own scale
// (CAST('1.5' AS NUMERIC) is DECIMAL(2,1) and prints 1.5; a float as Postgres' float8_numeric reads it, to 15
// significant digits; 22003 when that needs more than 38 digits), anything else is wide, the DECIMAL(38,10) of
// an unconstrained NUMERIC column.
func UnconstrainedNumeric(x Expr, wide arrow.DataType) (arrow.DataType, error) {
	sc, ok := ConstantValue(x)
	if !ok || !sc.IsValid() {
		return wide, nil
	}
	var text string
	switch v := sc.(type) {
	case *scalar.Decimal128:
		return v.DataType(), nil
	case *scalar.Float64:
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return wide, nil // the cast says why
		}
		text = strconv.FormatFloat(v.Value, 'g', 15, 64)
	case *scalar.Float32:
		if math.IsNaN(float64(v.Value)) || math.IsInf(float64(v.Value), 0) {
			return wide, nil
		}
		text = strconv.FormatFloat(float64(v.Value), 'g', 6, 32) // float4_numeric: FLT_DIG digits
	case *scalar.String:
		text = string(v.Value.Bytes())
	case *scalar.Int64, *scalar.Int32, *scalar.Int16, *scalar.Int8:
		text = sc.String()
	default:
		return wide, nil
	}
	_, p, s, err := parseDecimal(text, -1)
	if err != nil {
		if se, ok := err.(*sqlerr.Error); ok && se.Code == sqlerr.NumericOutOfRange {
			return nil, err
		}
		return wide, nil // not a number: the cast says why
	}
	return TypeDecimal(p, s), nil
}

// quietKernel runs k with every row quiet: a bad value becomes NULL, silently (TRY_CAST).
func quietKernel(k kernel) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		q := make([]byte, bitutil.BytesForBits(int64(ec.n)))
		for i := range q {
			q[i] = 0xff
		}
		return k(ec.withQuiet(q), args)
	}
}

func castKernel(from, to arrow.DataType) (kernel, bool) {
	switch {
	case isStruct(from) && isStruct(to):
		return structCastKernel(from.(*arrow.StructType), to.(*arrow.StructType))
	case isList(from) && isList(to):
		return listCastKernel(from.(*arrow.ListType), to.(*arrow.ListType))
	case IsNested(from) && !isString(to) || IsNested(to):
		return nil, false
	case isString(to):
		return toTextKernel(from), false
	case isBytea(to) && isString(from):
		return byteaInKernel(), true
	case isString(from):
		return fromTextKernel(to)
	case isInteger(from) && isInteger(to):
		if intRank(to) >= intRank(from) {
			return arrowCast(to, true), false
		}
		return intNarrowKernel(from, to), true
	case isInteger(from) && isFloat(to):
		return arrowCast(to, false), false
	case isInteger(from) && isDecimal(to):
		return intToDecimalKernel(from, to.(*arrow.Decimal128Type)), true
	case isInteger(from) && isBool(to):
		return viaInt64(from, func(ec *evalCtx, v value) (value, error) {
			in := primOf[int64](v)
			return mapBoolLoop(ec, []value{v}, func(i int) (bool, *sqlerr.Error) { return in.at(i) != 0, nil })
		}), false
	case isBool(from) && isInteger(to):
		return func(ec *evalCtx, args []value) (value, error) {
			b := boolsOf(args[0])
			out := newPrimOut[int64](ec, TypeBigint)
			out.initValidity(args[0])
			for i := range out.vals {
				if !b.null(i) && b.at(i) {
					out.vals[i] = 1
				}
			}
			return castInt64To(ec, out.finish(), to)
		}, false
	case isFloat(from) && isFloat(to):
		if to.ID() == arrow.FLOAT64 {
			return arrowCast(to, false), false
		}
		return func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], to, func(x float64) (float32, *sqlerr.Error) {
				if math.Abs(x) > math.MaxFloat32 && !math.IsInf(x, 0) {
					return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: overflow")
				}
				if float32(x) == 0 && x != 0 { // (Postgres' dtof)
					return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: underflow")
				}
				return float32(x), nil
			})
		}, true
	case isFloat(from) && isInteger(to):
		return floatToIntKernel(from, to), true
	case isFloat(from) && isDecimal(to):
		return floatToDecimalKernel(from, to.(*arrow.Decimal128Type)), true
	case isDecimal(from) && isDecimal(to):
		fd, td := from.(*arrow.Decimal128Type), to.(*arrow.Decimal128Type)
		return func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], to, func(x decimal128.Num) (decimal128.Num, *sqlerr.Error) {
				r, ok := rescaleDecimal(x, fd.Scale, td.Scale, td.Precision)
				if !ok {
					return r, rangeErr(to)
				}
				return r, nil
			})
		}, true
	case isDecimal(from) && isFloat(to):
		scale := from.(*arrow.Decimal128Type).Scale
		return func(ec *evalCtx, args []value) (value, error) {
			v, err := mapLoop(ec, args[0], TypeDouble, func(x decimal128.Num) (float64, *sqlerr.Error) {
				return x.ToFloat64(scale), nil
			})
			if err != nil || to.ID() == arrow.FLOAT64 {
				return v, err
			}
			defer v.release()
			return arrowCast(to, false)(ec, []value{v})
		}, false
	case isDecimal(from) && isInteger(to):
		scale := from.(*arrow.Decimal128Type).Scale
		return func(ec *evalCtx, args []value) (value, error) {
			v, err := mapLoop(ec, args[0], TypeBigint, func(x decimal128.Num) (int64, *sqlerr.Error) {
				r, ok := rescaleDecimal(x, scale, 0, 19)
				if !ok || !r.FitsInPrecision(19) || r.HighBits() != 0 && r.HighBits() != -1 {
					return 0, rangeErr(to)
				}
				lo := int64(r.LowBits())
				if (r.HighBits() == 0) != (lo >= 0) {
					return 0, rangeErr(to)
				}
				return lo, nil
			})
			if err != nil {
				return v, err
			}
			defer v.release()
			return castInt64To(ec, value{arr: retainArr(v.arr)}, to)
		}, true
	case isTimestamp(from) && isDate(to):
		return func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], TypeDate, func(x int64) (int32, *sqlerr.Error) {
				return int32(FloorDiv(x, usPerDay)), nil
			})
		}, false
	case isDate(from) && isTimestamp(to):
		return func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], TypeTimestamp, func(x int32) (int64, *sqlerr.Error) {
				if x > maxDateDays || x < -maxDateDays {
					return 0, rangeErr(TypeTimestamp)
				}
				return int64(x) * usPerDay, nil
			})
		}, true
	case isInterval(from) && isInterval(to), isTimestamp(from) && isTimestamp(to):
		return arrowCast(to, true), false
	}
	return nil, false
}

func isBytea(t arrow.DataType) bool { return t.ID() == arrow.BINARY }

const (
	usPerDay    = 86_400_000_000
	maxDateDays = 106_751_991 // days that fit in int64 microseconds
)

func retainArr(a arrow.Array) arrow.Array {
	a.Retain()
	return a
}

// arrowCast is arrow's cast kernel (safe: a value that does not fit is an error; unsafe: lossy conversions like
// int64 -> float64 allowed).
func arrowCast(to arrow.DataType, safe bool) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		opts := compute.SafeCastOptions(to)
		if !safe {
			opts = compute.UnsafeCastOptions(to)
		}
		d, err := compute.CastDatum(ec.cc, args[0].datum(), opts)
		if err != nil {
			return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
		}
		return fromDatum(d)
	}
}

// viaInt64 widens an integer argument to BIGINT (arrow cast, lossless) and runs f on it.
func viaInt64(from arrow.DataType, f func(ec *evalCtx, v value) (value, error)) kernel {
	widen := arrowCast(TypeBigint, true)
	return func(ec *evalCtx, args []value) (value, error) {
		v := args[0]
		if from.ID() != arrow.INT64 {
			w, err := widen(ec, args)
			if err != nil {
				return value{}, err
			}
			defer w.release()
			v = w
		}
		return f(ec, v)
	}
}

// castInt64To narrows a BIGINT value (taking it over) to an integer type, range-checked per row.
func castInt64To(ec *evalCtx, v value, to arrow.DataType) (value, error) {
	if to.ID() == arrow.INT64 {
		return v, nil
	}
	defer v.release()
	return intNarrowKernel(TypeBigint, to)(ec, []value{v})
}

func intNarrowKernel(from, to arrow.DataType) kernel {
	var lo, hi int64
	switch to.ID() {
	case arrow.INT8:
		lo, hi = math.MinInt8, math.MaxInt8
	case arrow.INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	case arrow.INT32:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		lo, hi = math.MinInt64, math.MaxInt64
	}
	check := func(x int64) (int64, *sqlerr.Error) {
		if x < lo || x > hi {
			return 0, rangeErr(to)
		}
		return x, nil
	}
	return viaInt64(from, func(ec *evalCtx, v value) (value, error) {
		switch to.ID() {
		case arrow.INT8:
			return mapLoop(ec, v, to, func(x int64) (int8, *sqlerr.Error) { r, e := check(x); return int8(r), e })
		case arrow.INT16:
			return mapLoop(ec, v, to, func(x int64) (int16, *sqlerr.Error) { r, e := check(x); return int16(r), e })
		case arrow.INT32:
			return mapLoop(ec, v, to, func(x int64) (int32, *sqlerr.Error) { r, e := check(x); return int32(r), e })
		}
		return mapLoop(ec, v, to, check)
	})
}

func intToDecimalKernel(from arrow.DataType, to *arrow.Decimal128Type) kernel {
	intDig := to.Precision - to.Scale
	checkBound := intDig <= 18 // 19 or more integer digits hold every int64
	var bound int64
	if checkBound {
		bound = int64(math.Pow10(int(intDig)))
	}
	mul := decimal128.FromI64(1)
	for i := int32(0); i < to.Scale; i++ {
		mul = mul.Mul(decimal128.FromI64(10))
	}
	return viaInt64(from, func(ec *evalCtx, v value) (value, error) {
		return mapLoop(ec, v, to, func(x int64) (decimal128.Num, *sqlerr.Error) {
			if checkBound && (x >= bound || x <= -bound) {
				return decimal128.Num{}, rangeErr(to)
			}
			return decimal128.FromI64(x).Mul(mul), nil
		})
	})
}

// floatToIntKernel rounds half to even (Postgres' rint) and range-checks.
func floatToIntKernel(from, to arrow.DataType) kernel {
	var lo, hi float64
	switch to.ID() {
	case arrow.INT8:
		lo, hi = math.MinInt8, math.MaxInt8
	case arrow.INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	case arrow.INT32:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		lo, hi = -9223372036854775808.0, 9223372036854775807.0
	}
	return func(ec *evalCtx, args []value) (value, error) {
		v := args[0]
		if from.ID() == arrow.FLOAT32 {
			w, err := arrowCast(TypeDouble, false)(ec, args)
			if err != nil {
				return value{}, err
			}
			defer w.release()
			v = w
		}
		r, err := mapLoop(ec, v, TypeBigint, func(x float64) (int64, *sqlerr.Error) {
			x = math.RoundToEven(x)
			// hi of int64 is not representable: 2^63 itself must fail
			if math.IsNaN(x) || x < lo || x > hi || (to.ID() == arrow.INT64 && x >= 9223372036854775807.0) {
				return 0, rangeErr(to)
			}
			return int64(x), nil
		})
		if err != nil {
			return value{}, err
		}
		return castInt64To(ec, r, to)
	}
}

func floatToDecimalKernel(from arrow.DataType, to *arrow.Decimal128Type) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		v := args[0]
		if from.ID() == arrow.FLOAT32 {
			w, err := arrowCast(TypeDouble, false)(ec, args)
			if err != nil {
				return value{}, err
			}
			defer w.release()
			v = w
		}
		// Postgres converts through text with FLT_DIG (6) or DBL_DIG (15) significant digits (float4_numeric,
		// float8_numeric): CAST(REAL '0.1' AS NUMERIC) is 0.1, not 0.100000001490116.
		digits, bits := 15, 64
		if from.ID() == arrow.FLOAT32 {
			digits, bits = 6, 32
		}
		var buf []byte
		return mapLoop(ec, v, to, func(x float64) (decimal128.Num, *sqlerr.Error) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return decimal128.Num{}, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "cannot convert %s to numeric", string(AppendFloat8(nil, x)))
			}
			buf = strconv.AppendFloat(buf[:0], x, 'g', digits, bits)
			n, _, _, err := parseDecimal(string(buf), to.Scale)
			if err != nil || !n.FitsInPrecision(to.Precision) {
				return decimal128.Num{}, rangeErr(to)
			}
			return n, nil
		})
	}
}

// mapLoop applies f to every non-null element of v (an array or a constant) and builds an array of type to.
// A returned error makes the row NULL (counted) or fails the evaluation, per the error mode.
func mapLoop[In, Out fixedWidth](ec *evalCtx, v value, to arrow.DataType, f func(x In) (Out, *sqlerr.Error)) (value, error) {
	in := primOf[In](v)
	return mapLoopWith(ec, []value{v}, to, func(i int) (Out, *sqlerr.Error) { return f(in.at(i)) })
}

// mapLoopWith is mapLoop over row indices; rows where one of args is NULL are NULL without calling f.
func mapLoopWith[Out fixedWidth](ec *evalCtx, args []value, to arrow.DataType, f func(i int) (Out, *sqlerr.Error)) (value, error) {
	out := newPrimOut[Out](ec, to)
	out.initValidity(args...)
	for i := range out.vals {
		if out.isNull(i) {
			continue
		}
		r, e := f(i)
		if e != nil {
			if err := ec.bad(e, i); err != nil {
				out.release()
				return value{}, err
			}
			out.setNull(i)
			continue
		}
		out.vals[i] = r
	}
	return out.finish(), nil
}

// mapBoolLoop builds a BOOLEAN result; rows where an argument is NULL are NULL without calling f.
func mapBoolLoop(ec *evalCtx, args []value, f func(i int) (bool, *sqlerr.Error)) (value, error) {
	vd, done := validityOf(ec, args)
	defer done()
	out := newBoolOut(ec)
	for i := 0; i < ec.n; i++ {
		if vd.null(i) {
			out.setNull(i)
			continue
		}
		r, e := f(i)
		if e != nil {
			if err := ec.bad(e, i); err != nil {
				out.finish().release()
				return value{}, err
			}
			out.setNull(i)
			continue
		}
		out.set(i, r)
	}
	return out.finish(), nil
}

// ---- to text ----

func toTextKernel(from arrow.DataType) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		v := args[0]
		arr := v.arr
		if arr == nil {
			a, err := scalar.MakeArrayFromScalar(v.sc, 1, ec.mem)
			if err != nil {
				return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
			}
			defer a.Release()
			arr = a
		}
		app, err := textAppender(arr)
		if err != nil {
			return value{}, err
		}
		if isBool(from) {
			b := arr.(*array.Boolean)
			app = func(dst []byte, i int) []byte {
				if b.Value(i) {
					return append(dst, "true"...)
				}
				return append(dst, "false"...)
			}
		}
		out := newStringOut(ec, TypeText, 0)
		var buf []byte
		for i := 0; i < arr.Len(); i++ {
			if arr.IsNull(i) {
				out.b.AppendNull()
				continue
			}
			buf = app(buf[:0], i)
			out.b.Append(buf)
		}
		r := out.finish()
		if v.arr == nil {
			defer r.release()
			sc, err := ownScalar(r.arr, 0)
			return value{sc: sc}, err
		}
		return r, nil
	}
}

// ownScalar is scalar.GetScalar with its own copy of string bytes (GetScalar shares the array's buffer, which
// would keep counted memory alive after the array is released).
func ownScalar(arr arrow.Array, i int) (scalar.Scalar, error) {
	if arr.IsNull(i) {
		return scalar.MakeNullScalar(arr.DataType()), nil
	}
	switch a := arr.(type) {
	case *array.String:
		return scalar.NewStringScalar(strings.Clone(a.Value(i))), nil
	case *array.Binary:
		return scalar.NewBinaryScalar(memory.NewBufferBytes([]byte(string(a.Value(i)))), a.DataType()), nil
	}
	sc, err := scalar.GetScalar(arr, i)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return sc, nil
}

// textAppender appends the Postgres text form of element i (not null) of arr.
func textAppender(arr arrow.Array) (func(dst []byte, i int) []byte, error) {
	switch a := arr.(type) {
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 't')
			}
			return append(dst, 'f')
		}, nil
	case *array.Int8:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }, nil
	case *array.Int16:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }, nil
	case *array.Int32:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }, nil
	case *array.Int64:
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, a.Value(i), 10) }, nil
	case *array.Float32:
		return func(dst []byte, i int) []byte { return AppendFloat4(dst, a.Value(i)) }, nil
	case *array.Float64:
		return func(dst []byte, i int) []byte { return AppendFloat8(dst, a.Value(i)) }, nil
	case *array.String:
		return func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }, nil
	case *array.Binary:
		return func(dst []byte, i int) []byte { return AppendByteaHex(dst, a.Value(i)) }, nil
	case *array.Date32:
		return func(dst []byte, i int) []byte { return AppendDate(dst, int64(a.Value(i))) }, nil
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		toMicros := TimeUnitToMicros(tt.Unit)
		zone := tt.TimeZone != ""
		return func(dst []byte, i int) []byte { return AppendTimestamp(dst, toMicros(int64(a.Value(i))), zone) }, nil
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return func(dst []byte, i int) []byte { return AppendDecimal128(dst, a.Value(i), scale) }, nil
	case *array.Duration:
		toMicros := TimeUnitToMicros(a.DataType().(*arrow.DurationType).Unit)
		return func(dst []byte, i int) []byte { return AppendDuration(dst, toMicros(int64(a.Value(i)))) }, nil
	}
	return nil, sqlerr.New(cannotCoerce, sqlerr.NoPos, "cannot cast type %s to text", TypeName(arr.DataType()))
}

// ---- from text ----

func fromTextKernel(to arrow.DataType) (kernel, bool) {
	switch {
	case isInteger(to):
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch to.ID() {
		case arrow.INT8:
			lo, hi = math.MinInt8, math.MaxInt8
		case arrow.INT16:
			lo, hi = math.MinInt16, math.MaxInt16
		case arrow.INT32:
			lo, hi = math.MinInt32, math.MaxInt32
		}
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			r, err := mapLoopWith(ec, args[:1], TypeBigint, func(i int) (int64, *sqlerr.Error) {
				return parseIntText(s.at(i), lo, hi, to)
			})
			if err != nil {
				return value{}, err
			}
			return castInt64To(ec, r, to)
		}, true
	case isFloat(to):
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			if to.ID() == arrow.FLOAT32 {
				return mapLoopWith(ec, args[:1], to, func(i int) (float32, *sqlerr.Error) {
					f, e := parseFloatText(s.at(i), to)
					return float32(f), e
				})
			}
			return mapLoopWith(ec, args[:1], to, func(i int) (float64, *sqlerr.Error) { return parseFloatText(s.at(i), to) })
		}, true
	case isDecimal(to):
		dt := to.(*arrow.Decimal128Type)
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return mapLoopWith(ec, args[:1], to, func(i int) (decimal128.Num, *sqlerr.Error) {
				n, _, _, err := parseDecimal(s.at(i), dt.Scale)
				if err != nil {
					return n, err.(*sqlerr.Error)
				}
				if !n.FitsInPrecision(dt.Precision) {
					return n, rangeErr(to)
				}
				return n, nil
			})
		}, true
	case isBool(to):
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return mapBoolLoop(ec, args[:1], func(i int) (bool, *sqlerr.Error) { return parseBoolText(s.at(i)) })
		}, true
	case isTimestamp(to):
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return mapLoopWith(ec, args[:1], to, func(i int) (int64, *sqlerr.Error) { return timestampIn(s.at(i)) })
		}, true
	case isDate(to):
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return mapLoopWith(ec, args[:1], to, func(i int) (int32, *sqlerr.Error) { return dateIn(s.at(i)) })
		}, true
	case isInterval(to):
		return func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return mapLoopWith(ec, args[:1], to, func(i int) (int64, *sqlerr.Error) { return intervalIn(s.at(i)) })
		}, true
	}
	return nil, false
}

func invalidText(t arrow.DataType, s string) *sqlerr.Error {
	code := sqlerr.InvalidTextRep
	if isTimestamp(t) || isDate(t) || isInterval(t) {
		code = sqlerr.InvalidDatetime
	}
	return sqlerr.New(code, sqlerr.NoPos, "invalid input syntax for type %s: %q", inputTypeName(t), s)
}

// inputTypeName is the type name Postgres' input functions use in their messages.
func inputTypeName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.TIMESTAMP:
		return "timestamp"
	case arrow.FLOAT64:
		return "double precision"
	}
	return TypeName(t)
}

func parseIntText(s string, lo, hi int64, t arrow.DataType) (int64, *sqlerr.Error) {
	v, ok := parseInt64(strings.TrimSpace(s))
	if !ok {
		// distinguish digits that overflow from garbage
		ts := strings.TrimLeft(strings.TrimSpace(s), "+-")
		if ts != "" && strings.Trim(ts, "0123456789") == "" {
			return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value %q is out of range for type %s", s, TypeName(t))
		}
		return 0, invalidText(t, s)
	}
	if v < lo || v > hi {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value %q is out of range for type %s", s, TypeName(t))
	}
	return v, nil
}

func parseFloatText(s string, t arrow.DataType) (float64, *sqlerr.Error) {
	ts := strings.TrimSpace(s)
	switch strings.ToLower(ts) {
	case "nan":
		return math.NaN(), nil
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	if ts == "" || strings.ContainsAny(ts, "xX_pP") || strings.ContainsAny(strings.ToLower(ts), "in") {
		return 0, invalidText(t, s)
	}
	bits := 64
	if t.ID() == arrow.FLOAT32 {
		bits = 32 // round the decimal text once, to the nearest REAL, as float4in does
	}
	f, err := strconv.ParseFloat(ts, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "%q is out of range for type %s", s, TypeName(t))
		}
		return 0, invalidText(t, s)
	}
	if FloatUnderflow(ts, f) {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "%q is out of range for type %s", s, TypeName(t))
	}
	return f, nil
}

// FloatUnderflow reports whether f, parsed from the numeric text s, is 0 although s is not: a value below the
// smallest float, which float8in and float4in refuse (22003) rather than read as 0.
func FloatUnderflow(s string, f float64) bool {
	if f != 0 {
		return false
	}
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	return strings.ContainsAny(mant, "123456789")
}

// parseBoolText follows Postgres' boolin: t/true/y/yes/on/1 and f/false/n/no/off/0, any unique prefix of the
// words, case-insensitive, surrounding blanks ignored.
func parseBoolText(s string) (bool, *sqlerr.Error) {
	ts := strings.ToLower(strings.TrimSpace(s))
	if ts != "" {
		switch {
		case strings.HasPrefix("true", ts), strings.HasPrefix("yes", ts), ts == "on", ts == "1":
			return true, nil
		case strings.HasPrefix("false", ts), strings.HasPrefix("no", ts), ts == "off" || ts == "of", ts == "0":
			return false, nil
		}
	}
	return false, sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid input syntax for type boolean: %q", s)
}

// byteaInKernel reads Postgres' bytea hex input (\x0102...); other text is taken as its bytes.
func byteaInKernel() kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		s := strsOf(args[0])
		out := newStringOut(ec, TypeBytea, 0)
		var buf []byte
		for i := 0; i < ec.n; i++ {
			if s.null(i) {
				out.b.AppendNull()
				continue
			}
			v := s.at(i)
			if !strings.HasPrefix(v, `\x`) {
				out.b.AppendString(v)
				continue
			}
			buf = buf[:0]
			ok := len(v)%2 == 0
			for j := 2; ok && j+1 < len(v); j += 2 {
				h, l := unhex(v[j]), unhex(v[j+1])
				if h < 0 || l < 0 {
					ok = false
					break
				}
				buf = append(buf, byte(h<<4|l))
			}
			if !ok {
				if err := ec.bad(sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid hexadecimal data: %q", v), i); err != nil {
					out.finish().release()
					return value{}, err
				}
				out.b.AppendNull()
				continue
			}
			out.b.Append(buf)
		}
		return out.finish(), nil
	}
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
