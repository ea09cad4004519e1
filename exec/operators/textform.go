package operators

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file renders Arrow values in the text forms Postgres prints (what psql, COPY and the pgwire text format
// show), so that a file sink, the REPL and pgwire agree on every value. A column gets one appender per batch (a
// type switch per column, not per value); the appender writes straight into a byte slice.

// textAppender appends the text form of element i, which must not be null.
type textAppender func(dst []byte, i int) []byte

// textClass says how a text form is embedded in CSV and JSON.
type textClass uint8

const (
	classNumber     textClass = iota // digits: bare in CSV and JSON
	classFloat                       // a number, or NaN/Infinity which JSON must quote
	classBool                        // t/f in text; true/false in JSON
	classString                      // free text: CSV may need quotes, JSON needs escaping
	classSafeString                  // text without quotes, commas, backslashes or control bytes (dates, hex, ...)
)

type textColumn struct {
	arr    arrow.Array
	class  textClass
	text   textAppender
	bools  *array.Boolean // classBool
	nonull bool           // no nulls in this batch: skip the validity check
}

func (c *textColumn) isNull(i int) bool { return !c.nonull && c.arr.IsNull(i) }

// checkTextType reports whether values of type t have a text form.
func checkTextType(t arrow.DataType) error {
	switch t.ID() {
	case arrow.NULL, arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16,
		arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY,
		arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.DECIMAL128,
		arrow.DURATION, arrow.INTERVAL_MONTH_DAY_NANO:
		return nil
	}
	return fmt.Errorf("type %s has no text form", t)
}

func newTextColumn(arr arrow.Array) (textColumn, error) {
	c := textColumn{arr: arr, nonull: arr.NullN() == 0}
	switch a := arr.(type) {
	case *array.Null:
		c.class = classSafeString
		c.text = func(dst []byte, _ int) []byte { return dst } // never called: every element is null
	case *array.Boolean:
		c.class, c.bools = classBool, a
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
		c.class = classFloat
		c.text = func(dst []byte, i int) []byte { return appendFloat4(dst, a.Value(i)) }
	case *array.Float64:
		c.class = classFloat
		v := a.Float64Values()
		c.text = func(dst []byte, i int) []byte { return appendFloat8(dst, v[i]) }
	case *array.String:
		c.class = classString
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.LargeString:
		c.class = classString
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.Binary:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte { return appendByteaHex(dst, a.Value(i)) }
	case *array.LargeBinary:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte { return appendByteaHex(dst, a.Value(i)) }
	case *array.FixedSizeBinary:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte { return appendByteaHex(dst, a.Value(i)) }
	case *array.Date32:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte { return appendDate(dst, int64(a.Value(i))) }
	case *array.Date64:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte { return appendDate(dst, floorDiv(int64(a.Value(i)), 86_400_000)) }
	case *array.Timestamp:
		c.class = classSafeString
		tt := a.DataType().(*arrow.TimestampType)
		toMicros := timestampToMicros(tt.Unit)
		withZone := tt.TimeZone != ""
		c.text = func(dst []byte, i int) []byte { return appendTimestamp(dst, toMicros(int64(a.Value(i))), withZone) }
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		c.text = func(dst []byte, i int) []byte { return appendDecimal128(dst, a.Value(i), scale) }
	case *array.Duration:
		c.class = classSafeString
		toMicros := timestampToMicros(a.DataType().(*arrow.DurationType).Unit)
		c.text = func(dst []byte, i int) []byte { return appendInterval(dst, 0, 0, toMicros(int64(a.Value(i)))) }
	case *array.MonthDayNanoInterval:
		c.class = classSafeString
		c.text = func(dst []byte, i int) []byte {
			v := a.Value(i)
			return appendInterval(dst, int64(v.Months), int64(v.Days), floorDiv(v.Nanoseconds, 1000))
		}
	default:
		return c, checkTextType(arr.DataType())
	}
	return c, nil
}

// appendFloat8 prints a float8 as Postgres 12+ does (float8out with extra_float_digits = 1): the shortest digits
// that read back to the same value, in fixed notation when the decimal exponent is in [-4, 15), otherwise as
// d.ddde+XX with at least two exponent digits; NaN, Infinity, -Infinity.
func appendFloat8(dst []byte, f float64) []byte {
	if s, ok := floatSpecial(f); ok {
		return append(dst, s...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	e := start
	for dst[e] != 'e' {
		e++
	}
	exp, _ := strconv.Atoi(string(dst[e+1:]))
	if exp < -4 || exp >= 15 {
		return dst // Go's shortest 'e' form is exactly Postgres' scientific form
	}
	return strconv.AppendFloat(dst[:start], f, 'f', -1, 64)
}

// appendFloat4 prints a float4 as Postgres 12+ does. float4out switches to scientific notation from exponent 6
// on, which is exactly Go's shortest %g for 32-bit floats.
func appendFloat4(dst []byte, f float32) []byte {
	if s, ok := floatSpecial(float64(f)); ok {
		return append(dst, s...)
	}
	return strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
}

func floatSpecial(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	}
	return "", false
}

const hexDigits = "0123456789abcdef"

// appendByteaHex prints bytea in Postgres' default hex output: \x followed by two lower-case digits per byte.
func appendByteaHex(dst, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// timestampToMicros converts a time unit to microseconds, Postgres' precision. Nanoseconds are truncated toward
// negative infinity, so a value never prints as later than it is.
func timestampToMicros(u arrow.TimeUnit) func(int64) int64 {
	switch u {
	case arrow.Second:
		return func(v int64) int64 { return v * 1_000_000 }
	case arrow.Millisecond:
		return func(v int64) int64 { return v * 1000 }
	case arrow.Nanosecond:
		return func(v int64) int64 { return floorDiv(v, 1000) }
	}
	return func(v int64) int64 { return v }
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian date (year 0 is 1 BC); Howard Hinnant's
// days_from_civil inverse, valid over the whole int64 range Arrow dates can hold in practice.
func civilFromDays(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendYMD prints yyyy-mm-dd; years before 1 AD are reported as BC by the caller (Postgres has no year 0).
func appendYMD(dst []byte, y int64, m, d int) (_ []byte, bc bool) {
	if y <= 0 {
		y, bc = 1-y, true
	}
	for p := int64(1000); p > 1 && y < p; p /= 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, y, 10)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d), bc
}

// appendDate prints a date as Postgres' ISO DateStyle does: 2026-01-01, or 0044-03-15 BC.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	dst, bc := appendYMD(dst, y, m, d)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendFraction prints .ffffff for a non-zero microsecond count, without trailing zeros.
func appendFraction(dst []byte, us int64) []byte {
	if us == 0 {
		return dst
	}
	var digits [6]byte
	for k := 5; k >= 0; k-- {
		digits[k] = byte('0' + us%10)
		us /= 10
	}
	n := 6
	for digits[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, digits[:n]...)
}

// appendTimestamp prints microseconds since the epoch as Postgres prints a timestamp in ISO DateStyle:
// 2026-01-01 00:00:01.5 (a space, no T, no trailing zeros). A zoned Arrow timestamp prints as timestamptz in UTC
// (+00).
func appendTimestamp(dst []byte, us int64, withZone bool) []byte {
	days := floorDiv(us, 86_400_000_000)
	rem := us - days*86_400_000_000
	y, m, d := civilFromDays(days)
	dst, bc := appendYMD(dst, y, m, d)
	secs := rem / 1_000_000
	dst = append(dst, ' ')
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	dst = appendFraction(dst, rem%1_000_000)
	if withZone {
		dst = append(dst, "+00"...)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendDecimal128 prints an unscaled decimal with exactly scale fraction digits, as numeric_out does for a
// NUMERIC(p,s) value (1.50, -0.05).
func appendDecimal128(dst []byte, n decimal128.Num, scale int32) []byte {
	hi, lo := n.HighBits(), n.LowBits()
	if scale < 0 || !(hi == 0 && lo < 1<<63 || hi == -1 && lo >= 1<<63) {
		return append(dst, n.ToString(scale)...) // rare: beyond int64 or a negative scale
	}
	v := int64(lo)
	neg := v < 0
	var mag uint64
	if neg {
		mag = uint64(-v) // two's complement: also right for math.MinInt64
		dst = append(dst, '-')
	} else {
		mag = uint64(v)
	}
	var digits [24]byte
	ds := strconv.AppendUint(digits[:0], mag, 10)
	if int(scale) >= len(ds) {
		dst = append(dst, '0', '.')
		for k := len(ds); k < int(scale); k++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	at := len(ds) - int(scale)
	dst = append(dst, ds[:at]...)
	if scale > 0 {
		dst = append(dst, '.')
		dst = append(dst, ds[at:]...)
	}
	return dst
}

// appendInterval prints an interval in Postgres' default IntervalStyle (postgres): "1 year 2 mons 3 days
// 04:05:06.5", "-1 days", "00:00:00"; a time part of another sign than the date part before it gets an explicit
// sign. This follows EncodeInterval's INTSTYLE_POSTGRES branch.
func appendInterval(dst []byte, months, days, us int64) []byte {
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			dst = append(dst, ' ')
		}
		if isBefore && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		isBefore, isZero = v < 0, false
	}
	part(months/12, "year")
	part(months%12, "mon")
	part(days, "day")
	hour := us / 3_600_000_000
	us -= hour * 3_600_000_000
	minute := us / 60_000_000
	us -= minute * 60_000_000
	sec := us / 1_000_000
	fsec := us - sec*1_000_000
	if isZero || hour != 0 || minute != 0 || sec != 0 || fsec != 0 {
		minus := hour < 0 || minute < 0 || sec < 0 || fsec < 0
		if !isZero {
			dst = append(dst, ' ')
		}
		if minus {
			dst = append(dst, '-')
		} else if isBefore {
			dst = append(dst, '+')
		}
		if hour < 0 {
			hour = -hour
		}
		if hour < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, hour, 10)
		dst = append(dst, ':')
		dst = append2(dst, int(abs64(minute)))
		dst = append(dst, ':')
		dst = append2(dst, int(abs64(sec)))
		dst = appendFraction(dst, abs64(fsec))
	}
	return dst
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// appendCSVField appends s as an RFC 4180 field. Quoting follows Postgres' COPY ... CSV: a field is quoted when
// it contains the delimiter, a quote, CR or LF, or when it is empty, so an empty string ("") stays distinct from
// NULL (nothing); `\.` alone is quoted too, as COPY does, so it cannot read as an end-of-data marker.
func appendCSVField(dst []byte, s []byte) []byte {
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

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters are escaped, invalid
// UTF-8 becomes U+FFFD (as encoding/json does), everything else is copied.
func appendJSONString(dst []byte, s []byte) []byte {
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
