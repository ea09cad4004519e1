package textform

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/expr"
)

// A column gets one appender per batch (a type switch per column, not per value); the appender writes straight
// into a byte slice.

// appender appends the text form of element i, which must not be null.
type appender func(dst []byte, i int) []byte

// Class says how a text form is embedded in CSV and JSON.
type Class uint8

const (
	Number     Class = iota // digits: bare in CSV and JSON
	Float                   // a number, or NaN/Infinity which JSON must quote
	Bool                    // t/f in text; true/false in JSON
	String                  // free text: CSV may need quotes, JSON needs escaping
	SafeString              // text without quotes, commas, backslashes or control bytes (dates, hex, ...)
)

// Column renders the values of one column of one batch.
type Column struct {
	arr    arrow.Array
	class  Class
	text   appender
	bools  *array.Boolean // Bool
	nonull bool           // no nulls in this batch: skip the validity check
}

// IsNull reports whether element i is null.
func (c *Column) IsNull(i int) bool { return !c.nonull && c.arr.IsNull(i) }

// Append appends the text form of element i, which must not be null.
func (c *Column) Append(dst []byte, i int) []byte { return c.text(dst, i) }

// Class is how the column's forms embed in CSV and JSON.
func (c *Column) Class() Class { return c.class }

// Bool is element i of a Bool column.
func (c *Column) Bool(i int) bool { return c.bools.Value(i) }

// CheckType reports whether values of type t have a text form.
func CheckType(t arrow.DataType) error {
	switch t.ID() {
	case arrow.NULL, arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16,
		arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY,
		arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.DECIMAL128,
		arrow.DURATION, arrow.INTERVAL_MONTH_DAY_NANO:
		return nil
	case arrow.LIST:
		return CheckType(t.(*arrow.ListType).Elem())
	case arrow.MAP:
		m := t.(*arrow.MapType)
		if err := CheckType(m.KeyType()); err != nil {
			return err
		}
		return CheckType(m.ItemType())
	case arrow.STRUCT:
		for _, f := range t.(*arrow.StructType).Fields() {
			if err := CheckType(f.Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("type %s has no text form", t)
}

// NewColumn returns the renderer of arr's values (a TIMESTAMP WITH TIME ZONE in UTC, +00).
func NewColumn(arr arrow.Array) (Column, error) { return NewColumnIn(arr, time.UTC) }

// NewColumnIn returns the renderer of arr's values, a TIMESTAMP WITH TIME ZONE in loc (the session's zone, as
// Postgres prints a timestamptz: 2026-03-29 03:00:00+02).
func NewColumnIn(arr arrow.Array, loc *time.Location) (Column, error) {
	c := Column{arr: arr, nonull: arr.NullN() == 0}
	switch a := arr.(type) {
	case *array.Null:
		c.class = SafeString
		c.text = func(dst []byte, _ int) []byte { return dst } // never called: every element is null
	case *array.Boolean:
		c.class, c.bools = Bool, a
		c.text = func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 't')
			}
			return append(dst, 'f')
		}
	case *array.Int8:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int16:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int32:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int64:
		v := a.Int64Values()
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, v[i], 10) }
	case *array.Uint8:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint16:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint32:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint64:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, a.Value(i), 10) }
	case *array.Float32:
		c.class = Float
		c.text = func(dst []byte, i int) []byte { return expr.AppendFloat4(dst, a.Value(i)) }
	case *array.Float64:
		c.class = Float
		v := a.Float64Values()
		c.text = func(dst []byte, i int) []byte { return expr.AppendFloat8(dst, v[i]) }
	case *array.String:
		c.class = String
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.LargeString:
		c.class = String
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.Binary:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte { return expr.AppendByteaHex(dst, a.Value(i)) }
	case *array.LargeBinary:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte { return expr.AppendByteaHex(dst, a.Value(i)) }
	case *array.FixedSizeBinary:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte { return expr.AppendByteaHex(dst, a.Value(i)) }
	case *array.Date32:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte { return expr.AppendDate(dst, int64(a.Value(i))) }
	case *array.Date64:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte {
			return expr.AppendDate(dst, expr.FloorDiv(int64(a.Value(i)), 86_400_000))
		}
	case *array.Timestamp:
		c.class = SafeString
		tt := a.DataType().(*arrow.TimestampType)
		toMicros := expr.TimeUnitToMicros(tt.Unit)
		if tt.TimeZone != "" {
			c.text = func(dst []byte, i int) []byte { return expr.AppendTimestampTZ(dst, loc, toMicros(int64(a.Value(i)))) }
			break
		}
		c.text = func(dst []byte, i int) []byte { return expr.AppendTimestamp(dst, toMicros(int64(a.Value(i))), false) }
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		c.text = func(dst []byte, i int) []byte { return expr.AppendDecimal128(dst, a.Value(i), scale) }
	case *array.Duration:
		c.class = SafeString
		toMicros := expr.TimeUnitToMicros(a.DataType().(*arrow.DurationType).Unit)
		c.text = func(dst []byte, i int) []byte { return expr.AppendDuration(dst, toMicros(int64(a.Value(i)))) }
	case *array.MonthDayNanoInterval:
		c.class = SafeString
		c.text = func(dst []byte, i int) []byte {
			v := a.Value(i)
			return expr.AppendInterval(dst, int64(v.Months), int64(v.Days), expr.FloorDiv(v.Nanoseconds, 1000))
		}
	case *array.List:
		c.class = String
		elems, err := NewColumnIn(a.ListValues(), loc)
		if err != nil {
			return c, err
		}
		offs := a.Offsets()
		rule := arrayQuote
		if a.ListValues().DataType().ID() == arrow.LIST {
			rule = nestedArray // {{1,2},{3}}, as Postgres prints a multidimensional array
		}
		c.text = func(dst []byte, i int) []byte {
			dst = append(dst, '{')
			for j := offs[i]; j < offs[i+1]; j++ {
				if j > offs[i] {
					dst = append(dst, ',')
				}
				dst = appendElem(dst, &elems, int(j), rule)
			}
			return append(dst, '}')
		}
	case *array.Map:
		c.class = String
		keys, err := NewColumnIn(a.Keys(), loc)
		if err != nil {
			return c, err
		}
		items, err := NewColumnIn(a.Items(), loc)
		if err != nil {
			return c, err
		}
		offs := a.Offsets()
		c.text = func(dst []byte, i int) []byte {
			dst = append(dst, '{')
			for j := offs[i]; j < offs[i+1]; j++ {
				if j > offs[i] {
					dst = append(dst, ',')
				}
				dst = appendElem(dst, &keys, int(j), arrayQuote)
				dst = append(dst, "=>"...)
				dst = appendElem(dst, &items, int(j), arrayQuote)
			}
			return append(dst, '}')
		}
	case *array.Struct:
		c.class = String
		fields := make([]Column, a.NumField())
		for k := range fields {
			f, err := NewColumnIn(a.Field(k), loc)
			if err != nil {
				return c, err
			}
			fields[k] = f
		}
		c.text = func(dst []byte, i int) []byte {
			dst = append(dst, '(')
			for k := range fields {
				if k > 0 {
					dst = append(dst, ',')
				}
				if fields[k].IsNull(i) {
					continue // NULL is nothing in a composite
				}
				dst = appendElem(dst, &fields[k], i, rowQuote)
			}
			return append(dst, ')')
		}
	default:
		return c, CheckType(arr.DataType())
	}
	return c, nil
}

// quoting rules of nested values' elements
const (
	arrayQuote  = iota // Postgres' array_out: NULL bare, quotes for empty, blanks, {},"\ and the word NULL
	rowQuote           // record_out: quotes for empty, blanks, (),"\, doubles " and \ (a NULL field: nothing)
	nestedArray        // an array inside an array: as it is
)

// appendElem appends element j of col as an element of a nested value's text, quoted and escaped as Postgres does.
func appendElem(dst []byte, col *Column, j int, rule int) []byte {
	if col.IsNull(j) {
		if rule == arrayQuote {
			return append(dst, "NULL"...)
		}
		return dst
	}
	start := len(dst)
	dst = col.Append(dst, j)
	if rule == nestedArray {
		return dst
	}
	v := dst[start:]
	quote := len(v) == 0 || rule == arrayQuote && strings.EqualFold(string(v), "null")
	for _, b := range v {
		switch b {
		case '"', '\\', ',', ' ', '\t', '\n', '\r', '\v', '\f':
			quote = true
		case '{', '}':
			quote = quote || rule == arrayQuote
		case '(', ')':
			quote = quote || rule == rowQuote
		}
	}
	if !quote {
		return dst
	}
	elem := append([]byte(nil), v...)
	dst = append(dst[:start], '"')
	for _, b := range elem {
		if b == '"' || b == '\\' {
			// array_out escapes them with a backslash, record_out doubles them
			if rule == rowQuote {
				dst = append(dst, b)
			} else {
				dst = append(dst, '\\')
			}
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// AppendCSVField appends s as an RFC 4180 field. Quoting follows Postgres' COPY ... CSV: a field is quoted when
// it contains the delimiter, a quote, CR or LF, or when it is empty, so an empty string ("") stays distinct from
// NULL (nothing); `\.` alone is quoted too, as COPY does, so it cannot read as an end-of-data marker.
func AppendCSVField(dst []byte, s []byte) []byte {
	quote := len(s) == 0 || string(s) == `\.`
	if !quote {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// AppendJSONString appends s as a JSON string: quotes, backslashes and control characters are escaped, invalid
// UTF-8 becomes U+FFFD (as encoding/json does), everything else is copied.
func AppendJSONString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
