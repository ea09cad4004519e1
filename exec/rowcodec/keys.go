package rowcodec

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Canonical value bytes. Keyed operators name a group's key, a COUNT(DISTINCT) value and the state keys by these
// bytes; they are stable across processes and releases (state written by one is read by the next).
//
//	key column      0x00 for NULL, else 0x01 then the value
//	integer-like    8 bytes big endian of int64(v) with the sign bit flipped (int8..int64, uint8..uint32, date32,
//	                date64, timestamp of any unit: the stored integer); so bytes sort like the numbers
//	uint64          8 bytes big endian
//	float           8 bytes: the float64 (float32 widened) with one NaN, sign-flipped to sort; in key bytes -0 is
//	                0 (keys compare as SQL does), in row bytes -0 stays -0 (a row is retracted as it was emitted,
//	                and prints as it was written)
//	decimal128      16 bytes: high word sign-flipped, low word, big endian
//	boolean         1 byte
//	string, binary  uvarint length, then the bytes
//
// A key of no columns is empty. Key bytes (NewKeyEncoding) name groups, partitions and join keys; row bytes
// (RowEncoding, exact set) keep whole rows. They differ only in a float -0, so a group whose first row had a -0
// key keeps that row's exact bytes too, to print its key as Postgres does (KeyRows.ExactOf).

// KeyMode is how an operator finds the group of a key.
type KeyMode uint8

const (
	KeyNone  KeyMode = iota // no GROUP BY keys besides the window: one group per window
	KeyInt                  // one integer-like key column: groups found by int64 (the fast path)
	KeyBytes                // anything else: groups found by canonical bytes
)

// Encoding is how an operator finds and rebuilds the key of a row.
type Encoding struct {
	Types []arrow.DataType
	Mode  KeyMode
	// Exact: row bytes (a float -0 stays -0); else key bytes (-0 is 0).
	Exact bool
}

func NewKeyEncoding(types []arrow.DataType) Encoding {
	e := Encoding{Types: types, Mode: KeyBytes}
	switch {
	case len(types) == 0:
		e.Mode = KeyNone
	case len(types) == 1 && IntLike(types[0]):
		e.Mode = KeyInt
	}
	return e
}

// IntLike reports whether values of t are integers that fit int64 and encode as such.
func IntLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.DATE32,
		arrow.DATE64, arrow.TIMESTAMP:
		return true
	}
	return false
}

// KeyType reports whether values of t can be a key of a keyed operator (GROUP BY, join, PARTITION BY): exactly
// the types exec.HashKeys hashes and the canonical key bytes encode. The planner checks keys with it.
func KeyType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT32, arrow.UINT64, arrow.TIMESTAMP, arrow.DATE32,
		arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY:
		return true
	}
	return false
}

// RowType reports whether the canonical codec encodes values of t and decodes them back, so that a row with a
// column of type t can be kept as canonical bytes (the joins' and Top-N's rows). Fixed-width values sort like their
// bytes; Top-N makes strings and binary do so by escaping them. A nested value (nested.go) is kept and decoded but
// does not sort like its bytes.
func RowType(t arrow.DataType) bool {
	if IntLike(t) {
		return true
	}
	switch t.ID() {
	case arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING,
		arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return Nested(t) && nestedRowType(t)
}

// RowEncoding is the encoding of whole rows of sc: every column with a NULL marker (the key format over all
// columns, bytes mode even for one integer), and the indexes of all columns, to load rows with. A column whose type
// is not a RowType fails with unsupported(its field).
func RowEncoding(sc *arrow.Schema, unsupported func(f arrow.Field) error) (Encoding, []int, error) {
	types := make([]arrow.DataType, sc.NumFields())
	cols := make([]int, sc.NumFields())
	for i, f := range sc.Fields() {
		if !RowType(f.Type) {
			return Encoding{}, nil, unsupported(f)
		}
		types[i], cols[i] = f.Type, i
	}
	return Encoding{Types: types, Mode: KeyBytes, Exact: true}, cols, nil
}

const signBit = uint64(1) << 63

// Int64Values returns the values of an integer-like (or boolean) array as int64s: the array's own buffer for
// int64 and timestamps, else a conversion into scratch. Values under NULLs are unspecified.
func Int64Values(arr arrow.Array, scratch *[]int64) []int64 {
	n := arr.Len()
	conv := func() []int64 {
		if cap(*scratch) < n {
			*scratch = make([]int64, n)
		}
		return (*scratch)[:n]
	}
	switch a := arr.(type) {
	case *array.Int64:
		return a.Int64Values()
	case *array.Timestamp:
		v := a.TimestampValues()
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	case *array.Date64:
		v := a.Date64Values()
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	case *array.Int32:
		out := conv()
		for i, v := range a.Int32Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Int16:
		out := conv()
		for i, v := range a.Int16Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Int8:
		out := conv()
		for i, v := range a.Int8Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Uint32:
		out := conv()
		for i, v := range a.Uint32Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Uint16:
		out := conv()
		for i, v := range a.Uint16Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Uint8:
		out := conv()
		for i, v := range a.Uint8Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Date32:
		out := conv()
		for i, v := range a.Date32Values() {
			out[i] = int64(v)
		}
		return out
	case *array.Boolean:
		out := conv()
		for i := range out {
			out[i] = 0
			if a.Value(i) {
				out[i] = 1
			}
		}
		return out
	}
	panic(fmt.Sprintf("window aggregate: %s is not integer-like", arr.DataType()))
}

// AppendInt64 appends v to an integer-like (or boolean) builder.
func AppendInt64(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v)
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint8Builder:
		b.Append(uint8(v))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v))
	case *array.Date64Builder:
		b.Append(arrow.Date64(v))
	case *array.BooleanBuilder:
		b.Append(v != 0)
	default:
		panic(fmt.Sprintf("window aggregate: %T is not integer-like", b))
	}
}

// AppendOrderedInt appends v as 8 bytes that sort like the numbers (sign bit flipped, big endian).
func AppendOrderedInt(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^signBit)
}

// OrderedInt reads what AppendOrderedInt wrote.
func OrderedInt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ signBit) }

// CanonicalFloat maps -0 to 0 and every NaN to one NaN, so equal SQL values have equal bits.
func CanonicalFloat(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// OrderedFloat makes float bits sort like the numbers (NaN last), -0 as 0: key bytes.
func OrderedFloat(f float64) uint64 { return orderFloatBits(CanonicalFloat(f)) }

// ExactOrderedFloat is OrderedFloat keeping -0 (just below 0): row bytes and aggregate results.
func ExactOrderedFloat(f float64) uint64 {
	if f != f {
		return orderFloatBits(0x7ff8000000000000)
	}
	return orderFloatBits(math.Float64bits(f))
}

// NegZero reports whether f is -0, the one value whose key and row bytes differ.
func NegZero(f float64) bool { return f == 0 && math.Signbit(f) }

func orderFloatBits(u uint64) uint64 {
	if u&signBit != 0 {
		return ^u
	}
	return u | signBit
}

// FloatFromOrdered reads the float whose ordered bits are u (OrderedFloat, ExactOrderedFloat).
func FloatFromOrdered(u uint64) float64 {
	if u&signBit != 0 {
		return math.Float64frombits(u &^ signBit)
	}
	return math.Float64frombits(^u)
}

// AppendDecimal appends n as 16 bytes that sort like the numbers.
func AppendDecimal(dst []byte, n decimal128.Num) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.HighBits())^signBit)
	return binary.BigEndian.AppendUint64(dst, n.LowBits())
}

// DecimalFrom reads what AppendDecimal wrote.
func DecimalFrom(b []byte) decimal128.Num {
	return decimal128.New(int64(binary.BigEndian.Uint64(b)^signBit), binary.BigEndian.Uint64(b[8:]))
}

// ValueAppender appends the canonical bytes of element i (not NULL) of one array.
type ValueAppender func(dst []byte, i int) []byte

// NewValueAppender picks the appender of arr's type: once per column and batch. exact picks row bytes (a float
// -0 stays -0) over key bytes.
func NewValueAppender(arr arrow.Array, scratch *[]int64, exact bool) (ValueAppender, error) {
	order := OrderedFloat
	if exact {
		order = ExactOrderedFloat
	}
	if IntLike(arr.DataType()) {
		v := Int64Values(arr, scratch)
		return func(dst []byte, i int) []byte { return AppendOrderedInt(dst, v[i]) }, nil
	}
	switch a := arr.(type) {
	case *array.Uint64:
		v := a.Uint64Values()
		return func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint64(dst, v[i]) }, nil
	case *array.Float64:
		v := a.Float64Values()
		return func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint64(dst, order(v[i])) }, nil
	case *array.Float32:
		v := a.Float32Values()
		return func(dst []byte, i int) []byte {
			return binary.BigEndian.AppendUint64(dst, order(float64(v[i])))
		}, nil
	case *array.Decimal128:
		v := a.Values()
		return func(dst []byte, i int) []byte { return AppendDecimal(dst, v[i]) }, nil
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}, nil
	case *array.String:
		return func(dst []byte, i int) []byte { return AppendLenPrefixed(dst, a.Value(i)) }, nil
	case *array.LargeString:
		return func(dst []byte, i int) []byte { return AppendLenPrefixed(dst, a.Value(i)) }, nil
	case *array.Binary:
		return func(dst []byte, i int) []byte { return AppendLenPrefixed(dst, UnsafeString(a.Value(i))) }, nil
	case *array.LargeBinary:
		return func(dst []byte, i int) []byte { return AppendLenPrefixed(dst, UnsafeString(a.Value(i))) }, nil
	}
	if app, err := newNestedAppender(arr, exact); app != nil || err != nil {
		return app, err
	}
	return nil, fmt.Errorf("window aggregate: no canonical encoding for %s", arr.DataType())
}

// AppendLenPrefixed appends s as a uvarint length and its bytes (GetString reads it).
func AppendLenPrefixed(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// UnsafeString views b as a string, without a copy (b must not change while it is used).
func UnsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// StringBytes views s as bytes, for decoding (read only).
func StringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// DecodeValue appends the value whose canonical bytes start src to b and returns the rest of src.
func DecodeValue(b array.Builder, t arrow.DataType, src []byte) ([]byte, error) {
	if IntLike(t) {
		if len(src) < 8 {
			return nil, ErrState
		}
		AppendInt64(b, OrderedInt(src))
		return src[8:], nil
	}
	switch b := b.(type) {
	case *array.Uint64Builder:
		if len(src) < 8 {
			return nil, ErrState
		}
		b.Append(binary.BigEndian.Uint64(src))
		return src[8:], nil
	case *array.Float64Builder:
		if len(src) < 8 {
			return nil, ErrState
		}
		b.Append(FloatFromOrdered(binary.BigEndian.Uint64(src)))
		return src[8:], nil
	case *array.Float32Builder:
		if len(src) < 8 {
			return nil, ErrState
		}
		b.Append(float32(FloatFromOrdered(binary.BigEndian.Uint64(src))))
		return src[8:], nil
	case *array.Decimal128Builder:
		if len(src) < 16 {
			return nil, ErrState
		}
		b.Append(DecimalFrom(src))
		return src[16:], nil
	case *array.BooleanBuilder:
		if len(src) < 1 {
			return nil, ErrState
		}
		b.Append(src[0] != 0)
		return src[1:], nil
	}
	if rest, ok, err := decodeNested(b, t, src); ok {
		return rest, err
	}
	n, w := binary.Uvarint(src)
	if w <= 0 || uint64(len(src)-w) < n {
		return nil, ErrState
	}
	v := src[w : w+int(n)]
	switch b := b.(type) {
	case *array.StringBuilder:
		b.BinaryBuilder.Append(v)
	case *array.LargeStringBuilder:
		b.BinaryBuilder.Append(v)
	case *array.BinaryBuilder:
		b.Append(v)
	default:
		return nil, fmt.Errorf("window aggregate: cannot decode a key into %T", b)
	}
	return src[w+int(n):], nil
}

// ErrState is a state value cut short or malformed.
var ErrState = fmt.Errorf("window aggregate: truncated value in state")

// DecodeKey appends the key whose canonical bytes are key to the key builders.
func (e *Encoding) DecodeKey(bs []array.Builder, key []byte) error {
	for c, t := range e.Types {
		if len(key) == 0 {
			return ErrState
		}
		null := key[0] == 0
		key = key[1:]
		if null {
			bs[c].AppendNull()
			continue
		}
		var err error
		if key, err = DecodeValue(bs[c], t, key); err != nil {
			return err
		}
	}
	if len(key) != 0 {
		return fmt.Errorf("window aggregate: %d stray bytes after a key", len(key))
	}
	return nil
}

// KeyRows is the keys of one batch in the form the group lookup wants.
type KeyRows struct {
	Ints   []int64     // KeyInt: the values
	Nulls  arrow.Array // KeyInt: the column, when it has NULLs
	buf    []byte      // KeyBytes: canonical bytes of every row, back to back
	offs   []int32     // KeyBytes: row i is buf[offs[i]:offs[i+1]]
	scr    []int64
	appnds []ValueAppender
	// exact: key bytes only, the rows whose row bytes differ (a float -0 in the key), by row; nil when none.
	exact map[int]string
}

// Load extracts the keys of rec. The slices stay valid until the next Load (or as long as rec for ints).
func (k *KeyRows) Load(e *Encoding, rec arrow.RecordBatch, cols []int) error {
	n := int(rec.NumRows())
	switch e.Mode {
	case KeyInt:
		col := rec.Column(cols[0])
		k.Ints = Int64Values(col, &k.scr)
		k.Nulls = nil
		if col.NullN() > 0 {
			k.Nulls = col
		}
	case KeyBytes:
		k.appnds = k.appnds[:0]
		k.exact = nil
		scratch := make([][]int64, len(cols))
		var negZero []func(i int) bool // key bytes: per float column, whether row i holds -0
		var exact []ValueAppender      // ... and the row bytes' appenders, when there is a float column
		for c, ci := range cols {
			a, err := NewValueAppender(rec.Column(ci), &scratch[c], e.Exact)
			if err != nil {
				return err
			}
			k.appnds = append(k.appnds, a)
			var nz func(i int) bool
			if !e.Exact {
				nz = negZeroes(rec.Column(ci))
			}
			if nz != nil {
				if exact == nil {
					exact = slices.Clone(k.appnds[:c])
				}
				negZero = append(negZero, nz)
				a, _ = NewValueAppender(rec.Column(ci), nil, true) // a float or a nested value: no scratch, no error
			}
			if exact != nil {
				exact = append(exact, a)
			}
		}
		k.buf = k.buf[:0]
		k.offs = append(k.offs[:0], 0)
		for i := 0; i < n; i++ {
			for c, ci := range cols {
				if rec.Column(ci).IsNull(i) {
					k.buf = append(k.buf, 0)
					continue
				}
				k.buf = k.appnds[c](append(k.buf, 1), i)
			}
			k.offs = append(k.offs, int32(len(k.buf)))
		}
		for i := 0; i < n; i++ {
			for _, nz := range negZero {
				if nz(i) {
					k.exact = appendExactKey(k.exact, rec, cols, exact, i)
					break
				}
			}
		}
	}
	return nil
}

// appendExactKey records the row bytes of row i's key in m (made on first use) and returns m.
func appendExactKey(m map[int]string, rec arrow.RecordBatch, cols []int, appnds []ValueAppender, i int) map[int]string {
	if m == nil {
		m = map[int]string{}
	}
	var b []byte
	for c, ci := range cols {
		if rec.Column(ci).IsNull(i) {
			b = append(b, 0)
			continue
		}
		b = appnds[c](append(b, 1), i)
	}
	m[i] = string(b)
	return m
}

func (k *KeyRows) BytesOf(i int) []byte { return k.buf[k.offs[i]:k.offs[i+1]] }

// ExactOf returns the row bytes of row i's key when they differ from its key bytes (a float -0), else "".
func (k *KeyRows) ExactOf(i int) string { return k.exact[i] }

// negZeroes returns whether row i of a float array is -0 (NULLs are not), or of a nested array with a float inside
// whether its key and row bytes differ (a -0 somewhere in it), or nil for other types.
func negZeroes(arr arrow.Array) func(i int) bool {
	switch a := arr.(type) {
	case *array.Float64:
		return func(i int) bool { return a.IsValid(i) && NegZero(a.Value(i)) }
	case *array.Float32:
		return func(i int) bool { return a.IsValid(i) && NegZero(float64(a.Value(i))) }
	}
	if !Nested(arr.DataType()) || !hasFloat(arr.DataType()) {
		return nil
	}
	key, err1 := newNestedAppender(arr, false)
	row, err2 := newNestedAppender(arr, true)
	if key == nil || row == nil || err1 != nil || err2 != nil {
		return nil // the caller's own appender reports the error
	}
	var kb, rb []byte
	return func(i int) bool {
		if arr.IsNull(i) {
			return false
		}
		kb, rb = key(kb[:0], i), row(rb[:0], i)
		return string(kb) != string(rb)
	}
}

// hasFloat reports whether a float is part of t.
func hasFloat(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.Float32Type, *arrow.Float64Type:
		return true
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if hasFloat(f.Type) {
				return true
			}
		}
	case *arrow.MapType:
		return hasFloat(t.KeyType()) || hasFloat(t.ItemType())
	case *arrow.ListType:
		return hasFloat(t.Elem())
	case *arrow.LargeListType:
		return hasFloat(t.Elem())
	}
	return false
}

// AppendIntKey appends the canonical key bytes of a KeyInt key.
func AppendIntKey(dst []byte, v int64, null bool) []byte {
	if null {
		return append(dst, 0)
	}
	return AppendOrderedInt(append(dst, 1), v)
}

// CompareIntKeys orders two KeyInt keys (value, NULL or not) as their canonical bytes do: NULL (0x00) first.
func CompareIntKeys(a int64, aNull bool, b int64, bNull bool) int {
	if aNull || bNull {
		return -cmp.Compare(boolInt(aNull), boolInt(bNull))
	}
	return cmp.Compare(a, b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AppendGroups appends the groups of one window, by key: the group of the NULL key (KeyInt) or of the only
// key (KeyNone) when hasNull, then the others in map order.
func AppendGroups[G any](dst []G, null G, hasNull bool, ints map[int64]G, strs map[string]G) []G {
	if hasNull {
		dst = append(dst, null)
	}
	for _, g := range ints {
		dst = append(dst, g)
	}
	for _, g := range strs {
		dst = append(dst, g)
	}
	return dst
}
