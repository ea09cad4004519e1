package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// The accumulator library of the aggregates: one accumulator per aggregate function and argument type, serving
// the window aggregate and the group aggregate. Each keeps its state column-wise: one Go slice per field, indexed
// by group id, so an update is a tight loop over a batch's (row, group) assignments with one type switch per
// batch, never an interface call or an allocation per row. Updates run in row order, so a float sum sees the same
// sequence of additions and subtractions whatever the batching, and a restore (which stores the exact bits)
// continues it exactly.
//
// An accumulator is built for one form (stateForm): the window aggregate's (append-only; session windows merge;
// results go into an output builder) or the group aggregate's (retractable over a changelog; results are
// canonical bytes, so the operator can compare a group's result before and after a batch byte for byte and decode
// the one it emits with rowcodec.Encoding). The forms differ where they must: the value format in the state
// backend (each form's is read back by later releases), and what a retraction needs kept (value counts). The
// arithmetic, its overflow checks and the results are one code path.

// accumulator is what both aggregates need of an aggregate:
//
//   - grow adds one group, empty; reset empties group g for reuse;
//   - update folds col[rows[j]] into group grps[j] for every j, or takes it out where neg != nil && neg[j] (only
//     the group form is given retractions); FILTER has been applied to the assignments already; NULL arguments
//     are skipped here; col is nil for COUNT(*);
//   - encode/decode write and read g's accumulator in the form's state value format.
type accumulator interface {
	grow()
	reset(g int32)
	update(col arrow.Array, rows, grps []int32, neg []bool) error
	encode(dst []byte, g int32) []byte
	decode(src []byte, g int32) ([]byte, error)
}

// windowAccumulator is an accumulator of the window form: merge folds group src into dst (session merging);
// appendTo appends g's result to the output builder.
type windowAccumulator interface {
	accumulator
	merge(dst, src int32) error
	appendTo(b array.Builder, g int32) error
}

// groupAccumulator is an accumulator of the group form: result appends g's result as one key column's canonical
// bytes (0x00 for NULL, else 0x01 and the value).
type groupAccumulator interface {
	accumulator
	result(dst []byte, g int32) ([]byte, error)
}

// stateForm is the aggregate an accumulator serves, which fixes its state value format.
type stateForm uint8

const (
	windowForm stateForm = iota // the window aggregate: append-only, merged by sessions
	groupForm                   // the group aggregate: retractable
)

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

// newWindowAccumulator returns the window aggregate's accumulator of k.
func newWindowAccumulator(k aggKind, ov *aggOverflow) windowAccumulator {
	return newAccumulator(k, windowForm, false, ov).(windowAccumulator)
}

// newGroupAccumulator returns the group aggregate's accumulator of k; updating says whether it must survive
// retractions (MIN/MAX then keep every value).
func newGroupAccumulator(k aggKind, updating bool, ov *aggOverflow) groupAccumulator {
	return newAccumulator(k, groupForm, updating, ov).(groupAccumulator)
}

func newAccumulator(k aggKind, form stateForm, updating bool, ov *aggOverflow) accumulator {
	isMax := k.fn == AggMax
	switch k.impl {
	case implCount:
		return &count{star: k.fn == AggCountStar}
	case implSumInt:
		return &sumInt{mode: sumBigint, form: form}
	case implSum128:
		return &sumInt{mode: sumDecimal, form: form}
	case implAvg128:
		return &sumInt{mode: sumAvg, form: form, shift: k.outScale - k.inScale}
	case implSumFloat:
		return &sumFloat{f32: k.arg.ID() == arrow.FLOAT32, form: form, ov: ov}
	case implAvgFloat:
		return &sumFloat{avg: true, form: form, ov: ov}
	case implDistinctInt:
		return &distinctInt{form: form}
	case implDistinctStr:
		return &distinctStr{distinct: distinct[string]{form: form}}
	}
	if form == groupForm { // MIN/MAX
		if !updating && rowcodec.IntLike(k.arg) {
			return &minMaxIntGroup{minMaxInt{max: isMax}}
		}
		return &minMaxBytes{max: isMax, updating: updating, str: k.impl == implMinMaxStr}
	}
	switch k.impl {
	case implMinMaxInt:
		return &minMaxInt{max: isMax}
	case implMinMaxFloat:
		return &minMaxFloat{max: isMax}
	case implMinMaxDec:
		return &minMaxDec{max: isMax}
	case implMinMaxStr:
		return &minMaxStr{max: isMax}
	}
	panic(fmt.Sprintf("aggregate: aggregate implementation %d", k.impl))
}

// errRetract is a retraction given to an accumulator of the window form: a planner bug.
func errRetract() error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos,
		"window aggregate: a retraction reached an append-only aggregate")
}

func errBigintRange() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "bigint out of range")
}

func errNumericOverflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "numeric field overflow")
}

// COUNT(*), COUNT(x).

type count struct {
	star bool
	n    []int64
}

func (a *count) grow()         { a.n = append(a.n, 0) }
func (a *count) reset(g int32) { a.n[g] = 0 }

func (a *count) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	n := a.n
	all := a.star || col.NullN() == 0
	switch {
	case neg == nil && all:
		for _, g := range grps {
			n[g]++
		}
	case neg == nil:
		for j, r := range rows {
			if col.IsValid(int(r)) {
				n[grps[j]]++
			}
		}
	default:
		for j, g := range grps {
			if !all && col.IsNull(int(rows[j])) {
				continue
			}
			if neg[j] {
				n[g]--
			} else {
				n[g]++
			}
		}
	}
	return nil
}

func (a *count) merge(dst, src int32) error { a.n[dst] += a.n[src]; return nil }

func (a *count) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(a.n[g])
	return nil
}

func (a *count) result(dst []byte, g int32) ([]byte, error) {
	return rowcodec.AppendOrderedInt(append(dst, 1), a.n[g]), nil
}

func (a *count) encode(dst []byte, g int32) []byte { return binary.AppendVarint(dst, a.n[g]) }

func (a *count) decode(src []byte, g int32) (rest []byte, err error) {
	a.n[g], rest, err = rowcodec.GetVarint(src)
	return rest, err
}

// SUM and AVG over integers and decimals: sumInt, a sum128 and what it computes. Integer arguments cannot
// overflow 128 bits (fewer than 2^63 rows of at most 2^63 each), so only decimals check on the way; the result
// checks its own range (BIGINT, or 38 digits). The window form of SUM(smallint|int) fails at the first row whose
// running sum leaves BIGINT, as int8pl would, and keeps (count, sum) as two varints; the other sums keep the
// sum128 format.

type sumMode uint8

const (
	sumBigint  sumMode = iota // SUM(smallint|int): BIGINT
	sumDecimal                // SUM(bigint|decimal): DECIMAL(38, s)
	sumAvg                    // AVG(integer|decimal): DECIMAL(38, s'), sum * 10^shift / n
)

type sumInt struct {
	sum128
	avg128
	mode  sumMode
	form  stateForm
	shift int32
}

// running reports whether the sum must fit BIGINT after every step (the window form of SUM(smallint|int)).
func (a *sumInt) running() bool { return a.form == windowForm && a.mode == sumBigint }

// fitsBigint reports whether g's sum fits BIGINT.
func (a *sumInt) fitsBigint(g int32) bool { return a.hi[g] == int64(a.lo[g])>>63 }

func (a *sumInt) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if d, ok := col.(*array.Decimal128); ok {
		return a.addDecimals(d, rows, grps, neg)
	}
	if a.running() {
		if neg != nil {
			return errRetract()
		}
		vals := rowcodec.Int64Values(col, &a.scr)
		nulls := col.NullN() > 0
		for j, r := range rows {
			if nulls && col.IsNull(int(r)) {
				continue
			}
			g, v := grps[j], vals[r]
			a.add128(g, v>>63, uint64(v))
			if !a.fitsBigint(g) {
				return errBigintRange()
			}
			a.n[g]++
		}
		return nil
	}
	if neg == nil { // append-only
		a.addInts(col, rows, grps)
		return nil
	}
	nulls := col.NullN() > 0
	vals := rowcodec.Int64Values(col, &a.scr)
	n, hi, lo := a.n, a.hi, a.lo
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, v := grps[j], vals[r]
		if neg[j] {
			l, b := bits.Sub64(lo[g], uint64(v), 0)
			lo[g] = l
			hi[g] -= v>>63 + int64(b)
			n[g]--
			continue
		}
		l, c := bits.Add64(lo[g], uint64(v), 0)
		lo[g] = l
		hi[g] += v>>63 + int64(c)
		n[g]++
	}
	return nil
}

func (a *sumInt) merge(dst, src int32) error {
	if a.add128(dst, a.hi[src], a.lo[src]) {
		return errNumericOverflow()
	}
	if a.running() && !a.fitsBigint(dst) {
		return errBigintRange()
	}
	a.n[dst] += a.n[src]
	return nil
}

// value computes g's result: ok is false for NULL (no value summed).
func (a *sumInt) value(g int32) (v decimal128.Num, ok bool, err error) {
	n := a.n[g]
	if n == 0 {
		return v, false, nil
	}
	hi, lo := a.hi[g], a.lo[g]
	switch a.mode {
	case sumBigint:
		if !a.fitsBigint(g) {
			return v, false, errBigintRange()
		}
		return decimal128.New(hi, lo), true, nil
	case sumDecimal:
		v = decimal128.New(hi, lo)
		if !v.FitsInPrecision(38) {
			return v, false, errNumericOverflow()
		}
		return v, true, nil
	}
	v, err = a.avg(hi, lo, n, a.shift)
	return v, err == nil, err
}

func (a *sumInt) appendTo(b array.Builder, g int32) error {
	v, ok, err := a.value(g)
	switch {
	case err != nil:
		return err
	case !ok:
		b.AppendNull()
	case a.mode == sumBigint:
		b.(*array.Int64Builder).Append(int64(v.LowBits()))
	default:
		b.(*array.Decimal128Builder).Append(v)
	}
	return nil
}

func (a *sumInt) result(dst []byte, g int32) ([]byte, error) {
	v, ok, err := a.value(g)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return append(dst, 0), nil
	case a.mode == sumBigint:
		return rowcodec.AppendOrderedInt(append(dst, 1), int64(v.LowBits())), nil
	}
	return rowcodec.AppendDecimal(append(dst, 1), v), nil
}

func (a *sumInt) encode(dst []byte, g int32) []byte {
	if a.running() {
		return binary.AppendVarint(binary.AppendVarint(dst, a.n[g]), int64(a.lo[g]))
	}
	return a.sum128.encode(dst, g)
}

func (a *sumInt) decode(src []byte, g int32) (rest []byte, err error) {
	if !a.running() {
		return a.sum128.decode(src, g)
	}
	var s int64
	if a.n[g], rest, err = rowcodec.GetVarint(src); err != nil {
		return nil, err
	}
	s, rest, err = rowcodec.GetVarint(rest)
	a.hi[g], a.lo[g] = s>>63, uint64(s)
	return rest, err
}

// sum128 is a 128-bit two's complement sum of int64 or decimal128 values with a count, shared by SUM(bigint),
// SUM(decimal) and AVG over them (sumInt).

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

// avg128 computes AVG over integers and decimals from a sum128 (sumInt); its big integers
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
	if a.num.BitLen() > 127 { // FromBigInt panics on it
		return decimal128.Num{}, errNumericOverflow()
	}
	v := decimal128.FromBigInt(&a.num)
	if !v.FitsInPrecision(38) {
		return decimal128.Num{}, errNumericOverflow()
	}
	return v, nil
}

// SUM and AVG over floats: float64 accumulation; REAL sums round to float32 after each step, which is exactly
// float4 arithmetic (float64 has more than 2*24+2 bits, so the double rounding is harmless). A finite sum and a
// finite value that add up to an infinity overflow (Postgres' float8pl/float4pl raise 22003): aggOverflow
// decides; with errors.mode 'null' the result is NULL (until no value is left, in the group form).
//
// The window form adds every value into the sum, as float8pl does. The group form counts NaN and the infinities
// apart from the finite sum, since a float sum is not retractable once it holds one of them (NaN - NaN is NaN)
// and a count is: the result is NaN if a NaN is in, or both infinities; else the infinity that is in; else the
// finite sum.

type floatAcc struct {
	n, nan, pinf, ninf int64 // nan, pinf, ninf: the group form only
	s                  float64
	bad                bool // the finite sum overflowed; stored as n = -1-n
}

type sumFloat struct {
	f32  bool // SUM(real): REAL steps and result
	avg  bool
	form stateForm
	acc  []floatAcc
	ov   *aggOverflow
}

func (a *sumFloat) grow()         { a.acc = append(a.acc, a.empty()) }
func (a *sumFloat) reset(g int32) { a.acc[g] = a.empty() }

// empty is an accumulator of no values. SUM starts at -0, the identity of IEEE addition, so a sum of -0 is -0 as
// Postgres' (whose sum starts at its first value); AVG's float8_accum starts at 0.
func (a *sumFloat) empty() floatAcc {
	if a.avg {
		return floatAcc{}
	}
	return floatAcc{s: math.Copysign(0, -1)}
}

// add adds v to the sum of c, rounding to REAL for SUM(real); the one overflow check of the float sums.
func (a *sumFloat) add(c *floatAcc, v float64) error {
	old := c.s
	s := old + v
	if a.f32 {
		s = float64(float32(s))
	}
	if math.IsInf(s, 0) && !math.IsInf(old, 0) && !math.IsInf(v, 0) && !c.bad {
		if err := a.ov.overflow(); err != nil {
			return err
		}
		c.bad = true
	}
	c.s = s
	return nil
}

// step adds v to group g, or takes it out (sub).
func (a *sumFloat) step(g int32, v float64, sub bool) error {
	c := &a.acc[g]
	if a.form == windowForm {
		if sub {
			return errRetract()
		}
		if err := a.add(c, v); err != nil {
			return err
		}
		c.n++
		return nil
	}
	d := int64(1)
	if sub {
		d = -1
	}
	c.n += d
	if c.n == 0 { // no value left: start afresh (no rounding left over from retracted values)
		*c = a.empty()
		return nil
	}
	switch {
	case v != v:
		c.nan += d
	case math.IsInf(v, 1):
		c.pinf += d
	case math.IsInf(v, -1):
		c.ninf += d
	case sub:
		return a.add(c, -v) // x - v is x + (-v) exactly
	default:
		return a.add(c, v)
	}
	return nil
}

func (a *sumFloat) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	nulls := col.NullN() > 0
	switch c := col.(type) {
	case *array.Float64:
		vals := c.Float64Values()
		for j, r := range rows {
			if !nulls || c.IsValid(int(r)) {
				if err := a.step(grps[j], vals[r], neg != nil && neg[j]); err != nil {
					return err
				}
			}
		}
	case *array.Float32:
		vals := c.Float32Values()
		for j, r := range rows {
			if !nulls || c.IsValid(int(r)) {
				if err := a.step(grps[j], float64(vals[r]), neg != nil && neg[j]); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("aggregate: float sum over %s", col.DataType())
	}
	return nil
}

func (a *sumFloat) merge(dst, src int32) error {
	d, s := &a.acc[dst], &a.acc[src]
	d.bad = d.bad || s.bad
	if err := a.add(d, s.s); err != nil {
		return err
	}
	d.n += s.n
	return nil
}

// value is g's result; ok is false for NULL.
func (a *sumFloat) value(g int32) (v float64, ok bool) {
	c := &a.acc[g]
	if c.n == 0 || c.bad {
		return 0, false
	}
	v = c.s
	switch {
	case c.nan > 0 || (c.pinf > 0 && c.ninf > 0):
		v = math.NaN()
	case c.pinf > 0:
		v = math.Inf(1)
	case c.ninf > 0:
		v = math.Inf(-1)
	}
	if a.avg {
		v /= float64(c.n)
	} else if a.f32 {
		v = float64(float32(v))
	}
	return v, true
}

func (a *sumFloat) appendTo(b array.Builder, g int32) error {
	v, ok := a.value(g)
	switch {
	case !ok:
		b.AppendNull()
	case a.f32:
		b.(*array.Float32Builder).Append(float32(v))
	default:
		b.(*array.Float64Builder).Append(v)
	}
	return nil
}

func (a *sumFloat) result(dst []byte, g int32) ([]byte, error) {
	v, ok := a.value(g)
	if !ok {
		return append(dst, 0), nil
	}
	return binary.BigEndian.AppendUint64(append(dst, 1), rowcodec.ExactOrderedFloat(v)), nil
}

func (a *sumFloat) encode(dst []byte, g int32) []byte {
	c := &a.acc[g]
	n := c.n
	if c.bad {
		n = -1 - n
	}
	if a.form == groupForm {
		for _, v := range [...]int64{n, c.nan, c.pinf, c.ninf} {
			dst = binary.AppendVarint(dst, v)
		}
	} else {
		dst = binary.AppendVarint(dst, n)
	}
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(c.s))
}

func (a *sumFloat) decode(src []byte, g int32) (rest []byte, err error) {
	c := &a.acc[g]
	counts := []*int64{&c.n}
	if a.form == groupForm {
		counts = append(counts, &c.nan, &c.pinf, &c.ninf)
	}
	rest = src
	for _, p := range counts {
		if *p, rest, err = rowcodec.GetVarint(rest); err != nil {
			return nil, err
		}
	}
	if c.bad = c.n < 0; c.bad {
		c.n = -1 - c.n
	}
	var u uint64
	u, rest, err = rowcodec.GetU64(rest)
	c.s = math.Float64frombits(u)
	return rest, err
}

// COUNT(DISTINCT x): a count per distinct value per group, so a retraction knows when a value is gone. distinct
// holds the counted sets of canonical value bytes (distinctStr: strings, decimals, ...); 8-byte values (integers,
// booleans, floats by canonical bits) have their own open-addressing sets (distinctInt, accum_distinct.go) in the
// same state format. The window form never retracts and stores the values
// alone; the group form stores each with its count.

type distinct[K comparable] struct {
	form stateForm
	sets []map[K]int64
	// lens[g] is len(sets[g]), kept beside the maps so that a result (asked for every touched group twice per
	// batch) reads a dense slice instead of each map's header.
	lens []int64
}

func (a *distinct[K]) grow()         { a.sets, a.lens = append(a.sets, nil), append(a.lens, 0) }
func (a *distinct[K]) reset(g int32) { a.sets[g], a.lens[g] = nil, 0 }

// set returns group g's set, creating it.
func (a *distinct[K]) set(g int32) map[K]int64 {
	s := a.sets[g]
	if s == nil {
		s = make(map[K]int64)
		a.sets[g] = s
	}
	return s
}

// step adds a copy of v to group g, or takes one out (sub).
func (a *distinct[K]) step(g int32, v K, sub bool) {
	if !sub {
		s := a.set(g)
		n := len(s)
		s[v]++
		a.lens[g] += int64(len(s) - n)
		return
	}
	s := a.sets[g]
	if c, ok := s[v]; c > 1 {
		s[v] = c - 1
	} else if ok {
		delete(s, v)
		a.lens[g]--
	}
}

func (a *distinct[K]) merge(dst, src int32) error {
	for v, c := range a.sets[src] {
		a.set(dst)[v] += c
	}
	a.lens[dst] = int64(len(a.sets[dst]))
	return nil
}

func (a *distinct[K]) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(a.lens[g])
	return nil
}

func (a *distinct[K]) result(dst []byte, g int32) ([]byte, error) {
	return rowcodec.AppendOrderedInt(append(dst, 1), a.lens[g]), nil
}

// encodeWith writes g's set: uvarint count, then per value put(value) and, in the group form, uvarint copies.
func (a *distinct[K]) encodeWith(dst []byte, g int32, put func([]byte, K) []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(a.sets[g])))
	for v, c := range a.sets[g] {
		dst = put(dst, v)
		if a.form == groupForm {
			dst = binary.AppendUvarint(dst, uint64(c))
		}
	}
	return dst
}

// decodeWith reads what encodeWith wrote, values with get.
func (a *distinct[K]) decodeWith(src []byte, g int32, get func([]byte) (K, []byte, error)) ([]byte, error) {
	n, rest, err := rowcodec.GetUvarint(src)
	if err != nil {
		return nil, err
	}
	a.sets[g], a.lens[g] = nil, 0
	if n > 0 {
		a.sets[g] = make(map[K]int64, min(n, uint64(len(rest))))
	}
	for ; n > 0; n-- {
		var v K
		c := uint64(1)
		if v, rest, err = get(rest); err != nil {
			return nil, err
		}
		if a.form == groupForm {
			if c, rest, err = rowcodec.GetUvarint(rest); err != nil {
				return nil, err
			}
		}
		a.sets[g][v] = int64(c)
	}
	a.lens[g] = int64(len(a.sets[g]))
	return rest, nil
}

type distinctStr struct {
	distinct[string]
	buf []byte
	scr []int64
}

func (a *distinctStr) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	enc, err := rowcodec.NewValueAppender(col, &a.scr, false)
	if err != nil {
		return err
	}
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g := grps[j]
		a.buf = enc(a.buf[:0], int(r))
		if neg == nil || !neg[j] {
			if c, ok := a.sets[g][string(a.buf)]; ok { // no key allocation for a value already in
				a.sets[g][string(a.buf)] = c + 1
				continue
			}
		}
		a.step(g, string(a.buf), neg != nil && neg[j])
	}
	return nil
}

func (a *distinctStr) encode(dst []byte, g int32) []byte {
	return a.encodeWith(dst, g, rowcodec.AppendLenPrefixed)
}

func (a *distinctStr) decode(src []byte, g int32) ([]byte, error) {
	return a.decodeWith(src, g, rowcodec.GetString)
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
