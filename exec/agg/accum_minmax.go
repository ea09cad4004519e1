package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/exec/rowcodec"
)

// MIN/MAX has two accumulators, one per form: the window form keeps each group's extreme as a typed value
// (minMaxInt, minMaxFloat, minMaxDec, minMaxStr: integers compare as integers, floats with NaN above every other
// value and -0 equal to 0, so the first of equal values stays); the group form keeps order-preserving bytes
// (minMaxBytes), which a changelog needs to retract the extreme and find the next one. (The group form orders a
// float -0 below 0 and keeps one NaN; both forms keep the state formats earlier releases wrote.)

// MIN/MAX over integer-like values (and booleans as 0/1).

type minMaxInt struct {
	max bool
	has []bool
	v   []int64
	scr []int64
}

func (a *minMaxInt) grow()         { a.has, a.v = append(a.has, false), append(a.v, 0) }
func (a *minMaxInt) reset(g int32) { a.has[g], a.v[g] = false, 0 }

func (a *minMaxInt) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if neg != nil {
		return errRetract()
	}
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

func (a *minMaxInt) merge(dst, src int32) error {
	if x := a.v[src]; a.has[src] && (!a.has[dst] || (a.max && x > a.v[dst]) || (!a.max && x < a.v[dst])) {
		a.has[dst], a.v[dst] = true, x
	}
	return nil
}

func (a *minMaxInt) appendTo(b array.Builder, g int32) error {
	if !a.has[g] {
		b.AppendNull()
		return nil
	}
	rowcodec.AppendInt64(b, a.v[g])
	return nil
}

func (a *minMaxInt) encode(dst []byte, g int32) []byte {
	return binary.AppendVarint(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxInt) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	a.v[g], rest, err = rowcodec.GetVarint(rest)
	return rest, err
}

// MIN/MAX over floats: NaN is above every other value, as in Postgres.

type minMaxFloat struct {
	max bool
	has []bool
	v   []float64
}

func (a *minMaxFloat) grow()         { a.has, a.v = append(a.has, false), append(a.v, 0) }
func (a *minMaxFloat) reset(g int32) { a.has[g], a.v[g] = false, 0 }

// floatLess orders NaN last.
func floatLess(x, y float64) bool {
	if x != x {
		return false
	}
	return y != y || x < y
}

func (a *minMaxFloat) better(x, cur float64) bool {
	if a.max {
		return floatLess(cur, x)
	}
	return floatLess(x, cur)
}

func (a *minMaxFloat) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if neg != nil {
		return errRetract()
	}
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

func (a *minMaxFloat) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxFloat) appendTo(b array.Builder, g int32) error {
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

func (a *minMaxFloat) encode(dst []byte, g int32) []byte {
	return binary.BigEndian.AppendUint64(rowcodec.AppendFlag(dst, a.has[g]), math.Float64bits(a.v[g]))
}

func (a *minMaxFloat) decode(src []byte, g int32) (rest []byte, err error) {
	var u uint64
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	u, rest, err = rowcodec.GetU64(rest)
	a.v[g] = math.Float64frombits(u)
	return rest, err
}

// MIN/MAX over decimals (one scale per column, so unscaled values compare directly).

type minMaxDec struct {
	max bool
	has []bool
	v   []decimal128.Num
}

func (a *minMaxDec) grow()         { a.has, a.v = append(a.has, false), append(a.v, decimal128.Num{}) }
func (a *minMaxDec) reset(g int32) { a.has[g], a.v[g] = false, decimal128.Num{} }

func (a *minMaxDec) better(x, cur decimal128.Num) bool {
	if a.max {
		return x.Greater(cur)
	}
	return x.Less(cur)
}

func (a *minMaxDec) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if neg != nil {
		return errRetract()
	}
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

func (a *minMaxDec) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxDec) appendTo(b array.Builder, g int32) error {
	if !a.has[g] {
		b.AppendNull()
		return nil
	}
	b.(*array.Decimal128Builder).Append(a.v[g])
	return nil
}

func (a *minMaxDec) encode(dst []byte, g int32) []byte {
	return rowcodec.AppendDecimal(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxDec) decode(src []byte, g int32) (rest []byte, err error) {
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

type minMaxStr struct {
	max bool
	has []bool
	v   []string
}

func (a *minMaxStr) grow()         { a.has, a.v = append(a.has, false), append(a.v, "") }
func (a *minMaxStr) reset(g int32) { a.has[g], a.v[g] = false, "" }

func (a *minMaxStr) better(x, cur string) bool {
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

func (a *minMaxStr) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	if neg != nil {
		return errRetract()
	}
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

func (a *minMaxStr) merge(dst, src int32) error {
	if a.has[src] && (!a.has[dst] || a.better(a.v[src], a.v[dst])) {
		a.has[dst], a.v[dst] = true, a.v[src]
	}
	return nil
}

func (a *minMaxStr) appendTo(b array.Builder, g int32) error {
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

func (a *minMaxStr) encode(dst []byte, g int32) []byte {
	return rowcodec.AppendLenPrefixed(rowcodec.AppendFlag(dst, a.has[g]), a.v[g])
}

func (a *minMaxStr) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	a.v[g], rest, err = rowcodec.GetString(rest)
	return rest, err
}

// minMaxBytes, the group form: values are kept as order-preserving bytes: the canonical bytes of package rowcodec for
// fixed-width types (integers, dates, timestamps and booleans as ordered integers, floats with NaN last, decimals),
// which sort like the values, and the raw bytes for strings and binary (byte order, the C collation). Over an
// append-only input a group keeps only its extreme; over a changelog it keeps every distinct value with its count,
// ascending, so retracting the extreme finds the next one.

type valueCount struct {
	v string
	n int64
}

type minMaxBytes struct {
	max, updating, str bool
	has                []bool         // append-only
	ext                []string       // append-only: the extreme
	sets               [][]valueCount // updating
	buf                []byte
	scr                []int64
}

func (a *minMaxBytes) grow() {
	if a.updating {
		a.sets = append(a.sets, nil)
	} else {
		a.has, a.ext = append(a.has, false), append(a.ext, "")
	}
}

func (a *minMaxBytes) reset(g int32) {
	if a.updating {
		a.sets[g] = nil
	} else {
		a.has[g], a.ext[g] = false, ""
	}
}

// values returns the accessor of col's order-preserving bytes; the string it returns views a scratch buffer or the
// batch and must be cloned to be kept.
func (a *minMaxBytes) values(col arrow.Array) (func(i int) string, error) {
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

func (a *minMaxBytes) better(x, cur string) bool {
	if a.max {
		return x > cur
	}
	return x < cur
}

func (a *minMaxBytes) update(col arrow.Array, rows, grps []int32, neg []bool) error {
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
		i, found := slices.BinarySearchFunc(set, x, func(e valueCount, x string) int { return strings.Compare(e.v, x) })
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
			a.sets[g] = slices.Insert(set, i, valueCount{v: strings.Clone(x), n: 1})
		}
	}
	return nil
}

func (a *minMaxBytes) result(dst []byte, g int32) ([]byte, error) {
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

func (a *minMaxBytes) encode(dst []byte, g int32) []byte {
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

func (a *minMaxBytes) decode(src []byte, g int32) (rest []byte, err error) {
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
	set := make([]valueCount, cnt)
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

// minMaxIntGroup is the group form over an append-only input of an integer-like argument (integers, dates,
// timestamps): the window form's extreme as an int64 (minMaxInt: its update, grow and reset), where minMaxBytes would
// encode every row and keep a string per group. Nexmark q17's MIN and MAX of the price per (auction, day) kept 2.4M
// strings at 20M events, each a pointer the collector scans. Its state value is minMaxBytes' (the flag, then the 8
// ordered bytes length-prefixed), not the window form's, so a checkpoint of either group form restores into the other.
type minMaxIntGroup struct{ minMaxInt }

func (a *minMaxIntGroup) result(dst []byte, g int32) ([]byte, error) {
	if !a.has[g] {
		return append(dst, 0), nil
	}
	return rowcodec.AppendOrderedInt(append(dst, 1), a.v[g]), nil
}

func (a *minMaxIntGroup) encode(dst []byte, g int32) []byte {
	dst = rowcodec.AppendFlag(dst, a.has[g])
	if !a.has[g] {
		return binary.AppendUvarint(dst, 0)
	}
	return rowcodec.AppendOrderedInt(binary.AppendUvarint(dst, 8), a.v[g])
}

func (a *minMaxIntGroup) decode(src []byte, g int32) (rest []byte, err error) {
	if a.has[g], rest, err = rowcodec.GetFlag(src); err != nil {
		return nil, err
	}
	var v string
	if v, rest, err = rowcodec.GetString(rest); err != nil {
		return nil, err
	}
	switch {
	case !a.has[g] && len(v) == 0:
		a.v[g] = 0
	case a.has[g] && len(v) == 8:
		a.v[g] = rowcodec.OrderedInt(rowcodec.StringBytes(v))
	default:
		return nil, rowcodec.ErrState
	}
	return rest, nil
}
