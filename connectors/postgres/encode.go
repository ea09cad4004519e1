package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
)

// The append sink sends COPY ... (FORMAT binary): measured against CSV text on the same rows (BenchmarkPostgresSink
// Append, four columns), binary moved about twice the rows per second, the server no longer parsing text. Each
// column's values are written in the binary form of its column's type in the table (int8 into an int4 column is
// an int4), which describe checked to be compatible.

// copyHeader starts a binary COPY stream: the signature, flags 0, no header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyTrailer ends it: a field count of -1.
var copyTrailer = []byte{0xff, 0xff}

// Microseconds and days between the Unix epoch and Postgres' (2000-01-01).
const (
	pgEpochMicros = 946684800 * 1_000_000
	pgEpochDays   = 10957
)

// fieldEncoder appends element i (not null) of the bound array in its binary form, with its length word.
type fieldEncoder func(dst []byte, i int) ([]byte, error)

// binaryRow encodes the rows of a batch as binary COPY tuples.
type binaryRow struct {
	names []string
	types []string // each sink column's base type in the table (pg_type.typname)
	arrs  []arrow.Array
	encs  []fieldEncoder
	text  []textform.Column // the text forms that numeric and uuid values are made from
	buf   []byte
}

func newBinaryRow(schema *arrow.Schema, types []string) *binaryRow {
	r := &binaryRow{types: types}
	for _, f := range schema.Fields() {
		r.names = append(r.names, f.Name)
	}
	return r
}

// bind takes the columns of the next rows.
func (r *binaryRow) bind(cols []arrow.Array) error {
	r.arrs, r.encs = r.arrs[:0], r.encs[:0]
	r.text = r.text[:0]
	for c, arr := range cols {
		tc, err := textform.NewColumn(arr)
		if err != nil {
			return err
		}
		r.text = append(r.text, tc)
		enc, err := r.encoder(arr, r.types[c], &r.text[len(r.text)-1])
		if err != nil {
			return fmt.Errorf("column %d: %w", c+1, err)
		}
		r.arrs = append(r.arrs, arr)
		r.encs = append(r.encs, enc)
	}
	return nil
}

func (r *binaryRow) unbind() {
	clear(r.arrs)
	r.arrs = r.arrs[:0]
	clear(r.text)
	r.text = r.text[:0]
	r.encs = r.encs[:0]
}

// appendRow appends row i as one tuple.
func (r *binaryRow) appendRow(dst []byte, i int) ([]byte, error) {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.encs)))
	for c, enc := range r.encs {
		if r.arrs[c].IsNull(i) {
			dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1: NULL
			continue
		}
		var err error
		if dst, err = enc(dst, i); err != nil {
			return dst, fmt.Errorf("column %s: %w", r.names[c], err)
		}
	}
	return dst, nil
}

func fixed4(dst []byte, v uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(dst, 4), v)
}

func fixed8(dst []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(dst, 8), v)
}

// intEncoder writes integers in the width of typ, refusing a value out of its range.
func intEncoder(get func(i int) int64, typ string) fieldEncoder {
	switch typ {
	case "int2":
		return func(dst []byte, i int) ([]byte, error) {
			v := get(i)
			if v < math.MinInt16 || v > math.MaxInt16 {
				return dst, fmt.Errorf("%d is out of range for type smallint", v)
			}
			return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(dst, 2), uint16(v)), nil
		}
	case "int4":
		return func(dst []byte, i int) ([]byte, error) {
			v := get(i)
			if v < math.MinInt32 || v > math.MaxInt32 {
				return dst, fmt.Errorf("%d is out of range for type integer", v)
			}
			return fixed4(dst, uint32(v)), nil
		}
	}
	return func(dst []byte, i int) ([]byte, error) { return fixed8(dst, uint64(get(i))), nil }
}

// floatEncoder writes floats as float4 or float8, refusing a finite value that float4 holds only as an infinity or
// a zero (as Postgres' float8-to-float4 cast does: out of range, overflow or underflow).
func floatEncoder(get func(i int) float64, typ string) fieldEncoder {
	if typ == "float4" {
		return func(dst []byte, i int) ([]byte, error) {
			v := get(i)
			f := float32(v)
			if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) || f == 0 && v != 0 {
				return dst, fmt.Errorf("%g is out of range for type real", v)
			}
			return fixed4(dst, math.Float32bits(f)), nil
		}
	}
	return func(dst []byte, i int) ([]byte, error) { return fixed8(dst, math.Float64bits(get(i))), nil }
}

// micros converts a timestamp or date array's element to microseconds since the Unix epoch; ok is false for a
// value whose microseconds do not fit in an int64 (a date some 292,000 years away): beyond Postgres' range, and
// never to be wrapped around into it.
func micros(arr arrow.Array) (func(i int) (us int64, ok bool), bool) {
	scaled := func(get func(i int) int64, per int64) func(i int) (int64, bool) {
		return func(i int) (int64, bool) {
			v := get(i)
			if v > math.MaxInt64/per || v < math.MinInt64/per {
				return 0, false
			}
			return v * per, true
		}
	}
	switch a := arr.(type) {
	case *array.Timestamp:
		get := func(i int) int64 { return int64(a.Value(i)) }
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			return scaled(get, 1_000_000), true
		case arrow.Millisecond:
			return scaled(get, 1000), true
		}
		toMicros := expr.TimeUnitToMicros(a.DataType().(*arrow.TimestampType).Unit)
		return func(i int) (int64, bool) { return toMicros(get(i)), true }, true
	case *array.Date32:
		return scaled(func(i int) int64 { return int64(a.Value(i)) }, 86_400_000_000), true
	case *array.Date64:
		return scaled(func(i int) int64 { return int64(a.Value(i)) }, 1000), true
	}
	return nil, false
}

// encoder returns the binary encoder of arr's values into a column of base type typ.
func (r *binaryRow) encoder(arr arrow.Array, typ string, text *textform.Column) (fieldEncoder, error) {
	if typ == "numeric" {
		return func(dst []byte, i int) ([]byte, error) {
			r.buf = text.Append(r.buf[:0], i)
			return appendNumeric(dst, r.buf)
		}, nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		if typ == "bool" {
			return func(dst []byte, i int) ([]byte, error) {
				b := byte(0)
				if a.Value(i) {
					b = 1
				}
				return append(binary.BigEndian.AppendUint32(dst, 1), b), nil
			}, nil
		}
	case *array.Int8:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Int16:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Int32:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Int64:
		return intEncoder(a.Value, typ), nil
	case *array.Uint8:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Uint16:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Uint32:
		return intEncoder(func(i int) int64 { return int64(a.Value(i)) }, typ), nil
	case *array.Uint64:
		return func(dst []byte, i int) ([]byte, error) {
			if v := a.Value(i); v > math.MaxInt64 {
				return dst, fmt.Errorf("%d is out of range for type bigint", v)
			}
			return fixed8(dst, a.Value(i)), nil
		}, nil
	case *array.Float32:
		return floatEncoder(func(i int) float64 { return float64(a.Value(i)) }, typ), nil
	case *array.Float64:
		return floatEncoder(a.Value, typ), nil
	case *array.String:
		return stringEncoder(a.Value, typ), nil
	case *array.LargeString:
		return stringEncoder(a.Value, typ), nil
	case *array.Binary:
		return bytesEncoder(a.Value), nil
	case *array.LargeBinary:
		return bytesEncoder(a.Value), nil
	case *array.FixedSizeBinary:
		return bytesEncoder(a.Value), nil
	case *array.Date32:
		if typ == "date" {
			return func(dst []byte, i int) ([]byte, error) {
				d := int64(a.Value(i)) - pgEpochDays
				if d != int64(int32(d)) {
					return dst, fmt.Errorf("%s is out of range for type date", a.ValueStr(i))
				}
				return fixed4(dst, uint32(int32(d))), nil
			}, nil
		}
	case *array.Duration:
		toMicros := expr.TimeUnitToMicros(a.DataType().(*arrow.DurationType).Unit)
		// Whole days as days, as the text form spells it ('1 day 02:03:04.5', not '26:03:04.5').
		return func(dst []byte, i int) ([]byte, error) {
			us := toMicros(int64(a.Value(i)))
			days := us / 86_400_000_000
			dst = binary.BigEndian.AppendUint32(dst, 16)
			dst = binary.BigEndian.AppendUint64(dst, uint64(us-days*86_400_000_000))
			dst = binary.BigEndian.AppendUint32(dst, uint32(int32(days)))
			return binary.BigEndian.AppendUint32(dst, 0), nil // months
		}, nil
	case *array.MonthDayNanoInterval:
		return func(dst []byte, i int) ([]byte, error) {
			v := a.Value(i)
			dst = binary.BigEndian.AppendUint32(dst, 16)
			dst = binary.BigEndian.AppendUint64(dst, uint64(expr.FloorDiv(v.Nanoseconds, 1000)))
			dst = binary.BigEndian.AppendUint32(dst, uint32(v.Days))
			return binary.BigEndian.AppendUint32(dst, uint32(v.Months)), nil
		}, nil
	}
	if us, ok := micros(arr); ok {
		switch typ {
		case "timestamp", "timestamptz":
			return func(dst []byte, i int) ([]byte, error) {
				v, ok := us(i)
				if !ok || v < math.MinInt64+pgEpochMicros {
					return dst, fmt.Errorf("%s is out of range for type %s", arr.ValueStr(i), typ)
				}
				return fixed8(dst, uint64(v-pgEpochMicros)), nil
			}, nil
		case "date":
			return func(dst []byte, i int) ([]byte, error) {
				v, ok := us(i)
				days := expr.FloorDiv(v, 86_400_000_000) - pgEpochDays
				if !ok || days != int64(int32(days)) {
					return dst, fmt.Errorf("%s is out of range for type date", arr.ValueStr(i))
				}
				return fixed4(dst, uint32(int32(days))), nil
			}, nil
		}
	}
	return nil, fmt.Errorf("no binary form of %s for a %s column", arr.DataType(), typ)
}

func stringEncoder(get func(i int) string, typ string) fieldEncoder {
	switch typ {
	case "jsonb":
		return func(dst []byte, i int) ([]byte, error) {
			s := get(i)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)+1))
			return append(append(dst, 1), s...), nil // jsonb's binary form: version 1, then the text
		}
	case "uuid":
		return func(dst []byte, i int) ([]byte, error) { return appendUUID(dst, get(i)) }
	}
	return func(dst []byte, i int) ([]byte, error) {
		s := get(i)
		return append(binary.BigEndian.AppendUint32(dst, uint32(len(s))), s...), nil
	}
}

func bytesEncoder(get func(i int) []byte) fieldEncoder {
	return func(dst []byte, i int) ([]byte, error) {
		b := get(i)
		return append(binary.BigEndian.AppendUint32(dst, uint32(len(b))), b...), nil
	}
}

// appendUUID writes a UUID's 16 bytes from its text (hex digits, with or without hyphens and braces).
func appendUUID(dst []byte, s string) ([]byte, error) {
	var out [16]byte
	n := 0
	for j := 0; j < len(s); j++ {
		c := s[j]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		case c == '-' || c == '{' || c == '}':
			continue
		default:
			return dst, fmt.Errorf("invalid input syntax for type uuid: %q", s)
		}
		if n >= 32 {
			return dst, fmt.Errorf("invalid input syntax for type uuid: %q", s)
		}
		out[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	if n != 32 {
		return dst, fmt.Errorf("invalid input syntax for type uuid: %q", s)
	}
	return append(binary.BigEndian.AppendUint32(dst, 16), out[:]...), nil
}

// appendNumeric writes a number's text ("-123.4500", "1e-05", "NaN", "Infinity") as Postgres' binary numeric:
// base-10000 digits around the decimal point, the weight of the first, the sign and the display scale.
func appendNumeric(dst []byte, text []byte) ([]byte, error) {
	s := string(text)
	const (
		pos, neg, nan, pinf, ninf = 0x0000, 0x4000, 0xC000, 0xD000, 0xF000
	)
	special := func(sign uint16) []byte {
		dst = binary.BigEndian.AppendUint32(dst, 8)
		dst = binary.BigEndian.AppendUint64(dst, uint64(sign)<<16)
		return dst
	}
	switch s {
	case "NaN":
		return special(nan), nil
	case "Infinity":
		return special(pinf), nil
	case "-Infinity":
		return special(ninf), nil
	}
	sign := uint16(pos)
	if strings.HasPrefix(s, "-") {
		sign, s = neg, s[1:]
	}
	exp := 0
	if e := strings.IndexAny(s, "eE"); e >= 0 {
		if _, err := fmt.Sscanf(s[e+1:], "%d", &exp); err != nil {
			return dst, fmt.Errorf("invalid number %q", text)
		}
		s = s[:e]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	point := len(intPart) + exp // the decimal point's position in digits
	for _, c := range digits {
		if c < '0' || c > '9' {
			return dst, fmt.Errorf("invalid number %q", text)
		}
	}
	dscale := max(len(digits)-point, 0)
	if point < 0 { // 0.000ddd: the point before the zeros
		digits, point = strings.Repeat("0", -point)+digits, 0
	}
	if point > len(digits) { // ddd000: the zeros before the point
		digits += strings.Repeat("0", point-len(digits))
	}
	// Pad so that the point falls on a group boundary and the digits fill whole groups.
	lead := (4 - point%4) % 4
	padded := strings.Repeat("0", lead) + digits
	point += lead
	padded += strings.Repeat("0", (4-len(padded)%4)%4)
	groups := make([]uint16, 0, len(padded)/4)
	for j := 0; j < len(padded); j += 4 {
		g := uint16(padded[j]-'0')*1000 + uint16(padded[j+1]-'0')*100 + uint16(padded[j+2]-'0')*10 + uint16(padded[j+3]-'0')
		groups = append(groups, g)
	}
	weight := point/4 - 1
	for len(groups) > 0 && groups[0] == 0 {
		groups, weight = groups[1:], weight-1
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	if len(groups) == 0 {
		weight, sign = 0, pos
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(8+2*len(groups)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(groups)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(dscale))
	for _, g := range groups {
		dst = binary.BigEndian.AppendUint16(dst, g)
	}
	return dst, nil
}
