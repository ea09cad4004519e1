package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// The accumulators of the window aggregate. Each aggregate keeps its state column-wise: one Go slice per field,
// indexed by group id, so an update is a tight loop over a batch's (row, group) assignments with one type switch
// per batch, never an interface call or an allocation per row.
//
// aggState is what the operator needs of an aggregate:
//
//   - grow adds one zeroed group (a zero value is the empty accumulator); reset empties group g for reuse;
//   - update folds col[rows[j]] into group grps[j] for every j (col is nil for COUNT(*)); FILTER has already
//     been applied to rows/grps; NULLs are skipped here;
//   - merge folds group src into dst (session merging);
//   - appendTo appends g's result to the output builder;
//   - encode/decode write and read g's accumulator in the state backend's value format.
type aggState interface {
	grow()
	reset(g int32)
	update(col arrow.Array, rows, grps []int32) error
	merge(dst, src int32) error
	appendTo(b array.Builder, g int32) error
	encode(dst []byte, g int32) []byte
	decode(src []byte, g int32) ([]byte, error)
}

// aggImpl names an accumulator implementation.
type aggImpl uint8

const (
	implCount aggImpl = iota
	implSumInt
	implSum128
	implSumFloat
	implAvg128
	implAvgFloat
	implMinMaxInt
	implMinMaxFloat
	implMinMaxDec
	implMinMaxStr
	implDistinctInt
	implDistinctStr
)

// aggKind is an aggregate typed against its argument: what it accumulates and what it returns.
type aggKind struct {
	fn       AggFunc
	impl     aggImpl
	arg      arrow.DataType
	out      arrow.DataType
	nullable bool
	inScale  int32 // decimal argument scale
	outScale int32 // decimal result scale
}

func errNoFunction(fn AggFunc, t arrow.DataType) error {
	return sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "function %s(%s) does not exist", fn, t)
}

func signedInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func newAggKind(fn AggFunc, arg arrow.DataType) (aggKind, error) {
	k := aggKind{fn: fn, arg: arg, nullable: true}
	dec38 := func(scale int32) arrow.DataType { return &arrow.Decimal128Type{Precision: 38, Scale: scale} }
	switch fn {
	case AggCountStar, AggCount:
		k.impl, k.out, k.nullable = implCount, arrow.PrimitiveTypes.Int64, false
		return k, nil
	case AggCountDistinct:
		k.out, k.nullable = arrow.PrimitiveTypes.Int64, false
		switch {
		case rowcodec.IntLike(arg) || arg.ID() == arrow.BOOL || arg.ID() == arrow.FLOAT32 || arg.ID() == arrow.FLOAT64:
			k.impl = implDistinctInt
		case arg.ID() == arrow.DECIMAL128 || arg.ID() == arrow.UINT64 || arg.ID() == arrow.STRING ||
			arg.ID() == arrow.LARGE_STRING || arg.ID() == arrow.BINARY || arg.ID() == arrow.LARGE_BINARY:
			k.impl = implDistinctStr
		default:
			return k, errNoFunction(fn, arg)
		}
		return k, nil
	case AggSum:
		switch {
		case arg.ID() == arrow.INT64:
			k.impl, k.out = implSum128, dec38(0)
		case signedInt(arg):
			k.impl, k.out = implSumInt, arrow.PrimitiveTypes.Int64
		case arg.ID() == arrow.DECIMAL128:
			k.inScale = arg.(*arrow.Decimal128Type).Scale
			k.impl, k.out, k.outScale = implSum128, dec38(k.inScale), k.inScale
		case arg.ID() == arrow.FLOAT32, arg.ID() == arrow.FLOAT64:
			k.impl, k.out = implSumFloat, arg
		default:
			return k, errNoFunction(fn, arg)
		}
		return k, nil
	case AggAvg:
		switch {
		case signedInt(arg):
			k.impl, k.out, k.outScale = implAvg128, dec38(16), 16
		case arg.ID() == arrow.DECIMAL128:
			k.inScale = arg.(*arrow.Decimal128Type).Scale
			k.impl, k.outScale = implAvg128, max(k.inScale, 16)
			k.out = dec38(k.outScale)
		case arg.ID() == arrow.FLOAT32, arg.ID() == arrow.FLOAT64:
			k.impl, k.out = implAvgFloat, arrow.PrimitiveTypes.Float64
		default:
			return k, errNoFunction(fn, arg)
		}
		return k, nil
	case AggMin, AggMax:
		k.out = arg
		switch arg.ID() {
		case arrow.FLOAT32, arrow.FLOAT64:
			k.impl = implMinMaxFloat
		case arrow.DECIMAL128:
			k.impl = implMinMaxDec
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			k.impl = implMinMaxStr
		default:
			if !rowcodec.IntLike(arg) && arg.ID() != arrow.BOOL {
				return k, errNoFunction(fn, arg)
			}
			k.impl = implMinMaxInt
		}
		return k, nil
	}
	return k, windowInternalf("unknown aggregate function %d", fn)
}

// aggOverflow is what an aggregate does with a result it cannot represent (a float sum past the largest double):
// with expr.ErrorsFail it fails the query or job with 22003, as Postgres does; with expr.ErrorsNull (a job's
// default) the group's result becomes NULL and the value is counted in TaskContext.Errors, as a bad value of an
// expression is. One per subtask; errors is set at Open.
type aggOverflow struct {
	mode   expr.ErrorMode
	errors *exec.Counter
}

func (o *aggOverflow) overflow() error {
	if o.mode == expr.ErrorsFail {
		return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "value out of range: overflow")
	}
	o.errors.Add(1)
	return nil
}

func (k aggKind) newState(ov *aggOverflow) aggState {
	isMax := k.fn == AggMax
	switch k.impl {
	case implCount:
		return &countAgg{star: k.fn == AggCountStar}
	case implSumInt:
		return &sumIntAgg{}
	case implSum128:
		return &sum128Agg{}
	case implSumFloat:
		return &sumFloatAgg{sumFloat{f32: k.arg.ID() == arrow.FLOAT32, zero: math.Copysign(0, -1), ov: ov}}
	case implAvg128:
		return &avg128Agg{shift: k.outScale - k.inScale}
	case implAvgFloat:
		return &avgFloatAgg{sumFloat{ov: ov}}
	case implMinMaxInt:
		return &minMaxIntAgg{max: isMax}
	case implMinMaxFloat:
		return &minMaxFloatAgg{max: isMax}
	case implMinMaxDec:
		return &minMaxDecAgg{max: isMax}
	case implMinMaxStr:
		return &minMaxStrAgg{max: isMax}
	case implDistinctInt:
		return &distinctIntAgg{}
	case implDistinctStr:
		return &distinctStrAgg{}
	}
	panic(fmt.Sprintf("window aggregate: aggregate implementation %d", k.impl))
}

func errBigintRange() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "bigint out of range")
}

func errNumericOverflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "numeric field overflow")
}

// COUNT(*), COUNT(x).

type countAgg struct {
	star bool
	n    []int64
}

func (a *countAgg) grow()         { a.n = append(a.n, 0) }
func (a *countAgg) reset(g int32) { a.n[g] = 0 }

func (a *countAgg) update(col arrow.Array, rows, grps []int32) error {
	n := a.n
	if a.star || col.NullN() == 0 {
		for _, g := range grps {
			n[g]++
		}
		return nil
	}
	for j, r := range rows {
		if col.IsValid(int(r)) {
			n[grps[j]]++
		}
	}
	return nil
}

func (a *countAgg) merge(dst, src int32) error { a.n[dst] += a.n[src]; return nil }

func (a *countAgg) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(a.n[g])
	return nil
}

func (a *countAgg) encode(dst []byte, g int32) []byte { return binary.AppendVarint(dst, a.n[g]) }

func (a *countAgg) decode(src []byte, g int32) (rest []byte, err error) {
	a.n[g], rest, err = rowcodec.GetVarint(src)
	return rest, err
}

// SUM(smallint|int) -> BIGINT, failing on overflow.

type sumIntAgg struct {
	n, s []int64 // n: values summed (0 means NULL)
	scr  []int64
}

func (a *sumIntAgg) grow()         { a.n, a.s = append(a.n, 0), append(a.s, 0) }
func (a *sumIntAgg) reset(g int32) { a.n[g], a.s[g] = 0, 0 }

func (a *sumIntAgg) update(col arrow.Array, rows, grps []int32) error {
	vals := rowcodec.Int64Values(col, &a.scr)
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, v := grps[j], vals[r]
		s := a.s[g] + v
		if (v > 0 && s < a.s[g]) || (v < 0 && s > a.s[g]) {
			return errBigintRange()
		}
		a.s[g] = s
		a.n[g]++
	}
	return nil
}

func (a *sumIntAgg) merge(dst, src int32) error {
	s, v := a.s[dst], a.s[src]
	t := s + v
	if (v > 0 && t < s) || (v < 0 && t > s) {
		return errBigintRange()
	}
	a.s[dst] = t
	a.n[dst] += a.n[src]
	return nil
}

func (a *sumIntAgg) appendTo(b array.Builder, g int32) error {
	if a.n[g] == 0 {
		b.AppendNull()
		return nil
	}
	b.(*array.Int64Builder).Append(a.s[g])
	return nil
}

func (a *sumIntAgg) encode(dst []byte, g int32) []byte {
	return binary.AppendVarint(binary.AppendVarint(dst, a.n[g]), a.s[g])
}

func (a *sumIntAgg) decode(src []byte, g int32) (rest []byte, err error) {
	if a.n[g], rest, err = rowcodec.GetVarint(src); err != nil {
		return nil, err
	}
	a.s[g], rest, err = rowcodec.GetVarint(rest)
	return rest, err
}

// sum128 is a 128-bit two's complement sum of int64 or decimal128 values with a count, shared by SUM(bigint),
// SUM(decimal) and AVG over them, here and in the group aggregate (gaSum128).

type sum128 struct {
	n  []int64
	hi []int64
	lo []uint64
	// scr converts narrower integer arguments (AVG(int)).
	scr []int64
}

func (a *sum128) grow() {
	a.n, a.hi, a.lo = append(a.n, 0), append(a.hi, 0), append(a.lo, 0)
}

func (a *sum128) reset(g int32) { a.n[g], a.hi[g], a.lo[g] = 0, 0, 0 }

// add128 adds (bh, bl) to group g, reporting a signed overflow of 128 bits.
func (a *sum128) add128(g int32, bh int64, bl uint64) bool {
	lo, c := bits.Add64(a.lo[g], bl, 0)
	hi := a.hi[g] + bh + int64(c)
	overflow := (a.hi[g] < 0) == (bh < 0) && (hi < 0) != (bh < 0)
	a.hi[g], a.lo[g] = hi, lo
	return overflow
}

// addInts adds the integers col[rows[j]] to groups grps[j], skipping NULLs. No overflow is possible below 2^64
// values.
func (a *sum128) addInts(col arrow.Array, rows, grps []int32) {
	vals := rowcodec.Int64Values(col, &a.scr)
	n, hi, lo := a.n, a.hi, a.lo
	if col.NullN() == 0 { // the hot path of SUM(bigint)
		for j, r := range rows {
			g, v := grps[j], vals[r]
			l, c := bits.Add64(lo[g], uint64(v), 0)
			lo[g] = l
			hi[g] += v>>63 + int64(c)
			n[g]++
		}
		return
	}
	for j, r := range rows {
		if col.IsNull(int(r)) {
			continue
		}
		g, v := grps[j], vals[r]
		l, c := bits.Add64(lo[g], uint64(v), 0)
		lo[g] = l
		hi[g] += v>>63 + int64(c)
		n[g]++
	}
}

func (a *sum128) encode(dst []byte, g int32) []byte {
	dst = binary.AppendVarint(dst, a.n[g])
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.hi[g]))
	return binary.BigEndian.AppendUint64(dst, a.lo[g])
}

func (a *sum128) decode(src []byte, g int32) (rest []byte, err error) {
	var hi uint64
	if a.n[g], rest, err = rowcodec.GetVarint(src); err != nil {
		return nil, err
	}
	if hi, rest, err = rowcodec.GetU64(rest); err != nil {
		return nil, err
	}
	a.hi[g] = int64(hi)
	a.lo[g], rest, err = rowcodec.GetU64(rest)
	return rest, err
}

// add adds the values col[rows[j]] (integers or decimals) to groups grps[j], skipping NULLs: an append-only
// update.
func (a *sum128) add(col arrow.Array, rows, grps []int32) error {
	if d, ok := col.(*array.Decimal128); ok {
		return a.addDecimals(d, rows, grps, nil)
	}
	a.addInts(col, rows, grps)
	return nil
}

// addDecimals adds the decimals col[rows[j]] to groups grps[j], or takes them out where neg != nil && neg[j],
// skipping NULLs; a sum past 128 bits fails with 22003.
func (a *sum128) addDecimals(col *array.Decimal128, rows, grps []int32, neg []bool) error {
	vals := col.Values()
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, v := grps[j], vals[r]
		h, l := v.HighBits(), v.LowBits()
		inc := int64(1)
		if neg != nil && neg[j] {
			h, l = neg128(h, l)
			inc = -1
		}
		// -(-2^127) does not fit, but a decimal128 of at most 38 digits is never that.
		if a.add128(g, h, l) {
			return errNumericOverflow()
		}
		a.n[g] += inc
	}
	return nil
}

// neg128 is the two's complement negation of (hi, lo).
func neg128(hi int64, lo uint64) (int64, uint64) {
	l, c := bits.Add64(^lo, 1, 0)
	return ^hi + int64(c), l
}

// windowSum128 is the window aggregate's sum128: append-only updates, and the merge of sessions.
type windowSum128 struct{ sum128 }

func (a *windowSum128) update(col arrow.Array, rows, grps []int32) error {
	return a.add(col, rows, grps)
}

func (a *windowSum128) merge(dst, src int32) error {
	if a.add128(dst, a.hi[src], a.lo[src]) {
		return errNumericOverflow()
	}
	a.n[dst] += a.n[src]
	return nil
}

type sum128Agg struct{ windowSum128 }

func (a *sum128Agg) appendTo(b array.Builder, g int32) error {
	if a.n[g] == 0 {
		b.AppendNull()
		return nil
	}
	v := decimal128.New(a.hi[g], a.lo[g])
	if !v.FitsInPrecision(38) {
		return errNumericOverflow()
	}
	b.(*array.Decimal128Builder).Append(v)
	return nil
}

// avg128Agg is AVG over integers or decimals: sum * 10^shift / n, rounded half away from zero.
type avg128Agg struct {
	windowSum128
	avg128
	shift int32
}

func (a *avg128Agg) appendTo(b array.Builder, g int32) error {
	n := a.n[g]
	if n == 0 {
		b.AppendNull()
		return nil
	}
	v, err := a.avg(a.hi[g], a.lo[g], n, a.shift)
	if err != nil {
		return err
	}
	b.(*array.Decimal128Builder).Append(v)
	return nil
}

// avg128 computes AVG over integers and decimals from a sum128 (here and in the group aggregate); its big integers
// are scratch, reused across groups.
type avg128 struct{ num, den, r, ten big.Int }

// avg is sum * 10^shift / n for the 128-bit sum (hi, lo), rounded half away from zero as numeric division does;
// beyond 38 digits it fails with 22003. It runs per group at output, not per row: big.Int keeps sum * 10^shift
// exact.
func (a *avg128) avg(hi int64, lo uint64, n int64, shift int32) (decimal128.Num, error) {
	a.num.Set(decimal128.New(hi, lo).BigInt())
	a.ten.SetInt64(10)
	a.num.Mul(&a.num, a.den.Exp(&a.ten, a.den.SetInt64(int64(shift)), nil))
	a.den.SetInt64(n)
	neg := a.num.Sign() < 0
	a.num.QuoRem(&a.num, &a.den, &a.r) // truncated toward zero
	a.r.Abs(&a.r)
	a.r.Lsh(&a.r, 1)
	if a.r.Cmp(&a.den) >= 0 { // half or more: away from zero
		if neg {
			a.num.Sub(&a.num, a.ten.SetInt64(1))
		} else {
			a.num.Add(&a.num, a.ten.SetInt64(1))
		}
	}
	v := decimal128.FromBigInt(&a.num)
	if a.num.BitLen() > 127 || !v.FitsInPrecision(38) {
		return decimal128.Num{}, errNumericOverflow()
	}
	return v, nil
}

// SUM(real|double): float64 accumulation; REAL rounds to float32 after each addition, which is exactly float4
// addition (float64 has more than 2*24+2 bits, so the double rounding is harmless). A finite sum and a finite value
// that add up to an infinity overflow (Postgres' float8pl/float4pl raise 22003): aggOverflow decides.

type sumFloat struct {
	n    []int64
	s    []float64
	bad  []bool // the sum overflowed (errors.mode 'null'): the result is NULL; stored as n = -1-n
	f32  bool
	zero float64 // the sum of no values: -0 for SUM (IEEE addition's identity, so SUM(-0) is -0), 0 for AVG
	ov   *aggOverflow
}

func (a *sumFloat) grow() {
	a.n, a.s, a.bad = append(a.n, 0), append(a.s, a.zero), append(a.bad, false)
}
func (a *sumFloat) reset(g int32) { a.n[g], a.s[g], a.bad[g] = 0, a.zero, false }

// add adds v to g's sum.
func (a *sumFloat) add(g int32, v float64) error {
	old := a.s[g]
	s := old + v
	if a.f32 {
		s = float64(float32(s))
	}
	if math.IsInf(s, 0) && !math.IsInf(old, 0) && !math.IsInf(v, 0) && !a.bad[g] {
		if err := a.ov.overflow(); err != nil {
			return err
		}
		a.bad[g] = true
	}
	a.s[g] = s
	return nil
}

func (a *sumFloat) update(col arrow.Array, rows, grps []int32) error {
	nulls := col.NullN() > 0
	switch c := col.(type) {
	case *array.Float64:
		vals := c.Float64Values()
		for j, r := range rows {
			if nulls && col.IsNull(int(r)) {
				continue
			}
			g := grps[j]
			if err := a.add(g, vals[r]); err != nil {
				return err
			}
			a.n[g]++
		}
	case *array.Float32:
		vals := c.Float32Values()
		for j, r := range rows {
			if nulls && col.IsNull(int(r)) {
				continue
			}
			g := grps[j]
			if err := a.add(g, float64(vals[r])); err != nil {
				return err
			}
			a.n[g]++
		}
	default:
		return fmt.Errorf("window aggregate: float sum over %s", col.DataType())
	}
	return nil
}

func (a *sumFloat) merge(dst, src int32) error {
	a.bad[dst] = a.bad[dst] || a.bad[src]
	if err := a.add(dst, a.s[src]); err != nil {
		return err
	}
	a.n[dst] += a.n[src]
	return nil
}

func (a *sumFloat) encode(dst []byte, g int32) []byte {
	n := a.n[g]
	if a.bad[g] {
		n = -1 - n
	}
	return binary.BigEndian.AppendUint64(binary.AppendVarint(dst, n), math.Float64bits(a.s[g]))
}

func (a *sumFloat) decode(src []byte, g int32) (rest []byte, err error) {
	var u uint64
	if a.n[g], rest, err = rowcodec.GetVarint(src); err != nil {
		return nil, err
	}
	if a.bad[g] = a.n[g] < 0; a.bad[g] {
		a.n[g] = -1 - a.n[g]
	}
	u, rest, err = rowcodec.GetU64(rest)
	a.s[g] = math.Float64frombits(u)
	return rest, err
}

type sumFloatAgg struct{ sumFloat }

func (a *sumFloatAgg) appendTo(b array.Builder, g int32) error {
	switch {
	case a.n[g] == 0 || a.bad[g]:
		b.AppendNull()
	case a.f32:
		b.(*array.Float32Builder).Append(float32(a.s[g]))
	default:
		b.(*array.Float64Builder).Append(a.s[g])
	}
	return nil
}

// avgFloatAgg is AVG(real|double): float8 accumulation, as Postgres' float8_accum.
type avgFloatAgg struct{ sumFloat }

func (a *avgFloatAgg) appendTo(b array.Builder, g int32) error {
	if a.n[g] == 0 || a.bad[g] {
		b.AppendNull()
		return nil
	}
	b.(*array.Float64Builder).Append(a.s[g] / float64(a.n[g]))
	return nil
}

// MIN/MAX over integer-like values (and booleans as 0/1).

type minMaxIntAgg struct {
	max bool
	has []bool
	v   []int64
	scr []int64
}

func (a *minMaxIntAgg) grow()         { a.has, a.v = append(a.has, false), append(a.v, 0) }
func (a *minMaxIntAgg) reset(g int32) { a.has[g], a.v[g] = false, 0 }

func (a *minMaxIntAgg) update(col arrow.Array, rows, grps []int32) error {
	vals := rowcodec.Int64Values(col, &a.scr)
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, x := grps[j], vals[r]
		if !a.has[g] || (a.max && x > a.v[g]) || (!a.max && x < a.v[g]) {
			a.has[g], a.v[g] = true, x
		}
	}
	return nil
}

func (a *minMaxIntAgg) merge(dst, src int32) error {
	if x := a.v[src]; a.has[src] && (!a.has[dst] || (a.max && x > a.v[dst]) || (!a.max && x < a.v[dst])) {
		a.has[dst], a.v[dst] = true, x
	}
	return nil
}

func (a *minMaxIntAgg) appendTo(b array.Builder, g int32) error {
	if !a.has[g] {
		b.AppendNull()
		return nil
	}
	rowcodec.AppendInt64(b, a.v[g])
	return nil
}

func (a *minMaxIntAgg) encode(dst []byte, g int32) []byte {
	return binary.AppendVarint(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxIntAgg) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	a.v[g], rest, err = rowcodec.GetVarint(rest)
	return rest, err
}

// MIN/MAX over floats: NaN is above every other value, as in Postgres.

type minMaxFloatAgg struct {
	max bool
	has []bool
	v   []float64
}

func (a *minMaxFloatAgg) grow()         { a.has, a.v = append(a.has, false), append(a.v, 0) }
func (a *minMaxFloatAgg) reset(g int32) { a.has[g], a.v[g] = false, 0 }

// floatLess orders NaN last.
func floatLess(x, y float64) bool {
	if x != x {
		return false
	}
	return y != y || x < y
}

func (a *minMaxFloatAgg) better(x, cur float64) bool {
	if a.max {
		return floatLess(cur, x)
	}
	return floatLess(x, cur)
}

func (a *minMaxFloatAgg) update(col arrow.Array, rows, grps []int32) error {
	nulls := col.NullN() > 0
	put := func(g int32, x float64) {
		if !a.has[g] || a.better(x, a.v[g]) {
			a.has[g], a.v[g] = true, x
		}
	}
	switch c := col.(type) {
	case *array.Float64:
		vals := c.Float64Values()
		for j, r := range rows {
			if !nulls || c.IsValid(int(r)) {
				put(grps[j], vals[r])
			}
		}
	case *array.Float32:
		vals := c.Float32Values()
		for j, r := range rows {
			if !nulls || c.IsValid(int(r)) {
				put(grps[j], float64(vals[r]))
			}
		}
	default:
		return fmt.Errorf("window aggregate: float min/max over %s", col.DataType())
	}
	return nil
}

func (a *minMaxFloatAgg) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxFloatAgg) appendTo(b array.Builder, g int32) error {
	switch {
	case !a.has[g]:
		b.AppendNull()
	default:
		if fb, ok := b.(*array.Float32Builder); ok {
			fb.Append(float32(a.v[g]))
		} else {
			b.(*array.Float64Builder).Append(a.v[g])
		}
	}
	return nil
}

func (a *minMaxFloatAgg) encode(dst []byte, g int32) []byte {
	return binary.BigEndian.AppendUint64(rowcodec.AppendFlag(dst, a.has[g]), math.Float64bits(a.v[g]))
}

func (a *minMaxFloatAgg) decode(src []byte, g int32) (rest []byte, err error) {
	var u uint64
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	u, rest, err = rowcodec.GetU64(rest)
	a.v[g] = math.Float64frombits(u)
	return rest, err
}

// MIN/MAX over decimals (one scale per column, so unscaled values compare directly).

type minMaxDecAgg struct {
	max bool
	has []bool
	v   []decimal128.Num
}

func (a *minMaxDecAgg) grow()         { a.has, a.v = append(a.has, false), append(a.v, decimal128.Num{}) }
func (a *minMaxDecAgg) reset(g int32) { a.has[g], a.v[g] = false, decimal128.Num{} }

func (a *minMaxDecAgg) better(x, cur decimal128.Num) bool {
	if a.max {
		return x.Greater(cur)
	}
	return x.Less(cur)
}

func (a *minMaxDecAgg) update(col arrow.Array, rows, grps []int32) error {
	vals := col.(*array.Decimal128).Values()
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		if g, x := grps[j], vals[r]; !a.has[g] || a.better(x, a.v[g]) {
			a.has[g], a.v[g] = true, x
		}
	}
	return nil
}

func (a *minMaxDecAgg) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxDecAgg) appendTo(b array.Builder, g int32) error {
	if !a.has[g] {
		b.AppendNull()
		return nil
	}
	b.(*array.Decimal128Builder).Append(a.v[g])
	return nil
}

func (a *minMaxDecAgg) encode(dst []byte, g int32) []byte {
	return rowcodec.AppendDecimal(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxDecAgg) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	if len(rest) < 16 {
		return nil, rowcodec.ErrState
	}
	a.v[g] = rowcodec.DecimalFrom(rest)
	return rest[16:], nil
}

// MIN/MAX over strings and binary: byte order (Postgres with the C collation, as DESIGN.md asks).

type minMaxStrAgg struct {
	max bool
	has []bool
	v   []string
}

func (a *minMaxStrAgg) grow()         { a.has, a.v = append(a.has, false), append(a.v, "") }
func (a *minMaxStrAgg) reset(g int32) { a.has[g], a.v[g] = false, "" }

func (a *minMaxStrAgg) better(x, cur string) bool {
	if a.max {
		return x > cur
	}
	return x < cur
}

// stringValues returns the accessor of a string or binary column's values (viewing the batch's buffers), nil for
// another type.
func stringValues(col arrow.Array) func(i int) string {
	switch c := col.(type) {
	case *array.String:
		return c.Value
	case *array.LargeString:
		return c.Value
	case *array.Binary:
		return func(i int) string { return rowcodec.UnsafeString(c.Value(i)) }
	case *array.LargeBinary:
		return func(i int) string { return rowcodec.UnsafeString(c.Value(i)) }
	}
	return nil
}

func (a *minMaxStrAgg) update(col arrow.Array, rows, grps []int32) error {
	value := stringValues(col)
	if value == nil {
		return fmt.Errorf("window aggregate: string min/max over %s", col.DataType())
	}
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		if g, x := grps[j], value(int(r)); !a.has[g] || a.better(x, a.v[g]) {
			a.has[g], a.v[g] = true, strings.Clone(x) // x views the batch's buffer
		}
	}
	return nil
}

func (a *minMaxStrAgg) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxStrAgg) appendTo(b array.Builder, g int32) error {
	if !a.has[g] {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(a.v[g])
	case *array.LargeStringBuilder:
		b.Append(a.v[g])
	case *array.BinaryBuilder:
		b.AppendString(a.v[g])
	default:
		return fmt.Errorf("window aggregate: string min/max into %T", b)
	}
	return nil
}

func (a *minMaxStrAgg) encode(dst []byte, g int32) []byte {
	return rowcodec.AppendLenPrefixed(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxStrAgg) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	a.v[g], rest, err = rowcodec.GetString(rest)
	return rest, err
}

// COUNT(DISTINCT x) over values that fit 8 bytes (integers, booleans, floats by canonical bits): a set per group.

type distinctIntAgg struct {
	sets []map[int64]struct{}
	scr  []int64
}

func (a *distinctIntAgg) grow()         { a.sets = append(a.sets, nil) }
func (a *distinctIntAgg) reset(g int32) { a.sets[g] = nil }

func (a *distinctIntAgg) add(g int32, v int64) {
	s := a.sets[g]
	if s == nil {
		s = make(map[int64]struct{})
		a.sets[g] = s
	}
	s[v] = struct{}{}
}

func (a *distinctIntAgg) update(col arrow.Array, rows, grps []int32) error {
	vals := distinctInts(col, &a.scr)
	nulls := col.NullN() > 0
	for j, r := range rows {
		if !nulls || col.IsValid(int(r)) {
			a.add(grps[j], vals[r])
		}
	}
	return nil
}

// distinctInts returns the values of a COUNT(DISTINCT) argument that fits 8 bytes as int64s: integers and
// booleans as rowcodec.Int64Values, floats as their canonical bits. Values under NULLs are unspecified.
func distinctInts(col arrow.Array, scratch *[]int64) []int64 {
	switch c := col.(type) {
	case *array.Float64:
		return floatBits(c.Len(), func(i int) float64 { return c.Value(i) }, scratch)
	case *array.Float32:
		return floatBits(c.Len(), func(i int) float64 { return float64(c.Value(i)) }, scratch)
	}
	return rowcodec.Int64Values(col, scratch)
}

func floatBits(n int, at func(int) float64, scratch *[]int64) []int64 {
	if cap(*scratch) < n {
		*scratch = make([]int64, n)
	}
	out := (*scratch)[:n]
	for i := range out {
		out[i] = int64(rowcodec.CanonicalFloat(at(i)))
	}
	return out
}

func (a *distinctIntAgg) merge(dst, src int32) error {
	for v := range a.sets[src] {
		a.add(dst, v)
	}
	return nil
}

func (a *distinctIntAgg) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(int64(len(a.sets[g])))
	return nil
}

func (a *distinctIntAgg) encode(dst []byte, g int32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(a.sets[g])))
	for v := range a.sets[g] {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

func (a *distinctIntAgg) decode(src []byte, g int32) ([]byte, error) {
	n, rest, err := rowcodec.GetUvarint(src)
	if err != nil {
		return nil, err
	}
	a.sets[g] = nil
	for ; n > 0; n-- {
		var v int64
		if v, rest, err = rowcodec.GetVarint(rest); err != nil {
			return nil, err
		}
		a.add(g, v)
	}
	return rest, nil
}

// COUNT(DISTINCT x) over anything else: a set of canonical value bytes per group.

type distinctStrAgg struct {
	sets []map[string]struct{}
	buf  []byte
	scr  []int64
}

func (a *distinctStrAgg) grow()         { a.sets = append(a.sets, nil) }
func (a *distinctStrAgg) reset(g int32) { a.sets[g] = nil }

func (a *distinctStrAgg) set(g int32) map[string]struct{} {
	s := a.sets[g]
	if s == nil {
		s = make(map[string]struct{})
		a.sets[g] = s
	}
	return s
}

func (a *distinctStrAgg) update(col arrow.Array, rows, grps []int32) error {
	enc, err := rowcodec.NewValueAppender(col, &a.scr, false)
	if err != nil {
		return err
	}
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		a.buf = enc(a.buf[:0], int(r))
		s := a.set(grps[j])
		if _, ok := s[string(a.buf)]; !ok {
			s[string(a.buf)] = struct{}{}
		}
	}
	return nil
}

func (a *distinctStrAgg) merge(dst, src int32) error {
	for v := range a.sets[src] {
		a.set(dst)[v] = struct{}{}
	}
	return nil
}

func (a *distinctStrAgg) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(int64(len(a.sets[g])))
	return nil
}

func (a *distinctStrAgg) encode(dst []byte, g int32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(a.sets[g])))
	for v := range a.sets[g] {
		dst = rowcodec.AppendLenPrefixed(dst, v)
	}
	return dst
}

func (a *distinctStrAgg) decode(src []byte, g int32) ([]byte, error) {
	n, rest, err := rowcodec.GetUvarint(src)
	if err != nil {
		return nil, err
	}
	a.sets[g] = nil
	for ; n > 0; n-- {
		var v string
		if v, rest, err = rowcodec.GetString(rest); err != nil {
			return nil, err
		}
		a.set(g)[v] = struct{}{}
	}
	return rest, nil
}
