package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/clinksql/clinksql/exec/rowcodec"
)

// The retractable accumulators of the group aggregate. Like the window aggregate's (accum.go) they keep
// their state column-wise, one Go slice per field indexed by group id, and update from a batch's (row, group)
// assignments in one tight loop per batch; unlike them, each assignment may be a retraction, and a result is
// produced as canonical bytes (package rowcodec) rather than into a builder, so that the operator can compare a
// group's result before and after a batch byte for byte and decode the one it emits with rowcodec.Encoding.
//
// Updates run in row order, so a float sum sees the same sequence of additions and subtractions whatever the
// batching, and a restore (which stores the exact bits) continues it exactly.
type gaAgg interface {
	grow()
	reset(g int32)
	// update folds col[rows[j]] into group grps[j], or takes it out where neg != nil && neg[j]. FILTER has been
	// applied to the assignments already; NULL arguments are skipped here. col is nil for COUNT(*).
	update(col arrow.Array, rows, grps []int32, neg []bool) error
	// result appends g's result as one key column's canonical bytes: 0x00 for NULL, else 0x01 and the value.
	result(dst []byte, g int32) ([]byte, error)
	encode(dst []byte, g int32) []byte
	decode(src []byte, g int32) ([]byte, error)
}

// newGaAgg returns the accumulator of k; updating says whether it must survive retractions (MIN/MAX then keep
// every value).
func newGaAgg(k aggKind, updating bool, ov *aggOverflow) gaAgg {
	switch k.impl {
	case implCount:
		return &gaCount{star: k.fn == AggCountStar}
	case implSumInt:
		return &gaSum128{mode: sumBigint}
	case implSum128:
		return &gaSum128{mode: sumDecimal}
	case implAvg128:
		return &gaSum128{mode: sumAvg, shift: k.outScale - k.inScale}
	case implSumFloat:
		return &gaSumFloat{f32: k.arg.ID() == arrow.FLOAT32, ov: ov}
	case implAvgFloat:
		return &gaSumFloat{avg: true, ov: ov}
	case implMinMaxInt, implMinMaxFloat, implMinMaxDec, implMinMaxStr:
		return &gaMinMax{max: k.fn == AggMax, updating: updating, str: k.impl == implMinMaxStr}
	case implDistinctInt:
		return &gaDistinctInt{}
	case implDistinctStr:
		return &gaDistinctStr{}
	}
	panic(fmt.Sprintf("group aggregate: aggregate implementation %d", k.impl))
}

// COUNT(*), COUNT(x).

type gaCount struct {
	star bool
	n    []int64
}

func (a *gaCount) grow()         { a.n = append(a.n, 0) }
func (a *gaCount) reset(g int32) { a.n[g] = 0 }

func (a *gaCount) update(col arrow.Array, rows, grps []int32, neg []bool) error {
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

func (a *gaCount) result(dst []byte, g int32) ([]byte, error) {
	return rowcodec.AppendOrderedInt(append(dst, 1), a.n[g]), nil
}

func (a *gaCount) encode(dst []byte, g int32) []byte { return binary.AppendVarint(dst, a.n[g]) }

func (a *gaCount) decode(src []byte, g int32) (rest []byte, err error) {
	a.n[g], rest, err = rowcodec.GetVarint(src)
	return rest, err
}

// SUM and AVG over integers and decimals: a 128-bit two's complement sum and the count of values summed. Integer
// arguments cannot overflow 128 bits (fewer than 2^63 rows of at most 2^63 each), so only decimals check on the way;
// the result checks its own range (BIGINT, or 38 digits).

type sumMode uint8

const (
	sumBigint  sumMode = iota // SUM(smallint|int): BIGINT
	sumDecimal                // SUM(bigint|decimal): DECIMAL(38, s)
	sumAvg                    // AVG(integer|decimal): DECIMAL(38, s'), sum * 10^shift / n
)

// gaSum128 keeps the window aggregate's sum128 (grow, reset, add128, encode, decode) and computes AVG as it does
// (avg128).
type gaSum128 struct {
	sum128
	avg128
	mode  sumMode
	shift int32
}

func (a *gaSum128) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if d, ok := col.(*array.Decimal128); ok {
		return a.addDecimals(d, rows, grps, neg)
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

func (a *gaSum128) result(dst []byte, g int32) ([]byte, error) {
	if a.n[g] == 0 {
		return append(dst, 0), nil
	}
	hi, lo := a.hi[g], a.lo[g]
	switch a.mode {
	case sumBigint:
		if hi != int64(lo)>>63 {
			return nil, errBigintRange()
		}
		return rowcodec.AppendOrderedInt(append(dst, 1), int64(lo)), nil
	case sumDecimal:
		v := decimal128.New(hi, lo)
		if !v.FitsInPrecision(38) {
			return nil, errNumericOverflow()
		}
		return rowcodec.AppendDecimal(append(dst, 1), v), nil
	}
	v, err := a.avg(hi, lo, a.n[g], a.shift)
	if err != nil {
		return nil, err
	}
	return rowcodec.AppendDecimal(append(dst, 1), v), nil
}

// SUM and AVG over floats. NaN and the infinities are counted apart from the finite sum: a float sum is not
// retractable once it holds one of them (NaN - NaN is NaN), a count is. The result is NaN if a NaN is in, or both
// infinities; else the infinity that is in; else the finite sum. REAL sums round to float32 after each step, as
// float4 arithmetic does. A step of the finite sum that gives an infinity overflows (Postgres' 22003):
// aggOverflow decides; with errors.mode 'null' the result is NULL until no value is left.

type gaFloatAcc struct {
	n, nan, pinf, ninf int64
	s                  float64
	bad                bool // the finite sum overflowed; stored as n = -1-n
}

type gaSumFloat struct {
	f32 bool // SUM(real): REAL steps and result
	avg bool
	acc []gaFloatAcc
	ov  *aggOverflow
}

func (a *gaSumFloat) grow()         { a.acc = append(a.acc, a.empty()) }
func (a *gaSumFloat) reset(g int32) { a.acc[g] = a.empty() }

// empty is an accumulator of no values. SUM starts at -0, the identity of IEEE addition, so a sum of -0 is -0 as
// Postgres' (whose sum starts at its first value); AVG's float8_accum starts at 0.
func (a *gaSumFloat) empty() gaFloatAcc {
	if a.avg {
		return gaFloatAcc{}
	}
	return gaFloatAcc{s: math.Copysign(0, -1)}
}

func (a *gaSumFloat) step(g int32, v float64, sub bool) error {
	c := &a.acc[g]
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
	default:
		s := c.s + v
		if sub {
			s = c.s - v
		}
		if a.f32 {
			s = float64(float32(s))
		}
		if math.IsInf(s, 0) && !math.IsInf(c.s, 0) && !c.bad {
			if err := a.ov.overflow(); err != nil {
				return err
			}
			c.bad = true
		}
		c.s = s
	}
	return nil
}

func (a *gaSumFloat) update(col arrow.Array, rows, grps []int32, neg []bool) error {
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
		return fmt.Errorf("group aggregate: float sum over %s", col.DataType())
	}
	return nil
}

func (a *gaSumFloat) result(dst []byte, g int32) ([]byte, error) {
	c := &a.acc[g]
	if c.n == 0 || c.bad {
		return append(dst, 0), nil
	}
	v := c.s
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
	return binary.BigEndian.AppendUint64(append(dst, 1), rowcodec.ExactOrderedFloat(v)), nil
}

func (a *gaSumFloat) encode(dst []byte, g int32) []byte {
	c := &a.acc[g]
	n := c.n
	if c.bad {
		n = -1 - n
	}
	for _, v := range [...]int64{n, c.nan, c.pinf, c.ninf} {
		dst = binary.AppendVarint(dst, v)
	}
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(c.s))
}

func (a *gaSumFloat) decode(src []byte, g int32) (rest []byte, err error) {
	c := &a.acc[g]
	rest = src
	for _, p := range [...]*int64{&c.n, &c.nan, &c.pinf, &c.ninf} {
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

// MIN/MAX. Values are kept as order-preserving bytes: the canonical bytes of package rowcodec for fixed-width types
// (integers, dates, timestamps and booleans as ordered integers, floats with NaN last, decimals), which sort like
// the values, and the raw bytes for strings and binary (byte order, the C collation). Over an append-only input a
// group keeps only its extreme; over a changelog it keeps every distinct value with its count, ascending, so
// retracting the extreme finds the next one.

type gaMMEntry struct {
	v string
	n int64
}

type gaMinMax struct {
	max, updating, str bool
	has                []bool        // append-only
	ext                []string      // append-only: the extreme
	sets               [][]gaMMEntry // updating
	buf                []byte
	scr                []int64
}

func (a *gaMinMax) grow() {
	if a.updating {
		a.sets = append(a.sets, nil)
	} else {
		a.has, a.ext = append(a.has, false), append(a.ext, "")
	}
}

func (a *gaMinMax) reset(g int32) {
	if a.updating {
		a.sets[g] = nil
	} else {
		a.has[g], a.ext[g] = false, ""
	}
}

// values returns the accessor of col's order-preserving bytes; the string it returns views a scratch buffer or the
// batch and must be cloned to be kept.
func (a *gaMinMax) values(col arrow.Array) (func(i int) string, error) {
	if value := stringValues(col); value != nil {
		return value, nil
	}
	enc, err := rowcodec.NewValueAppender(col, &a.scr, true)
	if err != nil {
		return nil, err
	}
	return func(i int) string {
		a.buf = enc(a.buf[:0], i)
		return rowcodec.UnsafeString(a.buf)
	}, nil
}

func (a *gaMinMax) better(x, cur string) bool {
	if a.max {
		return x > cur
	}
	return x < cur
}

func (a *gaMinMax) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	value, err := a.values(col)
	if err != nil {
		return err
	}
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, x := grps[j], value(int(r))
		if !a.updating {
			if !a.has[g] || a.better(x, a.ext[g]) {
				a.has[g], a.ext[g] = true, strings.Clone(x)
			}
			continue
		}
		set := a.sets[g]
		i, found := slices.BinarySearchFunc(set, x, func(e gaMMEntry, x string) int { return strings.Compare(e.v, x) })
		switch {
		case neg != nil && neg[j]:
			if !found { // not in the group: an inconsistent changelog, which the row count already caught
				continue
			}
			if set[i].n--; set[i].n == 0 {
				a.sets[g] = slices.Delete(set, i, i+1)
			}
		case found:
			set[i].n++
		default:
			a.sets[g] = slices.Insert(set, i, gaMMEntry{v: strings.Clone(x), n: 1})
		}
	}
	return nil
}

func (a *gaMinMax) result(dst []byte, g int32) ([]byte, error) {
	var v string
	if a.updating {
		set := a.sets[g]
		if len(set) == 0 {
			return append(dst, 0), nil
		}
		v = set[0].v
		if a.max {
			v = set[len(set)-1].v
		}
	} else {
		if !a.has[g] {
			return append(dst, 0), nil
		}
		v = a.ext[g]
	}
	dst = append(dst, 1)
	if a.str {
		return rowcodec.AppendLenPrefixed(dst, v), nil
	}
	return append(dst, v...), nil
}

func (a *gaMinMax) encode(dst []byte, g int32) []byte {
	if !a.updating {
		return rowcodec.AppendLenPrefixed(rowcodec.AppendFlag(dst, a.has[g]), a.ext[g])
	}
	set := a.sets[g]
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	for _, e := range set {
		dst = binary.AppendUvarint(rowcodec.AppendLenPrefixed(dst, e.v), uint64(e.n))
	}
	return dst
}

func (a *gaMinMax) decode(src []byte, g int32) (rest []byte, err error) {
	if !a.updating {
		if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
			return nil, err
		}
		a.ext[g], rest, err = rowcodec.GetString(rest)
		return rest, err
	}
	var cnt uint64
	if cnt, rest, err = rowcodec.GetUvarint(src); err != nil {
		return nil, err
	}
	if cnt > uint64(len(rest)) {
		return nil, rowcodec.ErrState
	}
	set := make([]gaMMEntry, cnt)
	for i := range set {
		if set[i].v, rest, err = rowcodec.GetString(rest); err != nil {
			return nil, err
		}
		var n uint64
		if n, rest, err = rowcodec.GetUvarint(rest); err != nil {
			return nil, err
		}
		set[i].n = int64(n)
	}
	a.sets[g] = set
	return rest, nil
}

// COUNT(DISTINCT x): a count per distinct value, so a retraction knows when a value is gone. gaDistinct holds the
// counted sets, of 8-byte values (gaDistinctInt: integers, booleans, floats by canonical bits) or of canonical value
// bytes (gaDistinctStr: anything else).

type gaDistinct[K comparable] struct {
	sets []map[K]int64
}

func (a *gaDistinct[K]) grow()         { a.sets = append(a.sets, nil) }
func (a *gaDistinct[K]) reset(g int32) { a.sets[g] = nil }

// set returns group g's set, creating it.
func (a *gaDistinct[K]) set(g int32) map[K]int64 {
	s := a.sets[g]
	if s == nil {
		s = make(map[K]int64)
		a.sets[g] = s
	}
	return s
}

func (a *gaDistinct[K]) result(dst []byte, g int32) ([]byte, error) {
	return rowcodec.AppendOrderedInt(append(dst, 1), int64(len(a.sets[g]))), nil
}

// encodeWith writes g's set: uvarint count, then per value put(value) and uvarint copies.
func (a *gaDistinct[K]) encodeWith(dst []byte, g int32, put func([]byte, K) []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(a.sets[g])))
	for v, c := range a.sets[g] {
		dst = binary.AppendUvarint(put(dst, v), uint64(c))
	}
	return dst
}

// decodeWith reads what encodeWith wrote, values with get.
func (a *gaDistinct[K]) decodeWith(src []byte, g int32, get func([]byte) (K, []byte, error)) ([]byte, error) {
	n, rest, err := rowcodec.GetUvarint(src)
	if err != nil {
		return nil, err
	}
	a.sets[g] = nil
	if n > 0 {
		a.sets[g] = make(map[K]int64, min(n, uint64(len(rest))))
	}
	for ; n > 0; n-- {
		var v K
		var c uint64
		if v, rest, err = get(rest); err != nil {
			return nil, err
		}
		if c, rest, err = rowcodec.GetUvarint(rest); err != nil {
			return nil, err
		}
		a.sets[g][v] = int64(c)
	}
	return rest, nil
}

type gaDistinctInt struct {
	gaDistinct[int64]
	scr []int64
}

func (a *gaDistinctInt) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	vals := distinctInts(col, &a.scr)
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && col.IsNull(int(r)) {
			continue
		}
		g, v := grps[j], vals[r]
		if neg != nil && neg[j] {
			s := a.sets[g]
			if c, ok := s[v]; c > 1 {
				s[v] = c - 1
			} else if ok {
				delete(s, v)
			}
			continue
		}
		a.set(g)[v]++
	}
	return nil
}

func (a *gaDistinctInt) encode(dst []byte, g int32) []byte {
	return a.encodeWith(dst, g, binary.AppendVarint)
}

func (a *gaDistinctInt) decode(src []byte, g int32) ([]byte, error) {
	return a.decodeWith(src, g, rowcodec.GetVarint)
}

type gaDistinctStr struct {
	gaDistinct[string]
	buf []byte
	scr []int64
}

func (a *gaDistinctStr) update(col arrow.Array, rows, grps []int32, neg []bool) error {
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
		if neg != nil && neg[j] {
			s := a.sets[g]
			if c, ok := s[string(a.buf)]; c > 1 {
				s[string(a.buf)] = c - 1
			} else if ok {
				delete(s, string(a.buf))
			}
			continue
		}
		a.set(g)[string(a.buf)]++
	}
	return nil
}

func (a *gaDistinctStr) encode(dst []byte, g int32) []byte {
	return a.encodeWith(dst, g, rowcodec.AppendLenPrefixed)
}

func (a *gaDistinctStr) decode(src []byte, g int32) ([]byte, error) {
	return a.decodeWith(src, g, rowcodec.GetString)
}
